#!/usr/bin/env bash
# t0001-cli: the command table, help, version, and usage errors (exit status 2 with a message).
. "$HM_SRC/tests/integration/lib.sh"

"$HUBMIRROR" help >"$T/help" 2>&1
expect_status 0 "help exits 0" true
check "help lists help and version" grep -qE '^  help +show' "$T/help"
check "help lists version" grep -qE '^  version +print' "$T/help"
check "--help is help" bash -c '"$HUBMIRROR" --help | cmp -s - "$1"' _ "$T/help"

"$HUBMIRROR" help version >"$T/hv"; st=$?
check "help CMD exits 0" test "$st" -eq 0
check "help CMD shows usage" grep -q '^usage: hubmirror version \[--json\]' "$T/hv"
check "CMD --help is help CMD" bash -c '"$HUBMIRROR" version --help | cmp -s - "$1"' _ "$T/hv"

v=$("$HUBMIRROR" --version)
check "--version names hubmirror and libtorrent" bash -c '[[ "$1" == "hubmirror "* && "$1" == *libtorrent* ]]' _ "$v"
"$HUBMIRROR" version --json >"$T/v.json"
check "version --json is JSON with the libraries" "$PY" -c '
import json,sys
d = json.load(open(sys.argv[1]))
assert d["hubmirror"]
for k in ("libcurl","sqlite","libuv","openssl","jansson","libtorrent","libarchive","http-parser","fuse"):
    assert d["libraries"][k], k
' "$T/v.json"

expect_status 2 "unknown command exits 2" "$HUBMIRROR" frobnicate 2>"$T/e1"
check "unknown command says so" grep -q "'frobnicate' is not a hubmirror command" "$T/e1"
expect_status 2 "no command exits 2" "$HUBMIRROR" 2>"$T/e2"
check "no command prints usage" grep -q '^usage: hubmirror' "$T/e2"
expect_status 2 "bad global option exits 2" "$HUBMIRROR" --frob help 2>/dev/null
expect_status 2 "bad command option exits 2" "$HUBMIRROR" version --frob 2>"$T/e3"
check "bad option names the command and where its help is" grep -q "^hubmirror: version: unknown option --frob$" "$T/e3"
expect_status 2 "extra argument exits 2" "$HUBMIRROR" version extra 2>/dev/null
expect_status 2 "help of unknown command exits 2" "$HUBMIRROR" help frobnicate 2>/dev/null
expect_status 2 "bad log level exits 2" "$HUBMIRROR" --log-level loud help 2>"$T/e4"
check "bad log level message" grep -q "unknown log level 'loud'" "$T/e4"

# Every command in the table documents itself and parses its options. Each option's help is beside it
# in the command's table: `help CMD` is the command's own `CMD --help`, which prints one line or more
# per option of that table (opts: each command's table).
declare -A opts=(
	[add]="data revision include exclude prefer-safetensors open preheat refs mirror from"
	[backup]="data output" [config]="" [git-hook]="" [export]="data output since volume-size"
	[gc]="data keep partial-age dry-run wait json" [pin]="data remove" [help]="" [info]="files data mirror json"
	[init]="data" [import]="data wait json keep-options" [ls]="data mirror json" [remove]="data mirror"
	[search]="data mirror hub type limit json"
	[agent]="mirror cache socket listen cache-size keep-pulled upload-limit http preheat preheat-every no-fill mirror-timeout
		foreground stop"
	[mount]="prefetch mirror cache hf-cache no-hf-cache ms-cache no-ms-cache listen socket"
	[pull]="include exclude pin json mirror cache hf-cache no-hf-cache ms-cache no-ms-cache listen socket"
	[umount]="socket" [drop]="mirror cache hf-cache no-hf-cache ms-cache no-ms-cache listen socket"
	[status]="json verify socket"
	[serve]="data listen sync-at sync-every tokens auth hf-upstream ms-upstream access-log ready-file
		header-timeout idle-timeout write-timeout p2p-listen p2p-upload-limit p2p-rescan search-budget
		max-connections trusted-proxy config admin-token-file peer-mirror on-demand on-demand-ttl
		on-demand-max-repos hf-token-file ms-token-file shutdown-grace tls-cert tls-key p2p-super-seed"
	[sync]="data check-refs retention quota config mirror status local hf-token-file ms-token-file hf-upstream
		ms-upstream json wait jobs max-tries retry-delay progress no-progress"
	[request]="mirror reason" [requests]="data mirror state note json" [restore]="data json"
	[verify]="data wait json" [version]="json"
)
# a configuration file serve and sync refuse: their help does not read it
printf '[bogus]\nkey = 1\n' >"$T/bad.conf"
for c in $("$HUBMIRROR" help | awk '/^Commands:/{f=1;next} f && /^  [a-z]/{print $1}'); do
	out=$("$HUBMIRROR" "$c" --help 2>&1)
	check "help of '$c' has a usage line" grep -q "^usage: hubmirror $c" <<<"$out"
	HUBMIRROR_CONFIG="$T/bad.conf" "$HUBMIRROR" help "$c" >"$T/help.$c" 2>&1; st=$?
	"$HUBMIRROR" "$c" --help >"$T/dash.$c" 2>&1; st2=$?
	check "help $c and $c --help: exit 0, the same text" \
		bash -c "[ $st = 0 ] && [ $st2 = 0 ] && cmp -s '$T/help.$c' '$T/dash.$c'"
	if [ -z "${opts[$c]+set}" ]; then
		fail "t0001 knows the options of '$c'"
	else
		missing=""
		for o in ${opts[$c]}; do grep -qE -- "^  --$o( |\$)" "$T/help.$c" || missing+=" --$o"; done
		check "help $c names each of its options, help beside it${missing:+ (not:$missing)}" test -z "$missing"
	fi
	expect_status 2 "'$c' rejects an unknown option" "$HUBMIRROR" "$c" --no-such-option 2>/dev/null
