#!/usr/bin/env bash
# t0870-store-rgw-gc-writers: with the store in a Ceph RGW bucket, gc never takes what a writer puts or
# counts on (docs/operations.md, section 8). gc runs in a loop at --grace 0 (no age protects anything:
# only the writers' holds and the contents' locks) beside: a commit of 500 small files; rounds of the
# same contents committed, read back and their repo deleted, so that gc takes them while the next
# round's commit finds them in the bucket (and counts on them) or puts them again; and upload_folder's
# flow (three objects, gc twice, then the commit that names them). Every acknowledged file reads back
# byte for byte, verify reads every content back from the bucket and finds none missing, and a gc that
# meets a content being put (its lock held) leaves it.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
rgw_store t0870 2G
cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
TOK
chmod 600 "$T/tokens"
check "serve starts with a local namespace" start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish

run() { # run NAME SCENARIO ARGS...: the helper's checks as ours
	local name=$1 line st=none
	shift
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "$name: ${line#ok - }" ;;
		"not ok - "*) fail "$name: ${line#not ok - }" ;;
		"exit "*) st=${line#exit } ;;
		uploaded) [ -n "${on_uploaded:-}" ] && $on_uploaded ;;
		*) echo "# $line" ;;
		esac
	done < <(timeout 280 "$PY" "$HM_SRC/tests/integration/helpers/gc_writers.py" "$M" "$HUBMIRROR_DATA" "$@" 2>&1
		echo "exit $?")
	[ "$st" = 0 ] || fail "$name: the helper ended with status $st"
}

gc_loop() {
	local n=0
	while [ ! -e "$T/stop-gc" ]; do
		"$HUBMIRROR" gc --grace 0 $([ $((n % 2)) = 1 ] && echo --partial-age 0) --wait --json \
			>"$T/gc-loop.$n.json" 2>>"$T/gc-loop.out" || echo "gc failed: $?" >>"$T/gc-loop.err"
		n=$((n + 1))
	done
	echo "$n" >"$T/gc-runs"
}
gc_loop &
gc_pid=$!
run "commit beside gc" commit-many acme/many 500
run "the same contents again and again beside gc" commit-again acme/again 20 40
touch "$T/stop-gc"
wait "$gc_pid"
echo "# gc ran $(cat "$T/gc-runs" 2>/dev/null) times beside the writers"
check "gc ran beside them, more than once, without an error" bash -c "test \"\$(cat '$T/gc-runs')\" -ge 2 && test ! -s '$T/gc-loop.err'"
took() { "$PY" - "$T" <<'PY'
import glob, json, sys
n = sum(json.load(open(p))["blobs_removed"] for p in glob.glob(sys.argv[1] + "/gc-loop.*.json"))
print(n)
PY
}
echo "# the loop's gcs took $(took) contents from the bucket"
check "the loop's gcs took contents from the bucket (the deleted rounds')" test "$(took)" -gt 0

# upload_folder: the large files first, gc twice, the commit at the end
gc_between() {
	"$HUBMIRROR" gc --grace 0 --wait --partial-age 0 >"$T/gc1.out" 2>&1 &&
		"$HUBMIRROR" gc --grace 0 --wait --partial-age 0 --json >"$T/gc2.json" 2>&1
	touch "$T/go"
}
# (three of a few MiB: a multipart one of 130 MiB, hashed twice and sent to the gateway, outlasts the
# client's 120 s under the sanitizers at load 15; t0845 sends it to the local store)
on_uploaded=gc_between run "upload, gc, commit" upload-then-commit acme/shards "$T/go" 5 6 7
check "gc says it kept the three uploads" grep -q "kept 3 uploaded contents that no commit names yet" "$T/gc1.out"

# A content being put (its lock held, as a writer's put holds it) is left to the next gc
"$PY" - "$HUBMIRROR_DATA/catalog.db" >"$T/orphan" <<'PY'
import sqlite3, sys
print(sqlite3.connect(sys.argv[1]).execute("select sha256 from files limit 1").fetchone()[0])
PY
orphan=$(cat "$T/orphan")
check "an orphan put by hand in the bucket" bash -c "head -c 1000 /dev/urandom >'$T/o' && o=\$(sha256sum '$T/o' | cut -d' ' -f1) &&
	echo \$o >'$T/orphan' && curl -fsS -X PUT --data-binary @'$T/o' -H 'x-amz-content-sha256: UNSIGNED-PAYLOAD' \
	--aws-sigv4 aws:amz:us-east-1:s3 --user '$RGW_ACCESS_KEY:$RGW_SECRET_KEY' \
	'$RGW_ENDPOINT/$RGW_BUCKET/t0870/blobs/'\${o:0:2}/\$o"
orphan=$(cat "$T/orphan")
mkdir -p "$HUBMIRROR_DATA/store/locks"
exec 9>>"$HUBMIRROR_DATA/store/locks/${orphan:0:2}"
flock -s 9
"$HUBMIRROR" gc --grace 0 --wait --json >"$T/gc-held.json" 2>"$T/gc-held.err"
check "gc leaves a content whose lock a writer holds" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["bucket_kept_young"] >= 1, d' "$T/gc-held.json"
exec 9>&-
# (the bucket's times are in whole seconds, and an object the bucket got in the second of the earliest
# live set counts as young: gc keeps it, rightly; the put above and both gcs can fall in one second on
# a quick machine, so the next gc comes a second later)
sleep 1.1
"$HUBMIRROR" gc --grace 0 --wait --json >"$T/gc-free.json" 2>"$T/gc-free.err"
check "and takes it once the lock is let go" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["blobs_removed"] >= 1 and d["bucket_kept_young"] == 0, d' "$T/gc-free.json"

check "verify: every content read back from the bucket, none missing, none corrupt" bash -c "'$HUBMIRROR' verify --json >'$T/verify.json' &&
	'$PY' -c 'import json,sys; v=json.load(open(sys.argv[1])); assert v[\"missing\"] == 0 and v[\"corrupt\"] == 0, v' '$T/verify.json'"
check "serve stops clean" serve_stops_clean
clean_logs() { ! grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T"/*.err "$T"/*.out 2>/dev/null; }
check "no command said a sanitizer's report (the sanitized build)" clean_logs
finish
