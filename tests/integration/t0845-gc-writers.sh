#!/usr/bin/env bash
# t0845-gc-writers: gc never takes what a writer was promised (docs/uploads.md, "What gc keeps").
# gc runs in a loop (with --partial-age 0, the harshest) beside a commit of 20,000 small files and
# beside a git push of 2,000: every file of the acknowledged commit and push is in the store by sha256
# and verify finds nothing missing. Then upload_folder's flow: three large objects uploaded (two
# basic, one multipart), gc run twice before the commit that names them (it says it kept them and
# why), and the commit goes through with every byte. A content a writer claims while gc moves it
# aside is put back (the trash's sweep too). A writer's file before its lock is left alone.
. "$HM_SRC/tests/integration/lib.sh"

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
	done < <(timeout 250 "$PY" "$HM_SRC/tests/integration/helpers/gc_writers.py" "$M" "$HUBMIRROR_DATA" "$@" 2>&1
		echo "exit $?")
	[ "$st" = 0 ] || fail "$name: the helper ended with status $st"
}

# gc over and over while the writers write
gc_loop() {
	local n=0
	while [ ! -e "$T/stop-gc" ]; do
		# (every other run also takes partial files of any age: none a writer has open may go)
		"$HUBMIRROR" gc $([ $((n % 2)) = 1 ] && echo --partial-age 0) --wait >>"$T/gc-loop.out" 2>&1 ||
			echo "gc failed: $?" >>"$T/gc-loop.err"
		n=$((n + 1))
	done
	echo "$n" >"$T/gc-runs"
}
gc_loop &
gc_pid=$!
run "commit beside gc" commit-many acme/many 20000

push_many() {
	local d="$T/push" i
	# (a repo of its own: a clone of the 20,000 files would only cost time)
	HFU=$HM_SRC/tests/integration/helpers "$PY" -c 'import os, sys; sys.path.insert(0, os.environ["HFU"])
from hfupload import Api; Api(sys.argv[1], "hf_writer_acme_0001").create_repo("acme/pushed")' "$M" || return 1
	rm -rf "$d" && git -c credential.helper= clone -q "http://user:hf_writer_acme_0001@${M#http://}/acme/pushed" "$d" 2>"$T/clone.err" ||
		{ cat "$T/clone.err"; return 1; }
	mkdir -p "$d/pushed"
	for i in $(seq 1 2000); do echo "pushed $i $RANDOM$RANDOM" >"$d/pushed/p$i.txt"; done
	git -C "$d" add -A && git -C "$d" -c user.name=t -c user.email=t@t commit -qm "2,000 files by git" &&
		git -C "$d" push -q origin main 2>"$T/push.err" || { cat "$T/push.err"; return 1; }
	"$PY" - "$d" "$HUBMIRROR_DATA" <<'PY'
import hashlib, os, sys
d, data = sys.argv[1:3]
missing = []
for name in os.listdir(os.path.join(d, "pushed")):
    sha = hashlib.sha256(open(os.path.join(d, "pushed", name), "rb").read()).hexdigest()
    p = os.path.join(data, "store", "blobs", sha[:2], sha)
    if not os.path.exists(p) or hashlib.sha256(open(p, "rb").read()).hexdigest() != sha:
        missing.append(name)
assert not missing, f"{len(missing)} pushed files missing from the store, e.g. {missing[:3]}"
PY
}
check "a git push of 2,000 files beside gc: every file in the store" push_many
touch "$T/stop-gc"
wait "$gc_pid"
echo "# gc ran $(cat "$T/gc-runs" 2>/dev/null) times beside the writers"
check "gc ran beside them, more than once, without an error" bash -c "test \"\$(cat '$T/gc-runs')\" -ge 2 && test ! -s '$T/gc-loop.err'"
# (--wait: serve makes the commits' torrents in the background under the sync lock, a while under ASan)
check "verify: nothing missing, nothing corrupt" bash -c "'$HUBMIRROR' verify --wait --json >'$T/verify.json' &&
	'$PY' -c 'import json,sys; v=json.load(open(sys.argv[1])); assert v[\"missing\"] == 0 and v[\"corrupt\"] == 0, v' '$T/verify.json'"
check "the catalog is whole" "$PY" -c '
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
assert c.execute("pragma integrity_check").fetchone()[0] == "ok"
assert not c.execute("pragma foreign_key_check").fetchall()' "$HUBMIRROR_DATA/catalog.db"

# upload_folder: the large files first, the commit at the end; gc between them keeps the uploads
gc_between() {
	"$HUBMIRROR" gc --wait --partial-age 0 >"$T/gc1.out" 2>&1 && "$HUBMIRROR" gc --wait --partial-age 0 --json >"$T/gc2.json" 2>&1
	touch "$T/go"
}
on_uploaded=gc_between run "upload, gc, commit" upload-then-commit acme/shards "$T/go"
check "gc says it kept the three uploads, and why" grep -q "kept 3 uploaded contents that no commit names yet" "$T/gc1.out"
check "gc --json counts them" "$PY" -c 'import json,sys; assert json.load(open(sys.argv[1]))["uploads_kept"] == 3' "$T/gc2.json"
check "once committed, they are no longer kept as uploads (the commit names them)" bash -c \
	"'$HUBMIRROR' gc --wait --json >'$T/gc3.json' && '$PY' -c 'import json,sys; assert json.load(open(sys.argv[1]))[\"uploads_kept\"] == 0' '$T/gc3.json' || { cat '$T/gc3.json'; false; }"

# A gc cut short between its move aside and its question leaves the content in the trash: the next
# gc (or verify) puts back what a writer holds, and deletes the rest.
trash_sweep() {
	local sha blob
	sha=$("$PY" -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select sha256 from files limit 1").fetchone()[0])' "$HUBMIRROR_DATA/catalog.db") &&
		blob=$HUBMIRROR_DATA/store/blobs/${sha:0:2}/$sha || return 1
	mkdir -p "$HUBMIRROR_DATA/store/trash" && mv "$blob" "$HUBMIRROR_DATA/store/trash/$sha.0123456789abcdef" &&
		printf 'junk' >"$HUBMIRROR_DATA/store/trash/$(printf 'f%.0s' $(seq 64)).0000000000000000" &&
		"$HUBMIRROR" gc --wait >"$T/gc4.out" 2>&1 && test -f "$blob" && test -z "$(ls "$HUBMIRROR_DATA/store/trash")" ||
		{ cat "$T/gc4.out"; ls -la "$HUBMIRROR_DATA/store/trash" "$blob"; false; }
}
check "what a gc cut short left aside is put back when named, deleted when not" trash_sweep

# A private writer's file is made under a dot name and locked a moment later: gc --partial-age 0 must
# not take it in that moment (it did, and the commit beside it failed with a 507 "No such file or
# directory"); one a crash left is taken once a minute old.
dot_partials() {
	local tmp=$HUBMIRROR_DATA/store/tmp young old
	young=$tmp/.$(printf 'a%.0s' $(seq 64))-0123456789abcdef.part
	old=$tmp/.$(printf 'b%.0s' $(seq 64))-0123456789abcdef.part
	mkdir -p "$tmp" && printf 'x' >"$young" && printf 'y' >"$old" && touch -d '-2 minutes' "$old" &&
		"$HUBMIRROR" gc --partial-age 0 --wait >"$T/gc5.out" 2>&1 && test -f "$young" && test ! -e "$old" ||
		{ cat "$T/gc5.out"; ls -la "$tmp"; false; }
}
check "gc leaves a writer's file that is not locked yet, and takes one a crash left" dot_partials
finish
