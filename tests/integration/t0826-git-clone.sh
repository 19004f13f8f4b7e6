#!/usr/bin/env bash
# t0826-git-clone: every mirrored repo clones over HTTP with the real git and git-lfs. A Hugging Face
# model, a dataset and a ModelScope model clone (with and without .git) and their files are
# upstream's, byte for byte, large ones through Git LFS's batch API (also GIT_LFS_SKIP_SMUDGE=1 and
# then `git lfs pull`); every blob id matches upstream's tree (regular files and LFS pointers alike);
# the commit is deterministic (a rebuilt repository gives the same id); a shallow clone works; a
# fetch after an upstream commit brings only what changed; a repo behind a token is refused without
# it and clones with http://user:TOKEN@...; pushes, the dumb protocol, path tricks, an oversized
# want list and LFS objects of another repo are refused; the token reaches no log.
. "$HM_SRC/tests/integration/lib.sh"
command -v git >/dev/null && git lfs version >/dev/null 2>&1 || skip "git and git-lfs are not installed (bash .ci/setup installs them)"
"$PY" - "$T/spec.json" <<'PY'
import json, sys
json.dump({"repos": [
    {"hub": "hf", "type": "model", "id": "acme/gitmodel",
     "files": [{"path": "config.json", "content": "{\"hidden_size\": 64}\n"},
               {"path": "model.safetensors", "size": 3000000, "seed": 81},
               {"path": "sub/dir/notes.md", "content": "# notes\n"},
               {"path": "tokenizer.json", "size": 40000, "seed": 82}]},
    {"hub": "hf", "type": "dataset", "id": "acme/gitdata",
     "files": [{"path": "data/train.parquet", "size": 1500000, "seed": 83},
               {"path": "README.md", "content": "# data\n"}]},
    {"hub": "ms", "type": "model", "id": "acme/ms-git",
     "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
               {"path": "weights.bin", "size": 2000000, "seed": 84}]},
    {"hub": "hf", "type": "model", "id": "acme/guarded",
     "files": [{"path": "config.json", "content": "{\"guarded\": true}\n"},
               {"path": "w.bin", "size": 1000000, "seed": 85}]},
]}, open(sys.argv[1], "w"))
PY
check "synced" sync_from_fake hf:acme/gitmodel hf:datasets/acme/gitdata ms:acme/ms-git hf:acme/guarded
printf 'tok-gitgitgit hf:acme/guarded\n' >"$T/tokens"; chmod 600 "$T/tokens"
check "serve starts" start_serve --tokens "$T/tokens" --p2p-listen off
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
# git and git-lfs of their own: no user or system configuration
export HOME="$T/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
mkdir -p "$HOME"
git config --global user.email t@example.invalid && git config --global user.name t
check "git lfs install" git lfs install --skip-repo
files() { "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" "$@"; }

check "git clone of a model, large files through LFS" git clone -q "$M/acme/gitmodel" "$T/c1"
check "... every file is upstream's" files hf acme/gitmodel "$T/c1"
check "... every blob id is upstream's (regular files, and the LFS pointers)" "$PY" - "$T/c1" "$FAKE_API/api/models/acme/gitmodel/tree/main?recursive=true" <<'PY'
import json, subprocess, sys, urllib.request
ours = {}
for line in subprocess.run(["git", "-C", sys.argv[1], "ls-tree", "-r", "HEAD"], capture_output=True, text=True).stdout.splitlines():
    meta, path = line.split("\t", 1)
    ours[path] = meta.split()[2]
theirs = {e["path"]: e["oid"] for e in json.load(urllib.request.urlopen(sys.argv[2])) if e["type"] == "file"}
assert ours == theirs, (ours, theirs)
PY
check "a .git URL, GIT_LFS_SKIP_SMUDGE=1: pointers first" env GIT_LFS_SKIP_SMUDGE=1 git clone -q "$M/acme/gitmodel.git" "$T/c2"
check "... the large file is its pointer" grep -q '^version https://git-lfs.github.com/spec/v1' "$T/c2/model.safetensors"
check "... git lfs pull brings the bytes" git -C "$T/c2" lfs pull
check "... then every file is upstream's" files hf acme/gitmodel "$T/c2"
check "a dataset clones" git clone -q "$M/datasets/acme/gitdata" "$T/c3"
check "... every file is upstream's" files hf acme/gitdata "$T/c3"
check "a ModelScope model clones at its own URL shape" git clone -q "$M/acme/ms-git.git" "$T/c4"
check "... every file is upstream's" files ms acme/ms-git "$T/c4"
check "a shallow clone" git clone -q --depth 1 "$M/acme/gitmodel" "$T/c5"
check "... has the one commit, the same as the full clone's" test "$(git -C "$T/c5" rev-parse HEAD)" = "$(git -C "$T/c1" rev-parse HEAD)"
# the same snapshot, the same commit: built again from nothing
head1=$(git -C "$T/c1" rev-parse HEAD)
rm -rf "$T/data/git"
check "a repository built again from nothing clones" git clone -q "$M/acme/gitmodel" "$T/c6"
check "... to the same commit id" test "$(git -C "$T/c6" rev-parse HEAD)" = "$head1"

