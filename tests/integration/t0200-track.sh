#!/usr/bin/env bash
# t0200-track: add / remove / ls / info on a local data directory, including --from lists, option
# updates, and bad input that must change nothing.
. "$HM_SRC/tests/integration/lib.sh"
hm() { "$HUBMIRROR" "$@"; }

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
check "bad spec message" grep -q "'hf:../etc' is not a repository spec" "$T/e1"
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

expect_status 1 "unwritable data dir fails cleanly" hm ls --data /proc/hubmirror-test 2>"$T/e4"
check "data dir error names the path" grep -q "/proc/hubmirror-test" "$T/e4"
finish
