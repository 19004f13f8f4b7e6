#!/usr/bin/env bash
# t0848-upload-file-and-folder: a commit that would make one path both a file and a folder is refused
# (docs/uploads.md; found by tests/fuzz/fuzz-gitcommit in the tree writer the commit API and git push
# both rebuild a commit's tree with). The conflict was seen only when the folder's paths came right
# after the file in sort order, so "sub" next to "sub/dir/a.txt" was refused but not with "sub.txt"
# or "sub-x" sorting between them: such a commit was recorded, a snapshot no mount, torrent or git
# clone can hold. Both ways are refused now, in one commit and across two, and the branch stays
# where it was.
. "$HM_SRC/tests/integration/lib.sh"

cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
TOK
chmod 600 "$T/tokens"
check "serve starts with a local namespace" start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish

HFU="$HM_SRC/tests/integration/helpers" "$PY" - "$M" hf_writer_acme_0001 >"$T/out" 2>&1 <<'PY'
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api, HubError
m, w = sys.argv[1:3]
api = Api(m, w)

def head(repo):
    return api.request("GET", f"/api/models/{repo}")["sha"]

def refused(repo, files, what):
    before = head(repo)
    try:
        api.upload_files(repo, files)
        print(f"not ok - {what}: committed")
        return
    except HubError as e:
        ok = 400 <= e.status < 500 and b"both a file and a folder" in e.body + str(e.headers).encode()
        print(f"{'ok' if ok else 'not ok'} - {what}: {e.status}")
    tree = api.request("GET", f"/api/models/{repo}/tree/main?recursive=true")
    paths = [f["path"] for f in tree if f["type"] == "file"]
    print(f"{'ok' if head(repo) == before and 'sub' not in paths else 'not ok'} - {what}: the branch did not move")

api.create_repo("acme/conflict")
api.upload_files("acme/conflict", [("README.md", b"---\nlicense: mit\n---\n")])
refused("acme/conflict", [("sub", b"a file\n"), ("sub/dir/a.txt", b"a\n")], "sub and sub/dir/a.txt, adjacent")
refused("acme/conflict", [("sub", b"a file\n"), ("sub.txt", b"t\n"), ("sub-x", b"x\n"), ("sub/dir/a.txt", b"a\n")],
        "sub and sub/dir/a.txt with sub-x and sub.txt between them, in one commit")
api.upload_files("acme/conflict", [("sub.txt", b"t\n"), ("sub/dir/a.txt", b"a\n")])
print("ok - sub.txt and sub/dir/a.txt are committed")
refused("acme/conflict", [("sub", b"a file\n")], "sub added next to sub.txt and sub/dir/a.txt, in a second commit")
PY
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "${line#ok - }" ;;
	"not ok - "*) fail "${line#not ok - }" ;;
	*) echo "# $line" ;;
	esac
done <"$T/out"
check "the scenario ran to the end" grep -q "in a second commit: the branch" "$T/out"
finish
