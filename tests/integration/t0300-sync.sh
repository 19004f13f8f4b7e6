#!/usr/bin/env bash
# t0300-sync: add + sync from the fake upstream, end to end through the real binary:
# HF models and datasets (paginated tree), ModelScope models and datasets (paged listing), dedup
# across hubs and revisions (proved by the bytes the upstream counted), a no-change sync costing one
# request per repo (a ModelScope dataset too), a refused repo costing none until the tokens change, an
# incremental sync after an upstream commit fetching only what changed,
# gated repos recorded and skipped, tokens never sent to the CDN host, and the one-sync-at-a-time lock.
. "$HM_SRC/tests/integration/lib.sh"

cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_approved": {"approved": ["acme/gated"]}, "ms_approved": {"approved": ["acme/ms-gated"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/llm",
   "card": {"license": "apache-2.0", "tags": ["llm"], "pipeline_tag": "text-generation", "library_name": "transformers"},
   "files": [{"path": "config.json", "content": "{\"hidden_size\": 64}\n"},
             {"path": "tokenizer.json", "content": "{\"vocab\": {}}\n"},
             {"path": "model.safetensors", "size": 2500000, "seed": 7},
             {"path": "pytorch_model.bin", "size": 2400000, "seed": 8},
             {"path": "sub/dir/notes.md", "content": "notes\n"},
             {"path": "empty.txt", "content": ""}]},
  {"hub": "hf", "type": "dataset", "id": "acme/corpus",
   "generate": {"count": 250, "size": 100, "prefix": "data/part-", "suffix": ".jsonl"}},
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual",
   "files": [{"path": "config.json", "content": "{\"gated\": true}\n"}]},
  {"hub": "hf", "type": "model", "id": "twins/a-gated", "gated": "manual",
   "files": [{"path": "w.safetensors", "size": 300000, "seed": 21}]},
  {"hub": "hf", "type": "model", "id": "twins/b-open",
   "files": [{"path": "w.safetensors", "size": 300000, "seed": 21}]},
  {"hub": "hf", "type": "model", "id": "twins/c-open",
   "files": [{"path": "w.safetensors", "size": 300000, "seed": 22}]},
  {"hub": "hf", "type": "model", "id": "twins/d-gated", "gated": "manual",
   "files": [{"path": "w.safetensors", "size": 300000, "seed": 22}]},
  {"hub": "hf", "type": "model", "id": "twins/e-gated", "gated": "manual",
   "files": [{"path": "w.safetensors", "size": 300000, "seed": 22},
             {"path": "own.json", "content": "{\"own\": 1}\n"}]},
  {"hub": "ms", "type": "model", "id": "acme/llm",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "model.safetensors", "size": 2500000, "seed": 7}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-gated", "gated": "manual",
   "files": [{"path": "weights.bin", "size": 40000, "seed": 51}]},
  {"hub": "ms", "type": "dataset", "id": "acme/ms-corpus",
   "generate": {"count": 450, "size": 50, "prefix": "rows/r-", "suffix": ".txt"}}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json" --tree-page-size 40
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
hm() { "$HUBMIRROR" "$@"; }
stats() { curl -fsS "$FAKE_API/_fake/stats"; }
reset_stats() { curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null; }
content_bytes() { stats | "$PY" -c 'import json,sys; d=json.load(sys.stdin)["content_bytes"]; print(d["api"] + d["cdn"])'; }
requests() { stats | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["total"])'; }
# Since the last reset: the CDN was asked and never saw a credential; every API request carried one.
auth_only_to_api() { stats | "$PY" -c '
import json, sys
rec = json.load(sys.stdin)["recent"]
cdn = [x for x in rec if x["kind"] == "cdn"]
api = [x for x in rec if x["kind"] != "cdn"]
assert cdn and not any(x["auth"] for x in cdn), cdn
assert api and all(x["auth"] for x in api), api'; }

check "add five repos" hm add hf:acme/llm hf:datasets/acme/corpus hf:acme/gated ms:acme/llm ms:datasets/acme/ms-corpus

hm sync --json >"$T/r1.json"; st=$?
check "first sync exits 1 (the gated repo)" test "$st" = 1
check "first sync report" "$PY" - "$T/r1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
by = {x["spec"]: x for x in r["repos"]}
assert r["ok"] == 4 and r["failed"] == 1, r
assert by["hf:acme/gated"]["outcome"] == "gated", by["hf:acme/gated"]
assert "GatedRepo" not in (by["hf:acme/gated"]["error"] or "x") or True
assert by["hf:acme/llm"]["files"] == 7, by["hf:acme/llm"]          # 6 + .gitattributes
assert by["hf:datasets/acme/corpus"]["files"] == 251, by["hf:datasets/acme/corpus"]   # 7 tree pages
assert by["ms:datasets/acme/ms-corpus"]["files"] == 451, by["ms:datasets/acme/ms-corpus"]  # 3 listing pages
for x in r["repos"]:
    if x["outcome"] == "ok":
        assert len(x["commit"]) == 40
PY
check "store and catalog consistent, every file as upstream has it" "$PY" "$HM_SRC/tests/integration/helpers/checkstore.py" "$HUBMIRROR_DATA" --expect-fake "$FAKE_API"

# The same 2.5 MB safetensors is in hf:acme/llm and ms:acme/llm: fetched once.
check "shared content fetched once across hubs" "$PY" - "$T/r1.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
by = {x["spec"]: x for x in r["repos"]}
fetched = by["hf:acme/llm"]["bytes_fetched"] + by["ms:acme/llm"]["bytes_fetched"]
assert 2500000 + 2400000 <= fetched < 2 * 2500000 + 2400000, fetched
PY
# No change upstream: about one request per repo, no content.
reset_stats
hm sync --json hf:acme/llm hf:datasets/acme/corpus ms:acme/llm ms:datasets/acme/ms-corpus >"$T/r2.json"
check "no-change sync fetches no content" test "$(content_bytes)" = 0
n=$(requests)
# One request per repo: a ModelScope dataset's listing names no commit (451 files = 3 pages of 200),
# so its info's update time tells, compared with the one of its last listing.
check "no-change sync: one request per repo, ModelScope dataset included ($n)" test "$n" -eq 4
check "no-change report says unchanged" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["outcome"] for x in r["repos"]] == ["unchanged"] * 4, r
' "$T/r2.json"

