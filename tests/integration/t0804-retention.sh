#!/usr/bin/env bash
# t0804-retention: sync --retention N (or [store] retention in the configuration file): after the
# run, old snapshots beyond N per repository go, with the contents only they used; a snapshot a ref
# points at (the followed branch, a tag) is never dropped, however old.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/kept",
   "files": [{"path": "w.txt", "content": "one\n"}, {"path": "first.bin", "size": 50000, "seed": 1}],
   "tags": {"v1.0": "c1"}}
 ]}
JSON
check "synced from the fake upstream" sync_from_fake hf:acme/kept
commit() { curl -fsS -X POST -d "$1" "$FAKE_API/_fake/commit" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["commit"])'; }
C2=$(commit '{"repo": "acme/kept", "files": [{"path": "w.txt", "content": "two\n"}, {"path": "only2.bin", "size": 60000, "seed": 2}]}')
"$HUBMIRROR" sync --no-progress >/dev/null
ONLY2=$(curl -fsS -L "$FAKE_API/acme/kept/resolve/$C2/only2.bin" | sha256sum | cut -c1-64)
C3=$(commit '{"repo": "acme/kept", "files": [{"path": "w.txt", "content": "three\n"}], "delete": ["only2.bin"]}')
printf '[store]\nretention = 0\n' >"$T/hm.conf"
check "sync with the configuration's retention" "$HUBMIRROR" sync --config "$T/hm.conf" --no-progress
check "serve starts" start_serve --p2p-listen off
snaps() { curl -fsS "$M/api/catalog/repos/hf/model/acme/kept" | "$PY" -c 'import json,sys; print(" ".join(s["commit"][:7] for s in json.load(sys.stdin)["snapshots"]))'; }
check "only the snapshots refs point at are left (main, and the tag's old one)" bash -c "[ \"\$(echo $(snaps) | wc -w)\" = 2 ]"
check "the followed branch is the newest" test "$(curl -fsS "$M/acme/kept/resolve/main/w.txt")" = three
check "the tag's old snapshot is kept" test "$(curl -fsS "$M/acme/kept/resolve/v1.0/w.txt")" = one
check "the dropped snapshot no longer answers by its commit" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/acme/kept/resolve/$C2/w.txt")" = 404
check "the content only it used left the store" test ! -e "$HUBMIRROR_DATA/store/blobs/${ONLY2:0:2}/$ONLY2"
check "a content still used stays" test -n "$(curl -fsS "$M/acme/kept/resolve/v1.0/first.bin" | head -c 10 | od -An -tx1)"
finish
