# lib.sh - shared helpers for the integration scripts. Source it first:
#   . "$HM_SRC/tests/integration/lib.sh"
# Gives: $T (a fresh temp dir, removed on exit), check/ok/fail reporting, skip and the need_*
# guards, start_fakehub, start_serve, sync_from_fake, and finish (exit status = failures). Scripts
# print TAP-ish "ok - name" / "not ok - name" lines.
set -u
: "${HM_SRC:?run through meson test}"
: "${HUBMIRROR:?run through meson test}"
PY=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/hm-it-XXXXXX")
export T   # bash -c snippets in the tests use it
# Never touch a real data directory from a test; serve's BitTorrent seed on loopback, any free port.
export HUBMIRROR_DATA="$T/data"
export HUBMIRROR_P2P_LISTEN=127.0.0.1:0
# ... and never a configuration file of the machine's (/etc/hubmirror/hubmirror.conf): an empty one
export HUBMIRROR_CONFIG=/dev/null
# Each test's own instance agent (started by `hubmirror mount`), stopped at the end.
export HUBMIRROR_AGENT_SOCKET="$T/agent.sock"
_failed=0
_count=0
_pids=()

# _dump_logs: the last lines of every agent's and server's log under $T, as comments: what a failed
# or hung test left behind, readable in CI's output (which keeps a failing test's last 100 lines).
_dump_logs() {
	local f
	while IFS= read -r f; do
		echo "# --- the last lines of ${f#"$T"/} ---"
		tail -n 12 "$f" | cut -c1-300 | sed 's/^/# /'
	done < <(find "$T" -maxdepth 4 -type f \( -name agent.log -o -name serve.err \) 2>/dev/null | sort)
}
# A watchdog: 20 s before meson's timeout (300 s) ends a hung test, it prints those logs (the test's
# own shell may be blocked in a read that never returns, and would print nothing). HM_WATCHDOG_S
# sets another delay.
_watch() {
	sleep "$1" </dev/null >/dev/null 2>&1 &
	local s=$!
	trap 'kill $s 2>/dev/null; exit 0' TERM
	wait "$s"
	echo "# this test has run for $1 s: it is hung"
	_dump_logs
}
_watch ${HM_WATCHDOG_S:-280} &
_watchdog=$!

# _reap PID: wait for a process the test started and then asked to end (SIGTERM); one still there 60 s
# later is hung in its shutdown: where each of its threads waits is shown, it is killed, and the test
# fails (a process must end when asked; the suite's timeout would only say the test ran too long).
_reap() {
	local i t
	for i in $(seq 600); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$1" 2>/dev/null; then
		echo "# process $1 ($(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null)) still runs 60 s after SIGTERM: killed"
		for t in /proc/"$1"/task/*; do
			echo "#   thread ${t##*/} $(cat "$t/comm" 2>/dev/null): waits in $(cat "$t/wchan" 2>/dev/null)"
		done
		_dump_logs
		kill -9 "$1" 2>/dev/null
		_hung=1
	fi
	wait "$1" 2>/dev/null
}
_hung=0

_cleanup() {
	local p
	kill "$_watchdog" 2>/dev/null
	[ "$_failed" -gt 0 ] && _dump_logs
	for p in "${_pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${_pids[@]}"; do _reap "$p"; done
	if [ -S "$HUBMIRROR_AGENT_SOCKET" ]; then
		p=$("$HUBMIRROR" status --json 2>/dev/null | sed -n 's/^  "pid": \([0-9]*\),$/\1/p')
		timeout 20 "$HUBMIRROR" agent --stop >/dev/null 2>&1 || { [ -n "$p" ] && kill -9 "$p" 2>/dev/null; }
	fi
	rm -rf "$T"
	[ "$_hung" = 0 ] || exit 1
}
trap _cleanup EXIT

