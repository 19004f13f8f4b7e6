#!/usr/bin/env bash
# t0843-upload-faults: the write side under faults it must survive without a hand to help.
#  - serve killed inside create_repo, between its repo row and its first commit (the test hook
#    HUBMIRROR_TEST_KILL=create-repo, tests/README.md): after a restart, huggingface_hub's retry
#    (create_repo with exist_ok=True, then upload_file) lands, and the repo reads whole;
#  - a repo without any commit, as an older version left one killed there: create_repo takes it
#    over, and the same retry lands;
#  - a full disk (a small tmpfs as the data folder): create_repo, a commit, git clone and git push
#    answer 507 with the reason; a failed build of the git cache leaves no folder for gc to warn
#    about; once there is room, all of them work without a restart;
#  - a local repo's content lost from the store: verify says it is lost, names the commits that name
#    it, and advises no sync (no upstream has it).
. "$HM_SRC/tests/integration/lib.sh"

cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write hf:datasets/acme/*:write
TOK
chmod 600 "$T/tokens"
W=hf_writer_acme_0001
HFU="$HM_SRC/tests/integration/helpers"
export HFU

# huggingface_hub's retry after a failed run: create_repo(exist_ok=True), then upload_file (preupload,
# the commit), as the SDK sends them; the file reads back whole.
sdk_retry() {
	"$PY" - "$M" "$W" "$1" <<'PY'
import os, sys, urllib.request
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
m, w, repo = sys.argv[1:4]
api = Api(m, w)
api.create_repo(repo, exist_ok=True)
data = b'{"retried": true}\n'
ans, _ = api.upload_files(repo, [("config.json", data)], summary="Upload config.json with huggingface_hub")
assert len(ans["commitOid"]) == 40, ans
info = api.request("GET", f"/api/models/{repo}")
assert info["sha"] == ans["commitOid"], (info["sha"], ans)
assert sorted(s["rfilename"] for s in info["siblings"]) == [".gitattributes", "config.json"], info["siblings"]
got = api.request("GET", f"/{repo}/resolve/main/config.json", raw=True)
assert got == data, got
PY
}

# ---- a kill inside create_repo ---------------------------------------------------------------------
HUBMIRROR_TEST_KILL=create-repo start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish
serve_pid=${_pids[-1]}
killed_inside_create() {
	"$PY" - "$M" "$W" <<'PY'
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api, HubError
try:
    Api(sys.argv[1], sys.argv[2]).create_repo("acme/crashed")
except HubError as e:
    sys.exit(f"answered {e.status}: serve was to die inside create_repo")
except Exception:
    pass  # the connection dropped: serve died
else:
    sys.exit("create_repo was answered: serve was to die inside it")
PY
	[ $? = 0 ] || { kill "$serve_pid"; wait "$serve_pid"; return 1; }
	wait "$serve_pid"
	[ $? = 137 ] # SIGKILL
}
check "serve is killed inside create_repo (the test hook)" killed_inside_create
check "serve starts again" start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish
check "huggingface_hub's retry (create_repo exist_ok, upload_file) lands" sdk_retry acme/crashed

# An older version made the repo and its first commit in two transactions: one killed between them
# left a repo without any commit. Made so here by hand, then the same retry.
old_leftover() {
	"$PY" - "$M" "$W" <<'PY' || return 1
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
Api(sys.argv[1], sys.argv[2]).create_repo("acme/wedged")
PY
	"$PY" - "$HUBMIRROR_DATA/catalog.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA foreign_keys = ON")
rid = db.execute("SELECT id FROM repos WHERE name = 'acme/wedged'").fetchone()[0]
db.execute("DELETE FROM refs WHERE repo_id = ?", (rid,))
db.execute("DELETE FROM snapshots WHERE repo_id = ?", (rid,))
db.commit()
PY
}
check "a repo without a commit, as an older version's crash left it" old_leftover
check "create_repo takes it over, and the retry lands" sdk_retry acme/wedged
check "a repo with commits is still taken (409)" bash -c "test \"\$(curl -sS -o /dev/null -w '%{http_code}' -X POST \
	-H 'Authorization: Bearer $W' -H 'Content-Type: application/json' -d '{\"name\":\"wedged\",\"organization\":\"acme\"}' \
	$M/api/repos/create)\" = 409"

# ---- a full disk -----------------------------------------------------------------------------------
mkdir -p "$T/small"
if ! mount -t tmpfs -o size=16m tmpfs "$T/small" 2>"$T/mount.err"; then
	ok "a full disk # SKIP cannot mount a tmpfs: $(cat "$T/mount.err")"
	finish
fi
trap 'umount -l "$T/small" 2>/dev/null; _cleanup' EXIT
export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 HOME="$T/home"
mkdir -p "$HOME"
git config --global user.name "Ann Dev" && git config --global user.email ann@example.com &&
	git config --global credential.helper "" && git config --global init.defaultBranch main
check "serve starts on a 16 MB disk" start_serve --data "$T/small" --local acme --tokens "$T/tokens" --p2p-listen off ||
	finish
url() { echo "http://user:$W@${M#http://}/acme/$1"; }
before_full() {
	"$PY" - "$M" "$W" <<'PY' || return 1
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
api = Api(sys.argv[1], sys.argv[2])
api.create_repo("acme/d1")
api.create_repo("acme/d2")
api.upload_files("acme/d1", [("a.txt", b"a\n")])
PY
	git clone -q "$(url d1)" "$T/w1" && echo b >"$T/w1/b.txt" && git -C "$T/w1" add b.txt &&
		git -C "$T/w1" commit -qm b && git -C "$T/w1" push -q origin main 2>"$T/push0.err" # (git's hook written)
}
check "repos made, cloned and pushed to while there is room" before_full
dd if=/dev/zero of="$T/small/filler" bs=64k 2>/dev/null
check "the disk is full" test "$(df --output=avail "$T/small" | tail -1)" -lt 64
full_api() {
	"$PY" - "$M" "$W" <<'PY'
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api, HubError
api = Api(sys.argv[1], sys.argv[2])
for what, call in (("create_repo", lambda: api.create_repo("acme/d3")),
                   ("a commit", lambda: api.upload_files("acme/d1", [("c.txt", b"c\n")]))):
    try:
        call()
        sys.exit(f"{what} went through on a full disk")
    except HubError as e:
        msg = e.headers.get("X-Error-Message", "")
        assert e.status == 507 and msg.startswith("No space left on the mirror's disk"), (what, e.status, e.body)
        print(f"# {what}: {e.status} {msg}")
PY
}
check "create_repo and a commit answer 507 with the reason" full_api
# git prints a text/plain answer's lines as "remote: ..."
git_full() { # git_full OUT ARGS...: git fails, saying the mirror's disk is full
	local out=$1
	shift
	! git "$@" >"$out" 2>&1 && grep -q "remote: No space left on the mirror's disk" "$out" && grep -q 507 "$out" ||
		{ sed 's/^/# /' "$out"; return 1; }
}
check "git clone of a built repository: 507, the reason said" git_full "$T/clone1.err" clone -q "$(url d1)" "$T/c1"
check "git clone of one never built: 507, the reason said" git_full "$T/clone2.err" clone -q "$(url d2)" "$T/c2"
check "the failed git init left no folder behind" test ! -e "$T/small/git/hf/model/acme/d2.git"
push_full() {
	echo c >"$T/w1/c.txt" && git -C "$T/w1" add c.txt && git -C "$T/w1" commit -qm c &&
		git_full "$T/push1.err" -C "$T/w1" push -q origin main
}
check "git push: 507, the reason said" push_full
rm -f "$T/small/filler"
check "with room again, gc warns about nothing in the git cache" bash -c "'$HUBMIRROR' gc --data '$T/small' \
	>/dev/null 2>'$T/gc.err' && ! grep -q warn '$T/gc.err' || { sed 's/^/# /' '$T/gc.err'; false; }"
room_again() {
	"$PY" - "$M" "$W" <<'PY' || return 1
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
api = Api(sys.argv[1], sys.argv[2])
api.create_repo("acme/d3")
api.upload_files("acme/d3", [("c.txt", b"c\n")])
PY
	git clone -q "$(url d2)" "$T/c2" && git clone -q "$(url d1)" "$T/c1" && git -C "$T/w1" push -q origin main
}
check "with room again, all of them work (no restart)" room_again

# ---- a local repo's content lost ---------------------------------------------------------------------
head -c 300000 /dev/urandom >"$T/big.bin"
lost_setup() {
	"$PY" - "$M" "$W" "$T/big.bin" >"$T/lost.commits" <<'PY' || return 1
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
api = Api(sys.argv[1], sys.argv[2])
big = open(sys.argv[3], "rb").read()
a, sent = api.upload_files("acme/d3", [("big.bin", big)])
b, _ = api.upload_files("acme/d3", [("d.txt", b"d\n")])
assert sent == 1
print(a["commitOid"], b["commitOid"])
PY
	local sha
	sha=$(sha256sum "$T/big.bin" | cut -c1-64)
	rm "$T/small/store/blobs/${sha:0:2}/$sha"
}
check "a local repo's content gone from the store" lost_setup
verify_says_lost() {
	local c1 c2
	read -r c1 c2 <"$T/lost.commits"
	! "$HUBMIRROR" verify --data "$T/small" >"$T/verify.out" 2>/dev/null || return 1
	sed 's/^/# /' "$T/verify.out"
	grep -q "^lost .*no upstream has it" "$T/verify.out" && grep -q "hf:acme/d3@$c1" "$T/verify.out" &&
		grep -q "hf:acme/d3@$c2" "$T/verify.out" && ! grep -q "hubmirror sync" "$T/verify.out" &&
		"$HUBMIRROR" verify --data "$T/small" --json 2>/dev/null | "$PY" -c '
import json, sys
o = json.load(sys.stdin)
assert o["lost"] == 1 and o["damaged"][0]["lost"] and len(o["damaged"][0]["local_commits"]) == 2, o'
}
check "verify says the content is lost, names the commits, advises no sync" verify_says_lost
reupload_heals() {
	local c1
	read -r c1 _ <"$T/lost.commits"
	"$PY" - "$M" "$W" "$T/big.bin" <<'PY' && cmp "$T/big.bin" <(curl -fsS -H "Authorization: Bearer $W" "$M/acme/d3/resolve/$c1/big.bin")
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
Api(sys.argv[1], sys.argv[2]).upload_files("acme/d1", [("again.bin", open(sys.argv[3], "rb").read())])
PY
}
check "the same bytes uploaded again make the old commit whole" reupload_heals

# serve ends cleanly (under the sanitizers: no report, no leak)
check "serve stops cleanly, no sanitizer report" serve_stops_clean
finish
