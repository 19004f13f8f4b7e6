#!/usr/bin/env bash
# t0869-store-rgw-share: two mirrors (two data directories, two catalogs) share one Ceph RGW bucket and
# prefix (docs/operations.md, section 8, "Several mirrors on one bucket"). Each syncs a repo, the two
# sharing a content; each has its own id and writes its live set to the bucket. The first removes its
# repo and runs gc (--grace 0): the shared content and every content of the other's stay, and the other
# serves its repo byte for byte from the bucket; what only the first named goes. A content the bucket
# got after a mirror's last live set (put by hand: a writer's not recorded yet) stays, even at --grace 0,
# until every mirror wrote its set after it. The store is named by --store (mirror A) and by
# HUBMIRROR_STORE (mirror B), over a configuration file whose [store] url names another prefix.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/one",
   "files": [{"path": "config.json", "content": "{\"one\": 1}\n"},
             {"path": "shared.safetensors", "size": 1500000, "seed": 5},
             {"path": "only1.bin", "size": 700000, "seed": 11}]},
  {"hub": "hf", "type": "model", "id": "acme/two",
   "files": [{"path": "config.json", "content": "{\"two\": 2}\n"},
             {"path": "shared.safetensors", "size": 1500000, "seed": 5},
             {"path": "only2.bin", "size": 900000, "seed": 12}]}
 ]}
JSON
export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
printf '[store]\nurl = s3://%s/t0869-unused\ns3-endpoint = %s\ncache-size = 64M\n' "$RGW_BUCKET" "$RGW_ENDPOINT" \
	>"$T/hm.conf"
export HUBMIRROR_CONFIG=$T/hm.conf
URL=s3://$RGW_BUCKET/t0869
status() { rgw_s3 HEAD "/t0869/blobs/${1:0:2}/$1"; }
there() { test "$(status "$1")" = 200; }
gone() { test "$(status "$1")" = 404; }
all_there() { local s; for s in $(cut -d' ' -f3 "$@"); do there "$s" || { echo "# $s: $(status "$s")"; return 1; }; done; }
listed() { rgw_s3 GET "/?list-type=2&prefix=${1//\//%2F}" >/dev/null; grep -o '<Key>[^<]*</Key>' "$T/s3.body" | sed 's/<[^>]*>//g'; }
json_ok() { "$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); assert $2, d" "$1"; }
fileshas() { # DATA: "repo path sha256" of every file of its catalog
	"$PY" - "$1/catalog.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
for name, path, sha in db.execute("select distinct r.name, f.path, f.sha256 from files f join snapshots s "
                                  "on s.id = f.snapshot_id join repos r on r.id = s.repo_id"):
    print(name, path, sha)
PY
}
A=$T/a
B=$T/b
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
check "mirror A syncs acme/one (--store)" bash -c "'$HUBMIRROR' add --data '$A' --store '$URL' hf:acme/one >/dev/null &&
	'$HUBMIRROR' sync --data '$A' --store '$URL' >'$T/syncA.out' 2>&1"
tick() { local t; t=$(date +%s); while [ "$(date +%s)" = "$t" ]; do sleep 0.1; done; } # (the bucket's clock: seconds)
tick # (what the bucket got in the second of the earliest live set is young for it)
check "mirror B syncs acme/two (HUBMIRROR_STORE)" bash -c "export HUBMIRROR_STORE='$URL';
	'$HUBMIRROR' add --data '$B' hf:acme/two >/dev/null && '$HUBMIRROR' sync --data '$B' >'$T/syncB.out' 2>&1"
fileshas "$A" >"$T/filesA"
fileshas "$B" >"$T/filesB"
shared=$(awk '$2 == "shared.safetensors" {print $3}' "$T/filesA")
only1=$(awk '$2 == "only1.bin" {print $3}' "$T/filesA")
conf1=$(awk '$2 == "config.json" {print $3}' "$T/filesA")
nB=$(cut -d' ' -f3 "$T/filesB" | sort -u | wc -l)
check "both name the shared content" grep -q "shared.safetensors $shared" "$T/filesB"
check "every content of both is in the bucket, under the prefix --store named" all_there "$T/filesA" "$T/filesB"
check "nothing under the configuration file's prefix" test -z "$(listed t0869-unused/)"
idA=$(cat "$A/mirror-id" 2>/dev/null)
idB=$(cat "$B/mirror-id" 2>/dev/null)
check "each mirror has an id of its own" bash -c "[[ '$idA' =~ ^[0-9a-f]{32}$ && '$idB' =~ ^[0-9a-f]{32}$ && '$idA' != '$idB' ]]"
sets() { listed t0869/mirrors/ | sort | tr '\n' ' '; }
want=$(printf 't0869/mirrors/%s/live\n' "$idA" "$idB" | sort | tr '\n' ' ')
check "each wrote its live set to the bucket" test "$(sets)" = "$want"
live_b() {
	test "$(rgw_s3 GET "/t0869/mirrors/$idB/live")" = 200 && head -1 "$T/s3.body" | grep -qx 'hubmirror-live 1' &&
		grep -qx "$shared" "$T/s3.body" && test "$(grep -c . "$T/s3.body")" = $((nB + 1))
}
check "B's live set names its contents" live_b


