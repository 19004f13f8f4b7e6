#!/usr/bin/env bash
# t0801-serve-shutdown: SIGTERM is a graceful stop. New connections are refused at once, idle
# keep-alive connections are closed, a download in flight finishes whole (its connection then
# closes), and serve exits 0 with its catalog's WAL checkpointed away; past --shutdown-grace the
# rest is cut (a client gets a short body, never a wrong one: curl sees it end early); a second
# signal stops at once.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/big",
  "files": [{"path": "model.safetensors", "size": 80000000, "seed": 8}]}]}
JSON
check "synced from the fake upstream" sync_from_fake hf:acme/big
curl -fsS -o "$T/want.bin" -L "$FAKE_API/acme/big/resolve/main/model.safetensors"
serve_pid() { pgrep -f -- "--ready-file $T/url" | head -n1; }
port() { echo "${M##*:}"; }

# ---- a download in flight finishes; nothing new is taken; exit 0 ----
check "serve starts" start_serve --p2p-listen off
PID=$(serve_pid)
curl -sS --limit-rate 25M -o "$T/got.bin" "$M/acme/big/resolve/main/model.safetensors" &
dl=$!
"$PY" - "$M" <<'PY' &
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port))
s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
s.recv(4096)            # answered; the connection stays open, idle
s.settimeout(10)
t = time.monotonic()
assert s.recv(4096) == b"", "the idle connection got bytes"
assert time.monotonic() - t < 5, "closed only late"
PY
idle=$!
sleep 0.7
kill -TERM "$PID"
sleep 0.3
check "new connections are refused at once" bash -c "! curl -sS -m 2 -o /dev/null '$M/healthz' 2>/dev/null"
check "the idle keep-alive connection is closed, not waited for" wait $idle
check "the download in flight finished" wait $dl
check "... whole and right" cmp "$T/got.bin" "$T/want.bin"
for _ in $(seq 100); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
check "serve exited" bash -c "! kill -0 $PID 2>/dev/null"
wait "$PID"; st=$?
check "with status 0" test "$st" = 0
check "it said what it did" grep -q 'finishing the answers in flight' "$T/serve.err"
check "the catalog's WAL was checkpointed away" bash -c "[ ! -s '$HUBMIRROR_DATA/catalog.db-wal' ]"

# ---- past the grace, what is left is cut short ----
check "serve starts with a short grace" start_serve --p2p-listen off --shutdown-grace 1
PID=$(serve_pid)
curl -sS --limit-rate 2M -o "$T/slow.bin" "$M/acme/big/resolve/main/model.safetensors" 2>/dev/null &
dl=$!
sleep 0.5
t0=$(date +%s.%N)
kill -TERM "$PID"
wait "$PID"
t1=$(date +%s.%N)
wait $dl; st=$?
check "serve stopped at the grace's end ($(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s)" \
	awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 0.9 && b - a < 5) }'
check "the slow client saw its body end early (curl 18), not a complete file" test "$st" = 18
check "what it got is a prefix of the file" cmp -n "$(stat -c %s "$T/slow.bin")" "$T/slow.bin" "$T/want.bin"
check "the log names the connections it closed" grep -q 'shutdown grace over' "$T/serve.err"

# ---- a second signal stops at once ----
check "serve starts" start_serve --p2p-listen off --shutdown-grace 30
PID=$(serve_pid)
curl -sS --limit-rate 200K -o /dev/null "$M/acme/big/resolve/main/model.safetensors" 2>/dev/null &
dl=$!
sleep 0.5
kill -TERM "$PID"
sleep 0.3
t0=$(date +%s.%N)
kill -INT "$PID"
wait "$PID"
t1=$(date +%s.%N)
kill $dl 2>/dev/null # what the kernel still holds for it drains at 200 KB/s: no need to watch that
wait $dl
check "a second signal stops at once" awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a < 3) }'
finish
