#!/usr/bin/env bash
# t0310-sync-globs: a list file's globs mean what they mean on a command line (quotes are the
# shell's, not part of the glob), and a sync whose globs select nothing says so, naming them, in its
# output, --json, info and the catalog API, instead of a quiet "ok, 0 files".
. "$HM_SRC/tests/integration/lib.sh"
hm() { "$HUBMIRROR" "$@"; }
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "dataset", "id": "acme/corpus",
   "files": [{"path": "data/train/a.jsonl", "content": "{\"a\": 1}\n"},
             {"path": "data/train/b.jsonl", "content": "{\"b\": 2}\n"},
             {"path": "data/test/c.jsonl", "content": "{\"c\": 3}\n"},
             {"path": "README.md", "content": "# corpus\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/llm",
   "files": [{"path": "config.json", "content": "{}\n"},
             {"path": "model.safetensors", "size": 20000, "seed": 3}]},
  {"hub": "hf", "type": "model", "id": "acme/slow",
   "files": [{"path": "config.json", "content": "{\"slow\": 1}\n"}]}]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API

cat >"$T/list" <<'EOF2'
# quoted as a shell line would be, and not
hf:datasets/acme/corpus --include 'data/train/*' --include "README.md"   # a comment
hf:acme/llm --include '*.gguf' --exclude config\ copy.json
EOF2
check "add --from takes the quoted list" hm add --from "$T/list"
check "its globs are the words, without the quotes" bash -c '"$HUBMIRROR" info --json hf:datasets/acme/corpus |
	/usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"include\"] == [\"data/train/*\", \"README.md\"], d"'
check "a backslash keeps a blank in a glob" bash -c '"$HUBMIRROR" info --json hf:acme/llm |
	/usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"exclude\"] == [\"config copy.json\"], d"'
printf 'hf:org/x --include '"'"'abc\n' >"$T/bad"
expect_status 2 "an unclosed quote is refused" hm add --from "$T/bad" 2>"$T/bad.err"
check "naming the line" grep -q "$T/bad:1: a quote is not closed" "$T/bad.err"

