#!/usr/bin/env bash
# t0807-bundle-incremental: bundles cut into volumes (export --volume-size: FILE.001, FILE.002, ...;
# import FILE.001 reads them all, a shell glob of them works too, a later volume alone is refused, a
# missing volume refuses the bundle with nothing stored), and incremental bundles (export --since an
# earlier bundle or a date): the manifest lists everything, the archive carries only the new
# contents; it imports where the earlier one was imported, and is refused, with nothing stored and
# a clear message, where it was not.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/inc",
   "files": [{"path": "config.json", "content": "{\"v\": 1}\n"}, {"path": "big.bin", "size": 3000000, "seed": 7}]}
 ]}
JSON
check "synced from the fake upstream" sync_from_fake hf:acme/inc
check "export in volumes of 1 MB" "$HUBMIRROR" export --volume-size 1MB --output "$T/full.tar" hf:acme/inc
check "four volumes of 1 MB (3 MB of contents) and no file of the plain name" bash -c "[ -s '$T/full.tar.001' ] && [ -s '$T/full.tar.004' ] &&
	[ ! -e '$T/full.tar.005' ] && [ ! -e '$T/full.tar' ] && [ \$(stat -c %s '$T/full.tar.003') = 1000000 ] && [ -z \"\$(ls '$T' | grep tmp-)\" ]"
check "the volumes make one tar" bash -c "cat '$T'/full.tar.0* | tar -tf - | grep -qx manifest.json"
expect_status 1 "a later volume alone is refused" "$HUBMIRROR" import --data "$T/b" "$T/full.tar.002"
mkdir -p "$T/cut" && cp "$T/full.tar.001" "$T/full.tar.002" "$T/cut/"
"$HUBMIRROR" import --data "$T/b" "$T/cut/full.tar.001" 2>"$T/cut.err"; st=$?
check "a bundle with a volume missing is refused" test "$st" = 1
check "asking whether a volume is missing" grep -q "is a volume missing? 2 read" "$T/cut.err"
check "and nothing entered the store" bash -c "[ -z \"\$(find '$T/b/store/blobs' -type f 2>/dev/null)\" ]"
check "import FILE.001 reads every volume" env -u HUBMIRROR_HF_UPSTREAM "$HUBMIRROR" import --data "$T/b" "$T/full.tar.001"
check "import of a shell glob of the volumes" "$HUBMIRROR" import --data "$T/b2" "$T"/full.tar.0*

# ---- upstream moves on: an incremental bundle carries only what is new ----
sleep 1; SINCE=$(date +%s)
C2=$(curl -fsS -X POST -d '{"repo": "acme/inc", "files": [{"path": "new.bin", "size": 500000, "seed": 8}, {"path": "config.json", "content": "{\"v\": 2}\n"}]}' \
	"$FAKE_API/_fake/commit" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["commit"])')
"$HUBMIRROR" sync --no-progress >/dev/null
check "export since the earlier bundle" "$HUBMIRROR" export --since "$T/full.tar.001" --output "$T/inc.tar" hf:acme/inc
check "export since a date" "$HUBMIRROR" export --since "@$SINCE" --output "$T/inc-date.tar" hf:acme/inc
blobs_in() { tar -tf "$1" | grep -c '^blobs/'; }
check "the incremental bundle carries only the two new contents" test "$(blobs_in "$T/inc.tar")" = 2
check "so does the one made since a date" test "$(blobs_in "$T/inc-date.tar")" = 2
check "its manifest still lists every content and says what it follows" "$PY" -c "
import json, tarfile
m = json.load(tarfile.open('$T/inc.tar').extractfile('manifest.json'))
assert len(m['blobs']) == 4 and m['since']['bundle'].endswith('full.tar.001'), m.get('since')"
"$HUBMIRROR" import --data "$T/c" "$T/inc.tar" 2>"$T/c.err"; st=$?
check "refused where the earlier bundle was never imported" test "$st" = 1
check "saying which bundle to import first" grep -q "incremental, made against '.*full.tar.001'.*import that bundle first" "$T/c.err"
check "with nothing stored" bash -c "[ -z \"\$(find '$T/c/store/blobs' -type f 2>/dev/null)\" ]"
check "imported where the earlier one was" "$HUBMIRROR" import --data "$T/b" --json "$T/inc.tar"
check "the one made since a date imports where the full one was" "$HUBMIRROR" import --data "$T/b2" "$T/inc-date.tar"
check "serve on the source starts" start_serve --p2p-listen off
A=$M
check "serve on the incrementally fed mirror starts" start_serve --data "$T/b" --p2p-listen off
same() { cmp <(curl -fsS "$A$1") <(curl -fsS "$M$1"); }
check "the new snapshot answers the same" same /api/models/acme/inc
check "its new file" same /acme/inc/resolve/main/new.bin
check "its old file" same /acme/inc/resolve/main/big.bin
check "the commit is the new one" test "$(curl -fsS "$M/api/models/acme/inc" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])')" = "$C2"
expect_status 2 "a --since that is neither a bundle nor a date is bad usage" "$HUBMIRROR" export --since yesterday --output "$T/x.tar" hf:acme/inc
finish
