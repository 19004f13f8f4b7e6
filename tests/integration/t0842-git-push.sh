#!/usr/bin/env bash
# t0842-git-push: git push into a local repository (docs/uploads.md, "git push"), with git and git-lfs
# as they are. A push of small files and LFS files (author and committer apart, in their own time
# zones) lands: the API's revision is the pusher's commit id, every file reads back byte for byte, and
# the git side rebuilt from the catalog alone has the same ids. A second push sends only the changed
# LFS object. Branches, tags, deletions and a force push; refused with git's "remote:" reasons, the
# branch unmoved: an executable file, a symlink, a file of 10 MiB outside LFS, a merge, an annotated
# tag, the default branch deleted, an LFS pointer whose object never came, a read-only token, no
# token, a namespace that is not local, a repo that does not exist. An instance pulls the pushed repo;
# a bundle carries the pushed commits (their objects) and the mirror it is imported into serves the
# same ids; serve and the hook killed mid-push leave the old revision or the new one, never half.
. "$HM_SRC/tests/integration/lib.sh"
command -v git-lfs >/dev/null || skip "git-lfs is not installed"

cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write hf:datasets/acme/*:write
hf_reader_acme_0002 hf:acme/* hf:datasets/acme/*
TOK
chmod 600 "$T/tokens"
W=hf_writer_acme_0001
R=hf_reader_acme_0002
check "serve starts with a local namespace" start_serve --local acme --tokens "$T/tokens" --p2p-listen 127.0.0.1:0 || finish
serve_pid=${_pids[-1]}
export GIT_TERMINAL_PROMPT=0 GIT_CONFIG_NOSYSTEM=1 HOME="$T/home"
mkdir -p "$HOME"
git config --global user.name "Ann Dev" && git config --global user.email ann@example.com &&
	git config --global credential.helper "" && git config --global init.defaultBranch main &&
	git lfs install >/dev/null 2>&1
host=${M#http://}
url() { echo "http://user:$1@$host/$2"; } # url TOKEN REPO

api() { curl -fsS -H "Authorization: Bearer $W" "$M/api/models/acme/$1"; }
head_of() { api "$1/revision/${2:-main}" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])'; }
create() {
	curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
		-d "{\"name\":\"$1\",\"organization\":\"acme\",\"type\":\"model\"}" "$M/api/repos/create"
}
check "create_repo makes acme/pushed" create pushed

# The first push: small files in folders, two LFS files, author and committer apart.
W1="$T/w1"
first_push() {
	git clone -q "$(url $W acme/pushed)" "$W1" 2>"$T/clone.err" || { cat "$T/clone.err"; return 1; }
	cd "$W1" || return 1
	git lfs track '*.bin' >/dev/null
	echo '{"model_type": "llama"}' >config.json
	mkdir -p tok/sub && printf 'vocab\n' >tok/sub/vocab.txt && printf 'caf\xc3\xa9 \xe2\x98\x83\n' >"tok/caf é.txt"
	head -c 3000000 /dev/urandom >model-1.bin && head -c 5000000 /dev/urandom >model-2.bin
	git add -A &&
		GIT_AUTHOR_NAME="Ann Dev" GIT_AUTHOR_DATE='1700000000 +0800' GIT_COMMITTER_NAME="Bob Ops" \
			GIT_COMMITTER_EMAIL=bob@example.com GIT_COMMITTER_DATE='1700003600 -0530' \
			git commit -q -m "first checkpoint" -m "trained 3 epochs" || return 1
	git push origin main >"$T/push1.out" 2>&1 || { cat "$T/push1.out"; cd - >/dev/null; return 1; }
	cd - >/dev/null
	[ "$(head_of pushed)" = "$(git -C "$W1" rev-parse HEAD)" ] || { echo "# the API's main is $(head_of pushed)"; return 1; }
}
check "git push with git-lfs lands: the API's main is the pusher's commit" first_push
same_bytes() {
	local f
	for f in config.json tok/sub/vocab.txt "tok/caf é.txt" model-1.bin model-2.bin; do
		cmp "$W1/$f" <(curl -fsS -H "Authorization: Bearer $R" "$M/acme/pushed/resolve/main/$("$PY" -c \
			'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$f")") || { echo "# $f differs"; return 1; }
	done
}
check "every pushed file reads back byte for byte (LFS ones too)" same_bytes
check "the commit log names the commit, its title and its author" bash -c "curl -fsS -H 'Authorization: Bearer $W' \
	'$M/api/models/acme/pushed/commits/main' | '$PY' -c '
import json, sys
log = json.load(sys.stdin)
assert log[0][\"id\"] == sys.argv[1] and log[0][\"title\"] == \"first checkpoint\", log[0]
assert log[0][\"authors\"][0][\"user\"] == \"Ann Dev\", log[0]
assert len(log) == 2, log' $(git -C "$W1" rev-parse HEAD)"
check "the log says who pushed, never the token" bash -c "grep -q 'upload: hf:acme/pushed main -> .* by token@1 (git push' '$T/serve.err' &&
	! grep -q '$W' '$T/serve.err' '$T/access.log'"

# A second push changing one LFS file: only that object travels.
second_push() {
	local before
	before=$(grep -c 'PUT /acme/pushed.git/info/lfs/objects/' "$T/access.log")
	head -c 4000000 /dev/urandom >"$W1/model-2.bin"
	git -C "$W1" commit -q -am "second checkpoint" && git -C "$W1" push -q origin main >"$T/push2.out" 2>&1 ||
		{ cat "$T/push2.out"; return 1; }
	[ "$(head_of pushed)" = "$(git -C "$W1" rev-parse HEAD)" ] &&
		[ "$(grep -c 'PUT /acme/pushed.git/info/lfs/objects/' "$T/access.log")" -eq $((before + 1)) ] &&
		cmp "$W1/model-2.bin" <(curl -fsS -H "Authorization: Bearer $R" "$M/acme/pushed/resolve/main/model-2.bin")
}
check "a second push sends only the changed LFS object" second_push

# Branches, tags, deletions, a force push.
refs_json() { api pushed/refs; }
branches_tags() {
	git -C "$W1" checkout -q -b exp && echo exp >"$W1/exp.txt" && git -C "$W1" add exp.txt &&
		git -C "$W1" commit -q -m exp && git -C "$W1" push -q origin exp 2>/dev/null || return 1
	git -C "$W1" tag v1.0 main && git -C "$W1" push -q origin v1.0 2>/dev/null || return 1
	refs_json | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
b = {x["name"]: x["targetCommit"] for x in r["branches"]}
t = {x["name"]: x["targetCommit"] for x in r["tags"]}
assert b["exp"] == sys.argv[1] and t["v1.0"] == sys.argv[2], r' "$(git -C "$W1" rev-parse exp)" "$(git -C "$W1" rev-parse main)" || return 1
	git -C "$W1" push -q origin :exp 2>/dev/null && ! refs_json | grep -q '"exp"' || return 1
	git -C "$W1" checkout -q main && git -C "$W1" commit -q --amend -m "second checkpoint, reworded" &&
		git -C "$W1" push -q --force origin main 2>/dev/null && [ "$(head_of pushed)" = "$(git -C "$W1" rev-parse HEAD)" ]
}
check "branches and tags are pushed and deleted, a force push moves main" branches_tags

# Refusals: git prints the mirror's reason, and main stays where it was.
refused() { # refused NAME GREP: the last commit of $W1 is pushed and refused with GREP; then undone
	local before
	before=$(head_of pushed)
	if git -C "$W1" push origin "${3:-main}" >"$T/refused.out" 2>&1; then
		echo "# $1 was taken"; git -C "$W1" reset -q --hard HEAD~1; return 1
	fi
	grep -q "$2" "$T/refused.out" || { echo "# $1:"; sed 's/^/#   /' "$T/refused.out"; return 1; }
	[ "$(head_of pushed)" = "$before" ]
}
commit_it() { git -C "$W1" add -A && git -C "$W1" commit -q -m "$1"; }
undo() { git -C "$W1" reset -q --hard "${1:-HEAD~1}"; }
main0=$(git -C "$W1" rev-parse main)
echo '#!/bin/sh' >"$W1/run.sh" && chmod +x "$W1/run.sh" && commit_it exec
check "an executable file is refused" refused exec "remote: hubmirror: push refused: 'run.sh' .* is executable"
undo
ln -s config.json "$W1/link" && commit_it link
check "a symlink is refused" refused link "'link' .* is a symlink"
undo
head -c 11000000 /dev/urandom >"$W1/big.dat" && commit_it big
check "a file of 10 MiB outside LFS is refused" refused big "'big.dat' is 10 MiB or more outside Git LFS"
undo
git -C "$W1" checkout -q -b side && echo s >"$W1/s.txt" && commit_it side && git -C "$W1" checkout -q main &&
	echo m >"$W1/m.txt" && commit_it m && git -C "$W1" merge -q --no-edit side
check "a merge commit is refused" refused merge "a merge commit (hubmirror keeps a linear history"
undo "$main0"
git -C "$W1" branch -q -D side
git -C "$W1" tag -a v2.0 -m annotated
check "an annotated tag is refused" refused tag "is not a commit: this mirror keeps branches and lightweight tags" v2.0
git -C "$W1" tag -d v2.0 >/dev/null
check "the default branch is not deleted" refused delete "the default branch is not deleted" :main
head -c 2000 /dev/urandom >"$W1/skipped.bin" && commit_it skipped
check "an LFS pointer whose object never came is refused" bash -c "GIT_LFS_SKIP_PUSH=1 git -C '$W1' push origin main >'$T/lfs.out' 2>&1;
	grep -q \"'skipped.bin': its Git LFS object .* was not uploaded\" '$T/lfs.out' && [ \"\$(curl -fsS -H 'Authorization: Bearer $W' \
	'$M/api/models/acme/pushed/revision/main' | '$PY' -c 'import json,sys; print(json.load(sys.stdin)[\"sha\"])')\" = '$main0' ]"
undo
check "a read-only token is refused (403)" bash -c "! git -C '$W1' push '$(url $R acme/pushed)' main:other >'$T/ro.out' 2>&1 &&
	grep -q 'may not write' '$T/ro.out' && grep -q 403 '$T/ro.out'"
check "no token: git is asked for credentials (401) and fails without them" bash -c "! git -C '$W1' push 'http://$host/acme/pushed' main:other \
	>'$T/anon.out' 2>&1 && grep -q 'could not read Username' '$T/anon.out'"
check "a namespace that is not local takes no push" bash -c "! git -C '$W1' push '$(url $W other/repo)' main >'$T/nl.out' 2>&1 &&
	grep -q 'outside its local namespaces' '$T/nl.out'"
check "a repo that does not exist takes no push" bash -c "! git -C '$W1' push '$(url $W acme/nothing)' main >'$T/ne.out' 2>&1 &&
	grep -q 'create it first' '$T/ne.out'"

# A dataset too, and ModelScope's dataset API reads it as the SDK does: its info gives an Id, the
# tree is listed by that Id, a file comes by its path (the SDK's revision, master, is main here).
dataset_pushed() {
	local id
	curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
		-d '{"name":"evals","organization":"acme","type":"dataset"}' "$M/api/repos/create" || return 1
	git clone -q "$(url $W datasets/acme/evals)" "$T/wd" 2>/dev/null && mkdir -p "$T/wd/data" &&
		printf 'q,a\n1,2\n' >"$T/wd/data/train.csv" && git -C "$T/wd" add -A && git -C "$T/wd" commit -q -m data &&
		git -C "$T/wd" push -q origin main 2>/dev/null || return 1
	id=$(curl -fsS -H "Authorization: Bearer $R" "$M/api/v1/datasets/acme/evals" |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["Data"]["Id"])') || return 1
	curl -fsS -H "Authorization: Bearer $R" \
		"$M/api/v1/datasets/$id/repo/tree?Revision=master&Root=/&Recursive=True&PageNumber=1&PageSize=100" |
		grep -q '"Path":"data/train.csv"' &&
		cmp "$T/wd/data/train.csv" <(curl -fsS -H "Authorization: Bearer $R" \
			"$M/api/v1/datasets/acme/evals/repo?Source=SDK&Revision=master&FilePath=data/train.csv")
}
check "a dataset pushed with git reads through ModelScope's dataset API (info, tree by Id, file)" dataset_pushed

# The git side is only a cache: rebuilt from the catalog alone, the same commits (ids, authors,
# committers, their time zones).
rebuilt_same() {
	local want got
	want=$(git -C "$W1" log --format='%H %an %ad %cn %cd' --date=raw main)
	rm -rf "$HUBMIRROR_DATA/git/hf"
	rm -rf "$T/w2" && GIT_LFS_SKIP_SMUDGE=1 git clone -q "$(url $R acme/pushed)" "$T/w2" 2>/dev/null || return 1
	got=$(git -C "$T/w2" log --format='%H %an %ad %cn %cd' --date=raw main)
	[ "$got" = "$want" ] || { echo "# rebuilt: $got"; echo "# pushed: $want"; return 1; }
}
check "git clone rebuilt from the catalog has the pushed commits, ids and all" rebuilt_same

# An instance pulls the pushed repo (its torrent made after the push), every byte.
pulled() {
	local i snap
	for i in $(seq 1 60); do
		curl -fsS -H "Authorization: Bearer $R" "$M/api/p2p/torrent/hf/model/acme/pushed?meta=1" 2>/dev/null |
			grep -q "$(git -C "$W1" rev-parse main)" && break
		sleep 0.5
	done
	HUBMIRROR_TOKEN=$R "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" --listen 127.0.0.1:0 \
		hf:acme/pushed >/dev/null 2>"$T/pull.err" || { cat "$T/pull.err"; return 1; }
	snap=$T/hfc/models--acme--pushed/snapshots/$(git -C "$W1" rev-parse main)
	cmp "$snap/model-1.bin" "$W1/model-1.bin" && cmp "$snap/model-2.bin" "$W1/model-2.bin" &&
		cmp "$snap/tok/sub/vocab.txt" "$W1/tok/sub/vocab.txt"
}
check "an instance pulls the pushed repo, every byte" pulled

# A bundle carries the pushed commits' objects: imported elsewhere, git clone shows the same history.
bundle_carries() {
	local want got first=$M
	want=$(git -C "$W1" log --format='%H %cn %cd' --date=raw main)
	"$HUBMIRROR" export --output "$T/local.tar" hf:acme/pushed >/dev/null || return 1
	"$HUBMIRROR" import --data "$T/other" "$T/local.tar" >/dev/null || return 1
	start_serve --data "$T/other" --local acme --tokens "$T/tokens" --p2p-listen off || return 1
	rm -rf "$T/w3" && GIT_LFS_SKIP_SMUDGE=1 git clone -q "http://user:$R@${M#http://}/acme/pushed" "$T/w3" 2>/dev/null &&
		got=$(git -C "$T/w3" log --format='%H %cn %cd' --date=raw main)
	M=$first
	[ "$got" = "$want" ] || { echo "# there: $got"; return 1; }
}
check "a bundle carries pushed commits; imported, git clone shows the same history" bundle_carries

# kill -9 of serve and of the hook in the middle of a push of 3,000 files: main is the old commit or
# the new one with all of its files, and the same push goes through after a restart.
many_files() { # how many files main has under many/ (its siblings)
	api pushed/revision/main | "$PY" -c 'import json,sys; print(sum(s["rfilename"].startswith("many/") for s in json.load(sys.stdin)["siblings"]))'
}
our_hooks() { # this test's own `hubmirror git-hook`s (git runs them in a repository of its data directory)
	local p d
	d=$(realpath "$HUBMIRROR_DATA")
	for p in $(pgrep -f 'hubmirror git-hook'); do
		case $(readlink "/proc/$p/cwd") in "$d"/*) echo "$p" ;; esac
	done
}
killed_mid_push() {
	local before after i files
	before=$(head_of pushed)
	mkdir -p "$W1/many" && for i in $(seq 1 3000); do echo "$i" >"$W1/many/f$i.txt"; done
	commit_it many || return 1
	git -C "$W1" push origin main >/dev/null 2>&1 &
	local push=$!
	for i in $(seq 1 400); do [ -n "$(our_hooks)" ] && break; sleep 0.05; done
	kill -9 "$serve_pid"; kill -9 $(our_hooks) 2>/dev/null
	wait "$serve_pid" 2>/dev/null; wait "$push" 2>/dev/null
	start_serve --local acme --tokens "$T/tokens" --p2p-listen off || return 1
	after=$(head_of pushed)
	files=$(many_files)
	if [ "$after" = "$before" ]; then
		echo "# killed before the push was recorded: main is the old commit"
		[ "$files" = 0 ] || { echo "# old main, $files files under many/"; return 1; }
		git -C "$W1" push -q "http://user:$W@${M#http://}/acme/pushed" main 2>/dev/null || return 1
		files=$(many_files)
	else
		echo "# killed after the push was recorded: main is the new commit"
	fi
	[ "$(head_of pushed)" = "$(git -C "$W1" rev-parse HEAD)" ] && [ "$files" = 3000 ]
}
check "kill -9 mid-push: the old revision or the new one whole, and the push goes through after" killed_mid_push
finish
