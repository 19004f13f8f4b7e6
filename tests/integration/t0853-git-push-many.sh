#!/usr/bin/env bash
# t0853-git-push-many: pushes of many small objects against git's own receive-pack and `hubmirror
# git-hook` (docs/uploads.md, "git push"; issue 46, "Also"): 100,000 files of a few bytes land in one
# push (the hook reads what git writes through a pipe, one file at a time), and a push of 11 commits
# whose trees list 1.1 million files together is refused before the hook holds them all, main
# unmoved.
. "$HM_SRC/tests/integration/lib.sh"

cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
TOK
chmod 600 "$T/tokens"
W=hf_writer_acme_0001
check "serve starts" start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish
# (under the sanitizers, a fifth of the files: the hook's path is the same, its time five times less)
dirs=100
grep -q libasan "/proc/${_pids[-1]}/maps" 2>/dev/null && dirs=20
curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
	-d '{"name":"m","organization":"acme","type":"model"}' "$M/api/repos/create" || fail "create acme/m"
head_of() { curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/$1/revision/main" |
	"$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])'; }

# Many small objects, with git as it is.
export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 HOME="$T/home"
mkdir -p "$HOME"
git config --global user.name "Ann Dev" && git config --global user.email ann@example.com &&
	git config --global credential.helper "" && git config --global init.defaultBranch main
host=${M#http://}
many() {
	local start
	git clone -q "http://user:$W@$host/acme/m" "$T/m" 2>/dev/null || return 1
	"$PY" - "$T/m" "$dirs" <<'PY' || return 1
import os, sys
for d in range(int(sys.argv[2])):
    os.makedirs(os.path.join(sys.argv[1], "many", "d%03d" % d))
    for i in range(1000):
        with open(os.path.join(sys.argv[1], "many", "d%03d" % d, "f%04d.txt" % i), "w") as f:
            f.write("%d %d\n" % (d, i))
PY
	git -C "$T/m" add -A && git -C "$T/m" commit -q -m many || return 1
	start=$(date +%s)
	git -C "$T/m" push -q origin main 2>"$T/many.err" || { cat "$T/many.err"; return 1; }
	echo "# $dirs,000 files pushed in $(( $(date +%s) - start )) s"
	[ "$(head_of m)" = "$(git -C "$T/m" rev-parse HEAD)" ] &&
		[ "$(curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/m/revision/main" | "$PY" -c \
			'import json,sys; print(len(json.load(sys.stdin)["siblings"]))')" = $((dirs * 1000 + 1)) ]
}
check "$dirs,000 files of a few bytes land in one push" many
too_many() {
	local before i
	before=$(head_of m)
	for i in $(seq 1 $((1000 / dirs + 1))); do
		echo "$i" >"$T/m/many/d000/f0000.txt" && git -C "$T/m" commit -q -am "c$i" || return 1
	done
	! git -C "$T/m" push origin main >"$T/too.out" 2>&1 || return 1
	sed 's/^/#   /' "$T/too.out"
	grep -q "remote: hubmirror: push refused: the new commits list more than 1000000 files" "$T/too.out" &&
		[ "$(head_of m)" = "$before" ]
}
check "$((1000 / dirs + 1)) commits whose trees list over a million files: refused, main unmoved" too_many
finish
