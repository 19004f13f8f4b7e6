#!/usr/bin/env bash
# t0741-agent-bound-warm: `agent --cache-size` holds at every moment while a warm cache is read again.
# A checkpoint of five 3 MB shards is mounted on an agent bounded to 8 MiB; each shard is read, then
# read again at once (O_DIRECT: past the kernel's page cache, each read reaches the agent), as a
# loader that verifies what it loaded would. Right after every read and re-read the cache is within
# its bound; a re-read of the shard just read fetches nothing (room for the next shard is made from
# what was read least recently, never from the shard in use), and its bytes are upstream's; the
# shards read longest ago left the cache.
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/warm",
   "files": [{"path": "config.json", "content": "{\"model_type\": \"llama\"}\n"},
             {"path": "model.safetensors.index.json", "content": "{\"weight_map\": {}}\n"},
             {"path": "model-00001-of-00005.safetensors", "size": 3000000, "seed": 411},
             {"path": "model-00002-of-00005.safetensors", "size": 3000000, "seed": 412},
             {"path": "model-00003-of-00005.safetensors", "size": 3000000, "seed": 413},
             {"path": "model-00004-of-00005.safetensors", "size": 3000000, "seed": 414},
             {"path": "model-00005-of-00005.safetensors", "size": 3000000, "seed": 415}]}
 ]}
JSON
sync_from_fake hf:acme/warm
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
sha() { "$PY" -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/warm"][0]
print([f for f in r["commits"][-1]["files"] if f["path"]==sys.argv[2]][0]["sha256"])' "$T/up.json" "$1"; }
check "an agent bounded to 8 MiB starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --cache-size 8M
check "the 15 MB checkpoint mounts" "$HUBMIRROR" mount --no-hf-cache hf:acme/warm "$T/m"
kb() { du -sk "$T/cache" | cut -f1; }
# fetched: the bytes fetched over HTTP so far (a count that only grows)
fetched() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["snapshots"][0]["fetched_over_http"])'; }
rd() { dd if="$T/m/$1" iflag=direct bs=1M 2>/dev/null | sha256sum | cut -c1-64; }
worst=0 bad=0 refetched=0
for i in 1 2 3 4 5; do
	f=model-0000$i-of-00005.safetensors
	got=$(rd "$f")
	now=$(kb)
	[ "$got" = "$(sha "$f")" ] || bad=$((bad + 1))
	[ "$now" -gt "$worst" ] && worst=$now
	before=$(fetched)
	got=$(rd "$f")
	again=$(kb)
	after=$(fetched)
	echo "# shard $i: $now KiB right after its read, $again KiB after its re-read, which fetched $((after - before)) bytes"
	[ "$got" = "$(sha "$f")" ] || bad=$((bad + 1))
	[ "$again" -gt "$worst" ] && worst=$again
	[ "$after" = "$before" ] || refetched=$((refetched + 1))
done
check "every read and re-read returns upstream's bytes" test "$bad" = 0
check "the cache held at most its 8 MiB right after every read and re-read (worst $worst KiB)" test "$worst" -le 8192
check "no re-read of the shard just read fetched a byte ($refetched did)" test "$refetched" = 0
check "the log says pieces left the cache" grep -q "read least recently left the cache" "$T/cache/agent.log"
"$HUBMIRROR" status --json >"$T/st.json"
check "status: the snapshot holds less than its size, within the bound" "$PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))["snapshots"][0]
assert s["held"] <= 8 << 20 < s["size"], s' "$T/st.json"
# the first shard, read longest ago, is what left: reading it again fetches it again
before=$(fetched)
check "shard 1 reads again byte for byte" test "$(rd model-00001-of-00005.safetensors)" = "$(sha model-00001-of-00005.safetensors)"
after=$(fetched)
echo "# shard 1 again fetched $((after - before)) bytes"
check "shard 1, read longest ago, had left the cache (fetched again)" test $((after - before)) -gt 0
used=$(kb)
# (under load this once left 9976 KiB: the fill had handed the snapshot to libtorrent and gone direct
# again, and the estimate, made of what each side said it held, counted some bytes nowhere)
check "and the cache is still within its bound ($used KiB)" test "$used" -le 8192
check "umount" "$HUBMIRROR" umount "$T/m"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
