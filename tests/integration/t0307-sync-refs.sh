#!/usr/bin/env bash
# t0307-sync-refs: the refs a repo mirrors besides the followed one (add --refs). By default every
# tag (and a dataset's refs/convert/parquet), each served by name and by commit on both hubs, content
# shared with the followed snapshot fetched once, a tag at a commit the mirror holds costing no
# request; --refs default keeps the followed revision only; --refs NAMES follows named branches and
# reports names upstream lacks. Upstream's refs are listed when the followed snapshot changed, weekly,
# or with sync --check-refs: a tag made on an old commit appears then, a tag deleted upstream is
# dropped (its snapshot still answers by commit), a moved tag follows. An unchanged night stays one
# request per repo. Bad --refs values are refused.
. "$HM_SRC/tests/integration/lib.sh"
hm() { "${HM_ASAN:-$HUBMIRROR}" "$@"; }
is_status() { test "$(curl -s -o /dev/null -w '%{http_code}' "$2")" = "$1"; }

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/rel",
   "commits": [{"key": "c1", "files": [{"path": "w.txt", "content": "one\n"},
                                       {"path": "model.safetensors", "size": 300000, "seed": 11}]},
               {"key": "c2", "parent": "c1", "files": [{"path": "w.txt", "content": "two\n"}]},
               {"key": "c3", "parent": "c2", "files": [{"path": "w.txt", "content": "three\n"}]}],
   "branches": {"main": "c3", "dev": "c2"}, "tags": {"v1.0": "c1", "v2.0": "c3"}},
  {"hub": "hf", "type": "dataset", "id": "acme/tab",
   "commits": [{"key": "c1", "files": [{"path": "data.csv", "content": "a,b\n1,2\n"}]},
               {"key": "c2", "files": [{"path": "default/train/0000.parquet", "size": 4096, "seed": 3}]}],
   "branches": {"main": "c1"}, "converts": {"parquet": "c2"}},
  {"hub": "ms", "type": "model", "id": "acme/ms-rel",
   "commits": [{"key": "c1", "files": [{"path": "w.txt", "content": "ms one\n"}]},
               {"key": "c2", "parent": "c1", "files": [{"path": "w.txt", "content": "ms two\n"}]}],
   "branches": {"master": "c2"}, "tags": {"v1.0": "c1"}},
  {"hub": "hf", "type": "model", "id": "acme/only-main",
   "commits": [{"key": "c1", "files": [{"path": "w.txt", "content": "old\n"}]},
               {"key": "c2", "files": [{"path": "w.txt", "content": "new\n"}]}],
   "branches": {"main": "c2"}, "tags": {"v1.0": "c1"}},
  {"hub": "hf", "type": "model", "id": "acme/named",
   "commits": [{"key": "c1", "files": [{"path": "w.txt", "content": "dev\n"}]},
               {"key": "c2", "files": [{"path": "w.txt", "content": "main\n"}]}],
   "branches": {"main": "c2", "dev": "c1"}, "tags": {"v1.0": "c1"}}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
