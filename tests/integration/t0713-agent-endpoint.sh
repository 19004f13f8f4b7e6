#!/usr/bin/env bash
# t0713-agent-endpoint: `agent --http` answers the Hugging Face and ModelScope APIs on the instance.
# The requests huggingface_hub makes (model_info, list files, paths-info, hf_hub_download's HEAD then
# GET, a Range, a conditional GET) and the ModelScope SDK's (file list, file download) get the mirror's
# answers, and every file byte comes through the swarm and the agent's cache: the mirror's log shows
# no GET of the files' resolve URLs. With the mirror down, what the agent saw still answers. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/ep",
   "files": [{"path": "config.json", "content": "{\"ep\": 1}\n"},
             {"path": "sub/model.safetensors", "size": 5000000, "seed": 101}]},
  {"hub": "ms", "type": "model", "id": "acme/ep-ms",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "w.bin", "size": 700000, "seed": 102}]},
  {"hub": "ms", "type": "dataset", "id": "acme/ep-msd",
   "files": [{"path": "dataset_infos.json", "content": "{}\n"},
             {"path": "data/train.csv", "size": 600000, "seed": 103}]}
 ]}
JSON
sync_from_fake hf:acme/ep ms:acme/ep-ms ms:datasets/acme/ep-msd
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
serve_pid=${_pids[-1]}
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
up() { "$PY" -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]==sys.argv[2]][0]
c=[c for c in r["commits"] if c["id"]==r["sha"]][0]; print(r["sha"] if sys.argv[3]=="sha" else [f for f in c["files"] if f["path"]==sys.argv[3]][0]["sha256"])' "$T/up.json" "$@"; }
commit=$(up acme/ep sha)
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --http 0 # (a bare port: the loopback)
E=$(agent_endpoint)
check "status names the local endpoint, the way to use it" bash -c "\"\$HUBMIRROR\" status | grep -qx 'local endpoint: $E (HF_ENDPOINT=$E hf download ...)'"
echo "# endpoint $E, mirror $M"

# huggingface_hub: model_info, the file list, paths-info (a form POST)
check "model_info answers as the mirror does" cmp <(curl -fsS "$M/api/models/acme/ep/revision/main") <(curl -fsS "$E/api/models/acme/ep/revision/main")
check "the tree answers as the mirror does" cmp <(curl -fsS "$M/api/models/acme/ep/tree/main?recursive=true") <(curl -fsS "$E/api/models/acme/ep/tree/main?recursive=true")
check "paths-info (a form POST) answers as the mirror does" cmp \
	<(curl -fsS -d paths=config.json -d expand=true "$M/api/models/acme/ep/paths-info/main") \
	<(curl -fsS -d paths=config.json -d expand=true "$E/api/models/acme/ep/paths-info/main")
code=$(curl -s -o /dev/null -w '%{http_code}' "$E/api/models/acme/nope/revision/main")
check "a repo the mirror lacks is its 404" test "$code" = 404
# hf_hub_download: HEAD, then GET
curl -fsSI "$E/acme/ep/resolve/main/sub/model.safetensors" | tr -d '\r' >"$T/head.txt"
check "HEAD gives the commit" grep -qi "^x-repo-commit: $commit" "$T/head.txt"
check "HEAD gives the linked size and length" bash -c "grep -qi '^x-linked-size: 5000000' '$T/head.txt' && grep -qi '^content-length: 5000000' '$T/head.txt'"
check "HEAD gives the ETag (the sha256)" grep -qi "^etag: \"$(up acme/ep sub/model.safetensors)\"" "$T/head.txt"
curl -fsS -o "$T/model" "$E/acme/ep/resolve/main/sub/model.safetensors"
check "GET gives the file, byte for byte" test "$(sha256sum <"$T/model" | cut -c1-64)" = "$(up acme/ep sub/model.safetensors)"
check "a Range answers 206 with those bytes" cmp <(curl -fsS -r 4000000-4000999 "$E/acme/ep/resolve/main/sub/model.safetensors") \
	<(tail -c +4000001 "$T/model" | head -c 1000)
code=$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: \"$(up acme/ep sub/model.safetensors)\"" "$E/acme/ep/resolve/main/sub/model.safetensors")
check "a conditional GET with the ETag is 304" test "$code" = 304
check "config.json by its commit" test "$(curl -fsS "$E/acme/ep/resolve/$commit/config.json")" = '{"ep": 1}'
# the ModelScope SDK: file list, then each file
# (ModelScope answers carry a RequestId of their own: compared without it)
msj() { curl -fsS "$1" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); d.pop("RequestId",None); print(json.dumps(d,sort_keys=True))'; }
check "ModelScope's file list answers as the mirror does" cmp <(msj "$M/api/v1/models/acme/ep-ms/repo/files?Revision=master&Recursive=True") \
	<(msj "$E/api/v1/models/acme/ep-ms/repo/files?Revision=master&Recursive=True")
curl -fsS -o "$T/w.bin" "$E/api/v1/models/acme/ep-ms/repo?Revision=master&FilePath=w.bin"
check "ModelScope's file download gives the file, byte for byte" test "$(sha256sum <"$T/w.bin" | cut -c1-64)" = "$(up acme/ep-ms w.bin)"
# a ModelScope dataset's file, by the same grammar the mirror reads (hub/ms.h)
curl -fsS -o "$T/train.csv" "$E/api/v1/datasets/acme/ep-msd/repo?Revision=master&FilePath=data%2Ftrain.csv"
check "a ModelScope dataset's file download gives the file, byte for byte" \
	test "$(sha256sum <"$T/train.csv" | cut -c1-64)" = "$(up acme/ep-msd data/train.csv)"
# through the swarm: the mirror served no file body over its resolve URLs
check "the mirror's log shows no GET of a file (only HEADs)" \
	bash -c "! grep -E '\"GET /acme/ep/resolve|\"GET /api/v1/(models/acme/ep-ms|datasets/acme/ep-msd)/repo\?' '$T/access.log'"
check "the agent holds the three snapshots" bash -c "\"$HUBMIRROR\" status --json | grep -c '\"spec\": \"' | grep -qx 3"
# the mirror goes down: what the agent saw still answers
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
curl -fsS -D "$T/off.h" -o "$T/off.json" "$E/api/models/acme/ep/revision/main"
check "model_info answers from the agent's copy" grep -qi '^x-hubmirror-offline' "$T/off.h"
curl -fsS -o "$T/model2" "$E/acme/ep/resolve/main/sub/model.safetensors"
check "and the file still downloads whole from the cache" cmp "$T/model" "$T/model2"
code=$(curl -s -o /dev/null -w '%{http_code}' "$E/api/models/acme/other/revision/main")
check "what it never saw is a 502 saying the mirror cannot be reached" test "$code" = 502
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
