#!/usr/bin/env bash
# t0724-agent-partial: an instance takes only what it is asked for.
# - `pull --include '*Q4_K_M*'` of a GGUF repo of three quantizations fetches that one (and the small
#   files a library reads first) and links exactly those into the Hugging Face cache: the files
#   huggingface_hub's filter_repo_objects (Python's fnmatch over each path) picks for that pattern, plus
#   README.md and the tokenizer; the cache's disk holds about that much, not the repo.
# - A later pull of another quantization adds it and fetches only it; --exclude leaves files out.
# - A second agent pulling the same quantization gets it from the first, which fetches nothing more:
#   the swarm trades only those pieces.
# - A mount shows every file at once, fetches in the background only the metadata, and a read fetches
#   what it reads: one shard of four read through it leaves the others out of the cache.
# - The local endpoint fetches only the file asked for.
# - Bad patterns are refused (the CLI, and the control API).
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/llm-GGUF",
   "files": [{"path": "README.md", "content": "# llm GGUF\n"},
             {"path": ".gitattributes", "content": "*.gguf filter=lfs\n"},
             {"path": "tokenizer.json", "content": "{\"vocab\": {}}\n"},
             {"path": "llm-Q2_K.gguf", "size": 3000000, "seed": 241},
             {"path": "llm-Q4_K_M.gguf", "size": 4000000, "seed": 242},
             {"path": "llm-Q8_0.gguf", "size": 6000000, "seed": 243},
             {"path": "Q4_K_M/llm-Q4_K_M-00001-of-00002.gguf", "size": 1500000, "seed": 244},
             {"path": "notes/Q4_K_M.txt", "content": "the Q4_K_M notes\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/ckpt",
   "files": [{"path": "config.json", "content": "{\"model_type\": \"llama\"}\n"},
             {"path": "generation_config.json", "content": "{\"do_sample\": false}\n"},
             {"path": "model.safetensors.index.json", "content": "{\"weight_map\": {}}\n"},
             {"path": "model-00001-of-00004.safetensors", "size": 2500000, "seed": 251},
             {"path": "model-00002-of-00004.safetensors", "size": 2500000, "seed": 252},
             {"path": "model-00003-of-00004.safetensors", "size": 2500000, "seed": 253},
             {"path": "model-00004-of-00004.safetensors", "size": 2500000, "seed": 254}]},
  {"hub": "hf", "type": "model", "id": "acme/ep-part",
   "files": [{"path": "config.json", "content": "{\"ep\": 2}\n"},
             {"path": "a.bin", "size": 3000000, "seed": 261},
             {"path": "b.bin", "size": 3000000, "seed": 262}]}
 ]}
JSON
sync_from_fake hf:acme/llm-GGUF hf:acme/ckpt hf:acme/ep-part
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit() { "$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]==sys.argv[2]][0]["sha"])' "$T/up.json" "$1"; }
gguf=$(commit acme/llm-GGUF)
snap=$T/hfc/models--acme--llm-GGUF/snapshots/$gguf

# expect_linked REPO DIR INCLUDE EXCLUDE: DIR holds exactly the files hf download's filter picks
# (fnmatch of each pattern against the whole path, a pattern ending in / gets a *), plus the metadata
# hubmirror documents (hub/select.h), minus the excluded; each with upstream's sha256.
expect_linked() {
	"$PY" - "$T/up.json" "$@" <<'PY'
import fnmatch, hashlib, json, os, sys
up, repo, d, inc, exc = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
r = [x for x in up["repos"] if x["id"] == repo][0]
files = {f["path"]: f for f in [c for c in r["commits"] if c["id"] == r["sha"]][0]["files"]}
pat = lambda p: p + "*" if p.endswith("/") else p
inc = [pat(p) for p in inc.split(",") if p]
exc = [pat(p) for p in exc.split(",") if p]
meta = ["README.md", "*.index.json", "config.json", "*_config.json", "configuration.json", "model_index.json",
        "modules.json", "tokenizer*", "special_tokens_map.json", "added_tokens.json", "vocab*", "merges.txt",
        "*.tiktoken", "chat_template*", "dataset_info.json", "dataset_infos.json"]
def is_meta(p):
    b = p.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(b, m) for m in meta) or ("/" not in p and fnmatch.fnmatchcase(p, "*.py"))
want = {p for p in files
        if (not inc or any(fnmatch.fnmatch(p, i) for i in inc) or is_meta(p)) and not any(fnmatch.fnmatch(p, e) for e in exc)}
have = set()
for root, dirs, names in os.walk(d):
    for n in names:
        have.add(os.path.relpath(os.path.join(root, n), d))
if have != want:
    sys.exit("linked %s, expected %s" % (sorted(have), sorted(want)))
for p in want:
    h = hashlib.sha256(open(os.path.join(d, p), "rb").read()).hexdigest()
    if h != files[p]["sha256"]:
        sys.exit("%s: sha256 %s, upstream %s" % (p, h, files[p]["sha256"]))
print("# %d files: %s" % (len(want), " ".join(sorted(want))))
PY
}
# status_of SPEC KEY [SOCKET]: a field of SPEC's entry in the agent's status
status_of() {
	HUBMIRROR_AGENT_SOCKET=${3:-$HUBMIRROR_AGENT_SOCKET} "$HUBMIRROR" status --json |
		"$PY" -c 'import json,sys; print([s for s in json.load(sys.stdin)["snapshots"] if s["spec"]==sys.argv[1]][0][sys.argv[2]])' "$1" "$2"
}
# kib DIR: KiB of disk under DIR
kib() { du -sk "$1" | cut -f1; }

