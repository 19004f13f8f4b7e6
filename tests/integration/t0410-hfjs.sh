#!/usr/bin/env bash
# t0410-hfjs: the official JavaScript client, @huggingface/hub (pinned in tests/js/package.json,
# installed by .ci/setup), against `hubmirror serve` with only hubUrl changed. Syncs a model (regular,
# empty, nested and LFS files) and a 3000-file dataset from the fake upstream, serves them, and runs
# tests/js/hfclient.mjs: paginated listFiles, modelInfo/datasetInfo, downloadFile with every byte
# checked against upstream's sha256, the HF cache layout built by downloadFileToCacheDir and
# snapshotDownload (blobs named by the Hub's ETags), fileExists, and the client's not-found answers.
# Then the same client against an empty mirror that fetches them on demand (serve --on-demand).
# Skipped (77) when node or tests/js/node_modules is missing.
. "$HM_SRC/tests/integration/lib.sh"

need_node_module @huggingface/hub

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/js-model",
   "card": {"license": "mit", "tags": ["js"], "pipeline_tag": "text-generation", "library_name": "transformers"},
   "files": [{"path": "config.json", "content": "{\"hidden_size\": 64}\n"},
             {"path": "empty.txt", "content": ""},
             {"path": "nested/deeper/notes.md", "content": "nested notes\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 11}]},
  {"hub": "hf", "type": "dataset", "id": "acme/js-many",
   "generate": {"count": 3000, "size": 32, "prefix": "data/part-", "suffix": ".txt"}}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
hm() { "$HUBMIRROR" "$@"; }

add_both() { hm add hf:acme/js-model hf:datasets/acme/js-many >/dev/null; }
sync_both() { hm sync hf:acme/js-model hf:datasets/acme/js-many >"$T/sync.out" 2>&1; }
check "add the model and the dataset" add_both
check "sync them" sync_both
sed 's/^/# /' "$T/sync.out"

# What upstream has, for the client script to compare against.
check "expected values from the fake upstream" bash -c '
curl -fsS "$FAKE_API/_fake/repos" | /usr/bin/python3 -c "
import json, sys
out = {}
for r in json.load(sys.stdin)[\"repos\"]:
    if r[\"hub\"] != \"hf\":
        continue
    head = {c[\"id\"]: c for c in r[\"commits\"]}[r[\"sha\"]]
    out[r[\"type\"]] = {\"id\": r[\"id\"], \"sha\": r[\"sha\"], \"card\": r[\"card\"],
        \"files\": {f[\"path\"]: {k: f[k] for k in (\"size\", \"sha256\", \"git_sha1\", \"oid\", \"etag\", \"lfs\")}
                  for f in head[\"files\"]}}
assert len(out[\"dataset\"][\"files\"]) == 3001, len(out[\"dataset\"][\"files\"])
json.dump(out, open(sys.argv[1], \"w\"))
" "$0"' "$T/expect.json"

# start_serve (lib.sh) sets M; the client script takes MIRROR
check "hubmirror serve starts" start_serve || finish
MIRROR=$M

# Run the client; its "ok - X" / "not ok - X" lines become this script's checks. The timeouts only
# catch a hang: each check has its own 60 s (hfclient.mjs), and the whole run's bound was shorter than
# that (50 s), so a loaded machine (the 3000-file dataset's snapshotDownload, under the sanitizers)
# could be cut short with nothing hung; this test once failed so at 87.6 s in a full run. Both runs
# together stay within meson's 300 s.
nchecks=0
st=none
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "hfjs: ${line#ok - }"; nchecks=$((nchecks + 1)) ;;
	"not ok - "*) fail "hfjs: ${line#not ok - }"; nchecks=$((nchecks + 1)) ;;
	"1.."*) ;;
	"exit "*) st=${line#exit } ;;
	"#"*) echo "$line" ;;
	*) echo "# $line" ;;
	esac
done < <(cd "$JS" && timeout 120 node hfclient.mjs --hub-url "$MIRROR" --expect "$T/expect.json" --tmp "$T" 2>&1; echo "exit $?")
check "client script ran to the end ($nchecks checks, status $st)" test "$nchecks" -ge 20 -a \( "$st" = 0 -o "$st" = 1 \)

# The same client against a mirror that never synced them: fetched on demand (serve --on-demand)
mkdir -p "$T/od-tmp"
check "an empty mirror fetching on demand starts" start_serve --data "$T/od" --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/*, hf:datasets/acme/*'
nod=0
st=none
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "hfjs on demand: ${line#ok - }"; nod=$((nod + 1)) ;;
	"not ok - "*) fail "hfjs on demand: ${line#not ok - }"; nod=$((nod + 1)) ;;
	"1.."*) ;;
	"exit "*) st=${line#exit } ;;
	*) echo "# $line" ;;
	esac
done < <(cd "$JS" && timeout 150 node hfclient.mjs --hub-url "$M" --expect "$T/expect.json" --tmp "$T/od-tmp" 2>&1; echo "exit $?")
check "client script ran to the end on demand ($nod checks, status $st)" test "$nod" -ge 20 -a \( "$st" = 0 -o "$st" = 1 \)
check "both repos are tracked there now" bash -c "'$HUBMIRROR' ls --data '$T/od' --json | grep -q acme/js-model && '$HUBMIRROR' ls --data '$T/od' --json | grep -q acme/js-many"
if [ "$_failed" -gt 0 ]; then
	echo "# mirror access log (last 20 lines):"
	tail -n 20 "$T/access.log" | sed 's/^/#   /'
	[ -s "$T/serve.err" ] && sed 's/^/# serve: /' "$T/serve.err"
fi
finish
