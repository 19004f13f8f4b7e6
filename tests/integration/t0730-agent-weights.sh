#!/usr/bin/env bash
# t0730-agent-weights: a mount fetches by default the shards its safetensors indexes name.
# - A checkpoint (a top-level index naming three shards, a diffusers-like component with its own index,
#   and a consolidated copy beside the shards that no index names) is mounted and nothing is read:
#   the agent fetches the metadata and the four shards the indexes name, in the background, and not
#   the consolidated copy; the shards read through the mount byte for byte. A name in an index that
#   is not a file of the snapshot (a path out of it, a file that does not exist) is ignored.
# - `--prefetch none` fetches nothing; an agent whose --cache-size is smaller than the shards fetches
#   only the metadata and says why in its log.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/sharded",
   "files": [{"path": "config.json", "content": "{\"model_type\": \"llama\"}\n"},
             {"path": "model.safetensors.index.json", "content": "{\"metadata\": {\"total_size\": 7500000}, \"weight_map\": {\"a.weight\": \"model-00001-of-00003.safetensors\", \"b.weight\": \"model-00002-of-00003.safetensors\", \"b.bias\": \"model-00002-of-00003.safetensors\", \"c.weight\": \"model-00003-of-00003.safetensors\", \"x\": \"../../../etc/passwd\", \"y\": \"missing.safetensors\", \"z\": 7}}\n"},
             {"path": "model-00001-of-00003.safetensors", "size": 2500000, "seed": 301},
             {"path": "model-00002-of-00003.safetensors", "size": 2500000, "seed": 302},
             {"path": "model-00003-of-00003.safetensors", "size": 2500000, "seed": 303},
             {"path": "consolidated.safetensors", "size": 3000000, "seed": 304},
             {"path": "unet/diffusion_pytorch_model.safetensors.index.json", "content": "{\"weight_map\": {\"u\": \"diffusion_pytorch_model-00001-of-00001.safetensors\"}}\n"},
             {"path": "unet/diffusion_pytorch_model-00001-of-00001.safetensors", "size": 1000000, "seed": 305}]}
 ]}
JSON
sync_from_fake hf:acme/sharded
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
# status_of KEY: a field of the snapshot's entry in the agent's status
status_of() {
	"$HUBMIRROR" status --json |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["snapshots"][0][sys.argv[1]])' "$1"
}
sha() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["repos"][0]
print([f for f in r["commits"][-1]["files"] if f["path"]==sys.argv[2]][0]["sha256"])' "$T/up.json" "$1"; }
size_of() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["repos"][0]
print(sum(f["size"] for f in r["commits"][-1]["files"] if f["path"] in sys.argv[2:]))' "$T/up.json" "$@"; }
meta="config.json model.safetensors.index.json unet/diffusion_pytorch_model.safetensors.index.json"
shards="model-00001-of-00003.safetensors model-00002-of-00003.safetensors model-00003-of-00003.safetensors
unet/diffusion_pytorch_model-00001-of-00001.safetensors"
# shellcheck disable=SC2086
want=$(size_of $meta $shards)
# shellcheck disable=SC2086
only_meta=$(size_of $meta)

# ---- the default: the shards the indexes name ----
check "an agent starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0
check "the checkpoint mounts" "$HUBMIRROR" mount --no-hf-cache hf:acme/sharded "$T/m"
for i in $(seq 150); do [ "$(status_of verified)" = True ] && break; sleep 0.1; done
echo "# without a read: $(status_of selected) of $(status_of files) files wanted, held $(status_of held) of $(status_of size)"
check "the metadata and the four shards are wanted (7 files)" test "$(status_of selected)" = 7
check "and fetched, verified, without a read" test "$(status_of verified)" = True
check "the cache holds them and not the consolidated copy" test "$(status_of held)" = "$want"
check "the log says what it fetches and why" \
	grep -q "hf:acme/sharded: fetching in the background the 4 weight files its safetensors indexes name" "$T/cache/agent.log"
for f in $shards; do
	got=$(sha256sum <"$T/m/$f" | cut -c1-64)
	check "$f reads, byte for byte" test "$got" = "$(sha "$f")"
done
check "umount" "$HUBMIRROR" umount "$T/m"
check "agent --stop" "$HUBMIRROR" agent --stop

# ---- --prefetch none: nothing ----
check "a second agent starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache2" --listen 127.0.0.1:0
check "mount --prefetch none" "$HUBMIRROR" mount --no-hf-cache --prefetch none hf:acme/sharded "$T/m"
sleep 1.5
check "nothing is fetched" test "$(status_of held)" = 0
check "umount" "$HUBMIRROR" umount "$T/m"
check "agent --stop" "$HUBMIRROR" agent --stop

# ---- a cache smaller than the shards: the metadata only ----
check "an agent bounded to 5 MB starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache3" --listen 127.0.0.1:0 --cache-size 5M
check "the checkpoint mounts" "$HUBMIRROR" mount --no-hf-cache hf:acme/sharded "$T/m"
for i in $(seq 100); do grep -q "fetched as they are read" "$T/cache3/agent.log" && break; sleep 0.1; done
check "the log says the shards are fetched as read, and why" \
	grep -q "hf:acme/sharded: the 4 weight files its safetensors indexes name (8.1 MiB) are fetched as they are read, not before: with what it wants they pass the cache's bound (--cache-size 5.0 MiB)" "$T/cache3/agent.log"
for i in $(seq 50); do [ "$(status_of verified)" = True ] && break; sleep 0.1; done
sleep 1
check "only the metadata is held" test "$(status_of held)" = "$only_meta"
check "umount" "$HUBMIRROR" umount "$T/m"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' logs hold no sanitizer report" bash -c "! cat '$T'/cache*/agent.log | grep -E 'Sanitizer|runtime error'"
finish
