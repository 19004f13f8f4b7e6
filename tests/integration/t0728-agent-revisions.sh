#!/usr/bin/env bash
# t0728-agent-revisions: the agent's local endpoint reads a file URL's revision as the mirror does (the
# Hub's grammar in one place, hub/hf.c): refs/convert/parquet sent raw spans three segments, the same
# revision sent encoded (refs%2Fconvert%2Fparquet) is one, and both name the parquet branch, not a
# revision "refs" with the rest taken for the file's path (what the agent did before). No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "dataset", "id": "acme/revs",
   "branches": {"main": "c1"}, "converts": {"parquet": "c2"},
   "commits": [
     {"key": "c1", "title": "initial", "files": [{"path": "README.md", "content": "# revs\n"},
                                                {"path": "data.csv", "content": "a,b\n1,2\n"}]},
     {"key": "c2", "parent": "c1", "title": "parquet", "files": [
        {"path": "default/train/0000.parquet", "size": 300000, "seed": 281}]}]}
 ]}
JSON
sync_from_fake hf:datasets/acme/revs
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --http 127.0.0.1:0
E=$(agent_endpoint)
trap '"$HUBMIRROR" agent --stop >/dev/null 2>&1; _cleanup' EXIT

f=default/train/0000.parquet
check "the mirror serves the parquet branch's file, revision sent raw" \
	curl -fsS -o "$T/m-raw" "$M/datasets/acme/revs/resolve/refs/convert/parquet/$f"
check "and sent encoded" curl -fsS -o "$T/m-enc" "$M/datasets/acme/revs/resolve/refs%2Fconvert%2Fparquet/$f"
check "the same bytes both ways" cmp "$T/m-raw" "$T/m-enc"
code=$(curl -sS -o "$T/e-raw" -w '%{http_code}' "$E/datasets/acme/revs/resolve/refs/convert/parquet/$f")
check "the agent's endpoint serves it with the revision sent raw (was: revision \"refs\", file \"convert/parquet/...\")" test "$code" = 200
check "the mirror's bytes" cmp "$T/m-raw" "$T/e-raw"
check "and with the revision sent encoded" curl -fsS -o "$T/e-enc" "$E/datasets/acme/revs/resolve/refs%2Fconvert%2Fparquet/$f"
check "the same bytes" cmp "$T/m-raw" "$T/e-enc"
check "a file of main, beside it" bash -c "curl -fsS '$E/datasets/acme/revs/resolve/main/data.csv' | cmp - <(curl -fsS '$M/datasets/acme/revs/resolve/main/data.csv')"
code=$(curl -sS -o /dev/null -w '%{http_code}' "$E/datasets/acme/revs/resolve/refs/convert/parquet")
mcode=$(curl -sS -o /dev/null -w '%{http_code}' "$M/datasets/acme/revs/resolve/refs/convert/parquet")
check "a revision with no file after it is no file URL on either side ($code, the mirror $mcode)" test "$code" = "$mcode" -a "$code" != 200
finish
