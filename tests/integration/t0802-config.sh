#!/usr/bin/env bash
# t0802-config: the configuration file. A good file drives serve and sync (its data directory,
# listen address, upstream and an upstream token file: a gated repo syncs with the token the file
# names, also in the sync serve schedules); the command line wins over it; `config check` passes it
# and names the line of a bad key or value; a token file others can read, or one that is missing,
# is refused; SIGHUP says which changes apply when.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_file_token": {"approved": ["acme/gated"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual",
   "files": [{"path": "config.json", "content": "{\"gated\": 1}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/open",
   "files": [{"path": "config.json", "content": "{\"open\": 1}\n"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
unset HUBMIRROR_HF_UPSTREAM HF_TOKEN
printf 'hf_file_token\n' >"$T/hf.token"
chmod 600 "$T/hf.token"
printf '%s\n' "# a mirror's settings" "[serve]" "data = $T/cdata" "listen = 127.0.0.1:1" "shutdown_grace = 2" "" \
	"[sync]" "hf_upstream = $FAKE_API" "hf_token_file = $T/hf.token" "jobs = 4" "" "[p2p]" "listen = off" >"$T/hm.conf"
hm() { "$HUBMIRROR" "$@"; }
hm config check "$T/hm.conf" 2>"$T/e0"; st=$?
check "config check of a file whose data directory holds no mirror yet: said, with the line" bash -c "[ $st = 1 ] &&
	grep -q 'hm.conf:3: \[serve\] data: .$T/cdata. holds no mirror: .hubmirror add. (or .hubmirror init.) makes one there; serve refuses it' '$T/e0'"
hm init --data "$T/cdata" >/dev/null
check "config check passes a good file" bash -c "'$HUBMIRROR' config check '$T/hm.conf' | grep -q 'ok (7 settings)'"
check "config show prints its values and the defaults" bash -c "'$HUBMIRROR' config show '$T/hm.conf' >'$T/show' &&
	grep -qx 'jobs = 4' '$T/show' && grep -qx 'hf-token-file = $T/hf.token' '$T/show' && grep -q '^# tls-cert: not set' '$T/show'"
check "no token is printed by show" bash -c "! grep -q hf_file_token '$T/show'"

# ---- sync reads [sync] and [serve] data from it: the gated repo syncs with the file's token ----
HUBMIRROR_DATA=$T/cdata hm add hf:acme/gated hf:acme/open >/dev/null
check "sync --config: upstream and token from the file" hm sync --config "$T/hm.conf" --no-progress
check "the gated repo synced with the file's token, in the file's data directory" bash -c "HUBMIRROR_DATA='$T/cdata' '$HUBMIRROR' ls --json |
	'$PY' -c 'import json,sys; assert all(r[\"sync_status\"] == \"ok\" for r in json.load(sys.stdin))'"
check "the token was written nowhere in the data directory" bash -c "! grep -rq hf_file_token '$T/cdata'"

check "every command uses the file's data directory (here ls, with HUBMIRROR_DATA set elsewhere)" bash -c \
	"HUBMIRROR_CONFIG='$T/hm.conf' '$HUBMIRROR' ls --json | '$PY' -c 'import json,sys; assert len(json.load(sys.stdin)) == 2'"

# ---- the command line wins: the file's listen address is unusable, the flag's is not ----
check "serve with the file, --listen and --ready-file from the command line" start_serve --config "$T/hm.conf" --sync-every 1
check "it serves the file's data directory" test "$(curl -fsS "$M/acme/open/resolve/main/config.json")" = '{"open": 1}'
# the scheduled sync is given the file too: an upstream commit arrives through it, token included
curl -fsS -X POST -d '{"repo": "acme/gated", "files": [{"path": "config.json", "content": "{\"gated\": 2}\n"}]}' \
	"$FAKE_API/_fake/commit" >/dev/null
up_sha() { curl -fsS "$FAKE_API/api/models/acme/gated" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])'; }
our_sha() { curl -s "$M/api/models/acme/gated" | "$PY" -c 'import json,sys; print(json.load(sys.stdin).get("sha",""))' 2>/dev/null; }
want=$(up_sha)
for _ in $(seq 100); do [ "$(our_sha)" = "$want" ] && break; sleep 0.2; done
check "the scheduled sync read the token file from the configuration: the gated repo's new commit came" test "$(our_sha)" = "$want"

# ---- SIGHUP: what changed, and when it applies ----
sed -i 's/^jobs = 4$/jobs = 2/; s/^shutdown_grace = 2$/shutdown_grace = 5/' "$T/hm.conf"
printf '%s\n' "" "[store]" "quota = 100G" "cache-size = 2G" >>"$T/hm.conf"
kill -HUP "$(pgrep -f -- "--ready-file $T/url" | head -n1)"
for _ in $(seq 50); do grep -q 'shutdown-grace changed' "$T/serve.err" && break; sleep 0.1; done
check "SIGHUP: a serve setting needs a restart, and says so" grep -q '\[serve\] shutdown-grace changed: restart serve' "$T/serve.err"
check "SIGHUP: a sync setting applies from the next sync" grep -q '\[sync\] jobs changed: the next scheduled sync uses it' "$T/serve.err"
check "SIGHUP: the store's quota is the sync's" grep -q '\[store\] quota changed: the next scheduled sync uses it' "$T/serve.err"
check "SIGHUP: the bucket's cache is serve's own store, opened at start: a restart applies it" \
	grep -q '\[store\] cache-size changed: restart serve' "$T/serve.err"

# ---- bad files: the error names the line ----
printf '[serve]\nlisten = 127.0.0.1:0\nlisen = x\n' >"$T/bad-key.conf"
hm config check "$T/bad-key.conf" 2>"$T/e1"; st=$?
check "an unknown key: a usage error naming file and line, and the key meant" bash -c "[ $st = 2 ] &&
	grep -qx 'hubmirror: .*bad-key.conf:3: \[serve\] lisen: unknown key (did you mean listen?)' '$T/e1'"
printf '[serve]\ndata = /tmp/x\n\n[sync]\njobs = 999\n' >"$T/bad-value.conf"
hm config check "$T/bad-value.conf" 2>"$T/e2"; st=$?
check "a bad value: the option's words, and the line, in one line" bash -c "[ $st = 2 ] &&
	grep -qx 'hubmirror: .*bad-value.conf:5: \[sync\] jobs: takes 1 to 256' '$T/e2'"
printf '[serve]\nlisten = nowhere\n' >"$T/bad-listen.conf"
hm serve --config "$T/bad-listen.conf" 2>"$T/e3"; st=$?
check "serve refuses a bad file before it starts" bash -c "[ $st = 2 ] && grep -q 'bad-listen.conf:2: ' '$T/e3'"
printf '[mirror]\nx = 1\n' >"$T/bad-section.conf"
hm config check "$T/bad-section.conf" 2>"$T/e4"; st=$?
check "an unknown section is refused as a section" bash -c "[ $st = 2 ] && grep -q 'bad-section.conf:1: \[mirror\]: unknown section' '$T/e4'"
chmod 644 "$T/hf.token"
hm config check "$T/hm.conf" 2>"$T/e5"; st=$?
check "a token file others can read is refused" bash -c "[ $st = 1 ] && grep -q 'can be read by others' '$T/e5'"
sed "s#$T/hf.token#$T/none.token#" "$T/hm.conf" >"$T/missing.conf"
hm sync --config "$T/missing.conf" 2>"$T/e6"; st=$?
check "a missing token file stops sync, naming it" bash -c "[ $st = 1 ] && grep -q 'none.token' '$T/e6'"
# what serve would trip on at start: each named with its line, all of them at once
printf '%s\n' "[serve]" "data = $T/cdata" "listen = 0.0.0.0:99999" "access-log = $T/no-such-dir/access.log" \
	"" "[sync]" "hf-upstream = huggingface.co" "" "[store]" "quota = 2TB" >"$T/trips.conf"
hm config check "$T/trips.conf" 2>"$T/e7"; st=$?
check "a port past 65535, a log folder that is not there, an upstream without a scheme: refused" test "$st" = 1
check "each with its file and line" bash -c "grep -q 'trips.conf:3: \[serve\] listen: .0.0.0.0:99999. is not HOST:PORT with a port from 0 to 65535' '$T/e7' &&
	grep -q 'trips.conf:4: \[serve\] access-log: .*no-such-dir/access.log.: its folder .*: No such file or directory (serve would exit at start)' '$T/e7' &&
	grep -q 'trips.conf:7: \[sync\] hf-upstream: .huggingface.co. is not a URL: write it with its scheme (https://huggingface.co)' '$T/e7'"
check "and 2TB is a size, as 2T is" bash -c "! grep -q quota '$T/e7'"
# every mistake in one run, one line each: a slip of a key, a key of another section, a slip of a
# section, a line that is no key, bad values (sync's and a boolean), and one port for HTTP and the seed
printf '%s\n' "[serve]" "lisen = 127.0.0.1:8080" "listen = 127.0.0.1:6881" "jobs = 4" "" "[sycn]" "at = 03:00" "" \
	"[sync]" "jobs = 999" "this is no key" "[p2p]" "listen = 0.0.0.0:6881" "super-seed = maybe" >"$T/many.conf"
hm config check "$T/many.conf" 2>"$T/e8"; st=$?
check "a file of many mistakes: a usage error" test "$st" = 2
check "each said in one line with its file, line, section and key" bash -c "cd '$T' && e=e8 &&
	grep -qx 'hubmirror: .*many.conf:2: \[serve\] lisen: unknown key (did you mean listen?)' \$e &&
	grep -qx 'hubmirror: .*many.conf:4: \[serve\] jobs: unknown key in \[serve\]: it belongs in \[sync\]' \$e &&
	grep -qx 'hubmirror: .*many.conf:6: \[sycn\]: unknown section (did you mean \[sync\]? the sections are serve, hub, s3, sync, store, p2p)' \$e &&
	grep -qx \"hubmirror: .*many.conf:11: not a 'key = value' line or a '\[section\]': this is no key\" \$e &&
	grep -qx 'hubmirror: .*many.conf:10: \[sync\] jobs: takes 1 to 256' \$e &&
	grep -qx \"hubmirror: .*many.conf:14: \[p2p\] super-seed: takes true or false, not 'maybe'\" \$e &&
	grep -q 'many.conf:13: \[p2p\] listen: .0.0.0.0:6881. is the port of \[serve\] listen .127.0.0.1:6881. too' \$e"
check "and nothing else, each once" test "$(wc -l <"$T/e8")" = 7
printf '%s\n' "[serve]" "listen = 127.0.0.1:0" "" "[p2p]" "listen = 127.0.0.1:0" >"$T/zero.conf"
check "port 0 twice is no clash (each picks a free one)" bash -c "'$HUBMIRROR' config check '$T/zero.conf' 2>&1 | grep -vq 'is the port of'"
hm serve --data "$T/cdata" --listen 127.0.0.1:7000 --p2p-listen 0.0.0.0:7000 2>"$T/e9"; st=$?
check "serve refuses one port for HTTP and its seed, before it starts" bash -c "[ $st = 2 ] && grep -q 'are one port' '$T/e9'"
check "a missing configuration file is an error" bash -c "! '$HUBMIRROR' config check '$T/nope.conf' 2>/dev/null"
finish