# ---- one quantization of three ----
"$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" --listen 127.0.0.1:0 --json \
	--include '*Q4_K_M*' hf:acme/llm-GGUF >"$T/pull.json" 2>"$T/pull.err"
check "pull --include exits 0 once its files are verified" test $? = 0
sed 's/^/# /' "$T/pull.err"
check "its JSON lines say how many files of how many" "$PY" -c '
import json,sys; d=[json.loads(l) for l in open(sys.argv[1])][-1]
assert d["verified"] and d["selected"] == 5 and d["files"] == 8, d' "$T/pull.json"
check "the HF cache holds what hf download --include '*Q4_K_M*' would, and the metadata" \
	expect_linked acme/llm-GGUF "$snap" '*Q4_K_M*' ''
check "the ref names the commit" test "$(cat "$T/hfc/models--acme--llm-GGUF/refs/main")" = "$gguf"
used=$(kib "$T/cache")
echo "# the cache holds $used KiB for 5.4 MB asked of 14.5 MB"
check "the cache's disk holds the files asked for, not the repo" test "$used" -lt 7000
check "status: 5 of 8 files, held what they are" "$PY" -c '
import json,subprocess,sys
s=[x for x in json.loads(subprocess.check_output([sys.argv[1], "status", "--json"]))["snapshots"] if x["spec"]=="hf:acme/llm-GGUF"][0]
assert s["selected"] == 5 and s["files"] == 8 and s["verified"], s
assert s["held"] == s["bytes_total"] == 5500000 + 11 + 14 + 17, s
assert s["size"] > 14500000, s' "$HUBMIRROR"
"$HUBMIRROR" status >"$T/status.txt"
check "plain status says it too" grep -Eq "^hf:acme/llm-GGUF +main +[0-9a-f]{12} +[0-9.]+ MiB of [0-9.]+ MiB +[a-z ,]+; 5 of 8 files " "$T/status.txt"

# ---- a second quantization, and --exclude ----
"$HUBMIRROR" pull --hf-cache "$T/hfc" --include '*Q8_0*' hf:acme/llm-GGUF >"$T/pull2.out" 2>&1
check "a pull of another quantization exits 0" test $? = 0
check "it says which files" grep -q "pulled hf:acme/llm-GGUF @ ${gguf:0:12} (6 of 8 files)" "$T/pull2.out"
check "the HF cache now holds both, and still not Q2_K" expect_linked acme/llm-GGUF "$snap" '*Q4_K_M*,*Q8_0*' ''
grew=$(( $(kib "$T/cache") - used ))
echo "# the cache grew by $grew KiB for Q8_0's 5860 KiB"
check "only the new file was fetched" test "$grew" -ge 5800 -a "$grew" -lt 6400
ck=$(commit acme/ckpt)
"$HUBMIRROR" pull --hf-cache "$T/hfc" --include 'model-0000[12]*' --exclude '*generation*' hf:acme/ckpt >/dev/null 2>&1
check "--exclude leaves out what it matches, metadata too" \
	expect_linked acme/ckpt "$T/hfc/models--acme--ckpt/snapshots/$ck" 'model-0000[12]*' '*generation*'

