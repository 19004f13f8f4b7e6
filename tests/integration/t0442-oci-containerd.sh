#!/usr/bin/env bash
# t0442-oci-containerd: containerd pulls a snapshot's image of tar layers (docs/protocols/oci.md, "Tar
# layers") from the mirror as a registry mirror configured by hosts.toml (docs/kubernetes/README.md),
# and unpacks it: containerd is started by the test as root, with its own root, state and socket, and
# `ctr image pull --hosts-dir` pulls models.example/image/hf/acme/x:main, which hosts.toml sends to
# the mirror over plain HTTP; the native snapshotter's tree then holds every file of the snapshot,
# equal to upstream's, by its path. A guarded repo's image is pulled with its token (ctr --user: the
# registry token flow).
. "$HM_SRC/tests/integration/lib.sh"
command -v containerd >/dev/null && command -v ctr >/dev/null || skip "needs containerd and ctr (Debian's containerd)"
[ "$(id -u)" = 0 ] || skip "containerd runs as root"
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
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/x hf:acme/guarded >/dev/null
"$HUBMIRROR" sync >/dev/null
printf 'tok-reader-abcdefgh hf:acme/guarded\n' >"$T/tokens"
chmod 600 "$T/tokens"
check "serve starts" start_serve --p2p-listen off --tokens "$T/tokens"

# containerd of its own: root, state, socket in $T, no CRI
C=$T/containerd
mkdir -p "$C/hosts/models.example"
cat >"$C/config.toml" <<TOML
version = 2
root = "$C/root"
state = "$C/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$C/sock"
[ttrpc]
  address = "$C/sock.ttrpc"
TOML
cat >"$C/hosts/models.example/hosts.toml" <<TOML
server = "https://models.example"
[host."$M"]
  capabilities = ["pull", "resolve"]
TOML
containerd --config "$C/config.toml" >"$C/log" 2>&1 &
_pids+=($!)
for _ in $(seq 100); do ctr --address "$C/sock" version >/dev/null 2>&1 && break; sleep 0.1; done
check "containerd starts" ctr --address "$C/sock" version
CTR="ctr --address $C/sock --namespace t0442"
check "ctr pulls models.example/image/hf/acme/x:main through hosts.toml from the mirror, and unpacks it" \
	bash -c "$CTR image pull --snapshotter native --hosts-dir '$C/hosts' models.example/image/hf/acme/x:main >'$T/pull.out' 2>&1 || { sed 's/^/# /' '$T/pull.out'; false; }"
check "the image is listed" bash -c "$CTR image ls -q | grep -qx models.example/image/hf/acme/x:main"
check "the mirror served it (its access log)" grep -q "/v2/image/hf/acme/x/blobs/sha256:" "$T/access.log"
# the unpacked tree: the native snapshotter's newest snapshot holds every layer applied
top=$(ls -td "$C"/root/io.containerd.snapshotter.v1.native/snapshots/*/ | head -1)
bad=0
for p in config.json model.safetensors sub/tokenizer.json .gitattributes; do
	cmp -s "$top/$p" <(curl -fsSL "$FAKE_API/acme/x/resolve/main/$p") || { echo "# $p: not upstream's in $top"; bad=1; }
done
check "the unpacked image holds every file of the snapshot, equal to upstream's, by its path" test "$bad" = 0
check "... and nothing else" test "$(cd "$top" && find . -type f | sort | tr '\n' ' ')" = "./.gitattributes ./config.json ./model.safetensors ./sub/tokenizer.json "
check "a guarded repo's image is refused without its token" bash -c "! $CTR image pull --snapshotter native --hosts-dir '$C/hosts' models.example/image/hf/acme/guarded:main >/dev/null 2>&1"
check "... and pulled with it (ctr --user)" bash -c "$CTR image pull --snapshotter native --hosts-dir '$C/hosts' --user x:tok-reader-abcdefgh models.example/image/hf/acme/guarded:main >'$T/pull2.out' 2>&1 || { sed 's/^/# /' '$T/pull2.out'; false; }"
check "... containerd asking the token endpoint the challenge named" grep -q "GET /v2/token" "$T/access.log"
check "serve stops clean" serve_stops_clean
finish
