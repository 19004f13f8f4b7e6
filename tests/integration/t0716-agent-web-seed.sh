#!/usr/bin/env bash
# t0716-agent-web-seed: an agent told not to fill over HTTP ranges (--no-fill) starts a snapshot with
# peers only (the mirror's web seed is the source of last resort, docs/agent.md); alone, it lets
# libtorrent's web seed in. Here the mirror runs no BitTorrent seed (--p2p-listen off: tracker and web
# seed only) and there is no other instance, so the web seed is the only source: the pull still
# completes, every byte verified, and the mirror's web seed sent it. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/ws", "files": [{"path": "w.bin", "size": 2000000, "seed": 131}]}]}
JSON
sync_from_fake hf:acme/ws
check "serve starts without a BitTorrent seed" start_serve --p2p-listen off
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
check "an agent with --no-fill starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --no-fill
check "a lone agent's pull completes" timeout 120 "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" \
	--listen 127.0.0.1:0 hf:acme/ws
check "every byte, as upstream has it" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/ws \
	"$T/hfc/models--acme--ws/snapshots/$commit"
check "the mirror's web seed sent it" metric_at_least hubmirror_webseed_bytes_total 2000000
"$HUBMIRROR" status --json >"$T/st.json"
check "libtorrent's web seed, not the fill" "$PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))["snapshots"][0]
assert s["fetched_over_http"] == 0 and s["downloaded"] >= 2000000, s' "$T/st.json"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
