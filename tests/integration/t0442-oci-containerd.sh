#!/usr/bin/env bash
# t0442-oci-containerd: containerd pulls a snapshot's image of tar layers (docs/protocols/oci.md, "Tar
# layers") from the mirror as a registry mirror configured by hosts.toml (docs/kubernetes/README.md),
# and unpacks it: containerd is started by the test as root, with its own root, state and socket, and
# `ctr image pull --hosts-dir` pulls models.example/image/hf/acme/x:main, which hosts.toml sends to
# the mirror over plain HTTP; the native snapshotter's tree then holds every file of the snapshot,
# equal to upstream's, by its path. A guarded repo's image is pulled with its token (ctr --user: the
# registry token flow).
. "$HM_SRC/tests/integration/lib.sh"
need_containerd
"$PY" - >"$T/spec.json" <<'PY'
import json
print(json.dumps({
 "tokens": {},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/x", "files": [
     {"path": "config.json", "content": "{\"architectures\": [\"LlamaForCausalLM\"]}\n"},
     {"path": "model.safetensors", "size": 2500000, "seed": 5},
     {"path": "sub/tokenizer.json", "content": "{\"t\": 1}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/guarded", "files": [{"path": "config.json", "content": "{\"g\": 1}\n"}]}
 ]}))
PY
sync_from_fake hf:acme/x hf:acme/guarded
printf 'tok-reader-abcdefgh hf:acme/guarded\n' >"$T/tokens"
chmod 600 "$T/tokens"
check "serve starts" start_serve --p2p-listen off --tokens "$T/tokens"

check "containerd starts" start_containerd "$T/containerd" "$M" t0442
check "ctr pulls models.example/image/hf/acme/x:main through hosts.toml from the mirror, and unpacks it" \
	ctr_pull image/hf/acme/x:main
check "the image is listed" bash -c "$CTR image ls -q | grep -qx models.example/image/hf/acme/x:main"
check "the mirror served it (its access log)" grep -q "/v2/image/hf/acme/x/blobs/sha256:" "$T/access.log"
check "the unpacked image holds every file of the snapshot, equal to upstream's, by its path, and nothing else" \
	ctr_unpacked acme/x .gitattributes config.json model.safetensors sub/tokenizer.json
refused() { ! ctr_pull "$@" >/dev/null; }
check "a guarded repo's image is refused without its token" refused image/hf/acme/guarded:main
check "... and pulled with it (ctr --user)" ctr_pull image/hf/acme/guarded:main --user x:tok-reader-abcdefgh
check "... containerd asking the token endpoint the challenge named" grep -q "GET /v2/token" "$T/access.log"
check "serve stops clean" serve_stops_clean
finish