hm sync --no-progress >"$T/sync.out" 2>"$T/sync.err"
check "sync" test $? = 0
check "the quoted include synced the train files and the README" bash -c '"$HUBMIRROR" info --json --files hf:datasets/acme/corpus |
	/usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); p=sorted(f[\"path\"] for f in d[\"file_list\"])
assert p == [\"README.md\", \"data/train/a.jsonl\", \"data/train/b.jsonl\"], p"'
check "the empty selection is a warning naming the globs" grep -qx \
	"warning   hf:acme/llm: its globs select none of its 3 files upstream (include '\*.gguf', exclude 'config copy.json'): the snapshot is empty" "$T/sync.out"
check "and in serve's and sync's log" grep -q "hf:acme/llm: its globs select none of its 3 files upstream" "$T/sync.err"
check "info says it beside ok" bash -c '"$HUBMIRROR" info hf:acme/llm | grep -q "ok: its globs select none of its 3 files upstream"'
hm sync --json hf:acme/llm >"$T/sync.json" 2>/dev/null
check "sync --json again (nothing changed upstream)" test $? = 0
check "the warning stays while the globs select nothing" "$PY" - "$T/sync.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["repos"][0]
assert r["outcome"] == "unchanged" and r["error"] is None, r
assert "select none of its 3 files" in r["warning"], r
PY
check "the catalog API has it" bash -c '"$HUBMIRROR" ls --json | /usr/bin/python3 -c "
import json,sys; d={r[\"spec\"]: r for r in json.load(sys.stdin)}
assert d[\"hf:acme/llm\"][\"sync_status\"] == \"ok\" and \"select none\" in d[\"hf:acme/llm\"][\"sync_error\"], d
assert d[\"hf:datasets/acme/corpus\"][\"sync_error\"] is None, d"'
hm add --include '*.safetensors' hf:acme/llm >/dev/null
hm sync --no-progress hf:acme/llm >"$T/sync2.out" 2>&1
check "globs that match: sync" test $? = 0
check "no warning then" bash -c '! grep -q warning "$T/sync2.out" && "$HUBMIRROR" info --json hf:acme/llm |
	/usr/bin/python3 -c "import json,sys; d=json.load(sys.stdin); assert d[\"sync_error\"] is None and d[\"files\"] == 1, d"'
# A sync's lines come as each repo ends, into a file too: a run stopped after hours leaves what it did.
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '{"match": "/api/models/acme/slow", "kind": "slow", "seconds": 4, "count": 1}' >/dev/null
hm add hf:acme/slow >/dev/null
hm sync --no-progress hf:acme/llm hf:acme/slow >"$T/live.out" 2>/dev/null &
live=$!
for _ in $(seq 50); do grep -q "hf:acme/llm" "$T/live.out" && break; sleep 0.1; done
check "the first repo's line is in the file while the run goes on" bash -c "grep -q '^unchanged hf:acme/llm @' '$T/live.out' &&
	kill -0 $live && ! grep -q 'hf:acme/slow' '$T/live.out'"
wait "$live"
check "the slow one's when it ends, then the summary" bash -c "grep -q '^ok        hf:acme/slow @' '$T/live.out' &&
	grep -q '^sync: 2 ok, 0 failed' '$T/live.out'"
# Ctrl-C: the lines of the repos that ended stay, and the run says where it stopped.
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '{"match": "/api/models/acme/slow", "kind": "slow", "seconds": 30, "count": 1}' >/dev/null
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/slow", "hub": "hf", "type": "model", "branch": "main",
  "files": [{"path": "config.json", "content": "{\"slow\": 2}\n"}]}' >/dev/null
"$HUBMIRROR" sync --no-progress hf:acme/llm hf:acme/slow >"$T/int.out" 2>/dev/null &
live=$!
for _ in $(seq 50); do grep -q "hf:acme/llm" "$T/int.out" && break; sleep 0.1; done
kill -INT "$live"
wait "$live"; st=$?
check "an interrupted sync ends as SIGINT would (130)" test "$st" = 130
check "with the line of the repo that ended, and where it stopped" bash -c "grep -q '^unchanged hf:acme/llm @' '$T/int.out' &&
	tail -1 '$T/int.out' | grep -qx 'sync: interrupted after 1 of 2 repos: what they fetched is kept, and the next sync goes on from there'"
check "the next sync goes on" bash -c '"$HUBMIRROR" sync --no-progress hf:acme/slow | grep -q "^ok        hf:acme/slow @"'

# A typo: upstream answers a missing repository like a private one, and the sync says so.
hm add hf:acme/lllm >/dev/null
hm sync --no-progress hf:acme/lllm >"$T/typo.out" 2>/dev/null
check "a typo'd repo fails the sync" test $? = 1
check "saying upstream has no such repo this mirror may read, to check the name (the near one), and which token" grep -q \
	"^denied    hf:acme/lllm: upstream has no repository acme/lllm that anonymous users may read (a missing and a private repository are answered alike): check the name (did you mean hf:acme/llm?), or give a token (HF_TOKEN) if it is private (upstream said: " "$T/typo.out"

# The hint is asked on the run's loop, not blocking it: with the owner's listing 8 s late, a repo
# whose own listing is 2 s late ends (its line printed) before the typo'd one, which waits for its hint.
hm add hf:acme/llmm >/dev/null
curl -fsS -X POST "$FAKE_API/_fake/faults" -d '[{"match": "author=acme", "kind": "slow", "seconds": 8, "count": 1},
	{"match": "/api/models/acme/llm/revision", "kind": "slow", "seconds": 2, "count": 1}]' >/dev/null
hm sync --no-progress hf:acme/llmm hf:acme/llm >"$T/hint.out" 2>/dev/null
check "the hint waits off the loop: the other repo's line comes first, then the typo'd one's with its hint" bash -c "
	grep -n '' '$T/hint.out' | grep -E '^[0-9]+:[a-z]+ +hf:acme/llm[ :]' | cut -d: -f1 >'$T/a' &&
	grep -n '' '$T/hint.out' | grep -F 'did you mean hf:acme/llm?' | cut -d: -f1 >'$T/b' &&
	[ -s '$T/a' ] && [ -s '$T/b' ] && [ \$(cat '$T/a') -lt \$(cat '$T/b') ]"

# -q: a run that went well says nothing; one that did not says only what went wrong.
hm -q sync hf:acme/llm hf:acme/slow >"$T/q1.out" 2>&1
check "sync -q of repos that are fine: exit 0 and not a word" bash -c "[ $? = 0 ] && [ ! -s '$T/q1.out' ]"
hm -q sync hf:acme/llm hf:acme/lllm >"$T/q2.out" 2>/dev/null
check "sync -q with a failure: its line and the summary, nothing of the good one" bash -c "
	grep -q '^denied    hf:acme/lllm: ' '$T/q2.out' && grep -q '^sync: 1 ok, 1 failed' '$T/q2.out' && ! grep -q 'acme/llm @' '$T/q2.out'"
finish
