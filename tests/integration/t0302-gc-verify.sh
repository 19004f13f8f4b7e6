#!/usr/bin/env bash
# t0302-gc-verify: gc keeps ref targets and the newest N snapshots, drops removed repos, deletes only
# blobs nothing kept references, orphans and stale partial files (and Xet identity files); verify finds corrupt and missing
# blobs, quarantines, and the next sync repairs them.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/a",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "shared.safetensors", "size": 300000, "seed": 1},
             {"path": "w.safetensors", "size": 200000, "seed": 2}]},
  {"hub": "hf", "type": "model", "id": "acme/b",
   "files": [{"path": "shared.safetensors", "size": 300000, "seed": 1},
             {"path": "only-b.safetensors", "size": 100000, "seed": 3}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
hm() { "$HUBMIRROR" "$@"; }
store="$HUBMIRROR_DATA/store"
checkstore() { "$PY" "$HM_SRC/tests/integration/helpers/checkstore.py" "$HUBMIRROR_DATA"; }
blob_exists() { [ -f "$store/blobs/${1:0:2}/$1" ]; }
sha_of() { "$PY" -c 'import hashlib,random,sys
size, seed = int(sys.argv[1]), int(sys.argv[2])
b = random.Random(seed).randbytes(min(size, 1 << 20)); print(hashlib.sha256(b[:size]).hexdigest())' "$@"; }
commit() { # commit SEED: replace w.safetensors in acme/a
	curl -fsS -X POST "$FAKE_API/_fake/commit" -d "{\"repo\": \"acme/a\", \"hub\": \"hf\", \"type\": \"model\",
	  \"branch\": \"main\", \"files\": [{\"path\": \"w.safetensors\", \"size\": 200000, \"seed\": $1}]}" >/dev/null
}

hm add hf:acme/a hf:acme/b >/dev/null
check "first sync" hm sync
commit 20; check "sync after commit 2" hm sync
commit 21; check "sync after commit 3" hm sync
w1=$(sha_of 200000 2); w2=$(sha_of 200000 20); w3=$(sha_of 200000 21)
shared=$(sha_of 300000 1); onlyb=$(sha_of 100000 3)
check "all three weights stored" bash -c "[ -f $store/blobs/${w1:0:2}/$w1 ] && [ -f $store/blobs/${w2:0:2}/$w2 ] && [ -f $store/blobs/${w3:0:2}/$w3 ]"

hm gc --dry-run --json >"$T/dry.json"
check "dry run reports but keeps" bash -c "grep -q '\"snapshots_dropped\": 1' $T/dry.json && [ -f $store/blobs/${w1:0:2}/$w1 ]"
hm gc --keep 2 --json >"$T/gc1.json"
check "gc --keep 2 drops the oldest snapshot of acme/a" grep -q '"snapshots_dropped": 1' "$T/gc1.json"
check "its unique weights are gone" bash -c "! [ -f $store/blobs/${w1:0:2}/$w1 ]"
check "the kept snapshots' weights stay" bash -c "[ -f $store/blobs/${w2:0:2}/$w2 ] && [ -f $store/blobs/${w3:0:2}/$w3 ]"
check "consistent after gc" checkstore
hm gc --keep 1 >/dev/null
check "gc --keep 1 keeps only the ref target" bash -c "! [ -f $store/blobs/${w2:0:2}/$w2 ] && [ -f $store/blobs/${w3:0:2}/$w3 ]"

hm remove hf:acme/b >/dev/null
hm gc --json >"$T/gc2.json"
check "removed repo's unique blob is gone" bash -c "! [ -f $store/blobs/${onlyb:0:2}/$onlyb ]"
check "blob shared with a tracked repo stays" blob_exists "$shared"
check "consistent after removing a repo" checkstore

# Orphans (a crash between rename and catalog commit) and stale partials.
orphan=$(printf 'orphan' | sha256sum | cut -d' ' -f1)
mkdir -p "$store/blobs/${orphan:0:2}"; printf 'orphan' >"$store/blobs/${orphan:0:2}/$orphan"
printf 'junk' >"$store/blobs/${orphan:0:2}/not-a-blob"
printf 'old' >"$store/tmp/$(printf old | sha256sum | cut -d' ' -f1).part"; touch -d '10 days ago' "$store/tmp/"*.part
printf 'new' >"$store/tmp/$(printf new | sha256sum | cut -d' ' -f1).part"
# Xet identity files (store/xet/): a dropped content's went with its blob; a killed writer's
# temporary one and a gone content's (a crash between the two deletes) go once old, young ones stay.
xid() { echo "$store/xet/${1:0:2}/$1"; }
check "a dropped content's identity went with it, a kept one's stays" bash -c "! [ -e $(xid "$w1") ] && [ -s $(xid "$shared") ]"
mkdir -p "$store/xet/${onlyb:0:2}" "$store/xet/${w2:0:2}"
cp "$(xid "$shared")" "$(xid "$onlyb")"; touch -d '10 days ago' "$(xid "$onlyb")"
cp "$(xid "$shared")" "$(xid "$w2")"
cp "$(xid "$shared")" "$store/xet/${shared:0:2}/.$shared.0123456789abcdef"; touch -d '10 days ago' "$store/xet/${shared:0:2}/.$shared.0123456789abcdef"
cp "$(xid "$shared")" "$store/xet/${shared:0:2}/.$shared.fedcba9876543210"
hm gc --json >"$T/gc3.json"
check "orphans removed" bash -c "grep -q '\"orphans_removed\": 3' $T/gc3.json && ! [ -f $store/blobs/${orphan:0:2}/$orphan ]"
check "stale partial removed, fresh one kept" bash -c "grep -q '\"partials_removed\": 2' $T/gc3.json && [ \$(ls $store/tmp | wc -l) = 1 ]"
check "an old identity of a gone content removed, a young one kept" bash -c "! [ -e $(xid "$onlyb") ] && [ -e $(xid "$w2") ]"
check "a killed writer's old identity temp removed, a young one and the content's own kept" \
	bash -c "! [ -e $store/xet/${shared:0:2}/.$shared.0123456789abcdef ] && [ -e $store/xet/${shared:0:2}/.$shared.fedcba9876543210 ] && [ -s $(xid "$shared") ]"
rm -f "$(xid "$w2")" "$store/xet/${shared:0:2}/.$shared.fedcba9876543210"

# verify: corrupt one blob, delete another.
check "verify passes on a healthy store" hm verify
"$PY" - "$store/blobs/${w3:0:2}/$w3" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read()); b[100] ^= 1; open(p, "wb").write(b)
PY
rm -f "$store/blobs/${shared:0:2}/$shared"
hm verify --json >"$T/v1.json"; st=$?
check "verify exits 1 on damage" test "$st" = 1
check "verify reports one corrupt, one missing" "$PY" -c '
import json,sys; d = json.load(open(sys.argv[1])); assert d["corrupt"] == 1 and d["missing"] == 1 and d["repos_marked"] >= 1, d' "$T/v1.json"
check "naming what each bad content breaks: the repos and paths that hold it" "$PY" - "$T/v1.json" "$w3" "$shared" <<'PY'
import json, sys
d = {x["sha256"]: x for x in json.load(open(sys.argv[1]))["damaged"]}
w3, shared = d[sys.argv[2]], d[sys.argv[3]]
assert w3["state"] == "corrupt" and all(f.startswith("hf:acme/a @ ") and f.endswith(": w.safetensors") for f in w3["files"]), w3
assert shared["state"] == "missing", shared
assert {f.split(" @ ")[0] for f in shared["files"]} == {"hf:acme/a"}, shared  # (acme/b was removed and collected above)
assert all(f.endswith(": shared.safetensors") for f in shared["files"]), shared
PY
check "corrupt blob quarantined, not in blobs" bash -c "ls $store/quarantine | grep -q ^$w3 && ! [ -f $store/blobs/${w3:0:2}/$w3 ]"
check "repo marked damaged" bash -c '"$HUBMIRROR" info --json hf:acme/a | grep -q "\"sync_status\": \"damaged\""'
hm verify >"$T/v2.out"  # (the corrupt one is in quarantine now: missing)
check "and in words, with the content's hash" bash -c "grep -Eq '^missing   hf:acme/a @ [0-9a-f]{12}: w.safetensors \(content ${w3:0:12}\)$' '$T/v2.out' &&
	grep -Eq '^missing   hf:acme/a @ [0-9a-f]{12}: shared.safetensors \(content ${shared:0:12}\)$' '$T/v2.out'"
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
check "next sync repairs" hm sync
check "repair fetched exactly the two damaged blobs" bash -c '[ "$(curl -fsS "$FAKE_API/_fake/stats" | /usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin)[\"content_bytes\"]; print(d[\"api\"]+d[\"cdn\"])")" = 500000 ]'
check "verify passes after repair" hm verify
# on a terminal (script(1) gives it one), a progress line: contents and bytes of the whole
script -qec "'$HUBMIRROR' verify" /dev/null >"$T/tty.out" 2>&1
check "verify on a terminal draws its progress, then clears it" bash -c "grep -aEq 'verify: ([0-9]+) of \1 contents, [0-9.]+ [KM]iB of [0-9.]+ [KM]iB \(100%\)' '$T/tty.out' &&
	grep -aq \$'\r\033\[K' '$T/tty.out'"
script -qec "'$HUBMIRROR' gc --dry-run" /dev/null >"$T/tty-gc.out" 2>&1
check "gc on a terminal: its walk of the store, counted" grep -aEq "gc: the store's walk: [0-9]+ of about [0-9]+ entries \([0-9]+%\)" "$T/tty-gc.out"
hm -q verify >"$T/q.out" 2>"$T/q.err"
check "with -q, no progress line" bash -c "! grep -q 'contents,' '$T/q.err'"
check "consistent after repair" checkstore
check "repo ok again" bash -c '"$HUBMIRROR" info --json hf:acme/a | grep -q "\"sync_status\": \"ok\""'
finish
