#!/usr/bin/env bash
# t0421-serve-limits: what one client may make the server do (docs/security.md). Past
# --max-connections a new connection gets a 503 and is closed (counted in /metrics), and the server
# serves again once connections close; X-Forwarded-Host and -Proto shape the URLs the mirror hands
# out (torrents, Link headers) only when they come from a peer named with --trusted-proxy: from anyone
# else they are whatever the client wrote. A big answer (a repo info of 300,000 files, 15 MB) asked for
# by clients that never read it pins no memory: it leaves from an unnamed temporary file.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/lim",
            "files": [{"path": "w.bin", "size": 100000, "seed": 91}]}]}
JSON
sync_from_fake hf:acme/lim
check "serve starts with --max-connections 20" start_serve --p2p-listen off --max-connections 20
check "20 connections are held, the 21st gets a 503, and the server serves again after" "$PY" - "$M" <<'PY'
import socket, sys, time, urllib.request
host, port = sys.argv[1].split("//")[1].split(":")
held = [socket.create_connection((host, int(port))) for _ in range(20)]
time.sleep(0.3)  # the server has taken them all
extra = socket.create_connection((host, int(port)))
extra.settimeout(5)
head = extra.recv(200).decode()
assert head.startswith("HTTP/1.1 503") and "Retry-After" in head, head
for s in held:
    s.close()
for _ in range(50):
    try:
        assert urllib.request.urlopen(sys.argv[1] + "/healthz").status == 200
        break
    except Exception:
        time.sleep(0.1)
else:
    raise SystemExit("not served after the connections closed")
print("# over the limit: " + head.splitlines()[0])
PY
check "/metrics counts the refused connection" metric_at_least hubmirror_http_connections_refused_total 1

torrent_names() { curl -fsS -H "X-Forwarded-Host: evil.example" -H "X-Forwarded-Proto: https" "$M/api/p2p/torrent/hf/model/acme/lim" | grep -c "evil.example"; }
check "an untrusted client's X-Forwarded-Host does not reach the torrent's URLs" test "$(torrent_names)" = 0
check "serve starts with --trusted-proxy 127.0.0.1" start_serve --p2p-listen off --trusted-proxy 10.9.9.9,127.0.0.1
check "a trusted proxy's X-Forwarded-Host does" test "$(torrent_names)" -ge 1
curl -fsS -D "$T/h" -o /dev/null -H "X-Forwarded-Host: evil.example" -H "X-Forwarded-Proto: https" \
	"$M/api/models/acme/lim/tree/main?limit=1"
check "and its X-Forwarded-Proto too (Link header)" grep -qi "^Link: <https://evil.example/" "$T/h"
# Clients that ask for a 15 MB answer and never read it.
export HUBMIRROR_DATA=$T/big
"$HUBMIRROR" init >/dev/null
check "a catalog with a 300,000-file dataset" "$PY" - "$HUBMIRROR_DATA/catalog.db" "$HM_SRC/bench" <<'PY'
import sys
sys.path.insert(0, sys.argv[2])
import catalog_bench
catalog_bench.generate(sys.argv[1], 3, 300000)
PY
check "serve starts on it" start_serve --p2p-listen off
spid=${_pids[-1]}
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$spid/status"; }
curl -fsS -o /dev/null "$M/api/datasets/big/corpus"   # once, so what a request builds is counted before
before=$(rss)
# Under AddressSanitizer freed memory stays in its quarantine (256 MB) and malloc_trim does nothing:
# RSS says nothing there, only the spill counter below does.
limit=40000
ldd "$HUBMIRROR" | grep -q libasan && limit=100000000
check "12 clients ask for the 15 MB repo info and do not read it: it pins no memory" "$PY" - "$M" "$spid" "$before" "$limit" <<'PY'
import socket, sys, time
host, port = sys.argv[1].split("//")[1].split(":")
def rss():
    return int(open("/proc/%s/status" % sys.argv[2]).read().split("VmRSS:")[1].split()[0])
held = []
for _ in range(12):
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"GET /api/datasets/big/corpus HTTP/1.1\r\nHost: x\r\n\r\n")
    held.append(s)
# each answer has started (so it was built), and none is read further
for s in held:
    s.settimeout(60)
    head = s.recv(64)
    assert head.startswith(b"HTTP/1.1 200"), head
time.sleep(0.5)
grew = rss() - int(sys.argv[3])
print("# serve's RSS grew by %d kB with 12 unread 15 MB answers in flight" % grew)
assert grew < int(sys.argv[4]), grew
for s in held:
    s.close()
PY
check "/metrics counts the answers sent from a file" metric_at_least hubmirror_http_bodies_spilled_total 12
finish
