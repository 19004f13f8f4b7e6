#!/usr/bin/env bash
# t0840-upload: the intranet hub. A mirror with a local namespace (serve --local acme) takes
# huggingface_hub's write requests, replayed by helpers/upload_scenario.py: create_repo (409 again,
# 401/403 without a write grant, 403 outside the namespace, visibility), preupload's LFS decisions,
# the Git LFS batch with basic PUT and verify, multipart (parts missing or wrong refused), the NDJSON
# commit (a second commit sends only the changed file), parent_commit (412 when stale), delete_file,
# paths and objects refused, validate-yaml, the Xet write token, branches and tags, private repos
# hidden and public ones open, delete_repo. Then: commit ids are git's (rebuilt by git from the served
# files), git clone has the same log, ModelScope's API reads a local model, the JS client's
# createRepo + uploadFiles (multipart), the commit's torrent and a pull of the repo on an agent, a
# private repo's swarm closed, `add` and `sync` leave local repos alone, a bundle carries them (a
# tampered commit record refused), a serve killed mid-upload loses nothing, and a namespace's quota.
. "$HM_SRC/tests/integration/lib.sh"

cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write hf:datasets/acme/*:write
hf_reader_acme_0002 hf:acme/*
TOK
chmod 600 "$T/tokens"
check "serve starts with a local namespace" start_serve --local acme --tokens "$T/tokens" --p2p-listen 127.0.0.1:0 || finish
check "its start log names the local namespaces" grep -q "local namespaces (writable with a write grant: docs/uploads.md): acme" "$T/serve.err"
serve_pid=${_pids[-1]}
n=0
st=none
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "${line#ok - }"; n=$((n + 1)) ;;
	"not ok - "*) fail "${line#not ok - }"; n=$((n + 1)) ;;
	"exit "*) st=${line#exit } ;;
	*) echo "# $line" ;;
	esac
done < <(timeout 200 "$PY" "$HM_SRC/tests/integration/helpers/upload_scenario.py" "$M" "$T" 2>&1; echo "exit $?")
check "the scenario ran to the end ($n checks, status $st)" test "$n" -ge 30 -a \( "$st" = 0 -o "$st" = 1 \)

# The commit id is git's: from the files the mirror serves at c3 and the commit's fields as
# list_repo_commits gives them, git itself makes the same commit (parent c2).
W=hf_writer_acme_0001
git_agrees() {
	local d="$T/gitcheck" c2 c3 tree
	c2=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["c2"])' "$T/commits.json") &&
	c3=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["c3"])' "$T/commits.json") || return 1
	rm -rf "$d" && mkdir -p "$d" && git -C "$d" init -q . || return 1
	curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/up-model/tree/$c3?recursive=true" >"$T/tree.json" &&
	curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/up-model/commits/main" >"$T/commits-api.json" || return 1
	"$PY" - "$T/tree.json" "$d" "$M" "$W" "$c3" <<'PY' || return 1
import json, os, sys, urllib.request
tree, d, m, w, c = sys.argv[1:6]
for e in json.load(open(tree)):
    if e["type"] != "file":
        continue
    req = urllib.request.Request(f"{m}/acme/up-model/resolve/{c}/{e['path']}", headers={"authorization": "Bearer " + w})
    data = urllib.request.urlopen(req).read()
    if "lfs" in e:
        data = b"version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n" % (e["lfs"]["oid"].encode(), len(data))
    p = os.path.join(d, e["path"])
    os.makedirs(os.path.dirname(p), exist_ok=True)
    open(p, "wb").write(data)
PY
	git -C "$d" add -A && tree=$(git -C "$d" write-tree) || return 1
	eval "$("$PY" - "$T/commits-api.json" "$c3" "$c2" <<'PY'
import json, shlex, sys, datetime
log, c3, c2 = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
assert log[0]["id"] == c3 and log[1]["id"] == c2, [x["id"] for x in log]
when = int(datetime.datetime.strptime(log[0]["date"][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc).timestamp())
who = log[0]["authors"][0]["user"]
print(f"export GIT_AUTHOR_NAME={shlex.quote(who)} GIT_COMMITTER_NAME={shlex.quote(who)} "
      f"GIT_AUTHOR_EMAIL=hubmirror@localhost GIT_COMMITTER_EMAIL=hubmirror@localhost "
      f"GIT_AUTHOR_DATE='{when} +0000' GIT_COMMITTER_DATE='{when} +0000' TITLE={shlex.quote(log[0]['title'])}")
PY
)" || return 1
	# (commit-tree would want the parent's object here; hash-object checks the commit's format and hashes)
	test "$(printf 'tree %s\nparent %s\nauthor %s <%s> %s\ncommitter %s <%s> %s\n\n%s\n' "$tree" "$c2" \
		"$GIT_AUTHOR_NAME" "$GIT_AUTHOR_EMAIL" "$GIT_AUTHOR_DATE" "$GIT_COMMITTER_NAME" "$GIT_COMMITTER_EMAIL" \
		"$GIT_COMMITTER_DATE" "$TITLE" | git -C "$d" hash-object -t commit --stdin)" = "$c3"
}
check "git makes the same commit id from the served files and the commit log" git_agrees

# The ModelScope API reads a local model too (the SDK's default revision, master, is its main).
ms_reads() {
	curl -fsS -H "Authorization: Bearer $W" "$M/api/v1/models/acme/up-model/repo/files?Revision=master&Recursive=true" \
		>"$T/msfiles.json" || return 1
	"$PY" -c '
import json, sys
o = json.load(open(sys.argv[1]))
names = sorted(f["Path"] for f in o["Data"]["Files"])
assert o["Code"] == 200 and "config.json" in names and "model.safetensors" in names, (o["Code"], names)' "$T/msfiles.json" &&
	cmp <(curl -fsS -H "Authorization: Bearer $W" "$M/api/v1/models/acme/up-model/repo?Revision=master&FilePath=config.json") \
		<(curl -fsS -H "Authorization: Bearer $W" "$M/acme/up-model/resolve/main/config.json") &&
	test "$(curl -sS -o /dev/null -w '%{http_code}' "$M/api/v1/models/acme/up-model/repo?Revision=master&FilePath=config.json")" = 401
}
check "the ModelScope API reads a local model, under the same access rules" ms_reads

# git clone shows the same history: the ids the API gave, each commit the parent of the next.
clone_agrees() {
	local want got
	want=$("$PY" -c 'import json,sys; c=json.load(open(sys.argv[1])); print(c["c3"], c["c2"], c["c1"])' "$T/commits.json") || return 1
	rm -rf "$T/clone" &&
	GIT_LFS_SKIP_SMUDGE=1 git -c credential.helper= clone -q "http://user:$W@${M#http://}/acme/up-model" "$T/clone" 2>"$T/clone.err" ||
		{ cat "$T/clone.err"; return 1; }
	got=$(git -C "$T/clone" log --format=%H | head -3 | tr '\n' ' ')
	[ "$got" = "$want " ] || { echo "# git log: $got, the API: $want"; return 1; }
	test "$(git -C "$T/clone" log --format=%s -1)" = "Drop README" && test -f "$T/clone/config.json" &&
		grep -q '^oid sha256:' "$T/clone/model.safetensors"
}
check "git clone has the API's commit ids, parents and files" clone_agrees

# The official JS client: createRepo and uploadFiles of a 140 MB file, told not to offer Xet (through Xet:
# t0849), so the mirror answers with the multipart transfer, a URL per 64 MiB part; its PUT carries no
# Authorization: the upload URL's own capability lets it in.
if command -v node >/dev/null && [ -d "$HM_SRC/tests/js/node_modules/@huggingface/hub" ]; then
	nj=0
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "hfjs: ${line#ok - }"; nj=$((nj + 1)) ;;
		"not ok - "*) fail "hfjs: ${line#not ok - }"; nj=$((nj + 1)) ;;
		*) echo "# $line" ;;
		esac
	done < <(cd "$HM_SRC/tests/js" && timeout 120 node hfupload.mjs --hub-url "$M" --token "$W" --repo acme/js-model --size 140000000 --no-xet 2>&1)
	check "the JS client's run ran its checks ($nj)" test "$nj" -ge 5
else
	echo "# node or @huggingface/hub missing: the JS client's part is skipped"
fi

# The pushed repo on an instance: its torrent is made after the commit, and `pull` brings every file.
torrent_made() {
	local i
	for i in $(seq 1 60); do
		curl -fsS -H "Authorization: Bearer $W" "$M/api/p2p/torrent/hf/model/acme/up-model?meta=1" >"$T/meta.json" 2>/dev/null &&
			grep -q "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["c3"])' "$T/commits.json")" "$T/meta.json" && return 0
		sleep 0.5
	done
	return 1
}
check "the newest commit gets its torrent" torrent_made
pulled() {
	HUBMIRROR_TOKEN=hf_reader_acme_0002 "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" \
		--listen 127.0.0.1:0 hf:acme/up-model >/dev/null 2>"$T/pull.err" || { cat "$T/pull.err"; return 1; }
	local snap
	snap=$(echo "$T"/hfc/models--acme--up-model/snapshots/*)
	cmp "$snap/config.json" <(curl -fsS -H "Authorization: Bearer $W" "$M/acme/up-model/resolve/main/config.json") &&
		cmp "$snap/model.safetensors" <(curl -fsS -H "Authorization: Bearer $W" "$M/acme/up-model/resolve/main/model.safetensors") &&
		test ! -e "$snap/README.md"
}
check "an instance pulls the pushed repo, every byte" pulled
# A private repo's swarm is its grantees': its tracker refuses an announce without the key its .torrent
# carries (the info-hash alone opens nothing).
private_swarm_closed() {
	local i
	for i in $(seq 1 60); do
		curl -fsS -H "Authorization: Bearer $W" "$M/api/p2p/torrent/hf/dataset/acme/secret-data?meta=1" >"$T/pmeta.json" 2>/dev/null && break
		sleep 0.5
	done
	"$PY" - "$T/pmeta.json" "$M" <<'PY'
import json, sys, urllib.parse, urllib.request
meta, m = json.load(open(sys.argv[1])), sys.argv[2]
q = urllib.parse.urlencode({"info_hash": bytes.fromhex(meta["btih"]), "peer_id": b"-XX0001-abcdefghijkl", "port": 6881,
                            "uploaded": 0, "downloaded": 0, "left": 1})
body = urllib.request.urlopen(f"{m}/announce?{q}").read()
assert b"failure reason" in body, body
PY
}
check "a private local repo's swarm is closed to an announce without its key" private_swarm_closed


check "add refuses a local repo" bash -c "! '$HUBMIRROR' add hf:acme/up-model 2>'$T/add.err' && grep -q 'local namespace' '$T/add.err'"
check "sync of a local repo says there is no upstream" bash -c "! '$HUBMIRROR' sync hf:acme/up-model 2>'$T/sync.err' && grep -q 'no upstream' '$T/sync.err'"
check "the log names the writer, never the token" bash -c "grep -q 'upload.*acme/up-model.*by token@1' '$T/serve.err' && ! grep -q 'hf_writer_acme_0001' '$T/serve.err' '$T/access.log'"
check "on-demand patterns may not name a local namespace" bash -c "! '$HUBMIRROR' serve --local acme --on-demand 'hf:acme/*' --listen 127.0.0.1:0 2>'$T/od.err' && grep -q 'local namespace' '$T/od.err'"
# A bundle carries a local repo as local, with its history: imported elsewhere, the same commits (each
# checked against its id as it comes in), git clone shows the same log; a commit record changed on the
# way is refused.
bundle_carries() {
	local want got first=$M
	want=$(curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/up-model/commits/main" |
		"$PY" -c 'import json,sys; print(" ".join(c["id"] for c in json.load(sys.stdin)))') || return 1
	"$HUBMIRROR" export --output "$T/local.tar" hf:acme/up-model hf:datasets/acme/secret-data >/dev/null || return 1
	"$HUBMIRROR" import --data "$T/other" "$T/local.tar" >/dev/null || return 1
	"$HUBMIRROR" ls --data "$T/other" --json | "$PY" -c '
import json, sys
rows = {r["name"]: r for r in json.load(sys.stdin)}
assert "acme/up-model" in rows and "acme/secret-data" in rows, rows' || return 1
	"$HUBMIRROR" sync --data "$T/other" hf:acme/up-model 2>&1 | grep -q "no upstream" || return 1
	"$PY" - "$T/local.tar" "$T/tampered.tar" <<'PY' || return 1
import io, json, sys, tarfile
src, dst = sys.argv[1:3]
with tarfile.open(src) as t, tarfile.open(dst, "w", format=tarfile.PAX_FORMAT) as o:
    for m in t.getmembers():
        data = t.extractfile(m).read() if m.isfile() else None
        if m.name == "manifest.json":
            man = json.loads(data)
            for r in man["repos"]:
                for s in r["snapshots"]:
                    if "commit_meta" in s:
                        s["commit_meta"]["message"] = "rewritten\n"
            data = json.dumps(man).encode()
            m.size = len(data)
        o.addfile(m, io.BytesIO(data) if data is not None else None)
PY
	! "$HUBMIRROR" import --data "$T/third" "$T/tampered.tar" 2>"$T/tampered.err" && grep -q "not what its record makes" "$T/tampered.err" || { cat "$T/tampered.err"; return 1; }
	# served there: the same history, and git clone rebuilds the same commits
	start_serve --data "$T/other" --local acme --tokens "$T/tokens" --p2p-listen off || return 1
	got=$(curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/up-model/commits/$(cut -d' ' -f1 <<<"$want")" |
		"$PY" -c 'import json,sys; print(" ".join(c["id"] for c in json.load(sys.stdin)))')
	[ "$got" = "$want" ] || { echo "# imported history: $got; the original: $want"; return 1; }
	rm -rf "$T/clone2" && GIT_LFS_SKIP_SMUDGE=1 git -c credential.helper= clone -q "http://user:$W@${M#http://}/acme/up-model" \
		"$T/clone2" 2>/dev/null && got=$(git -C "$T/clone2" log --format=%H | tr '\n' ' ')
	M=$first # (the other serve runs on; the checks after this one ask the first)
	[ "$got" = "$want " ] || { echo "# git log there: $got"; return 1; }
}
check "a bundle carries local repos as local, each commit checked against its id" bundle_carries

# kill -9 mid-upload: an object half sent is nowhere, the branch is where it was, and after a restart
# the same upload goes through.
killed_mid_upload() {
	local pid=$serve_pid c3 blob="$T/big.bin" oid head cap
	c3=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["c3"])' "$T/commits.json") || return 1
	head -c 40000000 /dev/urandom >"$blob"
	oid=$(sha256sum "$blob" | cut -c1-64)
	curl -sS -o /dev/null --limit-rate 4M -X PUT -H "Authorization: Bearer $W" --data-binary @"$blob" \
		"$M/acme/up-model.git/info/lfs/objects/$oid" 2>/dev/null &
	local put=$!
	sleep 2
	kill -9 "$pid" && wait "$pid" 2>/dev/null
	wait "$put" 2>/dev/null
	test ! -e "$HUBMIRROR_DATA/store/blobs/${oid:0:2}/$oid" || { echo "# the half object is in the store"; return 1; }
	start_serve --local acme --tokens "$T/tokens" --p2p-listen off || return 1
	head=$(curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/up-model" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])')
	[ "$head" = "$c3" ] || { echo "# head $head, not $c3"; return 1; }
	HFU="$HM_SRC/tests/integration/helpers" "$PY" -c '
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api, HubError
m, w, blob = sys.argv[1:4]
api = Api(m, w)
data = open(blob, "rb").read()
try:
    api.commit("acme/up-model", [{"key": "lfsFile", "value": {"path": "big.bin", "algo": "sha256",
               "oid": __import__("hashlib").sha256(data).hexdigest(), "size": len(data)}}], "x")
    sys.exit("the half-sent object was committed")
except HubError as e:
    assert e.status == 422, e
ans, sent = api.upload_files("acme/up-model", [("big.bin", data)], summary="Big file")
assert sent == 1 and len(ans["commitOid"]) == 40, (sent, ans)
' "$M" "$W" "$blob" && cmp "$blob" <(curl -fsS -H "Authorization: Bearer $W" "$M/acme/up-model/resolve/main/big.bin")
}
check "kill -9 mid-upload: nothing half kept, the branch unmoved, the upload goes through after" killed_mid_upload

# A namespace's quota: what its repos hold, each content once; the Hub's 403 with the reason past it.
quota_holds() {
	start_serve --data "$T/qdata" --local acme --local-quota acme=5M --tokens "$T/tokens" --p2p-listen off || return 1
	HFU="$HM_SRC/tests/integration/helpers" "$PY" - "$M" "$W" <<'PY'
import hashlib, os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api, HubError
m, w = sys.argv[1:3]
api = Api(m, w)
a, b = hashlib.shake_256(b"a").digest(3 << 20), hashlib.shake_256(b"b").digest(3 << 20)
api.create_repo("acme/q1")
api.upload_files("acme/q1", [("a.bin", a)])
api.create_repo("acme/q2")
ans, sent = api.upload_files("acme/q2", [("same.bin", a)])  # the same content: the namespace holds it
# sent again (acme's models are guarded by hf_reader's acme/*: only a repo everyone reads gives its
# contents away by their sha256), and counted once
assert sent == 1 and len(ans["commitOid"]) == 40, (sent, ans)
try:
    api.upload_files("acme/q2", [("b.bin", b)])
    sys.exit("3 MiB more went past a 5 MiB quota")
except HubError as e:
    assert e.status == 403 and b"quota of namespace acme" in e.body, (e.status, e.body)
try:  # a small file inline, past the quota too
    api.commit("acme/q2", [{"key": "file", "value": {"content": __import__("base64").b64encode(b).decode(),
                                                     "path": "b.txt", "encoding": "base64"}}], "x")
    sys.exit("an inline file went past the quota")
except HubError as e:
    assert e.status == 403 and "quota" in e.headers.get("X-Error-Message", ""), (e.status, e.headers)
PY
}
check "a local namespace's quota: its contents once each, 403 past it (batch and commit)" quota_holds


finish
