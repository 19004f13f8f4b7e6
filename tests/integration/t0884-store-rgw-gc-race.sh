#!/usr/bin/env bash
# t0884-store-rgw-gc-race: two mirrors on one Ceph RGW bucket (docs/operations.md, section 8), and the
# race a gc of one runs with the other's writers: gc looks at a content's age (old, named by no live
# set), and before its delete the other mirror counts on that very content (an LFS upload whose object
# the bucket holds already: the object re-stamped, the client told it need not send it, the commit
# made). The window is held open deterministically: gc stops itself between its look at the age and its
# move of the object ($HUBMIRROR_TEST_STOP=bucket-reap:SHA256, SIGSTOP), the test makes the other
# mirror's upload, then lets gc go on. gc moves the object to the bucket's trash (a copy, then the
# delete), so what the other mirror counts on is not lost, and it comes back:
# 1. by a read: the other mirror serves the file byte for byte (its look misses blobs/ and puts the
#    content back from the trash);
# 2. by a verify: the other mirror's verify finds nothing missing (it puts it back the same way);
# 3. by gc: the other mirror's gc, whose live set names it, puts it back from the trash.
# Then the trash empties: what a live set names goes from it once back, the rest once older than
# every live set. A move through the mirror (a content over 5 GiB; the bound lowered here) hashes the
# bytes: a damaged object is neither moved nor deleted. On the code before (gc's plain delete) the
# object is gone for good: checks 13, 15-17, 24-27, 35-37, 39-40, 42-43 and 45-46 fail (the read
# answered 503, verify names it missing, nothing to put back).
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
rgw_store t0884 64M
printf 'hf_writer_acme_0001 hf:acme/*:write\n' >"$T/tokens"
chmod 600 "$T/tokens"
export HFU="$HM_SRC/tests/integration/helpers"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/one",
   "files": [{"path": "config.json", "content": "{\"one\": 1}\n"}, {"path": "x1.txt", "content": "the first of A's files that B counts on\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/two",
   "files": [{"path": "config.json", "content": "{\"two\": 2}\n"}, {"path": "x2.bin", "size": 900000, "seed": 22}]},
  {"hub": "hf", "type": "model", "id": "acme/three",
   "files": [{"path": "config.json", "content": "{\"three\": 3}\n"}, {"path": "x3.txt", "content": "the third of A's files that B counts on\n"}]}
 ]}
JSON
s3() { rgw_s3 "$@"; }
status() { s3 HEAD "/t0884/blobs/${1:0:2}/$1"; }
trashed() { # SHA256: how many trash keys hold it
	s3 GET "/?list-type=2&prefix=t0884%2Ftrash%2F${1:0:2}%2F$1." >/dev/null
	grep -o '<Key>[^<]*</Key>' "$T/s3.body" | grep -c "/$1\.[0-9a-f]\{16\}<"
}
trash_all() { s3 GET "/?list-type=2&prefix=t0884%2Ftrash%2F" >/dev/null; grep -o '<Key>[^<]*</Key>' "$T/s3.body" | wc -l; }
json_ok() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert $2, d" "$1"; }
tick() { local t; t=$(date +%s); while [ "$(date +%s)" = "$t" ]; do sleep 0.1; done; } # (the bucket's clock: seconds)
A=$T/a
B=$T/b
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
check "mirror A syncs three repos into the bucket" bash -c "for r in one two three; do
	'$HUBMIRROR' add --data '$A' hf:acme/\$r >/dev/null || exit 1; done; '$HUBMIRROR' sync --data '$A' >'$T/syncA.out' 2>&1"
"$PY" - "$A/catalog.db" >"$T/filesA" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for path, sha in db.execute("select distinct f.path, f.sha256 from files f where f.path like 'x_.%'"):
    print(path, sha)
