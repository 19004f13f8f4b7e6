#!/usr/bin/env bash
# t0200-track: add / remove / ls / info on a local data directory, including --from lists, option
# updates, and bad input that must change nothing.
. "$HM_SRC/tests/integration/lib.sh"
hm() { "$HUBMIRROR" "$@"; }

# Only add, init, import and restore make a data directory: a mistyped --data is an error that
# names it, and nothing is created there.
typo=$T/dta
for cmd in "ls" "info hf:org/x" "sync" "serve --listen 127.0.0.1:0" "gc" "verify" "remove hf:org/x" \
	"pin hf:org/x" "export --output $T/b.tar hf:org/x" "backup --output $T/c.db" "requests"; do
	# shellcheck disable=SC2086  # cmd is a command line
	expect_status 1 "$cmd refuses a data directory that holds no mirror" hm $cmd --data "$typo" 2>"$T/e0"
	check "$cmd names it and says what makes one" grep -q "no mirror in '$typo' (no such directory): check --data or HUBMIRROR_DATA; 'hubmirror add' makes one.*'hubmirror init' an empty one" "$T/e0"
done
check "and none of them made it" test ! -e "$typo"
mkdir "$typo"
expect_status 1 "an empty folder is no mirror either" hm ls --data "$typo" 2>"$T/e0"
check "which the error says" grep -q "no mirror in '$typo' (it holds no catalog.db)" "$T/e0"
check "init makes an empty mirror" bash -c '"$HUBMIRROR" init --data "$T/dta" | grep -qx "made an empty mirror in $T/dta: .*"'
check "that ls accepts" bash -c '"$HUBMIRROR" ls --data "$T/dta" | grep -q "no repositories tracked"'
check "init again leaves it as it is" bash -c '"$HUBMIRROR" init --data "$T/dta" | grep -qx "$T/dta already holds a mirror (0 tracked repos): left as it is"'

check "add one repo" hm add hf:Qwen/Qwen2.5-7B-Instruct
check "data dir has a catalog and a store" test -f "$HUBMIRROR_DATA/catalog.db" -a -d "$HUBMIRROR_DATA/store/blobs"
check "add with options" hm add --include '*.json' --include '*.safetensors' --exclude '*.bin' \
	hf:datasets/acme/corpus@v1 ms:qwen/Qwen2.5-7B-Instruct
hm ls --json >"$T/ls1.json"
check "ls --json lists three with their fields" "$PY" - "$T/ls1.json" <<'PY'
import json, sys
d = {r["spec"]: r for r in json.load(open(sys.argv[1]))}
assert set(d) == {"hf:Qwen/Qwen2.5-7B-Instruct", "hf:datasets/acme/corpus", "ms:qwen/Qwen2.5-7B-Instruct"}, d
c = d["hf:datasets/acme/corpus"]
assert c["type"] == "dataset" and c["revision"] == "v1" and c["include"] == ["*.json", "*.safetensors"]
assert c["exclude"] == ["*.bin"] and c["commit"] is None and c["sync_status"] == "never"
assert d["ms:qwen/Qwen2.5-7B-Instruct"]["revision"] == "master"
assert d["hf:Qwen/Qwen2.5-7B-Instruct"]["revision"] == "main"
PY
check "re-add replaces options" hm add --revision dev hf:datasets/acme/corpus
check "info shows the new revision and no globs" bash -c '"$HUBMIRROR" info --json hf:datasets/acme/corpus |
	/usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"revision\"]==\"dev\" and d[\"include\"]==[], d"'
check "info text names the repo" bash -c '"$HUBMIRROR" info hf:Qwen/Qwen2.5-7B-Instruct | grep -q "revision    main"'

# Bad input changes nothing.
cp "$HUBMIRROR_DATA/catalog.db" "$T/before.db"
before=$(hm ls --json)
expect_status 2 "bad spec exits 2" hm add hf:../etc 2>"$T/e1"
check "bad spec message: what is wrong in one line, and where help is, no usage block" bash -c "
	grep -qx \"hubmirror: add: 'hf:../etc': '../etc' is not a repository name (.*)\" '$T/e1' &&
	grep -qx \"(see 'hubmirror help add')\" '$T/e1' && [ \$(wc -l <'$T/e1') = 2 ]"
hm add hf/acme/slip 2>"$T/e1b"
check "a slip of / for : is named" grep -q "'hf/acme/slip': did you mean hf:acme/slip?" "$T/e1b"
expect_status 2 "one bad spec among good adds nothing" hm add hf:good/one 'hf:bad name' 2>/dev/null
expect_status 2 "conflicting revisions" hm add --revision v2 hf:a/b@v1 2>/dev/null
expect_status 2 "bad revision" hm add --revision '../x' hf:a/b 2>/dev/null
expect_status 2 "no spec" hm add 2>/dev/null
cat >"$T/list" <<'LIST'
# 600 lines in real life; a bad one at the end must add nothing
hf:org/one --include *.safetensors
ms:datasets/org/two@dev
hf:org/three --frob
LIST
expect_status 2 "list with a bad option adds nothing" hm add --from "$T/list" 2>"$T/e2"
check "list error names file and line" grep -q "list:4: unknown option" "$T/e2"
check "nothing changed after bad input" test "$before" = "$(hm ls --json)"

