#!/usr/bin/env bash
# t0847-upload-names-guarded: a writer names a content by its sha256 only when a repo everyone may read
# here holds it (docs/uploads.md, "Large files and the store"; mirror_access_may_name). An attacker
# with a write grant for namespace evil only names, in its own public repo, the sha256 of a file of
# an upstream repo a token line guards, of a public local repo under a read grant (research/*), of a
# private local repo of another namespace and of a gated upstream repo the operator did not open, by
# each door: the commit API's lfsFile (422), the Git LFS batch (an upload action, not "already
# there") and its verify (404), and git push with a Git LFS pointer (refused by the hook, in its own
# process, with the tokens file serve names). None of those bytes is readable through evil's repo,
# and the guarded contents are unchanged in the store. A content of a repo everyone reads is named
# without an upload by every door.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"approved": ["corp/gated"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "pub/open", "files": [{"path": "open.bin", "size": 200000, "seed": 1}]},
  {"hub": "hf", "type": "model", "id": "team/guarded", "files": [{"path": "guarded.bin", "size": 200000, "seed": 2}]},
  {"hub": "hf", "type": "model", "id": "corp/gated", "gated": "manual", "files": [{"path": "gated.bin", "size": 200000, "seed": 3}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:pub/open hf:team/guarded hf:corp/gated >/dev/null
check "the upstream repos sync (the gated one with an approved token)" env HF_TOKEN=hf_ok "$HUBMIRROR" sync --no-progress
cat >"$T/tokens" <<'TOK'
tok-acme-writer-01 hf:acme/*:write
tok-evil-writer-01 hf:evil/*:write
tok-research-rw-01 hf:research/*:write
tok-research-rd-01 hf:research/*
tok-team-reader-01 hf:team/guarded
TOK
chmod 600 "$T/tokens"
check "serve starts" start_serve --local acme,evil,research --tokens "$T/tokens" --p2p-listen off || finish
command -v git >/dev/null || skip "git is not installed"

"$PY" - "$M" "$HM_SRC/tests/integration/helpers" "$T" <<'PY' || fail "the world is made"
import hashlib, json, sys
sys.path.insert(0, sys.argv[2])
from hfupload import Api
m, t = sys.argv[1], sys.argv[3]
acme, research, evil = Api(m, "tok-acme-writer-01"), Api(m, "tok-research-rw-01"), Api(m, "tok-evil-writer-01")
secret = hashlib.shake_256(b"acme's private weights").digest(200000)
acme.create_repo("acme/secret", private=True)
acme.upload_files("acme/secret", [("secret.bin", secret)])
research_bytes = hashlib.shake_256(b"research's guarded weights").digest(200000)
research.create_repo("research/model")
research.upload_files("research/model", [("research.bin", research_bytes)])
evil.create_repo("evil/thief")


def lfs_oid(repo, path, token):
    tree = Api(m, token).request("GET", f"/api/models/{repo}/tree/main")
    return [e["lfs"]["oid"] for e in tree if e["path"] == path][0]


json.dump({"open": lfs_oid("pub/open", "open.bin", None),
           "guarded upstream": lfs_oid("team/guarded", "guarded.bin", "tok-team-reader-01"),
           "guarded local": lfs_oid("research/model", "research.bin", "tok-research-rd-01"),
           "private local": lfs_oid("acme/secret", "secret.bin", "tok-acme-writer-01"),
           "gated": lfs_oid("corp/gated", "gated.bin", None)}, open(t + "/oids.json", "w"))
PY
oid() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$T/oids.json" "$1"; }
store_blob() { echo "$HUBMIRROR_DATA/store/blobs/${1:0:2}/$1"; }
check "the five contents are in the store" bash -c "for k in open 'guarded upstream' 'guarded local' 'private local' gated; do
	o=\$('$PY' -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' '$T/oids.json' \"\$k\"); test -f '$HUBMIRROR_DATA'/store/blobs/\${o:0:2}/\$o || exit 1; done"

# the commit API and the Git LFS batch and verify, by the attacker (helpers/hfupload.py's requests)
"$PY" - "$M" "$HM_SRC/tests/integration/helpers" "$T/oids.json" <<'PY' >"$T/api.out" 2>&1
import json, sys
sys.path.insert(0, sys.argv[2])
from hfupload import Api, HubError, LFS_HEADERS
m, oids = sys.argv[1], json.load(open(sys.argv[3]))
evil = Api(m, "tok-evil-writer-01")
for what, oid in oids.items():
    want = "named" if what == "open" else "refused"
    path = what.replace(" ", "-") + ".bin"
    try:
        evil.commit("evil/thief", [{"key": "lfsFile", "value": {"path": path, "algo": "sha256", "oid": oid,
                                                                 "size": 200000}}], summary="take " + what)
        got = "named"
    except HubError as e:
        got = "refused" if e.status == 422 else f"status {e.status}"
    print(("ok - " if got == want else "not ok - ") + f"commit API, lfsFile naming the {what} content: {got}")
    batch = evil.request("POST", f"{m}/evil/thief.git/info/lfs/objects/batch", json.dumps(
        {"operation": "upload", "transfers": ["basic"], "objects": [{"oid": oid, "size": 200000}],
         "hash_algo": "sha256"}).encode(), LFS_HEADERS)
    actions = batch["objects"][0].get("actions") or {}
    got = "upload" if "upload" in actions else "already there"
    want = "already there" if what == "open" else "upload"
    print(("ok - " if got == want else "not ok - ") + f"LFS batch for the {what} content: {got}")
    try:
        evil.request("POST", f"{m}/evil/thief.git/info/lfs/objects/{oid}",
                     json.dumps({"oid": oid, "size": 200000}).encode(), LFS_HEADERS)
        got = 200
    except HubError as e:
        got = e.status
    want = 200 if what == "open" else 404
    print(("ok - " if got == want else "not ok - ") + f"LFS verify of the {what} content: {got}")
PY
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "${line#ok - }" ;;
	"not ok - "*) fail "${line#not ok - }" ;;
	*) echo "# $line" ;;
	esac
done <"$T/api.out"

# git push: a commit whose file is a Git LFS pointer to the content, pushed by plain git (no git-lfs:
# the object is never sent); the hook refuses it unless the repo may name it
export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 HOME="$T/home"
mkdir -p "$HOME"
git config --global user.name Eve && git config --global user.email eve@example.com &&
	git config --global credential.helper "" && git config --global init.defaultBranch main
check "the attacker clones its repo" git clone -q "http://u:tok-evil-writer-01@${M#http://}/evil/thief" "$T/thief"
push_pointer() { # push_pointer WHAT: 0 when the push went through
	local what=$1 o
	o=$(oid "$what")
	git -C "$T/thief" fetch -q origin && git -C "$T/thief" reset -q --hard origin/main || return 2
	printf 'version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize 200000\n' "$o" >"$T/thief/${what// /-}.push.bin"
	git -C "$T/thief" add -A && git -C "$T/thief" commit -q -m "push $what" || return 2
	git -C "$T/thief" push -q origin main 2>"$T/push.err"
}
for what in "guarded upstream" "guarded local" "private local" gated; do
	push_pointer "$what"
	st=$?
	check "git push of a pointer to the $what content: refused by the hook" \
		bash -c "[ $st = 1 ] && grep -q 'was not uploaded to this repository' '$T/push.err'"
done
check "git push of a pointer to the open content goes through" push_pointer open

# what evil's repo holds: the open content, and none of the others' bytes
check "evil's repo serves the open content under the names it gave it" bash -c "
	curl -fsS '$M/evil/thief/resolve/main/open.bin' | sha256sum | grep -q '^$(oid open) ' &&
	curl -fsS '$M/evil/thief/resolve/main/open.push.bin' | sha256sum | grep -q '^$(oid open) '"
"$PY" - "$M" "$T/oids.json" >"$T/files.out" <<'PY'
import hashlib, json, sys, urllib.request
m, oids = sys.argv[1], json.load(open(sys.argv[2]))
tree = json.load(urllib.request.urlopen(m + "/api/models/evil/thief/tree/main?recursive=true"))
for e in tree:
    if e["type"] == "file":
        data = urllib.request.urlopen(f"{m}/evil/thief/resolve/main/{e['path']}").read()
        print(e["path"], hashlib.sha256(data).hexdigest(), e.get("lfs", {}).get("oid", "-"))
PY
for what in "guarded upstream" "guarded local" "private local" gated; do
	check "no file of evil's repo is (or names) the $what content" bash -c "! grep -q '$(oid "$what")' '$T/files.out'"
	check "... whose bytes in the store are still its own" bash -c "sha256sum '$(store_blob "$(oid "$what")")' | grep -q '^$(oid "$what") '"
done
check "the guarded upstream file is still closed to anonymous clients" \
	test "$(curl -s -o /dev/null -w '%{http_code}' "$M/team/guarded/resolve/main/guarded.bin")" = 401
finish