PY
x1=$(awk '$1 == "x1.txt" {print $2}' "$T/filesA")
x2=$(awk '$1 == "x2.bin" {print $2}' "$T/filesA")
x3=$(awk '$1 == "x3.txt" {print $2}' "$T/filesA")
check "the three contents are in the bucket" test "$(status "$x1")$(status "$x2")$(status "$x3")" = 200200200
check "mirror B's serve starts on the same bucket" start_serve --data "$B" --local acme --tokens "$T/tokens" \
	--p2p-listen off
tick
# B's live set, written after A put the contents and naming none of them: for A's gc they are old
check "mirror B's gc writes B's live set" "$HUBMIRROR" gc --wait --data "$B" --grace 0

upload_same() { # PATH SHA256 REPO: B's user uploads A's content (fetched from upstream) as PATH to acme/up
	curl -fsSL -o "$T/up.bin" "$FAKE_API/acme/$3/resolve/main/$1" && test "$(sha256sum <"$T/up.bin" | cut -d' ' -f1)" = "$2" &&
	"$PY" - "$M" "$1" "$T/up.bin" <<'PY'
import os, sys
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api
api = Api(sys.argv[1], "hf_writer_acme_0001")
api.create_repo("acme/up", exist_ok=True)
ans, sent = api.upload_files("acme/up", [(sys.argv[2], open(sys.argv[3], "rb").read())])
assert len(ans["commitOid"]) == 40, ans
# a small text file goes whole in the commit, whose writer finds the bucket's object and re-stamps it;
# an LFS object is sent (B's catalog does not name it: the client must show it has the bytes) and put
# again under the same key
assert sent == (1 if sys.argv[2].endswith(".bin") else 0), f"{sent} LFS objects sent"
PY
}
stopped() { # PID: until the process stopped itself (or is gone: then fail)
	local i
	for i in $(seq 1 2400); do
		[ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" = T ] && return 0
		kill -0 "$1" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
race() { # N REPO PATH SHA256: A drops REPO and collects; stopped in the reap of SHA256, B counts on it
	local n=$1 repo=$2 path=$3 sha=$4 pid
	check "A removes acme/$repo" "$HUBMIRROR" remove --data "$A" "hf:acme/$repo"
	tick
	HUBMIRROR_TEST_STOP=bucket-reap:$sha "$HUBMIRROR" gc --wait --data "$A" --grace 0 --json >"$T/gcA$n.json" \
		2>"$T/gcA$n.err" &
	pid=$!
	check "race $n: A's gc stops after it found $path's content old and unnamed" stopped "$pid"
	s3 HEAD "/t0884/blobs/${sha:0:2}/$sha" >/dev/null
	grep -i '^last-modified' "$T/s3.body" >"$T/before$n"
	tick
	check "race $n: meanwhile B's user uploads the same content: B re-stamps it (.txt) or puts it again (.bin)" \
		upload_same "$path" "$sha" "$repo"
	s3 HEAD "/t0884/blobs/${sha:0:2}/$sha" >/dev/null
	grep -i '^last-modified' "$T/s3.body" >"$T/after$n"
	check "race $n: (the object is stamped anew)" bash -c "test -s '$T/after$n' && ! cmp -s '$T/after$n' '$T/before$n'"
	kill -CONT "$pid"
	check "race $n: A's gc goes on and ends" wait "$pid"
	check "race $n: A's gc took it from blobs/ (the race was run)" test "$(status "$sha")" = 404
	check "race $n: and moved it to the trash" test "$(trashed "$sha")" = 1
}

# 1. put back by a read
race 1 one x1.txt "$x1"
check "A's gc says what it removed" json_ok "$T/gcA1.json" "d['blobs_removed'] >= 2 and d['bucket_mirrors'] == 1"
rm -f "$B/store/blobs/${x1:0:2}/$x1"
check "B serves its file byte for byte" bash -c "[ \"\$(curl -fsS '$M/acme/up/resolve/main/x1.txt' | sha256sum |
	cut -d' ' -f1)\" = $x1 ]"
check "the content is back in blobs/" test "$(status "$x1")" = 200
check "B's log says it was put back from the trash" grep -q "${x1:0:12} was in the bucket's trash" "$T/serve.err"

# 2. put back by a verify; the move and the way back both through the mirror (as for a content over
#    the 5 GiB S3 copies in one request: HUBMIRROR_TEST_COPY_MAX lowers that bound), hashed as they go
export HUBMIRROR_TEST_COPY_MAX=100000
race 2 two x2.bin "$x2"
"$HUBMIRROR" verify --data "$B" --json >"$T/verify2.json" 2>"$T/verify2.err"
unset HUBMIRROR_TEST_COPY_MAX
check "B's verify finds nothing missing" json_ok "$T/verify2.json" "d['missing'] == 0 and d['corrupt'] == 0"
check "the content is back in blobs/" test "$(status "$x2")" = 200
check "B's verify said it put it back" grep -q "${x2:0:12} was in the bucket's trash" "$T/verify2.err"
check "B serves it byte for byte" bash -c "[ \"\$(curl -fsS '$M/acme/up/resolve/main/x2.bin' | sha256sum |
	cut -d' ' -f1)\" = $x2 ]"

