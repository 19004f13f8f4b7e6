#!/usr/bin/env bash
# t0731-agent-gone-peer: a peer the tracker still names but that is gone (an agent killed, its machine
# down: the tracker keeps it for two intervals) does not keep a lone agent out of its direct mode.
# The tracker is given such a peer (an announce from a port nobody listens on); a new agent then
# pulls the snapshot: it counts the named peer for a moment, finds nobody there, fetches every piece
# over HTTP ranges from the mirror (its log says it is alone), and the bytes are upstream's.
# - An agent that ends takes its place out of the tracker's list, also for a snapshot that wanted
#   nothing (libtorrent 2.0.8 announces it as a partial seed and says no "stopped" for it).
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/gone",
   "files": [{"path": "config.json", "content": "{\"gone\": 1}\n"},
             {"path": "model.safetensors", "size": 6000000, "seed": 311}]}
 ]}
JSON
sync_from_fake hf:acme/gone
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
btih=$(curl -fsS "$M/api/p2p/torrent/hf/model/acme/gone?meta=1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["btih"])')
# a port nobody listens on: bound, then closed
gone_port=$(free_port)
# tracker PORT EVENT: announce as a peer of the snapshot on PORT; prints the ports the tracker names
tracker() {
	"$PY" - "$M" "$btih" "$1" "$2" <<'PY'
import sys, urllib.parse, urllib.request
m, btih, port, event = sys.argv[1:]
q = "%s/announce?info_hash=%s&peer_id=-GONE01-123456789012&port=%s&uploaded=0&downloaded=0&left=1&compact=1&event=%s" % (
    m, urllib.parse.quote(bytes.fromhex(btih)), port, event)
body = urllib.request.urlopen(q).read()
raw = body[body.find(b"5:peers") + 7:]
n = int(raw[:raw.index(b":")]); raw = raw[raw.index(b":") + 1:][:n]
print(" ".join(str(int.from_bytes(raw[k + 4:k + 6], "big")) for k in range(0, n, 6)))
PY
}
tracker "$gone_port" started >/dev/null
named=$(tracker 9 started) # (another peer's announce: the peers the tracker gives out)
echo "# the tracker names ports: $named (the gone peer's: $gone_port)"
check "the tracker names the gone peer" grep -qw "$gone_port" <<<"$named"
tracker 9 stopped >/dev/null

export HUBMIRROR_AGENT_SOCKET=$T/a.sock
start=$(date +%s%N)
check "a new agent pulls the snapshot" "$HUBMIRROR" pull --mirror "$M" --cache "$T/ca" --hf-cache "$T/hfa" \
	--listen 127.0.0.1:0 hf:acme/gone
echo "# the pull took $(( ($(date +%s%N) - start) / 1000000 )) ms"
check "it found itself alone and fetched over HTTP ranges" grep -q "alone in its swarm: fetching it over HTTP ranges" "$T/ca/agent.log"
check "every piece came over HTTP ranges" test "$(HUBMIRROR_AGENT_SOCKET=$T/a.sock "$HUBMIRROR" status --json |
	"$PY" -c 'import json,sys; s=json.load(sys.stdin)["snapshots"][0]; print(int(s["fetched_over_http"] >= s["bytes_total"]))')" = 1
check "the files are upstream's, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/gone "$T/hfa/models--acme--gone/snapshots/$commit"
check "agent --stop" "$HUBMIRROR" agent --stop

# ---- an agent that ends says goodbye to the tracker, whatever libtorrent announced ----
# (a mount that wants nothing: libtorrent 2.0.8 announces it as a partial seed and never says stopped)
export HUBMIRROR_AGENT_SOCKET=$T/b.sock
check "an agent mounts the snapshot with --prefetch none" "$HUBMIRROR" mount --mirror "$M" --cache "$T/cb" \
	--no-hf-cache --listen 127.0.0.1:0 --prefetch none hf:acme/gone "$T/m"
port_b=$("$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["p2p_port"])')
for i in $(seq 50); do tracker 9 started | grep -qw "$port_b" && break; sleep 0.1; done
check "the tracker names it" bash -c "$(declare -f tracker); M='$M' btih='$btih' PY='$PY'; tracker 9 started | grep -qw '$port_b'"
check "umount" "$HUBMIRROR" umount "$T/m"
check "agent --stop" "$HUBMIRROR" agent --stop
named=$(tracker 9 started)
tracker 9 stopped >/dev/null
echo "# after it ended, the tracker names ports: $named (the agent's was $port_b)"
check "once it ended, the tracker no longer names it" bash -c "! grep -qw '$port_b' <<<'$named'"
check "the agents' logs hold no sanitizer report" bash -c "! cat '$T'/c*/agent.log | grep -E 'Sanitizer|runtime error'"
finish