# ---- a second agent takes the same quantization from the first ----
held_a=$(status_of hf:acme/llm-GGUF held)
HUBMIRROR_AGENT_SOCKET=$T/b.sock "$HUBMIRROR" pull --mirror "$M" --cache "$T/cacheB" --no-hf-cache \
	--listen 127.0.0.1:0 --include '*Q4_K_M*' hf:acme/llm-GGUF >/dev/null 2>"$T/pullB.err"
check "a second agent pulls the same files" test $? = 0
check "its cache holds those files, not the repo" test "$(kib "$T/cacheB")" -lt 7000
for i in $(seq 20); do [ "$(status_of hf:acme/llm-GGUF held)" = "$held_a" ] || break; sleep 0.1; done
check "the first agent fetched nothing more meanwhile" test "$(status_of hf:acme/llm-GGUF held)" = "$held_a"
HUBMIRROR_AGENT_SOCKET=$T/b.sock "$HUBMIRROR" agent --stop >/dev/null 2>&1

# ---- a mount fetches what is read ----
"$HUBMIRROR" mount --no-hf-cache hf:acme/ckpt "$T/ck" >/dev/null 2>"$T/mount.err"
check "the checkpoint mounts" test $? = 0
check "every file shows at once" test "$(ls "$T/ck" | wc -l)" = 7
# (the agent holds shards 1 and 2 from the pull above: read shard 3)
check "shard 3 reads, byte for byte" test "$(sha256sum <"$T/ck/model-00003-of-00004.safetensors" | cut -c1-64)" = \
	"$("$PY" -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/ckpt"][0]; print([f for f in r["commits"][-1]["files"] if f["path"].startswith("model-00003")][0]["sha256"])' "$T/up.json")"
sleep 1
held=$(status_of hf:acme/ckpt held)
echo "# held after reading shard 3: $held of $(status_of hf:acme/ckpt size)"
check "the cache holds shards 1-3 and the metadata, not shard 4" test "$held" -lt 7600000 -a "$held" -ge 7500000
check "umount" "$HUBMIRROR" umount "$T/ck"

# ---- the local endpoint fetches only the file asked for ----
check "agent --stop" "$HUBMIRROR" agent --stop
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cacheE" --listen 127.0.0.1:0 --http 127.0.0.1:0
E=$(agent_endpoint)
curl -fsS -o "$T/a.bin" "$E/acme/ep-part/resolve/main/a.bin"
check "the endpoint serves a.bin" test "$(stat -c %s "$T/a.bin")" = 3000000
sleep 1
held=$(status_of hf:acme/ep-part held)
echo "# held after a.bin: $held"
check "and fetched a.bin alone (not b.bin)" test "$held" = 3000000

# ---- bad patterns ----
expect_status 2 "an empty --include is a usage error" "$HUBMIRROR" pull --include '' hf:acme/ckpt 2>/dev/null
code=$(curl -s -o "$T/bad.json" -w '%{http_code}' --unix-socket "$HUBMIRROR_AGENT_SOCKET" -d '{"spec": "hf:acme/ckpt", "include": [7]}' http://agent/v1/pull)
check "the control API refuses a pattern that is not a string (400)" test "$code" = 400
code=$(curl -s -o /dev/null -w '%{http_code}' --unix-socket "$HUBMIRROR_AGENT_SOCKET" -d '{"spec": "hf:acme/ckpt", "dir": "/tmp/x", "prefetch": "some"}' http://agent/v1/mount)
check "and a prefetch word it does not know" test "$code" = 400
check "agent --stop ends it" "$HUBMIRROR" agent --stop
check "the agents' logs hold no sanitizer report" bash -c "! cat '$T'/cache*/agent.log | grep -E 'Sanitizer|runtime error'"
finish