done
check "-h is --help" bash -c '"$HUBMIRROR" gc -h | cmp -s - "$1"' _ "$T/help.gc"
check "an option's help lines stand in its column" grep -qxF \
	'  --partial-age HOURS  delete partial downloads older than this (default 168)' "$T/help.gc"
check "its further lines under its first" bash -c "grep -A1 '^  --keep-options  give new repositories' '$T/help.import' |
	grep -qxF '                  guards); without it they get none, and tracked ones always keep their own'"
# --help does nothing else: no data directory made
HUBMIRROR_DATA="$T/none" "$HUBMIRROR" init --help >/dev/null
HUBMIRROR_DATA="$T/none" "$HUBMIRROR" add --help hf:acme/x >/dev/null
check "init --help and add --help make no data directory" test ! -e "$T/none"
# A mistyped option: one line naming it and the near one, where help is; not getopt's, no usage block.
"$HUBMIRROR" ls --jsn 2>"$T/jsn.err"; st=$?
check "ls --jsn: exit 2, 'did you mean --json?'" bash -c "[ $st = 2 ] &&
	[ \"\$(cat '$T/jsn.err')\" = \"\$(printf \"hubmirror: ls: unknown option --jsn (did you mean --json?)\\n(see 'hubmirror help ls' for its options)\")\" ]"
"$HUBMIRROR" mount --socket 2>"$T/sock.err"; st=$?
check "mount --socket without its value says so" bash -c "[ $st = 2 ] && grep -q '^hubmirror: mount: --socket needs a value$' '$T/sock.err' &&
	! grep -q 'unrecognized\|requires an argument' '$T/sock.err'"
# A repository's page pasted from a browser names the repository.
HUBMIRROR_DATA="$T/urls" "$HUBMIRROR" add https://huggingface.co/Qwen/Qwen2.5-7B-Instruct https://www.modelscope.cn/models/qwen/Qwen2.5-7B-Instruct/files >/dev/null
check "add takes pasted hub URLs" bash -c "HUBMIRROR_DATA='$T/urls' '$HUBMIRROR' ls | grep -q '^hf:Qwen/Qwen2.5-7B-Instruct ' &&
	HUBMIRROR_DATA='$T/urls' '$HUBMIRROR' ls | grep -q '^ms:qwen/Qwen2.5-7B-Instruct '"
# No command may be a placeholder: nothing in the sources says so.
if grep -rniE 'not (yet )?implemented' "$HM_SRC"/base "$HM_SRC"/catalog "$HM_SRC"/hub "$HM_SRC"/mirror "$HM_SRC"/p2p; then
	fail "a placeholder in the sources"
else
	ok "no placeholder in the sources"
fi
finish
