#!/usr/bin/env bash
# t0849-write-spool: nobody fills the mirror's disk through the write side (docs/uploads.md, "Bodies and
# their bounds"; issue 46, item 3). The data directory is on a 320 MB tmpfs. A 200 MiB body POSTed to a
# commit path and to a git-receive-pack path, with a Content-Length (sent at once, or after waiting
# for 100 Continue) and chunked, with no token, a wrong token, a token of another namespace, to a
# namespace that is not local, to a repo that does not exist, and under --auth all: each gets the
# answer it always got (401 without a token, with one the mirror does not know, or under --auth all; 403, 404) while the disk's free space stays as it was during the
# request. A writer's body is bounded: over --write-body-max a clear 413 before the body (or cut off
# where a chunked one passes it), over the namespace's quota a 403, over the disk's room a 507 (a
# push's pack counts twice), over --write-spool-max a 503 with Retry-After; git shows its HTTP 413.
# Small commits and pushes still land, and the spool's gauge is back at 0 after each.
. "$HM_SRC/tests/integration/lib.sh"
[ "$(id -u)" = 0 ] || skip "needs root (a small tmpfs for the data directory)"

cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write hf:datasets/acme/*:write hf:zeta/*:write
hf_writer_zeta_0003 hf:zeta/*:write
TOK
chmod 600 "$T/tokens"
W=hf_writer_acme_0001
Z=hf_writer_zeta_0003
mkdir -p "$T/small"
mount -t tmpfs -o size=320m tmpfs "$T/small" 2>"$T/mount.err" || skip "cannot mount a tmpfs: $(cat "$T/mount.err")"
trap 'umount -l "$T/small"; _cleanup' EXIT
export HUBMIRROR_DATA=$T/small/data
"$HUBMIRROR" init >/dev/null

serve_pid=
serve() { # serve ARGS...: (re)start serve with the local namespaces and ARGS
	if [ -n "$serve_pid" ]; then kill "$serve_pid"; wait "$serve_pid" 2>/dev/null; fi
	start_serve --local acme,zeta --tokens "$T/tokens" --p2p-listen off "$@" || return 1
	serve_pid=${_pids[-1]}
}
check "serve starts (--write-body-max 64MB, zeta's quota 8MB)" serve --write-body-max 64MB --local-quota zeta=8MB || finish
create() { # create NAME [TYPE]: a repo of W's
	curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
		-d "{\"name\":\"${1#*/}\",\"organization\":\"${1%/*}\",\"type\":\"${2:-model}\"}" "$M/api/repos/create"
}
check "acme/r and zeta/q are made" bash -c "$(declare -f create); M=$M W=$W; create acme/r && create zeta/q"

# refused PATH WANT [bigpost ARGS]: a 200 MiB POST to PATH, stopped 1 MiB short of its end, is answered
# WANT and costs the disk nothing while it is open, in each of the three ways a body comes.
refused() {
	local path=$1 want=$2 how out; shift 2
	for how in "" --chunked --wait-100; do
		out=$("$PY" "$HM_SRC/tests/integration/helpers/bigpost.py" "$M" "$path" "$T/small" 200 $how "$@") || return 1
		read -r st sent drop <<<"$out"
		echo "# ${how:-content-length}: answered $st after $sent MiB sent; the disk lost $drop MiB"
		[ "$st" = "$want" ] || { echo "# expected $want"; return 1; }
		awk -v d="$drop" 'BEGIN { exit !(d < 1) }' || { echo "# the disk lost $drop MiB"; return 1; }
	done
}
C=/api/models/acme/r/commit/main
G=/acme/r.git/git-receive-pack
check "no token: a commit's body is refused, 401, the disk untouched" refused $C 401
check "no token: a push's pack is refused, 401, the disk untouched" refused $G 401
check "a token the mirror does not know: a commit, 401 as the Hub says" refused $C 401 -H "Authorization: Bearer hf_nobody_0000"
check "a token the mirror does not know: a push, 401 (Basic, as git sends it)" refused $G 401 \
	-H "Authorization: Basic $(printf 'user:hf_nobody_0000' | base64)"
check "another namespace's token: a commit, 403" refused $C 403 -H "Authorization: Bearer $Z"
check "another namespace's token: a push, 403" refused $G 403 -H "Authorization: Bearer $Z"
check "a namespace that is not local: a commit, 403" refused /api/models/other/x/commit/main 403 \
	-H "Authorization: Bearer $W"
check "a namespace that is not local: a push, 403" refused /other/x.git/git-receive-pack 403 -H "Authorization: Bearer $W"
check "a repo that does not exist: a commit, 404" refused /api/models/acme/none/commit/main 404 \
	-H "Authorization: Bearer $W"
check "a repo that does not exist: a push, 404" refused /acme/none.git/git-receive-pack 404 -H "Authorization: Bearer $W"
check "the refusals said what they always said" bash -c "
	curl -sS -X POST --data-binary 'x' '$M$C' | grep -q 'Invalid username or password' &&
	curl -sS -X POST --data-binary 'x' '$M$G' -D - | grep -q 'WWW-Authenticate: Basic realm=\"hubmirror\"' &&
	curl -sS -X POST --data-binary 'x' -H 'Authorization: Bearer $Z' '$M$C' | grep -q \"don't have the rights to write\""