# A stops tracking acme/one and collects: what only it named goes, the rest stays
check "A removes acme/one" "$HUBMIRROR" remove --data "$A" --store "$URL" hf:acme/one
"$HUBMIRROR" gc --data "$A" --store "$URL" --keep 1 --grace 0 --dry-run --json >"$T/gcA0.json" 2>"$T/gcA0.err"
check "A's gc --dry-run says the same as the gc after it, and changes nothing" json_ok "$T/gcA0.json" \
	"d['bucket_mirrors'] == 1 and d['bucket_kept_shared'] == $nB and d['blobs_removed'] == 2"
check "(the content only A named is still there)" there "$only1"
"$HUBMIRROR" gc --data "$A" --store "$URL" --keep 1 --grace 0 --json >"$T/gcA.json" 2>"$T/gcA.err"
check "A's gc: one other mirror, whose contents (the shared among them) it keeps; two gone" json_ok "$T/gcA.json" \
	"d['bucket_mirrors'] == 1 and d['bucket_kept_shared'] == $nB and d['blobs_removed'] == 2"
check "the content only A named is gone from the bucket" gone "$only1"
check "(its config.json too)" gone "$conf1"
check "the shared content stays" there "$shared"
check "and every content of B's" all_there "$T/filesB"

# B serves its repo from the bucket (its cache emptied first), byte for byte
find "$B/store/blobs" -type f -delete
export HUBMIRROR_STORE=$URL
check "serve starts on B" start_serve --data "$B" --p2p-listen off
resolve_all() {
	local bad=0 repo path sha got
	while read -r repo path sha; do
		got=$(curl -fsS "$M/$repo/resolve/main/$path" | sha256sum | cut -d' ' -f1)
		[ "$got" = "$sha" ] || { echo "# $repo/$path: got $got"; bad=1; }
	done <"$T/filesB"
	return "$bad"
}
check "B serves every file of acme/two byte for byte" resolve_all
check "serve stops clean" serve_stops_clean
"$HUBMIRROR" verify --data "$B" --json >"$T/verifyB.json"
check "B's verify reads every content back from the bucket: none missing" json_ok "$T/verifyB.json" \
	"d['missing'] == 0 and d['corrupt'] == 0 and d['blobs_checked'] == $nB"
unset HUBMIRROR_STORE

# A content the bucket got after every live set (a writer's, not recorded yet) stays, even at --grace 0
head -c 300000 /dev/urandom >"$T/young"
young=$(sha256sum "$T/young" | cut -d' ' -f1)
tick
check "a content put by hand after both live sets" test "$(rgw_s3 PUT "/t0869/blobs/${young:0:2}/$young" "$T/young")" = 200
"$HUBMIRROR" gc --data "$A" --store "$URL" --grace 0 --json >"$T/gcA2.json" 2>"$T/gcA2.err"
check "A's gc keeps it (younger than B's live set)" json_ok "$T/gcA2.json" \
	'd["bucket_kept_young"] == 1 and d["blobs_removed"] == 0'
check "it is there" there "$young"
tick
"$HUBMIRROR" gc --data "$B" --store "$URL" --json >"$T/gcB.json" 2>"$T/gcB.err"
check "B writes its live set again (its gc, which keeps it: the default grace)" json_ok "$T/gcB.json" \
	'd["bucket_kept_young"] == 1'
"$HUBMIRROR" gc --data "$A" --store "$URL" --grace 0 --json >"$T/gcA3.json" 2>"$T/gcA3.err"
check "then A's gc at --grace 0 takes it: no mirror names it, every set is younger" json_ok "$T/gcA3.json" \
	'd["blobs_removed"] == 1'
check "it is gone" gone "$young"
check "and B's contents are all still there" all_there "$T/filesB"

# --store with a URL that is not one: said, at the option
expect_status 1 "--store s3:/x is refused" "$HUBMIRROR" ls --data "$A" --store s3:/x 2>"$T/bad.err"
check "the message names --store" grep -q '^hubmirror: --store: \[store\] url: ' "$T/bad.err"
clean_logs() { ! grep -lE 'ERROR: (Address|Leak)Sanitizer|runtime error:' "$T"/*.err "$T"/*.out 2>/dev/null; }
check "no command said a sanitizer's report (the sanitized build)" clean_logs
finish
