#!/usr/bin/env bash
# t0717-agent-fill: the mirror is the source of last resort. Its BitTorrent seed identifies itself and
# agents take nothing from it; a lone agent gets every piece over HTTP ranges from the mirror's store
# (its fill), checked by libtorrent like any piece and then seeded; a second agent gets its pieces
# from the first one, not from the mirror; an agents' fill request in a swarm for a range the mirror
# has just sent is answered 409 (take it from the swarm), other clients' never. Every byte is
# compared with upstream's. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/fill",
   "files": [{"path": "config.json", "content": "{\"fill\": 1}\n"},
             {"path": "model.safetensors", "size": 6000000, "seed": 171},
             {"path": "sub/tokenizer.json", "size": 700000, "seed": 172}]},
  {"hub": "hf", "type": "model", "id": "acme/crash",
   "files": [{"path": "model.safetensors", "size": 48000000, "seed": 173}]}
 ]}
JSON
sync_from_fake hf:acme/fill hf:acme/crash
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"] == "acme/fill"][0]["sha"])' "$T/up.json")
crash=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"] == "acme/crash"][0]["sha"])' "$T/up.json")
# field SOCKET KEY: a number from the agent's status of the snapshot
field() { HUBMIRROR_AGENT_SOCKET=$1 "$HUBMIRROR" status --json | "$PY" -c '
import json,sys; s=json.load(sys.stdin)["snapshots"]; print(s[0][sys.argv[1]])' "$2"; }

export HUBMIRROR_AGENT_SOCKET=$T/a.sock
check "a lone agent pulls the snapshot" "$HUBMIRROR" pull --mirror "$M" --cache "$T/ca" --hf-cache "$T/hfa" \
	--listen 127.0.0.1:0 hf:acme/fill
total=$(field "$T/a.sock" bytes_total)
filled=$(field "$T/a.sock" fetched_over_http)
echo "# lone agent: $filled bytes over HTTP ranges, $(field "$T/a.sock" downloaded) from peers, of $total"
check "every piece came over HTTP ranges from the mirror" test "$filled" -ge "$total"
check "none from a peer: the mirror's seed gave nothing" test "$(field "$T/a.sock" downloaded)" = 0
check "the mirror's seed sent nothing" test "$(metric hubmirror_seeder_uploaded_bytes_total)" = 0
check "the files are upstream's, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/fill "$T/hfa/models--acme--fill/snapshots/$commit"

# a second agent, while the first one seeds
export HUBMIRROR_AGENT_SOCKET=$T/b.sock
check "a second agent pulls it" "$HUBMIRROR" pull --mirror "$M" --cache "$T/cb" --hf-cache "$T/hfb" \
	--listen 127.0.0.1:0 hf:acme/fill
filled=$(field "$T/b.sock" fetched_over_http)
got=$(field "$T/b.sock" downloaded)
echo "# second agent: $filled bytes over HTTP ranges, $got from peers"
check "it got its pieces from the first agent" test "$got" -ge $((total * 3 / 4))
check "and took at most a quarter from the mirror" test "$filled" -le $((total / 4))
check "the first agent uploaded them" test "$(field "$T/a.sock" uploaded)" -ge $((total * 3 / 4))
check "its files are upstream's, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/fill "$T/hfb/models--acme--fill/snapshots/$commit"

# in a swarm, the mirror sends a range once: the next agent asking for it within seconds is told to
# take it from its peers (409); other clients are always served
btih=$(HUBMIRROR_AGENT_SOCKET=$T/a.sock "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["snapshots"][0]["btih"])')
url="$M/p2p/seed/$btih/$(curl -fsS "$M/api/p2p/torrent/hf/model/acme/fill?meta=1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["name"])')/model.safetensors"
spared=$(metric hubmirror_webseed_fill_deduped_total)
fillget() { curl -s -o "$T/range.bin" -w '%{http_code}' -r 1048576-2097151 "$@" "$url"; }
check "a swarm fill's first request for a range is served" test "$(fillget -H 'X-Hubmirror-Fill: swarm')" = 206
check "the next one within seconds is told to take it from peers" test "$(fillget -H 'X-Hubmirror-Fill: swarm')" = 409
check "a client without the header is served all the same" test "$(fillget)" = 206
check "another range is served" test "$(curl -s -o /dev/null -w '%{http_code}' -r 0-1048575 -H 'X-Hubmirror-Fill: swarm' "$url")" = 206
check "the mirror counts what it spared" test "$(metric hubmirror_webseed_fill_deduped_total)" = $((spared + 1))
check "agent b stops" "$HUBMIRROR" agent --stop
HUBMIRROR_AGENT_SOCKET=$T/a.sock check "agent a stops" "$HUBMIRROR" agent --stop

# killed with -9 while it writes pieces itself: a new agent finds what was written (checked by
# libtorrent, a torn piece fetched again) and ends with every byte right
export HUBMIRROR_AGENT_SOCKET=$T/c.sock
check "a lone agent starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cc" --listen 127.0.0.1:0
cpid=$("$HUBMIRROR" status --json | sed -n 's/^  "pid": \([0-9]*\),$/\1/p')
"$HUBMIRROR" pull --no-hf-cache hf:acme/crash >/dev/null 2>&1 &
pullpid=$!
for i in $(seq 200); do
	have=$("$HUBMIRROR" status --json 2>/dev/null | "$PY" -c 'import json,sys; s=json.load(sys.stdin)["snapshots"]; print(s[0]["bytes_have"] if s else 0)' 2>/dev/null)
	[ "${have:-0}" -gt 0 ] && break
	sleep 0.01
done
kill -9 "$cpid"
wait "$pullpid"
echo "# killed with $have bytes in"
rm -f "$T/c.sock"
check "a new agent pulls it" "$HUBMIRROR" pull --mirror "$M" --cache "$T/cc" --hf-cache "$T/hfc" --listen 127.0.0.1:0 hf:acme/crash
check "every byte right" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/crash "$T/hfc/models--acme--crash/snapshots/$crash"
check "agent c stops" "$HUBMIRROR" agent --stop
check "the agents' logs hold no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/ca/agent.log' '$T/cb/agent.log' '$T/cc/agent.log'"
finish