curl -fsS "$FAKE_API/_fake/repos?hashes=0" >"$T/repos.json"
commit() { "$PY" -c '
import json,sys
for r in json.load(open(sys.argv[1]))["repos"]:
    if r["hub"] == sys.argv[2] and r["id"] == sys.argv[3]:
        print([c["id"] for c in r["commits"] if c["key"] == sys.argv[4]][0])' "$T/repos.json" "$@"; }
REL1=$(commit hf acme/rel c1) REL2=$(commit hf acme/rel c2) REL3=$(commit hf acme/rel c3)
TAB2=$(commit hf acme/tab c2)

# ---- bad input ----
expect_fail() { local msg=$1; shift; ! hm add "$@" hf:acme/rel >/dev/null 2>"$T/err" && grep -q -- "$msg" "$T/err"; }
check "--refs with a bad name is refused" expect_fail "bad ref name 'a..b'" --refs 'a..b'
check "--refs mixing a word and names is refused" expect_fail "cannot go with names" --refs tags --refs v1.0
check "--refs naming a word inside a list is refused" expect_fail "bad ref name 'all'" --refs v1.0,all
check "nothing was added by the refused commands (not even a data directory made)" test ! -e "$HUBMIRROR_DATA/catalog.db"

hm add hf:acme/rel hf:datasets/acme/tab ms:acme/ms-rel >/dev/null
hm add --refs default hf:acme/only-main >/dev/null
hm add --refs dev,v9 hf:acme/named >/dev/null
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
hm sync --json >"$T/s1.json"
hm sync --status >"$T/status1"
check "the run's count is of its repos, the refs pass not starting it again (5 of 5)" grep -q "ended ok: 5 of 5 repos" "$T/status1"
check "the weights main and v1.0 share were fetched once" test "$(curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c '
import json,sys
print(sum(1 for r in json.load(sys.stdin)["recent"] if r["kind"] == "resolve" and "acme/rel/" in r["path"] and r["path"].endswith("/model.safetensors")))')" = 1
check "first sync: tags and the parquet conversion come in, one request saved where the tag is at main" "$PY" -c '
import json,sys
by = {r["spec"]: r for r in json.load(open(sys.argv[1]))["repos"]}
refs = lambda s: {f["name"]: f for f in by[s]["refs"]}
rel = refs("hf:acme/rel")
assert set(rel) == {"v1.0", "v2.0"}, rel
assert rel["v1.0"]["outcome"] == "ok" and rel["v1.0"]["commit"] == sys.argv[2] and rel["v1.0"]["kind"] == "tag", rel
assert rel["v2.0"]["outcome"] == "unchanged" and rel["v2.0"]["commit"] == sys.argv[3], rel
tab = refs("hf:datasets/acme/tab")
assert list(tab) == ["refs/convert/parquet"] and tab["refs/convert/parquet"]["kind"] == "convert", tab
ms = refs("ms:acme/ms-rel")
assert list(ms) == ["v1.0"] and ms["v1.0"]["outcome"] == "ok", ms
assert "refs" not in by["hf:acme/only-main"], by["hf:acme/only-main"]
nm = refs("hf:acme/named")
assert nm["dev"]["outcome"] == "ok" and nm["dev"]["kind"] == "branch" and nm["v9"]["outcome"] == "missing", nm
assert "v1.0" not in nm, nm
' "$T/s1.json" "$REL1" "$REL3"

check "serve starts" start_serve
curl -fsS "$M/api/models/acme/rel/refs" >"$T/refs.json"
check "list_repo_refs shows the tags and the followed branch" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1]))
assert sorted((t["name"], t["ref"], t["targetCommit"]) for t in d["tags"]) == [("v1.0", "refs/tags/v1.0", sys.argv[2]), ("v2.0", "refs/tags/v2.0", sys.argv[3])], d
assert [b["name"] for b in d["branches"]] == ["main"], d' "$T/refs.json" "$REL1" "$REL3"
body() { curl -fsS "$M/$1"; }
check "a download by tag name" test "$(body acme/rel/resolve/v1.0/w.txt)" = one
check "a download by the tag's commit" test "$(body "acme/rel/resolve/$REL1/w.txt")" = one
check "the followed branch is unchanged" test "$(body acme/rel/resolve/main/w.txt)" = three
check "the tag's weights are the same bytes" cmp <(body acme/rel/resolve/v1.0/model.safetensors) <(body acme/rel/resolve/main/model.safetensors)
check "model_info at the tag names its commit" "$PY" -c '
import json,sys,urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/models/acme/rel/revision/v1.0"))
assert d["sha"] == sys.argv[2], d' "$M" "$REL1"
check "an unmirrored branch is not found" is_status 404 "$M/acme/rel/resolve/dev/w.txt"
curl -fsS "$M/api/datasets/acme/tab/refs" >"$T/tabrefs.json"
check "the dataset's parquet conversion is listed under converts" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1]))
assert d["converts"] == [{"name": "parquet", "ref": "refs/convert/parquet", "targetCommit": sys.argv[2]}], d' "$T/tabrefs.json" "$TAB2"
check "the conversion's tree (encoded revision, as huggingface_hub sends it)" "$PY" -c '
import json,sys,urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/datasets/acme/tab/tree/refs%2Fconvert%2Fparquet?recursive=true"))
assert [e["path"] for e in d if e["type"] == "file"] == [".gitattributes", "default/train/0000.parquet"], d' "$M"
check "a conversion's file (raw revision, as the JS client sends it)" cmp \
	<(curl -fsS "$M/datasets/acme/tab/resolve/refs/convert/parquet/default/train/0000.parquet") \
	<(curl -fsSL "$FAKE_API/datasets/acme/tab/resolve/refs%2Fconvert%2Fparquet/default/train/0000.parquet")
check "ModelScope: a download by tag" test "$(curl -fsS "$M/api/v1/models/acme/ms-rel/repo?Revision=v1.0&FilePath=w.txt")" = "ms one"
check "ModelScope: the revisions list the tag" "$PY" -c '
import json,sys,urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/v1/models/acme/ms-rel/revisions"))["Data"]["RevisionMap"]
assert [t["Revision"] for t in d["Tags"]] == ["v1.0"], d' "$M"
check "--refs default: no tags mirrored" is_status 404 "$M/acme/only-main/resolve/v1.0/w.txt"
check "--refs NAMES: the named branch is served" test "$(body acme/named/resolve/dev/w.txt)" = dev
check "the catalog API lists a repo's refs" "$PY" -c '
import json,sys,urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/catalog/repos/hf/model/acme/rel"))
assert sorted((r["name"], r["kind"]) for r in d["refs"]) == [("main", "branch"), ("v1.0", "tag"), ("v2.0", "tag")], d["refs"]' "$M"

# ---- a pinned deployment pulls a tag through the swarm into the HF cache ----
"$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" --listen 127.0.0.1:0 --json hf:acme/rel@v1.0 \
	>"$T/pull.json" 2>"$T/pull.err"
