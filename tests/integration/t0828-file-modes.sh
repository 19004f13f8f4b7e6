#!/usr/bin/env bash
# t0828-file-modes: what hubmirror writes is its owner's and its group's, never every user's
# (docs/security.md, "Files on disk"): the mirror's data directory, catalog, store and git objects,
# and the agent's cache, whatever the umask it was started under. A data directory and catalog made
# world-readable (by an older version) are closed at the next start.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"approved": ["acme/gate"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/gate", "gated": "manual",
   "files": [{"path": "config.json", "content": "{\"gate\": 1}\n"}, {"path": "w.bin", "size": 300000, "seed": 5}]},
  {"hub": "hf", "type": "model", "id": "acme/open",
   "files": [{"path": "config.json", "content": "{}\n"}, {"path": "m.safetensors", "size": 200000, "seed": 6}]}
 ]}
JSON
umask 022
export HF_TOKEN=hf_ok
sync_from_fake hf:acme/gate hf:acme/open
# every path under DIR that others may read, write or enter (symlinks have no mode of their own)
open_to_others() { find "$1" ! -type l -perm /o=rwx -print; }
check "the data directory is 0750" test "$(stat -c %a "$HUBMIRROR_DATA")" = 750
check "the catalog is 0640" test "$(stat -c %a "$HUBMIRROR_DATA/catalog.db")" = 640
check "nothing under the data directory is open to others after a sync" test -z "$(open_to_others "$HUBMIRROR_DATA")"

check "serve starts" start_serve --p2p-listen 127.0.0.1:0
check "git clone of a repo" git clone -q "$M/acme/open" "$T/clone"
check "the mirror's git objects exist" test -n "$(find "$HUBMIRROR_DATA" -path '*git*' -type f | head -1)"
check "nothing under the data directory is open to others with git and the seed" test -z "$(open_to_others "$HUBMIRROR_DATA")"
check "the access log is 0640" test "$(stat -c %a "$T/access.log")" = 640

timeout 120 "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" --no-ms-cache --listen 127.0.0.1:0 \
	hf:acme/open >"$T/pull.out" 2>"$T/pull.err"
check "an agent pulls a repo" test $? = 0
check "its cache holds the files" test -n "$(find "$T/cache" -name m.safetensors -type f)"
check "the agent's cache is 0750" test "$(stat -c %a "$T/cache")" = 750
check "nothing in the agent's cache is open to others" test -z "$(open_to_others "$T/cache")"
check "the control socket is the owner's only ($(stat -c %a "$HUBMIRROR_AGENT_SOCKET"))" test "$(( 0$(stat -c %a "$HUBMIRROR_AGENT_SOCKET") & 077 ))" = 0
timeout 20 "$HUBMIRROR" agent --stop >/dev/null 2>&1

# made open by an older version: closed at the next start
kill "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null
chmod 755 "$HUBMIRROR_DATA" "$T/cache"; chmod 644 "$HUBMIRROR_DATA/catalog.db"
"$HUBMIRROR" init >/dev/null
check "an open data directory is closed at the next start" test "$(stat -c %a "$HUBMIRROR_DATA")" = 750
check "... and its catalog" test "$(stat -c %a "$HUBMIRROR_DATA/catalog.db")" = 640
timeout 60 "$HUBMIRROR" agent --cache "$T/cache" --mirror http://127.0.0.1:9 --listen 127.0.0.1:0 >/dev/null 2>&1
check "an open cache is closed when the agent starts" test "$(stat -c %a "$T/cache")" = 750
timeout 20 "$HUBMIRROR" agent --stop >/dev/null 2>&1
finish