ok()   { _count=$((_count + 1)); echo "ok $_count - $*"; }
fail() { _count=$((_count + 1)); _failed=$((_failed + 1)); echo "not ok $_count - $*"; }
# check NAME CMD...: run CMD, ok if it exits 0.
check() { local name=$1; shift; if "$@"; then ok "$name"; else fail "$name"; fi; }
# todo NAME WHY CMD...: a check of a gap an open issue names (WHY says which): run and reported with
# TAP's TODO, not counted as failing; once it holds, the line says so and the TODO goes.
todo() {
	local name=$1 why=$2
	shift 2
	_count=$((_count + 1))
	if "$@"; then echo "ok $_count - $name # TODO $why (it holds now: make it a check)"; else
		echo "not ok $_count - $name # TODO $why"; fi
}
# expect_status N NAME CMD...: ok if CMD exits with status N.
expect_status() {
	local want=$1 name=$2 got; shift 2
	"$@"; got=$?
	if [ "$got" -eq "$want" ]; then ok "$name"; else fail "$name (status $got, expected $want)"; fi
}
finish() { echo "1..$_count"; [ "$_failed" -eq 0 ]; exit $?; }

# skip WHY: the whole script is skipped (meson's 77), saying why.
skip() { echo "1..0 # SKIP $*"; exit 77; }
# need_fuse: skip unless mounts can be made here (root, /dev/fuse, fusermount3).
need_fuse() {
	[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] || skip "needs root and /dev/fuse"
	command -v fusermount3 >/dev/null || skip "fusermount3 missing (apt-get install fuse3)"
}
# need_ceph: skip unless a Ceph cluster can be started here (root; ceph-mon, ceph-osd, radosgw: .ci/setup).
need_ceph() {
	[ "$(id -u)" = 0 ] || skip "needs root (a Ceph OSD)"
	local b
	for b in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph; do
		command -v "$b" >/dev/null || skip "$b missing (bash .ci/setup installs Ceph)"
	done
}
# start_rgw [ARG...]: start a single-node Ceph cluster and its RADOS Gateway in $T/ceph (helpers/cephrgw.py,
# with ARGs: --memstore-bytes N for a test that stores more than its 1 GiB; stopped, and its folder
# removed, at exit with the test's other processes) and set RGW_ENDPOINT,
# RGW_BUCKET (made, empty), RGW_ACCESS_KEY, RGW_SECRET_KEY, RGW_PID (the helper's), RGW_START_S and
# RGW_CONF (the cluster's ceph.conf, for radosgw-admin -c).
start_rgw() {
	local ready="$T/ceph.ready" i
	rm -f "$ready"
	"$PY" "$HM_SRC/tests/integration/helpers/cephrgw.py" "$T/ceph" --ready-file "$ready" "$@" 2>"$T/ceph.err" &
	RGW_PID=$!
	_pids+=($RGW_PID)
	for i in $(seq 1 1200); do   # 120 s: its first start makes the gateway's pools
		[ -s "$ready" ] && break
		kill -0 "$RGW_PID" 2>/dev/null || break
		sleep 0.1
	done
	[ -s "$ready" ] || { echo "# the Ceph cluster did not start:"; sed 's/^/#   /' "$T/ceph.err"; return 1; }
	eval "$("$PY" -c 'import json,shlex,sys
d = json.load(open(sys.argv[1]))
for k, v in (("ENDPOINT", "endpoint"), ("BUCKET", "bucket"), ("ACCESS_KEY", "access_key"),
        ("SECRET_KEY", "secret_key"), ("START_S", "start_s"), ("CONF", "conf")):
    print("RGW_%s=%s" % (k, shlex.quote(str(d[v]))))' "$ready")"
	export RGW_ENDPOINT RGW_BUCKET RGW_ACCESS_KEY RGW_SECRET_KEY RGW_PID RGW_START_S RGW_CONF
}
# rgw_store PREFIX CACHE-SIZE: this test's mirror keeps its store in the gateway's bucket under PREFIX
# ($T/hm.conf's [store], named by HUBMIRROR_CONFIG), with a local cache of CACHE-SIZE; the gateway's
# keys in the environment, as an operator's would be.
rgw_store() {
	export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
	printf '[store]\nurl = s3://%s/%s\ns3-endpoint = %s\ncache-size = %s\n' "$RGW_BUCKET" "$1" "$RGW_ENDPOINT" "$2" \
		>"$T/hm.conf"
	export HUBMIRROR_CONFIG=$T/hm.conf
}
# rgw_s3 METHOD PATH-AND-QUERY [DATA-FILE]: a request to the gateway's bucket signed by curl itself
# (SigV4), not by hubmirror; prints the answer's status, its body in $T/s3.body.
rgw_s3() {
	local m=(-X "$1")
	[ "$1" = HEAD ] && m=(-I)
	[ -n "${3:-}" ] && m+=(--data-binary "@$3")
	curl -sS -o "$T/s3.body" -w '%{http_code}' "${m[@]}" -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
		--aws-sigv4 aws:amz:us-east-1:s3 --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" "$RGW_ENDPOINT/$RGW_BUCKET$2"
}
# rgw_stop / rgw_start: stop the gateway alone (the cluster stays), or start it again on its port;
# each returns once it is done (down; up and answering), within 60 s.
_rgw_gateway() {
	local i
	rm -f "$T/ceph.ready.gateway"
	kill "-$1" "$RGW_PID" || return 1
	for i in $(seq 1 600); do
		[ "$(cat "$T/ceph.ready.gateway" 2>/dev/null)" = "$2" ] && return 0
		kill -0 "$RGW_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "# the gateway is not $2:"; sed 's/^/#   /' "$T/ceph.err"; return 1
}
rgw_stop() { _rgw_gateway USR1 down; }
rgw_start() { _rgw_gateway USR2 up; }
# free_port: a TCP port of 127.0.0.1 free this moment (for a process that must come back on it).
free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
# start_slowproxy PORT [ARG...]: helpers/slowproxy.py in front of the mirror at $M, on 127.0.0.1:PORT (the
# same PORT again: the mirror back on its address after a kill), with ARGs (--rate, --hold-after,
# --hold-file); once it answers, PROXY_PID is its process and P its URL. Its log: $T/proxy.err.
start_slowproxy() {
	local port=$1 i
	shift
	rm -f "$T/proxy.url"
	"$PY" "$HM_SRC/tests/integration/helpers/slowproxy.py" --mirror "$M" --port "$port" "$@" \
		--ready-file "$T/proxy.url" 2>>"$T/proxy.err" &
	PROXY_PID=$!
	_pids+=("$PROXY_PID")
	for i in $(seq 200); do
		[ -s "$T/proxy.url" ] && { P=$(cat "$T/proxy.url"); return 0; }
		sleep 0.05
	done
	return 1
}
# agent_endpoint [ARG...]: the URL of the local hub endpoint (agent --http) of the agent `status`
# reaches (ARGs go to it: --socket PATH), http://127.0.0.1:PORT.
agent_endpoint() {
	local port
	port=$("$HUBMIRROR" status --json "$@" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["http_port"])') &&
		echo "http://127.0.0.1:$port"
}
# need_containerd: skip unless a containerd can be started here (root; containerd and ctr).
need_containerd() {
	command -v containerd >/dev/null && command -v ctr >/dev/null || skip "needs containerd and ctr (Debian's containerd)"
	[ "$(id -u)" = 0 ] || skip "containerd runs as root"
}
# start_containerd DIR REGISTRY NS: a containerd of the test's own (root, state and socket in DIR, no
# CRI; stopped with the test's other processes), its hosts.toml sending models.example to REGISTRY (a
# mirror's or an agent endpoint's URL) over plain HTTP; sets CTR (ctr on its socket, in namespace NS),
# HOSTS (its hosts folder) and ROOT (its root). Fails, showing its log, unless it answers, waited for
# as long as it lives (240 s at most).
start_containerd() {
	local c=$1 pid i
	mkdir -p "$c/hosts/models.example"
	cat >"$c/config.toml" <<TOML
version = 2
root = "$c/root"
state = "$c/state"
disabled_plugins = ["io.containerd.grpc.v1.cri"]
[grpc]
  address = "$c/sock"
[ttrpc]
  address = "$c/sock.ttrpc"
TOML
	cat >"$c/hosts/models.example/hosts.toml" <<TOML
server = "https://models.example"
[host."$2"]
  capabilities = ["pull", "resolve"]
TOML
	containerd --config "$c/config.toml" >"$c/log" 2>&1 &
	pid=$!
	_pids+=("$pid")
	CTR="ctr --address $c/sock --namespace $3"
	HOSTS=$c/hosts
	ROOT=$c/root
	for i in $(seq 2400); do
		ctr --address "$c/sock" version >/dev/null 2>&1 && return 0
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	tail -20 "$c/log" | sed 's/^/# /'
	return 1
}
# ctr_pull REF [ARG...]: $CTR pulls models.example/REF through $HOSTS with the native snapshotter
# (ARGs go to ctr image pull: --user), showing ctr's words when it fails.
ctr_pull() {
	local ref=$1
	shift
	$CTR image pull --snapshotter native --hosts-dir "$HOSTS" "$@" "models.example/$ref" >"$T/pull.out" 2>&1 ||
		{ sed 's/^/# /' "$T/pull.out"; false; }
}
# ctr_unpacked REPO FILE...: the newest snapshot of the native snapshotter under $ROOT holds each FILE,
# equal to upstream's (REPO's main at $FAKE_API), and no other file.
ctr_unpacked() {
	local repo=$1 top bad=0 p
	shift
	top=$(ls -td "$ROOT"/io.containerd.snapshotter.v1.native/snapshots/*/ | head -1)
	for p in "$@"; do
		cmp -s "$top/$p" <(curl -fsSL "$FAKE_API/$repo/resolve/main/$p" 2>/dev/null) ||
			{ echo "# $p: not upstream's in $top"; bad=1; }
	done
	[ "$bad" = 0 ] &&
		[ "$(cd "$top" && find . -type f | sed 's|^\./||' | sort | tr '\n' ' ')" = "$(printf '%s\n' "$@" | sort | tr '\n' ' ')" ]
}
# need_node_module PKG: skip unless node and tests/js/node_modules/PKG are installed; sets JS to tests/js.
need_node_module() {
	JS=$HM_SRC/tests/js
	command -v node >/dev/null 2>&1 || skip "node is not installed (bash .ci/setup installs it)"
	[ -f "$JS/node_modules/$1/package.json" ] || skip "$JS/node_modules/$1 is missing (bash .ci/setup runs npm ci there)"
}

# as_nobody CMD...: run CMD as another user (nobody, no groups, no configuration file). "$HUBMIRROR"
# in CMD runs from a copy of the binary that user can reach: the checkout, and the build in it, may sit
# in a folder only its owner enters (a home folder, 0700). $T becomes traversable (0711, not
# listable) for that copy; what the test made inside keeps its own modes.
as_nobody() {
	local bin=$T/.nobody/hubmirror args=() a
	if [ ! -x "$bin" ]; then
		chmod 711 "$T"
		mkdir -p "$T/.nobody" && chmod 755 "$T/.nobody"
		cp "$HUBMIRROR" "$bin" && chmod 755 "$bin"
	fi
	for a in "$@"; do
		if [ "$a" = "$HUBMIRROR" ]; then args+=("$bin"); else args+=("$a"); fi
	done
	setpriv --reuid=nobody --regid=nogroup --clear-groups env HUBMIRROR_CONFIG=/dev/null "${args[@]}"
}
# _await_ready FILE WHAT LOG: wait for the process started last to write FILE, as long as it lives, up
# to 240 s (a serve of 100,000 files under the sanitizers on a loaded 2-core machine took over 30 s;
# the watchdog speaks at 280 s); else show LOG and fail.
_await_ready() {
	local i
	for i in $(seq 1 4800); do
		[ -s "$1" ] && break
		kill -0 "${_pids[-1]}" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$1" ] || { echo "# $2 did not start:"; sed 's/^/#   /' "$3"; return 1; }
}

# start_fakehub [ARGS...]: start tests/fakehub and set FAKE_API / FAKE_CDN to its base URLs.
start_fakehub() {
	local ready="$T/fakehub.ready"
	rm -f "$ready"
	"$PY" "$HM_SRC/tests/fakehub/fakehub.py" --ready-file "$ready" --quiet "$@" >"$T/fakehub.out" 2>"$T/fakehub.err" &
	_pids+=($!)
	_await_ready "$ready" fakehub "$T/fakehub.err" || return 1
	FAKE_API=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["api"])' "$ready")
	FAKE_CDN=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cdn"])' "$ready")
	export FAKE_API FAKE_CDN
}

# watch_store: every name made or moved into the store's tmp/ and blobs/ from now on, one a line in
# $T/made (helpers/storewatch.py, inotify); $watcher is its process (kill it to end the watch).
watch_store() {
	"$PY" "$HM_SRC/tests/integration/helpers/storewatch.py" "$HUBMIRROR_DATA/store" "$T/made" 2>"$T/watch.err" &
	watcher=$!
	_pids+=($watcher)
	local i
	for i in $(seq 600); do grep -q ready "$T/made" 2>/dev/null && return 0; kill -0 $watcher || return 1; sleep 0.1; done
	return 1
}

# start_serve [ARGS...]: run `hubmirror serve` on a free loopback port (stopped at exit) and set M to
# its base URL. Its stderr goes to $T/serve.err, its access log to $T/access.log. A serve refuses a
# data directory that holds no mirror: a test that has not added anything yet gets an empty one.
# $SERVE_LOG_LEVEL (e.g. debug), when set, is its --log-level.
start_serve() {
	rm -f "$T/url"
	local data=$HUBMIRROR_DATA a prev=
	for a in "$@"; do
		[ "$prev" = --data ] && data=$a
		case $a in --data=*) data=${a#--data=} ;; esac
		prev=$a
	done
	[ -e "$data/catalog.db" ] || "$HUBMIRROR" init --data "$data" >/dev/null || return 1
	"$HUBMIRROR" ${SERVE_LOG_LEVEL:+--log-level "$SERVE_LOG_LEVEL"} serve --listen 127.0.0.1:0 --ready-file "$T/url" \
		--access-log "$T/access.log" "$@" 2>"$T/serve.err" &
	_pids+=($!)
	# (seeding thousands of files' links on a loaded machine takes a while)
	_await_ready "$T/url" serve "$T/serve.err" || return 1
	M=$(cat "$T/url")
	export M
}

# serve_stops_clean: SIGTERM the serve started last and wait for it; fails when its log holds a
# sanitizer's report (the sanitized build: an error or a leak), which it shows.
serve_stops_clean() {
	local pid=${_pids[-1]}
	kill -TERM "$pid" && wait "$pid"
	! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T/serve.err" ||
		{ grep -A20 Sanitizer "$T/serve.err" | sed 's/^/# /'; false; }
}

# metric NAME: print the value of one sample (NAME with its labels, exactly as /metrics writes it) of
# the mirror at $M; fails when absent. metric_at_least NAME N: the sample is >= N, or becomes so within
# 15 s (a seed's session counts a sent piece on its own thread when the send completes, which can come
# a moment after the client already has it, and seconds after it on a loaded machine under the sanitizers).
metric() { curl -fsS "$M/metrics" | awk -v k="$1" '$1 == k { print $2; f = 1 } END { exit !f }'; }
metric_at_least() {
	local v i
	for i in $(seq 150); do
		v=$(metric "$1") && awk -v v="$v" -v n="$2" 'BEGIN { exit !(v + 0 >= n + 0) }' && return 0
		sleep 0.1
	done
	return 1
}

# sync_from_fake SPEC...: start the fake upstream on $T/spec.json (a check), point the hubs of the
# SPECs (hf:..., ms:...) at it, then add the SPECs and sync them, quietly.
sync_from_fake() {
	local s
	check "fake upstream starts" start_fakehub --repos "$T/spec.json"
	for s in "$@"; do
		case $s in
		hf:*) export HUBMIRROR_HF_UPSTREAM=$FAKE_API ;;
		ms:*) export HUBMIRROR_MS_UPSTREAM=$FAKE_API ;;
		esac
	done
	"$HUBMIRROR" add "$@" >/dev/null && "$HUBMIRROR" sync >/dev/null
}