# a fetch after an upstream commit brings only what changed
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/gitmodel", "hub": "hf", "type": "model", "branch": "main",
  "title": "v2", "files": [{"path": "config.json", "content": "{\"hidden_size\": 128}\n"}]}' >/dev/null
check "the mirror syncs the new commit" "$HUBMIRROR" sync --no-progress hf:acme/gitmodel
before=$(git -C "$T/c1" count-objects -v | awk '/^count:/ { c = $2 } /^in-pack:/ { p = $2 } END { print c + p }')
check "git fetch gets the new snapshot" git -C "$T/c1" fetch -q origin
after=$(git -C "$T/c1" count-objects -v | awk '/^count:/ { c = $2 } /^in-pack:/ { p = $2 } END { print c + p }')
echo "# objects: $before before the fetch, $after after"
check "... only what changed: a commit, its root tree and the new blob" test $((after - before)) -eq 3
check "... and reset to it, the new config" bash -c "git -C '$T/c1' reset -q --hard origin/main && grep -q 128 '$T/c1/config.json'"

# tokens
check "a guarded repo is refused without a token" bash -c "! git clone -q '$M/acme/guarded' '$T/c7' 2>'$T/c7.err'"
check "... with git's own words for it" grep -qi "authentication failed\|could not read Username\|401" "$T/c7.err"
hostport=${M#http://}
check "... and clones with http://user:TOKEN@" git clone -q "http://git:tok-gitgitgit@$hostport/acme/guarded" "$T/c8"
check "... every file is upstream's" files hf acme/guarded "$T/c8"
check "the token reaches no log" bash -c "! grep -rq 'tok-gitgitgit' '$T/access.log' '$T/serve.err'"

# refusals
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
check "no push" bash -c "cd '$T/c1' && echo x >x && git add x && git commit -qm x && ! git push -q origin HEAD:main 2>/dev/null"
check "... receive-pack answers 403" test "$(code "$M/acme/gitmodel.git/info/refs?service=git-receive-pack")" = 403
check "the dumb protocol is not served" test "$(code "$M/acme/gitmodel.git/info/refs")" = 403
check "path tricks find nothing" bash -c "for p in '/acme/../acme/gitmodel.git/info/refs' '/%2e%2e/gitmodel.git/info/refs' '/acme/%2e%2e%2fgitmodel/info/refs' '/x/y/z/acme/gitmodel.git/info/refs'; do c=\$(curl -s -o /dev/null -w '%{http_code}' --path-as-is '$M'\"\$p?service=git-upload-pack\"); [ \"\$c\" = 404 ] || { echo \"\$p: \$c\"; exit 1; }; done"
head -c 3000000 /dev/zero | tr '\0' 'w' >"$T/huge"
check "an oversized want list is refused before git sees it" test "$(code -X POST -H 'Content-Type: application/x-git-upload-pack-request' --data-binary @"$T/huge" "$M/acme/gitmodel.git/git-upload-pack")" = 413
head -c 80000000 /dev/zero | gzip -9 >"$T/bomb.gz"
echo "# a gzip'd request of $(stat -c %s "$T/bomb.gz") bytes that inflates to 80 MB"
check "a gzip'd request that inflates past 10 MiB is refused before git sees it" test "$(code -X POST -H 'Content-Type: application/x-git-upload-pack-request' \
	-H 'Content-Encoding: gzip' --data-binary @"$T/bomb.gz" "$M/acme/gitmodel.git/git-upload-pack")" = 413
# four bombs, four sparse clones and four full clones at once: repo info and stats answer meanwhile
gpids=()
for i in 1 2 3 4; do
	curl -s -o /dev/null -X POST -H 'Content-Type: application/x-git-upload-pack-request' -H 'Content-Encoding: gzip' \
		--data-binary @"$T/bomb.gz" "$M/acme/gitmodel.git/git-upload-pack" & gpids+=($!)
	git clone -q --filter=sparse:oid=HEAD:config.json "$M/acme/gitmodel" "$T/sp$i" 2>/dev/null & gpids+=($!)
	GIT_LFS_SKIP_SMUDGE=1 git clone -q "$M/acme/gitmodel" "$T/full$i" 2>/dev/null & gpids+=($!)
done
info=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$M/api/models/acme/gitmodel")
stats=$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$M/api/catalog/stats")
wait "${gpids[@]}"
check "repo info and stats answer while git runs and bombs come in ($info $stats)" test "$info$stats" = 200200
check "... and the full clones all completed" bash -c "for i in 1 2 3 4; do [ -f '$T/full'\$i/config.json ] || exit 1; done"
check "a sparse:oid filter (its cost is paths times patterns) is refused, git saying why" bash -c \
	"! git clone -q --filter=sparse:oid=HEAD:config.json '$M/acme/gitmodel' '$T/sparse' 2>'$T/sparse.err' &&
	grep -q 'remote error: sparse:oid filters are not served' '$T/sparse.err'"
check "... also inside a combine: filter" bash -c \
	"! git clone -q --filter=combine:blob:none+sparse:oid=HEAD:config.json '$M/acme/gitmodel' '$T/sparse2' 2>'$T/sparse2.err' &&
	grep -q 'remote error: sparse:oid filters' '$T/sparse2.err'"
pkt() { printf '%04x%s' $(( ${#1} + 4 )) "$1"; }
{ pkt "command=fetch"; printf 0001; pkt "want nothex"; printf 0000; } >"$T/badpkt"
check "a request whose pkt-lines are malformed is refused before git sees it (400)" \
	test "$(code -X POST -H 'Content-Type: application/x-git-upload-pack-request' -H 'Git-Protocol: version=2' --data-binary @"$T/badpkt" "$M/acme/gitmodel.git/git-upload-pack")" = 400
printf '00zzwant' >"$T/badlen"
check "... and one whose length is not hex (400)" \
	test "$(code -X POST -H 'Content-Type: application/x-git-upload-pack-request' --data-binary @"$T/badlen" "$M/acme/gitmodel.git/git-upload-pack")" = 400
sed 's/^/# /' "$T/sparse.err"
check "a blob:none partial clone still works" git clone -q --filter=blob:none "$M/acme/gitmodel" "$T/partial"
other=$("$PY" -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["repos"] if x["id"]=="acme/gitdata"][0]; c=[c for c in r["commits"] if c["id"]==r["sha"]][0]; print([f for f in c["files"] if f["path"]=="data/train.parquet"][0]["sha256"])' "$T/up.json")
curl -fsS -X POST -H 'Content-Type: application/vnd.git-lfs+json' -d "{\"operation\": \"download\", \"objects\": [{\"oid\": \"$other\", \"size\": 1500000}]}" \
	"$M/acme/gitmodel.git/info/lfs/objects/batch" >"$T/batch.json"
check "LFS: another repo's object is not this one's" "$PY" -c 'import json,sys; o=json.load(open(sys.argv[1]))["objects"][0]; assert o["error"]["code"] == 404 and "actions" not in o, o' "$T/batch.json"
check "... nor served by its object URL" test "$(code "$M/acme/gitmodel.git/info/lfs/objects/$other")" = 404
check "LFS: uploads are refused" test "$(code -X POST -H 'Content-Type: application/vnd.git-lfs+json' -d '{"operation": "upload", "objects": []}' "$M/acme/gitmodel.git/info/lfs/objects/batch")" = 403
# gc: a repo no longer tracked loses its git repository; the others keep cloning
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json" # upstream as it is now
check "the ModelScope repo clones (its git repository is built)" git clone -q "$M/acme/ms-git" "$T/c10"
check "... there" test -d "$T/data/git/ms/model/acme/ms-git.git"
check "untracked and collected" bash -c "'$HUBMIRROR' remove ms:acme/ms-git >/dev/null && '$HUBMIRROR' gc >'$T/gc.out' && grep -q '1 git repository' '$T/gc.out'"
check "... its git repository is gone" test ! -e "$T/data/git/ms/model/acme/ms-git.git"
check "... and it clones no more" test "$(code "$M/acme/ms-git.git/info/refs?service=git-upload-pack")" = 404
check "the others still clone after gc" git clone -q "$M/acme/gitmodel" "$T/c9"
check "... every file is upstream's" files hf acme/gitmodel "$T/c9"
finish
