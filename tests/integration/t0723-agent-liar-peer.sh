#!/usr/bin/env bash
# t0723-agent-liar-peer: a peer in the swarm that claims every piece and never sends one (broken, or
# hostile: tests/integration/helpers/liarpeer.py) must not hold an agent up: its requests time out in
# 5 s, the peer is snubbed, and what only it claims counts as nobody's, so the agent's fill takes those
# pieces from the mirror. The pull ends well within the 30 s after which the web seed would come in
# (it used to wait for that), and the liar's connection shows the agent met it. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/liar",
   "files": [{"path": "config.json", "content": "{\"liar\": 1}\n"},
             {"path": "model.safetensors", "size": 8000000, "seed": 231}]}
 ]}
JSON
sync_from_fake hf:acme/liar
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
check "the torrent" curl -fsS -o "$T/liar.torrent" "$M/api/p2p/torrent/hf/model/acme/liar"
"$PY" "$HM_SRC/tests/integration/helpers/liarpeer.py" --mirror "$M" --torrent "$T/liar.torrent" --ready-file "$T/liar.port" >"$T/liar.out" 2>"$T/liar.err" &
_pids+=($!)
for i in $(seq 100); do [ -s "$T/liar.port" ] && break; sleep 0.05; done
check "the lying peer has announced itself to the mirror's tracker" test -s "$T/liar.port"
check "an agent starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0
t0=$(date +%s)
timeout 25 "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/liar >"$T/pull.out" 2>"$T/pull.err"; rc=$?
echo "# the pull took $(( $(date +%s) - t0 )) s"
sed 's/^/# /' "$T/pull.err"
check "the pull ends well, before the web seed's 30 s (status $rc)" test "$rc" = 0
check "the agent met the lying peer" grep -q handshake "$T/liar.out"
check "every file is upstream's, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/liar "$T/hfc/models--acme--liar/snapshots/$commit"
check "the pieces the liar claimed came over the fill" bash -c "\"$HUBMIRROR\" status --json | \"$PY\" -c '
import json,sys; s=json.load(sys.stdin)[\"snapshots\"][0]; assert s[\"fetched_over_http\"] > 0, s'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
