# lib.sh - shared helpers for the integration scripts. Source it first:
#   . "$HM_SRC/tests/integration/lib.sh"
# Gives: $T (a fresh temp dir, removed on exit), check/ok/fail reporting, start_fakehub, and
# finish (exit status = failures). Scripts print TAP-ish "ok - name" / "not ok - name" lines.
set -u
: "${HM_SRC:?run through meson test}"
: "${HUBMIRROR:?run through meson test}"
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/hm-it-XXXXXX")
export T   # bash -c snippets in the tests use it
# Never touch a real data directory from a test; serve's BitTorrent seed on loopback, any free port.
export HUBMIRROR_DATA="$T/data"
export HUBMIRROR_P2P_LISTEN=127.0.0.1:0
# Each test's own instance agent (started by `hubmirror mount`), stopped at the end.
export HUBMIRROR_AGENT_SOCKET="$T/agent.sock"
_failed=0
_count=0
_pids=()

_cleanup() {
	local p
	for p in "${_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${_pids[@]}"; do wait "$p" 2>/dev/null; done
	if [ -S "$HUBMIRROR_AGENT_SOCKET" ]; then
		p=$("$HUBMIRROR" status --json 2>/dev/null | sed -n 's/^  "pid": \([0-9]*\),$/\1/p')
		timeout 20 "$HUBMIRROR" agent --stop >/dev/null 2>&1 || { [ -n "$p" ] && kill -9 "$p" 2>/dev/null; }
	fi
	rm -rf "$T"
}
trap _cleanup EXIT

ok()   { _count=$((_count + 1)); echo "ok $_count - $*"; }
fail() { _count=$((_count + 1)); _failed=$((_failed + 1)); echo "not ok $_count - $*"; }
# check NAME CMD...: run CMD, ok if it exits 0.
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
# expect_status N NAME CMD...: ok if CMD exits with status N.
expect_status() {
	local want=$1 name=$2 got; shift 2
	"$@"; got=$?
	if [ "$got" -eq "$want" ]; then ok "$name"; else fail "$name (status $got, expected $want)"; fi
}
finish() { echo "1..$_count"; [ "$_failed" -eq 0 ]; exit $?; }

# start_fakehub [ARGS...]: start tests/fakehub and set FAKE_API / FAKE_CDN to its base URLs.
start_fakehub() {
	local ready="$T/fakehub.ready" i
	rm -f "$ready"
	"$PY" "$HM_SRC/tests/fakehub/fakehub.py" --ready-file "$ready" --quiet "$@" >"$T/fakehub.out" 2>"$T/fakehub.err" &
	_pids+=($!)
	# up to 30 s (a loaded 2-core machine), but not a moment longer than the process lives
	for i in $(seq 1 600); do
		[ -s "$ready" ] && break
		kill -0 "${_pids[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$ready" ] || { echo "# fakehub did not start:"; sed 's/^/#   /' "$T/fakehub.err"; return 1; }
	FAKE_API=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$ready")
	FAKE_CDN=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cdn"])' "$ready")
	export FAKE_API FAKE_CDN
}

# start_serve [ARGS...]: run `hubmirror serve` on a free loopback port (stopped at exit) and set M to
# its base URL. Its stderr goes to $T/serve.err, its access log to $T/access.log.
start_serve() {
	local i
	rm -f "$T/url"
	"$HUBMIRROR" serve --listen 127.0.0.1:0 --ready-file "$T/url" --access-log "$T/access.log" "$@" 2>"$T/serve.err" &
	_pids+=($!)
	# up to 30 s (seeding thousands of files' links on a loaded machine), but no longer than it lives
	for i in $(seq 1 600); do
		[ -s "$T/url" ] && break
		kill -0 "${_pids[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$T/url" ] || { echo "# serve did not start:"; sed 's/^/#   /' "$T/serve.err"; return 1; }
	M=$(cat "$T/url")
	export M
}

# metric NAME: print the value of one sample (NAME with its labels, exactly as /metrics writes it) of
# the mirror at $M; fails when absent. metric_at_least NAME N: the sample is >= N.
metric() { curl -fsS "$M/metrics" | awk -v k="$1" '$1 == k { print $2; f = 1 } END { exit !f }'; }
metric_at_least() { local v; v=$(metric "$1") && awk -v v="$v" -v n="$2" 'BEGIN { exit !(v + 0 >= n + 0) }'; }