# A long list in one go.
sed -i '$d' "$T/list"
for i in $(seq 1 600); do echo "hf:org/model-$i --exclude *.bin"; done >>"$T/list"
check "add --from a 602-line list" hm add --from "$T/list"
n=$(hm ls --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
check "605 repos tracked" test "$n" = 605
check "ls table has a header and a row per repo" bash -c '[ "$("$HUBMIRROR" ls | wc -l)" = 606 ]'
check "list from stdin" bash -c 'echo "hf:org/stdin-one" | "$HUBMIRROR" add --from -'

check "remove" hm remove hf:org/model-7 hf:org/model-8
expect_status 1 "remove untracked fails" hm remove hf:org/model-7 2>"$T/e3"
check "remove untracked message" grep -q "'hf:org/model-7' is not tracked" "$T/e3"
expect_status 1 "info of removed fails" hm info hf:org/model-8 2>/dev/null
check "re-add after remove tracks again" hm add hf:org/model-7
n=$(hm ls --json | "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)))')
check "count after remove and re-add" test "$n" = 605

# ls fits the terminal ($COLUMNS, as GNU ls) without cutting a spec: the sync time turns relative,
# then the revision is cut.
w=$T/wide
hm add --data "$w" hf:Qwen/Qwen2.5-7B-Instruct hf:datasets/HuggingFaceFW/fineweb-edu \
	ms:qwen/Qwen2.5-7B-Instruct@refs/pr/12345 >/dev/null
check "ls into a pipe: whole revisions and UTC times" bash -c '"$HUBMIRROR" ls --data "$T/wide" >"$T/ls-pipe" &&
	head -1 "$T/ls-pipe" | grep -q "LAST SYNC (UTC)" && grep -q " refs/pr/12345 " "$T/ls-pipe"'
for cols in 80 76; do
	COLUMNS=$cols hm ls --data "$w" >"$T/ls-$cols"
	check "ls in $cols columns fits them" awk -v c="$cols" 'length($0) > c { exit 1 }' "$T/ls-$cols"
	check "with every spec whole" bash -c 'for s in hf:Qwen/Qwen2.5-7B-Instruct hf:datasets/HuggingFaceFW/fineweb-edu \
		ms:qwen/Qwen2.5-7B-Instruct; do grep -q "^$s " "$1" || exit 1; done' - "$T/ls-$cols"
	check "and the long revision cut, the short ones whole" bash -c 'grep -q " refs/[a-z0-9/]*~ " "$1" &&
		[ "$(grep -c " main " "$1")" = 2 ] && head -1 "$1" | grep -q " SYNCED$"' - "$T/ls-$cols"
done
COLUMNS=30 hm ls --data "$w" >"$T/ls-30"
check "too narrow for a row: the specs stay whole all the same" grep -q "^hf:datasets/HuggingFaceFW/fineweb-edu " "$T/ls-30"

# a data directory that held no mirror: add makes one, and says so (a mistyped --data shows)
"$HUBMIRROR" add --data "$T/typo-data" hf:org/z >/dev/null 2>"$T/made.err"
check "add into a folder without a mirror makes one and says so" grep -q "made a new mirror in '$T/typo-data'" "$T/made.err"
"$HUBMIRROR" add --data "$T/typo-data" hf:org/z2 >/dev/null 2>"$T/made2.err"
check "and only that once" bash -c "! grep -q 'made a new mirror' '$T/made2.err'"

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	# root's mirror, used by another user: whose it is, not "catalog: not an error"
	for cmd in "add hf:org/y" "ls"; do
		# shellcheck disable=SC2086  # cmd is a command line
		as_nobody "$HUBMIRROR" $cmd >/dev/null 2>"$T/perm.err"
		check "$cmd as another user fails, naming the owner" grep -q \
			"cannot open '$HUBMIRROR_DATA/catalog.db': Permission denied: the mirror belongs to root (run hubmirror as that user, or with sudo)" "$T/perm.err"
	done
fi

hm add hf:simorg >/dev/null 2>"$T/bare.err"
check "a bare name is tracked (the Hub has a few), with a note that it is most likely a slip" grep -q \
	"note: 'hf:simorg' names no organisation: only a few old Hugging Face repositories have such a name (gpt2, bert-base-uncased); a repository of an organisation is hf:ORG/NAME" "$T/bare.err"
hm remove hf:simorg >/dev/null

expect_status 1 "unwritable data dir fails cleanly" hm ls --data /proc/hubmirror-test 2>"$T/e4"
check "data dir error names the path" grep -q "/proc/hubmirror-test" "$T/e4"
finish
