#!/usr/bin/env bash
# t0401-serve-ms: the ModelScope API served from a store synced from (fake) ModelScope, driven by an
# SDK-style client (msclient.py): envelope, revisions, listings, ranged downloads checked against
# Sha256, dataset trees by numeric id and by name with paging, the side calls.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
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
"$HUBMIRROR" add ms:acme/ms-llm ms:datasets/acme/ms-rows >/dev/null
check "synced from ModelScope" "$HUBMIRROR" sync
check "serve starts" start_serve
"$PY" "$HM_SRC/tests/integration/helpers/msclient.py" "$M" acme/ms-llm acme/ms-rows 450 >"$T/ms.out"; st=$?
sed 's/^/# /' "$T/ms.out"
check "ModelScope client flow ($(grep -c '^ok' "$T/ms.out") checks passed)" test "$st" = 0
check "a Hugging Face path does not see ModelScope repos" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code}' '$M/api/models/acme/ms-llm')\" = 404 ]"
finish
