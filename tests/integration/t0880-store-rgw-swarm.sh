#!/usr/bin/env bash
# t0880-store-rgw-swarm: an instance agent pulls a snapshot over the swarm from a mirror whose store is
# a bucket of Ceph's RADOS Gateway with a local cache smaller than the snapshot. The mirror's BitTorrent
# seed links to the cache's files, so it holds only what the cache holds; what it lacks comes to the
# agent from the mirror's web seed, read from the bucket. The pull completes, every byte verified; and
# serve says why it does not seed the rest (the contents are in the bucket, not the cache), never that
# the store is damaged, which it is not.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/big",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "a.safetensors", "size": 3000000, "seed": 881},
             {"path": "b.safetensors", "size": 3000000, "seed": 882},
             {"path": "c.safetensors", "size": 3000000, "seed": 883}]}]}
JSON
rgw_store t0880 4M
sync_from_fake hf:acme/big
find "$HUBMIRROR_DATA/store/blobs" -type f -delete
check "serve starts, rescanning its seed each second" start_serve --p2p-rescan 1
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
# (--no-fill: the bytes come through libtorrent, from the mirror's seed and its web seed, not ranges)
check "an agent starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --no-fill
check "the pull completes" timeout 180 "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" \
	--listen 127.0.0.1:0 hf:acme/big
check "every byte, as upstream has it" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf \
	acme/big "$T/hfc/models--acme--big/snapshots/$commit"
check "the mirror's web seed sent what its seed lacked, from the bucket" metric_at_least hubmirror_webseed_bytes_total 3000000
said() { grep -q "files are in the store's bucket and not in the local cache: not seeded" "$T/serve.err"; }
for i in $(seq 100); do said && break; sleep 0.2; done
check "serve says its seed lacks what the cache does not hold" said
check "and never that the store is damaged" bash -c "! grep -q 'damaged' '$T/serve.err'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "serve stops clean" serve_stops_clean
finish