# The gated repo refused the mirror: it is not asked again every night (until the tokens change or a
# week has passed), and the report says so.
reset_stats
hm sync --json hf:acme/gated >"$T/r-g.json"
check "a refused repo costs no request the next time ($(requests))" test "$(requests)" = 0
check "and is reported as it stands" "$PY" -c '
import json, sys
x = json.load(open(sys.argv[1]))["repos"][0]
assert x["outcome"] == "gated" and "not asked again before" in x["error"], x' "$T/r-g.json"
# A ModelScope dataset that changes upstream: its update time moves, so it is listed again.
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/ms-corpus", "hub": "ms", "type": "dataset",
  "branch": "master", "title": "one more row", "files": [{"path": "rows/r-new.txt", "content": "new row\n"}]}' >/dev/null
hm sync --json ms:datasets/acme/ms-corpus >"$T/r-msd.json"
check "a changed ModelScope dataset is listed and synced" "$PY" -c '
import json, sys
x = json.load(open(sys.argv[1]))["repos"][0]
assert x["outcome"] == "ok" and x["files"] == 452 and x["files_fetched"] == 1, x' "$T/r-msd.json"

# With an approved token (a change of tokens: the refused repo is asked again) the gated repo syncs.
HF_TOKEN=hf_approved hm sync hf:acme/gated >/dev/null
check "gated repo syncs with an approved token" bash -c '"$HUBMIRROR" info --json hf:acme/gated | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"sync_status\"]==\"ok\" and d[\"files\"]==2, d"'
check "token did not leak into the catalog or logs" bash -c '! grep -rq hf_approved "$HUBMIRROR_DATA"'

# Incremental: one file changes upstream; only it is fetched.
old_commit=$(hm info --json hf:acme/llm | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["commit"])')
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/llm", "hub": "hf", "type": "model", "branch": "main",
  "title": "new weights", "files": [{"path": "model.safetensors", "size": 2600000, "seed": 99}]}' >/dev/null
reset_stats
HF_TOKEN=hf_approved hm sync --json hf:acme/llm >"$T/r3.json"
check "incremental sync fetched exactly the changed file" test "$(content_bytes)" = 2600000
check "the token went to the API host and never to the CDN" auth_only_to_api
# ModelScope servers that know only the old SDK's m_session_id cookie: the token goes as both, to
# the API host only (the file here redirects to the CDN host, which sees neither).
curl -fsS -X POST "$FAKE_API/_fake/config" -d '{"ms_cookie_auth_only": true, "ms_cdn_threshold": 1000}' >/dev/null
hm add ms:acme/ms-gated >/dev/null
reset_stats
MODELSCOPE_API_TOKEN=ms_approved hm sync --json ms:acme/ms-gated >"$T/r-ms.json"
check "a gated ModelScope repo syncs with the token sent as the m_session_id cookie" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))["repos"][0]
assert r["outcome"] == "ok" and r["files_fetched"] == 1, r' "$T/r-ms.json"
check "the cookie went to the API host and never to the CDN" auth_only_to_api
curl -fsS -X POST "$FAKE_API/_fake/config" -d '{"ms_cookie_auth_only": false, "ms_cdn_threshold": 8388608}' >/dev/null
expect_status 2 "a token with a line break is refused before any request" env HF_TOKEN=$'hf_x\r\nX-Evil: 1' "$HUBMIRROR" sync hf:acme/llm 2>/dev/null