check "pull of a tag exits 0, verified" test $? = 0
check "the HF cache names the tag's commit and holds its bytes" bash -c "[ \"\$(cat '$T/hfc/models--acme--rel/refs/v1.0')\" = $REL1 ] &&
	[ \"\$(cat '$T/hfc/models--acme--rel/snapshots/$REL1/w.txt')\" = one ]"
"$HUBMIRROR" agent --stop >/dev/null 2>&1

# ---- an unchanged night: one request per repo (the named list, which follows a branch, two) ----
requests() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["total"])'; }
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
hm sync --json >"$T/s2.json"
check "an unchanged sync costs one request per repo, and one more for a named branch" test "$(requests)" = 6

# ---- a tag made on an old commit: seen at the weekly check, or at once with --check-refs ----
curl -fsS -X POST -d '{"repo": "acme/rel", "name": "v1.1", "rev": "'"$REL2"'"}' "$FAKE_API/_fake/tag" >/dev/null
hm sync >/dev/null
check "a plain sync does not list the refs again before the week is out" is_status 404 "$M/acme/rel/resolve/v1.1/w.txt"
curl -fsS -X POST -d '{"repo": "acme/rel", "ref": "v1.0"}' "$FAKE_API/_fake/delete-ref" >/dev/null
curl -fsS -X POST -d '{"repo": "acme/rel", "name": "v2.0", "rev": "'"$REL2"'"}' "$FAKE_API/_fake/tag" >/dev/null
hm sync --check-refs --json hf:acme/rel >"$T/s3.json"
check "--check-refs: the new tag fetched, the moved one followed, the deleted one dropped" "$PY" -c '
import json,sys
r = json.load(open(sys.argv[1]))["repos"][0]
refs = {f["name"]: f for f in r["refs"]}
assert set(refs) == {"v1.1", "v2.0"} and refs["v1.1"]["commit"] == sys.argv[2] and refs["v2.0"]["commit"] == sys.argv[2], refs
assert r["refs_dropped"] == 1, r' "$T/s3.json" "$REL2"
check "the new tag is served" test "$(body acme/rel/resolve/v1.1/w.txt)" = two
check "the moved tag is served at its new commit" test "$(body acme/rel/resolve/v2.0/w.txt)" = two
check "the deleted tag is gone" is_status 404 "$M/acme/rel/resolve/v1.0/w.txt"
check "its snapshot still answers by commit" test "$(body "acme/rel/resolve/$REL1/w.txt")" = one

# ---- a change of policy lists the refs at the next plain sync ----
hm add --refs tags hf:acme/only-main >/dev/null
hm sync --json hf:acme/only-main >"$T/s4.json"
check "after --refs tags, the next sync fetches the repo's tags" test "$(body acme/only-main/resolve/v1.0/w.txt)" = old
check "info lists the refs and the policy" bash -c "'$HUBMIRROR' info hf:acme/rel | grep -qx '  refs        main, v1.1 (tag), v2.0 (tag)' &&
	'$HUBMIRROR' info hf:acme/named | grep -qx '  mirrors     \[\"dev\",\"v9\"\]'"
sha_of() { printf '%s' "$1" | sha256sum | cut -c1-64; }
check "info --files lists a tag's files with size and sha256" bash -c "'$HUBMIRROR' info --files hf:acme/rel@v1.1 |
	grep -qx '             4  $(sha_of 'two
')  w.txt'"
check "... the same through the mirror's catalog API" bash -c "diff <('$HUBMIRROR' info --files hf:acme/rel@v1.1 | sed -n '/^files of/,\$p') \
	<('$HUBMIRROR' info --mirror '$M' --files hf:acme/rel@v1.1 | sed -n '/^files of/,\$p') >/dev/null &&
	'$HUBMIRROR' info --mirror '$M' --files hf:acme/rel@v1.1 | grep -q '^files of $REL2:'"
check "info --files --json: the file list" "$PY" -c '
import json,subprocess,sys
d = json.loads(subprocess.check_output([sys.argv[1], "info", "--json", "--files", "hf:acme/rel"]))
assert sorted(f["path"] for f in d["file_list"]) == [".gitattributes", "model.safetensors", "w.txt"], d["file_list"]
assert [f["size"] for f in d["file_list"] if f["path"] == "model.safetensors"] == [300000], d["file_list"]' "$HUBMIRROR"
check "info --files of a revision the mirror lacks fails, saying so" bash -c "! '$HUBMIRROR' info --files hf:acme/rel@v9 2>'$T/e9' && grep -q \"no revision 'v9'\" '$T/e9'"
check "a revision without --files is a usage error" bash -c "'$HUBMIRROR' info hf:acme/rel@v1.1 >/dev/null 2>&1; [ \$? = 2 ]"
check "ls --json carries each repo's refs policy" "$PY" -c '
import json,subprocess,sys
d = {r["spec"]: r["refs_policy"] for r in json.loads(subprocess.check_output([sys.argv[1], "ls", "--json"]))}
assert d["hf:acme/named"] == ["dev", "v9"] and d["hf:acme/only-main"] == "tags" and d["hf:acme/rel"] == "tags", d' "$HUBMIRROR"
finish
