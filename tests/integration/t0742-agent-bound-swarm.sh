#!/usr/bin/env bash
# t0742-agent-bound-swarm: `agent --cache-size` holds at every moment when the bytes come from a peer
# (libtorrent writes those pieces itself, past the HTTP fill's wait for room). Agent A pulls a 15 MB
# checkpoint whole; agent B, bounded to 8 MiB and told not to fetch over HTTP ranges (--no-fill),
# mounts it and reads shard after shard: every byte comes from A, each shard reads byte for byte, and
# right after each read B's cache is within its bound (B gives libtorrent only the room the bound has
# left, and makes room before more comes).
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/swarmb",
   "files": [{"path": "config.json", "content": "{\"model_type\": \"llama\"}\n"},
             {"path": "model.safetensors.index.json", "content": "{\"weight_map\": {}}\n"},
             {"path": "model-00001-of-00005.safetensors", "size": 3000000, "seed": 421},
             {"path": "model-00002-of-00005.safetensors", "size": 3000000, "seed": 422},
             {"path": "model-00003-of-00005.safetensors", "size": 3000000, "seed": 423},
             {"path": "model-00004-of-00005.safetensors", "size": 3000000, "seed": 424},
             {"path": "model-00005-of-00005.safetensors", "size": 3000000, "seed": 425}]}
 ]}
JSON
sync_from_fake hf:acme/swarmb
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
sha() { "$PY" -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/swarmb"][0]
print([f for f in r["commits"][-1]["files"] if f["path"]==sys.argv[2]][0]["sha256"])' "$T/up.json" "$1"; }
trap 'HUBMIRROR_AGENT_SOCKET=$T/a.sock "$HUBMIRROR" agent --stop >/dev/null 2>&1; umount -l "$T/m" 2>/dev/null; _cleanup' EXIT

# agent A holds the whole checkpoint and seeds it
check "agent A pulls the checkpoint whole" env HUBMIRROR_AGENT_SOCKET="$T/a.sock" "$HUBMIRROR" pull --mirror "$M" \
	--cache "$T/ca" --no-hf-cache --listen 127.0.0.1:0 hf:acme/swarmb

export HUBMIRROR_AGENT_SOCKET=$T/b.sock
check "agent B, bounded to 8 MiB and without HTTP ranges, starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cb" \
	--listen 127.0.0.1:0 --cache-size 8M --no-fill
check "B mounts the checkpoint" "$HUBMIRROR" mount --no-hf-cache hf:acme/swarmb "$T/m"
kb() { du -sk "$T/cb" | cut -f1; }
at_once=0 bad=0
for i in 1 2 3 4 5; do
	f=model-0000$i-of-00005.safetensors
	got=$(sha256sum <"$T/m/$f" | cut -c1-64)
	now=$(kb)
	echo "# after shard $i: B's cache holds $now KiB"
	[ "$got" = "$(sha "$f")" ] || bad=$((bad + 1))
	[ "$now" -gt "$at_once" ] && at_once=$now
done
check "every shard reads byte for byte" test "$bad" = 0
check "B's cache held at most its 8 MiB right after each read (worst $at_once KiB)" test "$at_once" -le 8192
"$HUBMIRROR" status --json >"$T/st.json"
HUBMIRROR_AGENT_SOCKET=$T/a.sock "$HUBMIRROR" status --json >"$T/sta.json"
# (libtorrent wrote every byte: A's, and the mirror's seed's (a peer too) once A is busy; B's own
# download count starts again each time its torrent is added again without evicted pieces: A's
# upload count says what came from it)
check "the bytes came from peers, A among them, none over HTTP ranges" "$PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))["snapshots"][0]; a=json.load(open(sys.argv[2]))["snapshots"][0]
assert s["fetched_over_http"] == 0 and a["uploaded"] >= 3000000, (s, a["uploaded"])
assert s["held"] <= 8 << 20 < s["size"], s' "$T/st.json" "$T/sta.json"
check "the log says pieces left the cache" grep -q "read least recently left the cache" "$T/cb/agent.log"
check "umount" "$HUBMIRROR" umount "$T/m"
check "agent B --stop" "$HUBMIRROR" agent --stop
check "agent A --stop" env HUBMIRROR_AGENT_SOCKET="$T/a.sock" "$HUBMIRROR" agent --stop
check "the agents' logs hold no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/ca/agent.log' '$T/cb/agent.log'"
finish
