#!/usr/bin/env bash
# t0806-quota: the store quota (sync --quota, [store] quota) and pins (hubmirror pin). A sync that
# would take the store over its quota first drops old snapshots, oldest first, never a ref's target
# nor a pinned one, and keeps a content the new snapshot uses again; when even that cannot make room,
# the repository fails with outcome "quota", nothing is dropped and nothing fetched, and it keeps its
# snapshot. gc and retention never drop a pinned snapshot either.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/q",
   "files": [{"path": "a1.bin", "size": 200000, "seed": 1}, {"path": "c1only.bin", "size": 150000, "seed": 11}]}
 ]}
JSON
check "synced from the fake upstream" sync_from_fake hf:acme/q
commit() { curl -fsS -X POST -d "$1" "$FAKE_API/_fake/commit" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["commit"])'; }
sha() { curl -fsS -L "$FAKE_API/acme/q/resolve/$1/$2" | sha256sum | cut -c1-64; }
blob() { echo "$HUBMIRROR_DATA/store/blobs/${1:0:2}/$1"; }
C1=$(curl -fsS "$FAKE_API/api/models/acme/q" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])')
A1=$(sha "$C1" a1.bin); C1ONLY=$(sha "$C1" c1only.bin)
C2=$(commit '{"repo": "acme/q", "files": [{"path": "a2.bin", "size": 200000, "seed": 2}], "delete": ["a1.bin", "c1only.bin"]}')
"$HUBMIRROR" sync --no-progress >/dev/null
C3=$(commit '{"repo": "acme/q", "files": [{"path": "a3.bin", "size": 200000, "seed": 3}], "delete": ["a2.bin"]}')
"$HUBMIRROR" sync --no-progress >/dev/null
check "pin an old snapshot by its commit" "$HUBMIRROR" pin "hf:acme/q@$C2"
expect_status 1 "pin of a revision the mirror lacks fails" "$HUBMIRROR" pin hf:acme/q@0123456789012345678901234567890123456789
expect_status 1 "pin of an untracked repository fails" "$HUBMIRROR" pin hf:acme/none
check "info lists the pin" bash -c "'$HUBMIRROR' info hf:acme/q | grep -q 'snapshots   3 (pinned: ${C2:0:12})'"

# 750000 bytes stored; the next snapshot brings a4 (200000, new) and a1's content again (held)
C4=$(commit '{"repo": "acme/q", "files": [{"path": "a4.bin", "size": 200000, "seed": 4}, {"path": "back.bin", "size": 200000, "seed": 1}], "delete": ["a3.bin"]}')
check "sync under an 850000-byte quota" bash -c "'$HUBMIRROR' sync --no-progress --json --quota 850000 >'$T/s4.json'"
check "it dropped one old snapshot to make room" "$PY" -c "import json; r = json.load(open('$T/s4.json')); assert r['quota_dropped'] == 1 and r['quota_freed'] == 150000, r"
check "serve starts" start_serve --p2p-listen off
code() { curl -s -o /dev/null -w '%{http_code}' "$M/acme/q/resolve/$1/$2"; }
check "the oldest unpinned snapshot is gone" test "$(code "$C1" a1.bin)" = 404
check "the content only it held left the store" test ! -e "$(blob "$C1ONLY")"
check "the content the new snapshot uses again stayed" test "$(curl -fsS "$M/acme/q/resolve/main/back.bin" | sha256sum | cut -c1-64)" = "$A1"
check "the pinned snapshot stays" test "$(code "$C2" a2.bin)" = 200
check "the previous ref target stays (old now)" test "$(code "$C3" a3.bin)" = 200
check "main is the new snapshot" test "$(curl -fsS "$M/api/models/acme/q" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])')" = "$C4"

# a snapshot that cannot fit even once every candidate is gone: nothing dropped, nothing fetched
C5=$(commit '{"repo": "acme/q", "files": [{"path": "a5.bin", "size": 600000, "seed": 5}]}')
printf '[store]\nquota = 850000\n' >"$T/hm.conf"
expect_status 1 "a sync over the quota fails" bash -c "'$HUBMIRROR' sync --config '$T/hm.conf' --no-progress --json >'$T/s5.json' 2>'$T/s5.err'"
check "with outcome quota and what would not fit" "$PY" -c "
import json; r = json.load(open('$T/s5.json'))['repos'][0]
assert r['outcome'] == 'quota', r
assert 'needs 0.6 MiB more' in r['error'] and 'would free 0.2 MiB' in r['error'], r['error']"
check "nothing was dropped" test "$(code "$C3" a3.bin)" = 200
check "nothing was fetched" test ! -e "$(blob "$(sha "$C5" a5.bin)")"
check "the repo keeps its snapshot" test "$(curl -fsS "$M/api/models/acme/q" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])')" = "$C4"
check "a larger quota lets it in" "$HUBMIRROR" sync --no-progress --quota 2000000

check "gc --keep 1 keeps the pinned snapshot" "$HUBMIRROR" gc --keep 1
check "pinned stays through gc" test "$(code "$C2" a2.bin)" = 200
check "unpinned old ones went" test "$(code "$C3" a3.bin)" = 404
check "unpin" "$HUBMIRROR" pin --remove "hf:acme/q@$C2"
check "info shows no pin" bash -c "'$HUBMIRROR' info --json hf:acme/q | '$PY' -c 'import json,sys; assert not any(s[\"pinned\"] for s in json.load(sys.stdin)[\"snapshots\"])'"
check "gc drops it now" "$HUBMIRROR" gc --keep 1
check "the unpinned snapshot is gone" test "$(code "$C2" a2.bin)" = 404
finish