# A writer's body over its bound: 413 before the body, cut off in a chunked one.
writer() { # writer PATH WANT_STATUS GREP [curl ARGS]: W POSTs 200 MiB (curl: Expect: 100-continue)
	local path=$1 want=$2 grep=$3 st; shift 3
	st=$(curl -sS -o "$T/w.out" -w '%{http_code} %{size_upload}' -H "Authorization: Bearer $W" -X POST \
		--data-binary @"$T/body" "$@" "$M$path")
	echo "# $st: $(head -c 300 "$T/w.out")"
	[ "${st% *}" = "$want" ] && grep -q "$grep" "$T/w.out" || return 1
	[ -z "$want_unsent" ] || [ "${st#* }" = 0 ] || { echo "# the body was sent"; return 1; }
}
head -c $((200 << 20)) /dev/zero >"$T/body"
want_unsent=1
check "a writer's commit over --write-body-max: 413 before the body, saying the bound" \
	writer $C 413 "A commit's body is at most 61.0 MiB on this mirror"
check "a writer's push over --write-body-max: 413 before the body" writer $G 413 "A push's body is at most 61.0 MiB"
want_unsent=
check "chunked, it is cut off where it passes the bound: 413" \
	writer $C 413 "at most 61.0 MiB" -H 'Transfer-Encoding: chunked'
check "a chunked push too" writer $G 413 "at most 61.0 MiB" -H 'Transfer-Encoding: chunked'
want_unsent=1
check "over the namespace's quota room: 403, before the body" \
	writer /api/models/zeta/q/commit/main 403 "storage quota of namespace zeta"
check "the spool holds nothing once they are answered" bash -c "[ \"\$(curl -fsS '$M/metrics' |
	awk '\$1 == \"hubmirror_write_spool_bytes\" { print \$2 }')\" = 0 ]"
check "and counts the refusals" metric_at_least hubmirror_write_bodies_refused_total 5

# git says HTTP 413 for a pack over the bound, and main stays where it was
export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 HOME="$T/home"
mkdir -p "$HOME"
git config --global user.name "Ann Dev" && git config --global user.email ann@example.com &&
	git config --global credential.helper "" && git config --global init.defaultBranch main
host=${M#http://}
git_413() {
	git clone -q "http://user:$W@$host/acme/r" "$T/w" 2>/dev/null || return 1
	for i in 1 2 3 4 5 6 7; do head -c 9500000 /dev/urandom >"$T/w/r$i.dat"; done
	git -C "$T/w" add -A && git -C "$T/w" commit -q -m big || return 1
	! git -C "$T/w" push origin main >"$T/push.out" 2>&1 || return 1
	sed 's/^/#   /' "$T/push.out"
	grep -q "HTTP 413" "$T/push.out" && ! git ls-remote "http://user:$W@$host/acme/r" | grep -q "$(git -C "$T/w" rev-parse HEAD)"
}
check "git push of a 66 MB pack: git says HTTP 413, main unmoved" git_413
small_push() {
	git -C "$T/w" reset -q --hard HEAD~1 && echo hi >"$T/w/hi.txt" && git -C "$T/w" add hi.txt &&
		git -C "$T/w" commit -q -m hi && git -C "$T/w" push -q origin main 2>/dev/null
}
check "a small push still lands" small_push
small_commit() {
	printf '{"key":"header","value":{"summary":"s"}}\n{"key":"file","value":{"path":"a.txt","content":"aGkK","encoding":"base64"}}\n' |
		curl -fsS -H "Authorization: Bearer $W" -H 'Content-Type: application/x-ndjson' -X POST --data-binary @- \
			"$M$C" | grep -q commitOid
}
check "a small commit still lands" small_commit

# The disk's room (no --write-body-max here: 1 GiB): a 200 MiB commit fits the ~300 MB left, a
# 200 MiB push does not (git keeps a copy of its pack while it takes it): 507.
check "serve again with the default bounds" serve
want_unsent=1
check "a push's pack over the disk's room (counted twice): 507, before the body" \
	writer $G 507 "No space left on the mirror's disk: no room for this body"
check "serve again with --write-spool-max 100MB" serve --write-spool-max 100MB
check "a body over what all bodies may hold at once: 503 with Retry-After" bash -c "
	curl -sS -D - -o /dev/null -H 'Authorization: Bearer $W' -X POST --data-binary @'$T/body' '$M$C' |
		tr -d '\r' | grep -q '^Retry-After: 60' && curl -sS -H 'Authorization: Bearer $W' -X POST \
		--data-binary @'$T/body' '$M$C' | grep -q 'receiving 95.4 MiB of commits and pushes already'"

# --auth all: the same refusals, before the body
check "serve again under --auth all" serve --auth all
check "--auth all, no token: a commit, 401, the disk untouched" refused $C 401
check "--auth all, no token: a push, 401, the disk untouched" refused $G 401
check "--auth all, a wrong token: 401" refused $G 401 -H "Authorization: Bearer hf_nobody_0000"
finish
