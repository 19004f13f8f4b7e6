#!/usr/bin/env bash
# t0500-catalog-api: /api/catalog/ against a mirror synced from the fake: search (words as prefixes,
# ranked), filters, sorting, cursor pagination, repo detail with refs/snapshots/mount line, the file
# tree, totals with dedup savings, sync history; and the CLI's search/ls/info, locally and --mirror.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "qwen/Qwen2.5-7B-Instruct",
   "card": {"license": "apache-2.0", "tags": ["chat"], "pipeline_tag": "text-generation", "library_name": "transformers"},
   "files": [{"path": "config.json", "content": "{}\n"}, {"path": "model.safetensors", "size": 400000, "seed": 1}]},
  {"hub": "ms", "type": "model", "id": "qwen/Qwen2.5-7B-Instruct",
   "files": [{"path": "configuration.json", "content": "{}\n"}, {"path": "model.safetensors", "size": 400000, "seed": 1}]},
  {"hub": "hf", "type": "model", "id": "acme/bert-tiny",
   "card": {"license": "mit", "tags": ["fill-mask"], "pipeline_tag": "fill-mask", "library_name": "transformers"},
   "files": [{"path": "config.json", "content": "{\"bert\": 1}\n"}]},
  {"hub": "hf", "type": "dataset", "id": "acme/poems",
   "card": {"license": "cc-by-4.0", "tags": ["poetry"]},
   "files": [{"path": "data/train/a.txt", "content": "roses\n"}, {"path": "data/train/b.txt", "content": "violets\n"},
             {"path": "data/test/c.txt", "content": "sugar\n"}, {"path": "README.md", "content": "# poems\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/gated-llm", "gated": "auto",
   "files": [{"path": "config.json", "content": "{\"g\": 1}\n"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:qwen/Qwen2.5-7B-Instruct ms:qwen/Qwen2.5-7B-Instruct hf:acme/bert-tiny hf:datasets/acme/poems hf:acme/gated-llm >/dev/null
"$HUBMIRROR" sync >/dev/null
check "serve starts" start_serve
api() { curl -fsS "$M/api/catalog/$1"; }
q() { api "$1" | "$PY" -c "import json,sys; d=json.load(sys.stdin); $2"; }

check "search by name prefix" q 'repos?q=qwen' 'assert d["total"] == 2 and {r["hub"] for r in d["repos"]} == {"hf", "ms"}, d'
check "search by words inside a name" q 'repos?q=7b%20instr' 'assert d["total"] == 2, d'
check "search by task, library and license" q 'repos?q=fill-mask' 'assert [r["name"] for r in d["repos"]] == ["acme/bert-tiny"], d'
check "search by card tag" q 'repos?q=poetry' 'assert [r["name"] for r in d["repos"]] == ["acme/poems"], d'
check "search with FTS syntax characters is safe" q 'repos?q=%22qwen%22%20OR%20*%20NEAR(' 'assert d["total"] >= 0'
check "filter by hub and type" q 'repos?hub=hf&type=dataset' 'assert [r["spec"] for r in d["repos"]] == ["hf:datasets/acme/poems"], d'
check "filter by org" q 'repos?org=acme' 'assert d["total"] == 3, d'
check "filter by tag" q 'repos?tag=chat' 'assert [r["spec"] for r in d["repos"]] == ["hf:qwen/Qwen2.5-7B-Instruct"], d'
check "filter gated" q 'repos?gated=true' 'assert [r["name"] for r in d["repos"]] == ["acme/gated-llm"] and d["repos"][0]["gated_mode"] == "auto", d'
check "filter by size range" q 'repos?min_size=100000' 'assert d["total"] == 2, d'
check "filter by sync status" q 'repos?status=ok' 'assert d["total"] == 4, d'
check "the gated repo (no token) is recorded as gated" q 'repos?status=gated' 'assert [r["name"] for r in d["repos"]] == ["acme/gated-llm"], d'
check "sort by size, descending by default" q 'repos?sort=size' 's = [r["size"] for r in d["repos"]]; assert s == sorted(s, reverse=True), s'
check "sort by name ascending" q 'repos?sort=name&order=asc' 'n = [r["name"] for r in d["repos"]]; assert n == sorted(n), n'
check "bad sort is a 400" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/api/catalog/repos?sort=nope')\" = 400 ]"
"$PY" - "$M" <<'PY' >"$T/pages"
import json, sys, urllib.request
m, seen, url = sys.argv[1], [], "/api/catalog/repos?limit=2&sort=name"
while url:
    d = json.load(urllib.request.urlopen(m + url))
    seen += [r["spec"] for r in d["repos"]]
    url = "/api/catalog/repos?limit=2&sort=name&cursor=" + d["next_cursor"] if d["next_cursor"] else None
print(len(seen), len(set(seen)))
PY
check "cursor pagination visits every repo once" grep -qx '5 5' "$T/pages"
check "repo detail: refs, snapshots, lines to copy" q 'repos/hf/model/qwen/Qwen2.5-7B-Instruct' '
assert d["commit"] and d["refs"][0]["name"] == "main" and len(d["snapshots"]) == 1, d
assert d["mount_command"].endswith(" hf:qwen/Qwen2.5-7B-Instruct") and d["mount_command"].startswith("hubmirror mount --mirror http://127.0.0.1:")
assert d["endpoint_env"].startswith("HF_ENDPOINT=http://127.0.0.1:") and d["license"] == "apache-2.0" and d["files"] == 3'
check "ModelScope repo detail names MODELSCOPE_ENDPOINT" q 'repos/ms/model/qwen/Qwen2.5-7B-Instruct' 'assert d["endpoint_env"].startswith("MODELSCOPE_ENDPOINT="), d'
check "unknown repo: 404" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/api/catalog/repos/hf/model/acme/nope')\" = 404 ]"
check "file tree, top level: folder with its size, and a file" q 'repos/hf/dataset/acme/poems/files' '
e = {x["path"]: x for x in d["entries"]}
assert set(e) == {".gitattributes", "README.md", "data"}, e
assert e["data"]["type"] == "directory" and e["data"]["files"] == 3 and e["data"]["size"] == 6 + 8 + 6, e["data"]'
check "file tree, one folder down" q 'repos/hf/dataset/acme/poems/files?dir=data' 'assert [x["path"] for x in d["entries"]] == ["data/test", "data/train"], d'
check "file tree refuses traversal" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/api/catalog/repos/hf/dataset/acme/poems/files?dir=../..')\" = 400 ]"
check "totals count the shared safetensors once" q 'stats' '
assert d["repos"] == 5 and d["repos_synced"] == 4 and d["dedup_saved_bytes"] >= 400000, d
assert d["logical_bytes"] - d["unique_bytes"] >= 400000, d'
check "sync history" q 'syncs' 'r = d["runs"][0]; assert r["outcome"] == "partial" and r["repos_ok"] == 4 and r["repos_failed"] == 1 and r["files_fetched"] > 0, d'
check "catalog API is read-only" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code}' -X POST '$M/api/catalog/repos')\" = 405 ]"

# The CLI, locally and against the mirror.
check "search locally" bash -c '"$HUBMIRROR" search --json qwen instr | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert sorted(r[\"spec\"] for r in d)==[\"hf:qwen/Qwen2.5-7B-Instruct\",\"ms:qwen/Qwen2.5-7B-Instruct\"], d"'
check "search --mirror" bash -c '"$HUBMIRROR" search --mirror "'"$M"'" --hub hf --json qwen | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert [r[\"spec\"] for r in d]==[\"hf:qwen/Qwen2.5-7B-Instruct\"], d"'
check "search table" bash -c '"$HUBMIRROR" search poetry | grep -q "^hf:datasets/acme/poems "'
check "search with no match says so" bash -c '"$HUBMIRROR" search zzzz | grep -q "nothing matches"'
check "ls --mirror lists what the mirror has" bash -c '[ "$(HUBMIRROR_URL="'"$M"'" "$HUBMIRROR" ls | wc -l)" = 6 ]'
check "info --mirror prints the lines to use it" bash -c '"$HUBMIRROR" info --mirror "'"$M"'" hf:acme/bert-tiny | grep -q "HF_ENDPOINT='"$M"'"'
expect_status 1 "info --mirror of an unknown repo fails" "$HUBMIRROR" info --mirror "$M" hf:acme/none
expect_status 1 "an unreachable mirror fails with a message" "$HUBMIRROR" ls --mirror http://127.0.0.1:1
finish
