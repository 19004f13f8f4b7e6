#!/usr/bin/env bash
# t0800-backup: `hubmirror backup` while serve answers and a sync writes, `hubmirror restore` into a
# data directory with the store (serves the same answers) and into one without it (repos marked
# damaged, the next sync fetches the contents again, torrents made again with the same info-hashes);
# a restore is refused while a serve runs or for a file that is not a catalog, and changes nothing.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/kept",
   "files": [{"path": "config.json", "content": "{\"kept\": 1}\n"},
             {"path": "model.safetensors", "size": 400000, "seed": 3}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-kept",
   "files": [{"path": "configuration.json", "content": "{}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/later",
   "files": [{"path": "config.json", "content": "{\"later\": 1}\n"}]}
 ]}
JSON
check "synced from the fake upstream" sync_from_fake hf:acme/kept ms:acme/ms-kept
check "serve starts" start_serve --p2p-listen off
info() { curl -fsS "$M/api/models/acme/kept" | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(d["sha"])'; }
SHA=$(info)
BTIH=$(curl -fsS "$M/api/catalog/repos/hf/model/acme/kept" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["swarm"]["btih"])')

# ---- backup while serving and while a sync adds a repo ----
"$HUBMIRROR" add hf:acme/later >/dev/null
"$HUBMIRROR" sync --no-progress >/dev/null 2>&1 &
sync_pid=$!
( for _ in $(seq 200); do curl -fsS -o /dev/null "$M/acme/kept/resolve/main/config.json" || exit 1; done ) &
load_pid=$!
check "backup while serving and syncing" "$HUBMIRROR" backup --output "$T/backup.db"
wait $sync_pid
check "the server answered every request meanwhile" wait $load_pid
check "the backup stands alone (no WAL beside it) and is a sound catalog" bash -c "[ ! -e '$T/backup.db-wal' ] &&
	'$PY' -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); assert c.execute(\"pragma integrity_check\").fetchone()[0] == \"ok\"' '$T/backup.db'"
"$HUBMIRROR" backup --output "$T/backup2.db" >/dev/null

# ---- restore is refused while a serve runs, and for something that is not a catalog ----
"$HUBMIRROR" restore "$T/backup2.db" >"$T/r0" 2>&1; st=$?
check "restore refused while a serve runs on the directory" bash -c "[ $st = 1 ] && grep -q 'a serve is running' '$T/r0'"
echo "not a database" >"$T/junk.db"
mkdir -p "$T/other"
cp -a "$HUBMIRROR_DATA/store" "$T/other/store"
"$HUBMIRROR" init --data "$T/other" >/dev/null # an empty catalog there
before=$(sha256sum "$T/other/catalog.db" | cut -c1-64)
"$HUBMIRROR" restore --data "$T/other" "$T/junk.db" >"$T/r1" 2>&1; st=$?
check "a file that is not a catalog is refused and changes nothing" bash -c "[ $st = 1 ] &&
	grep -q 'not a sound SQLite database\|not an SQLite database' '$T/r1' && [ \"\$(sha256sum '$T/other/catalog.db' | cut -c1-64)\" = $before ]"

# ---- restore beside the same store: the same answers ----
check "restore into a directory that has the store" "$HUBMIRROR" restore --data "$T/other" "$T/backup2.db"
M1=$M
check "a serve on the restored directory starts" start_serve --data "$T/other" --p2p-listen off
check "it answers the same commit" test "$(info)" = "$SHA"
check "and the same bytes" cmp <(curl -fsS "$M/acme/kept/resolve/main/model.safetensors") <(curl -fsS "$M1/acme/kept/resolve/main/model.safetensors")

# ---- restore onto an empty disk: damaged, then repaired by the next sync ----
"$HUBMIRROR" restore --json --data "$T/bare" "$T/backup2.db" >"$T/r2.json"
check "restore onto an empty store reports what is missing" "$PY" -c '
import json,sys; d=json.load(open(sys.argv[1]))
assert d["repos"] == 3 and d["blobs"] >= 4 and d["blobs_missing"] == d["blobs"] and d["repos_damaged"] == 3 and d["torrents_dropped"] >= 3, d' "$T/r2.json"
curl -fsS -X POST "$FAKE_API/_fake/reset" >/dev/null
check "the next sync fetches it all again" env HUBMIRROR_DATA="$T/bare" "$HUBMIRROR" sync --no-progress
check "every repo ok again" bash -c "HUBMIRROR_DATA='$T/bare' '$HUBMIRROR' ls --json | '$PY' -c 'import json,sys; assert all(r[\"sync_status\"] == \"ok\" for r in json.load(sys.stdin))'"
check "the torrent is made again with the same info-hash" test -s "$T/bare/torrents/$BTIH.torrent"
blobs() { (cd "$1/store/blobs" && find . -type f | sort); }
check "the store holds the same contents again" diff <(blobs "$T/bare") <(blobs "$HUBMIRROR_DATA")
finish