# 3. put back by B's gc (its live set names it); the trash then empties
race 3 three x3.txt "$x3"
tick
"$HUBMIRROR" gc --wait --data "$A" --grace 0 --json >"$T/gcA4.json" 2>"$T/gcA4.err"
check "A's next gc keeps the trash (younger than B's live set)" json_ok "$T/gcA4.json" \
	"d['bucket_trash_kept'] >= 6 and d['bucket_trash_removed'] == 0 and d['bucket_trash_restored'] == 0"
check "x3 is still in the trash" test "$(trashed "$x3")" = 1
head -c 300000 /dev/urandom >"$T/z"
z=$(sha256sum <"$T/z" | cut -d' ' -f1)
head -c 300000 /dev/urandom >"$T/zbad"
check "(an object put by hand under a content's key, not holding its bytes)" \
	test "$(s3 PUT "/t0884/blobs/${z:0:2}/$z" "$T/zbad")" = 200
tick
"$HUBMIRROR" gc --wait --data "$B" --grace 0 --json >"$T/gcB.json" 2>"$T/gcB.err"
check "B's gc puts back what its live set names from the trash, empties the rest (older than every set)" \
	json_ok "$T/gcB.json" "d['bucket_trash_restored'] == 1 and d['bucket_trash_removed'] >= 3 and d['bucket_trash_kept'] == 0"
check "x3 is back in blobs/" test "$(status "$x3")" = 200
check "the trash is empty" test "$(trash_all)" = 0
"$HUBMIRROR" verify --data "$B" --json >"$T/verifyB.json" 2>"$T/verifyB.err"
check "B's verify: every content there, none missing" json_ok "$T/verifyB.json" \
	"d['missing'] == 0 and d['corrupt'] == 0 and d['blobs_checked'] >= 3"
check "B serves x3 byte for byte" bash -c "[ \"\$(curl -fsS '$M/acme/up/resolve/main/x3.txt' | sha256sum |
	cut -d' ' -f1)\" = $x3 ]"
tick
HUBMIRROR_TEST_COPY_MAX=100000 "$HUBMIRROR" gc --wait --data "$A" --grace 0 --json >"$T/gcA5.json" 2>"$T/gcA5.err"
check "a move through the mirror hashes the bytes: the damaged object is not moved to the trash" \
	test "$(trashed "$z")" = 0
check "gc says why it is not deleted" bash -c "grep -q 'cannot delete blob $z: .*hash' '$T/gcA5.err' ||
	{ sed 's/^/# /' '$T/gcA5.err'; false; }"
check "(it is still there, for verify to name)" test "$(status "$z")" = 200
check "serve stops clean" serve_stops_clean
clean_logs() { ! grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T"/*.err "$T"/*.out 2>/dev/null; }
check "no command said a sanitizer's report (the sanitized build)" clean_logs
finish
