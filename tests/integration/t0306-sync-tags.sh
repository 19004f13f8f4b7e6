#!/usr/bin/env bash
# t0306-sync-tags: a repo followed at a tag (add hf:org/name@v1.0, ms:org/name@v1.0) is recorded as a
# tag, not a branch: list_repo_refs shows it under tags (and a tag is asked for only when the
# snapshot changed: an unchanged sync stays one request); a download by the tag's name works, on both
# hubs. A repo followed at a branch other than main is still a branch.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/tagged",
   "commits": [{"key": "c1", "files": [{"path": "w.txt", "content": "one\n"}]},
               {"key": "c2", "files": [{"path": "w.txt", "content": "two\n"}]}],
   "branches": {"main": "c2"}, "tags": {"v1.0": "c1"}},
  {"hub": "hf", "type": "model", "id": "acme/branched",
   "commits": [{"key": "c1", "files": [{"path": "w.txt", "content": "dev one\n"}]},
               {"key": "c2", "files": [{"path": "w.txt", "content": "dev two\n"}]}],
   "branches": {"main": "c2", "dev": "c1"}},
  {"hub": "ms", "type": "model", "id": "acme/ms-tagged",
   "commits": [{"key": "c1", "files": [{"path": "w.txt", "content": "ms one\n"}]},
               {"key": "c2", "files": [{"path": "w.txt", "content": "ms two\n"}]}],
   "branches": {"master": "c2"}, "tags": {"v1.0": "c1"}}
 ]}
JSON
sync_from_fake hf:acme/tagged@v1.0 hf:acme/branched@dev ms:acme/ms-tagged@v1.0
check "serve starts" start_serve
curl -fsS "$M/api/models/acme/tagged/refs" >"$T/refs.json"
check "the followed tag is listed as a tag" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1]))
assert [t["name"] for t in d["tags"]] == ["v1.0"] and d["tags"][0]["ref"] == "refs/tags/v1.0" and not d["branches"], d' "$T/refs.json"
curl -fsS "$M/api/models/acme/branched/refs" >"$T/refs2.json"
check "a followed branch other than main as a branch" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1]))
assert [b["name"] for b in d["branches"]] == ["dev"] and not d["tags"], d' "$T/refs2.json"
check "a download by the tag's name" bash -c "test \"\$(curl -fsS '$M/acme/tagged/resolve/v1.0/w.txt')\" = one"
check "ModelScope: a download by the tag's name" bash -c \
	"test \"\$(curl -fsS '$M/api/v1/models/acme/ms-tagged/repo?Revision=v1.0&FilePath=w.txt')\" = 'ms one'"
curl -fsS "$M/api/v1/models/acme/ms-tagged/revisions" >"$T/msrev.json"
check "ModelScope's revisions list the tag as a tag" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1]))["Data"]["RevisionMap"]
assert [t["Revision"] for t in d["Tags"]] == ["v1.0"] and "v1.0" not in [b["Revision"] for b in d["Branches"]], d' "$T/msrev.json"
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
"$HUBMIRROR" sync >/dev/null
check "an unchanged sync of the three costs three requests" test \
	"$(curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["total"])')" = 3
finish