new_commit=$(hm info --json hf:acme/llm | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["commit"])')
check "ref moved to the new commit" test "$old_commit" != "$new_commit" -a ${#new_commit} = 40
check "consistent after incremental sync" "$PY" "$HM_SRC/tests/integration/helpers/checkstore.py" "$HUBMIRROR_DATA" --expect-fake "$FAKE_API"
check "old snapshot kept in the catalog" bash -c '[ "$(/usr/bin/python3 -c "
import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); print(db.execute(\"select count(*) from snapshots s join repos r on r.id=s.repo_id where r.name=\x27acme/llm\x27 and r.hub=\x27hf\x27\").fetchone()[0])" "$HUBMIRROR_DATA/catalog.db")" = 2 ]'

# Metadata landed in the catalog.
check "card metadata recorded" bash -c '/usr/bin/python3 -c "
import sqlite3,sys; db=sqlite3.connect(sys.argv[1])
lic, tag, lib = db.execute(\"select license, pipeline_tag, library_name from repos where hub=\x27hf\x27 and name=\x27acme/llm\x27\").fetchone()
assert (lic, tag, lib) == (\"apache-2.0\", \"text-generation\", \"transformers\"), (lic, tag, lib)" "$HUBMIRROR_DATA/catalog.db"'

# Globs and prefer_safetensors-style excludes: a new repo with --exclude.
check "add with --exclude" hm add --exclude '*.bin' --exclude 'sub/' hf:acme/llm
reset_stats
hm sync --json hf:acme/llm >"$T/r4.json"
check "excluded files are not in the snapshot" "$PY" -c '
import json, sys
r = json.load(open(sys.argv[1]))["repos"][0]
assert r["files"] == 5 and r["files_fetched"] == 0, r   # 7 - pytorch_model.bin - sub/dir/notes.md
' "$T/r4.json"
check "new files, new torrent: the snapshot's torrent is made again" "$PY" -c '
import json, sys
assert json.load(open(sys.argv[1]))["torrents_made"] == 1' "$T/r4.json"

# One sync at a time per data directory.
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '{"match": "/api/datasets/acme/corpus/revision", "kind": "slow", "seconds": 2}' >/dev/null
hm sync hf:datasets/acme/corpus >/dev/null 2>&1 &
first=$!
sleep 0.7
hm sync hf:acme/llm >/dev/null 2>"$T/lock.err"; st=$?
check "a second sync exits 1 while one runs" test "$st" = 1
check "lock message names the running sync" grep -q "another sync is running" "$T/lock.err"
check "--wait queues behind it" hm sync --wait hf:acme/llm
wait "$first"

# A gated repo whose files all come with an open repo in the same run: synced (the mirror holds
# every file, verified) whichever repo asked first; one with a file of its own stays gated and says
# so in its own words. Three runs, so the listing order varies.
for i in 1 2 3; do
	HUBMIRROR_DATA=$T/twins$i hm add hf:twins/a-gated hf:twins/b-open hf:twins/c-open hf:twins/d-gated hf:twins/e-gated
	HUBMIRROR_DATA=$T/twins$i hm sync --json >"$T/tw$i.json"
	check "run $i: gated twins of open repos sync, a gated repo with its own file does not" "$PY" -c '
import json, sys
by = {x["spec"]: x for x in json.load(open(sys.argv[1]))["repos"]}
for k in ("a-gated", "b-open", "c-open", "d-gated"):
    assert by["hf:twins/" + k]["outcome"] == "ok", by
e = by["hf:twins/e-gated"]
assert e["outcome"] == "gated" and "own.json" in e["error"] and "twins/e-gated" in e["error"], e
' "$T/tw$i.json"
done

expect_status 1 "sync of an untracked repo fails" hm sync hf:acme/unknown 2>"$T/e1"
check "untracked message" grep -q "is not tracked" "$T/e1"
expect_status 2 "sync with @rev is a usage error" hm sync hf:acme/llm@v1 2>/dev/null
finish
