#!/usr/bin/env bash
# t0420-serve-hostile: `hubmirror serve` against hostile clients over raw sockets to 127.0.0.1
# (tests/integration/helpers/hostile.py), each scenario ending with a plain client still served: traversal
# attempts through the repo, revision and file parts of the HF routes (and the paths and revisions the
# ModelScope and catalog routes take from the query): never a byte from outside the snapshot, never a
# crash; oversized request lines, headers and bodies (414/431/413 and a closed connection); 10,000
# pipelined requests on one connection; slowloris (closed by the header timeout); a slow reader beside
# full-speed readers (no stall, no buffering, dropped by the write timeout); a request sent in full
# while the server was stalled past its header timeout (read and answered, not reset); 2,000 idle
# connections (RSS under 50 MiB though fifty of them sent 900 KB bodies, idle timeout); garbage bytes
# and clients that vanish mid-response. Short timeouts (--header-timeout and friends) keep it well
# under a minute.
. "$HM_SRC/tests/integration/lib.sh"
ulimit -n 8192 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/tiny",
   "files": [{"path": "config.json", "content": "{\"hidden_size\": 8}\n"},
             {"path": "sub/notes.txt", "content": "notes\n"},
             {"path": "dots..name.txt", "content": "dots are fine inside a name\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 42}]},
  {"hub": "ms", "type": "model", "id": "acme/tiny",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "sub/notes.txt", "content": "ms notes\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/other",
   "files": [{"path": "secret.txt", "content": "TOP-SECRET-7f3a9c-of-another-repo\n"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/tiny hf:acme/other ms:acme/tiny >/dev/null
check "synced" "$HUBMIRROR" sync --no-progress

HEADER_TIMEOUT=2 IDLE_TIMEOUT=4 WRITE_TIMEOUT=4
# At debug level the server logs each connection a timeout closes (which timeout, after how long, how
# many request bytes it left unread): a scenario that fails prints the tail of $T/serve.err.
"$HUBMIRROR" --log-level debug serve --listen 127.0.0.1:0 --ready-file "$T/url" \
	--header-timeout $HEADER_TIMEOUT --idle-timeout $IDLE_TIMEOUT --write-timeout $WRITE_TIMEOUT \
	2>"$T/serve.err" &
SPID=$!
_pids+=($SPID)
for _ in $(seq 100); do [ -s "$T/url" ] && break; sleep 0.05; done
M=$(cat "$T/url")
check "serve is up" curl -fsS "$M/healthz" -o /dev/null

big=/acme/tiny/resolve/main/model.safetensors
curl -fsS "$M$big" -o "$T/big"
big_sha=$(sha256sum "$T/big" | cut -d' ' -f1)
big_size=$(stat -c %s "$T/big")
check "the 3 MB LFS file is served" test "$big_size" = 3000000

# An ASan build carries shadow memory and a quarantine of freed blocks: its RSS is printed only.
grep -q libasan "/proc/$SPID/maps" 2>/dev/null && export HM_ASAN=1

hostile() { # hostile NAME SCENARIO ARGS...: run a scenario, then make sure a plain client is served
	local name=$1 t0=$SECONDS; shift
	"$PY" "$HM_SRC/tests/integration/helpers/hostile.py" "$1" "$M" "${@:2}" >"$T/out" 2>&1; local st=$?
	sed 's/^/    /' "$T/out"
	if [ "$st" = 0 ]; then ok "$name ($((SECONDS - t0)) s)"; else fail "$name"; fi
	if kill -0 "$SPID" 2>/dev/null && curl -fsS -m 10 "$M/healthz" -o /dev/null; then
		ok "serve still answers after: $name"
	else
		fail "serve still answers after: $name"
	fi
}

hostile "traversal through repo, revision and file parts serves nothing outside the snapshot" \
	traversal "$HUBMIRROR_DATA" "TOP-SECRET-7f3a9c-of-another-repo"
hostile "oversized request line, headers and bodies: 414/431/413 and closed" limits
code=$(curl -sS -o /dev/null -w '%{http_code}' -H 'Expect:' -H 'Content-Type: application/json' \
	--data-binary @"$T/big" "$M/api/models/acme/tiny/paths-info/main")
check "curl sending a 3 MB paths-info body gets 413 ($code)" test "$code" = 413
hostile "10,000 pipelined requests answered in order while another client is served" pipeline 10000
hostile "200 slowloris connections: others served, closed by the header timeout" \
	slowloris 200 $HEADER_TIMEOUT
hostile "a slow reader neither stalls full-speed readers nor grows the server" \
	slowread "$big" "$big_sha" "$big_size" "$SPID" 3 $WRITE_TIMEOUT
hostile "a 900 KB request sent in time to a server stalled past its header timeout is answered, not reset" \
	stalled "$SPID" $HEADER_TIMEOUT "$T/serve.err"
hostile "2,000 idle connections: served, RSS under 50 MiB, closed by the idle timeout" \
	idle 2000 "$SPID" $IDLE_TIMEOUT 50 "$T/serve.err"
hostile "garbage and clients that vanish mid-response" garbage "$big"

check "no sanitizer report" bash -c "! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' '$T/serve.err'"
kill -TERM "$SPID"
wait "$SPID"; st=$?
check "serve exits 0 on SIGTERM ($st)" test "$st" = 0
check "no sanitizer report at exit" bash -c "! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' '$T/serve.err'"
if [ "$_failed" != 0 ]; then echo "# serve stderr:"; tail -20 "$T/serve.err" | sed 's/^/#   /'; fi
finish
