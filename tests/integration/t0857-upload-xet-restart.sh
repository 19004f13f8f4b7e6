#!/usr/bin/env bash
# t0857-upload-xet-restart: Xet uploads awaiting their shard or commit survive a restart of serve, even
# a kill -9 (docs/protocols/xet.md, "Uploads"): the xorbs a repo posted and the files its shards made
# are kept as record files beside the xorbs (DATA/xet-uploads/), read back at the start, so that a
# client's shard or commit after the restart works, with the token it had. What was promised stays
# through gc (the files' holds); a xorb or a file whose time ran out (its record set in the past here,
# as 24 hours would) is gone at the next start, and a shard or commit naming it is refused.
. "$HM_SRC/tests/integration/lib.sh"
command -v lz4 >/dev/null || skip "the lz4 tool is missing (apt-get install lz4)"
cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
TOK
chmod 600 "$T/tokens"
check "serve starts with a local namespace" start_serve --local acme --tokens "$T/tokens" || finish
ident="$HM_BUILD/tests/unit/xet-ident"
up="$HUBMIRROR_DATA/xet-uploads"
run() {
	local line st=none
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "$1: ${line#ok - }" ;;
		"not ok - "*) fail "$1: ${line#not ok - }" ;;
		"exit "*) st=${line#exit } ;;
		*) echo "# $line" ;;
		esac
	done < <(timeout 120 "$PY" "$HM_SRC/tests/integration/helpers/xetrestart.py" "$1" "$M" "$ident" "$T/state.json" 2>&1
		echo "exit $?")
	check "the $1 phase ran to the end (status $st)" test "$st" = 0 -o "$st" = 1
}
run before
st() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][sys.argv[3]])' "$T/state.json" "$@"; }
check "each xorb is kept with a record naming its repo" bash -c "
	for k in A B C D; do x=\$('$PY' -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]][\"xorb\"])' '$T/state.json' \$k)
		[ -s '$up'/\$x ] && ls '$up' | grep -q \"^\$x\\.r[0-9]*\$\" || exit 1; done"
check "each file a shard made has its record" bash -c "ls '$up' | grep -q '^f\\.[0-9]*\\.$(st A file)\$' &&
	ls '$up' | grep -q '^f\\.[0-9]*\\.$(st D file)\$'"
# 24 hours later for C's xorb and D's file: their records' time set in the past
for f in "$up/$(st C xorb)".r*; do echo 1 >"$f"; done
for f in "$up"/f.*."$(st D file)"; do sed -i 's/ [0-9]*$/ 1/' "$f"; done
# a partial record left by a crash mid-write (the next start deletes it)
echo 5 >"$up/$(st B xorb).r1.abc.tmp"

kill -9 "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null
cp "$T/serve.err" "$T/serve-1.err"
"$HUBMIRROR" gc >"$T/gc.out" 2>&1
sed 's/^/# /' "$T/gc.out"
check "gc between the kill and the restart keeps the files promised (their holds)" bash -c "
	[ -f '$HUBMIRROR_DATA/store/blobs/$(st A sha | cut -c1-2)/$(st A sha)' ] &&
	[ -f '$HUBMIRROR_DATA/store/blobs/$(st D sha | cut -c1-2)/$(st D sha)' ]"
check "serve starts again" start_serve --local acme --tokens "$T/tokens" || finish
check "it says what it took back: 3 xorbs, 1 file" grep -q "Xet uploads awaiting their shard or commit, taken back: xorbs 3, files 1" "$T/serve.err"
check "the xorb past its time is gone, its record too" bash -c "[ ! -e '$up/$(st C xorb)' ] && ! ls '$up' | grep -q '^$(st C xorb)'"
check "the file record past its time is gone" bash -c "! ls '$up' | grep -q '$(st D file)'"
check "the crash's partial record is gone" test ! -e "$up/$(st B xorb).r1.abc.tmp"
run after
check "serve stops clean" serve_stops_clean
finish
