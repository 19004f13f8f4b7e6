#!/usr/bin/env bash
# t0401-serve-ms: the ModelScope API served from a store synced from (fake) ModelScope, driven by an
# SDK-style client (msclient.py): envelope, revisions, listings, ranged downloads checked against
# Sha256, dataset trees by numeric id and by name with paging, the side calls. A private ModelScope
# repo synced with a token that reads it is closed on the mirror, like a gated one (docs/security.md),
# until the operator opens it.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"ms_reader": {"read": ["acme/ms-private"]}},
 "repos": [
  {"hub": "ms", "type": "model", "id": "acme/ms-private", "private": true,
   "files": [{"path": "configuration.json", "content": "{\"private\": true}\n"}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-llm",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "sub/tokenizer.json", "content": "{}\n"},
             {"path": "model.safetensors", "size": 1200000, "seed": 9}]},
  {"hub": "ms", "type": "dataset", "id": "acme/ms-rows",
   "generate": {"count": 450, "size": 30, "prefix": "rows/r-", "suffix": ".txt"}}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_MS_UPSTREAM=$FAKE_API
"$HUBMIRROR" add ms:acme/ms-llm ms:datasets/acme/ms-rows ms:acme/ms-private >/dev/null
check "synced from ModelScope (the private repo with a token that reads it)" env MODELSCOPE_API_TOKEN=ms_reader "$HUBMIRROR" sync
check "serve starts" start_serve
"$PY" "$HM_SRC/tests/integration/helpers/msclient.py" "$M" acme/ms-llm acme/ms-rows 450 >"$T/ms.out"; st=$?
sed 's/^/# /' "$T/ms.out"
check "ModelScope client flow ($(grep -c '^ok' "$T/ms.out") checks passed)" test "$st" = 0
check "a Hugging Face path does not see ModelScope repos" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/api/models/acme/ms-llm')\" = 404 ]"
dl() { curl -sS -o /dev/null -w '%{http_code}' "$M/api/v1/models/acme/$1/repo?Revision=master&FilePath=configuration.json"; }
check "the private repo is not shown at all: its files answer as a repo the mirror lacks" test "$(dl ms-private)" = 404
check "the public one's are served" test "$(dl ms-llm)" = 200
check "the private repo is not seeded or announced: its torrent is not found" bash -c "
	[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/api/p2p/torrent/ms/model/acme/ms-private')\" = 404 ]"
"$HUBMIRROR" add --open ms:acme/ms-private >/dev/null
check "opened by the operator (add --open), it is served" test "$(dl ms-private)" = 200
finish
