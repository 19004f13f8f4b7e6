#!/usr/bin/env bash
# t0720-agent-names: every spec the agent is asked for is its own entry, with its own commit and its
# own hub cache links, sharing the bytes. A ModelScope twin of a held Hugging Face snapshot (the same
# files, so the same torrent) pulled and mounted lands in both ModelScope caches under its own commit;
# a pull with a hub cache path that cannot be written fails alone, and the next with a good one links;
# with the mirror down, a plain pull or mount gets the newest snapshot held of the default branch, not
# the last revision fetched (a dataset's parquet conversion, a tag the SDK asked the endpoint for), and
# says which, in --json too. Mounts need root and FUSE; the rest runs without.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "simorg/tiny-bert", "gitattributes": false,
   "commits": [{"key": "c1", "files": [{"path": "config.json", "content": "{\"v\": 1}\n"},
                                       {"path": "model.safetensors", "size": 700000, "seed": 201}]},
               {"key": "c2", "parent": "c1", "files": [{"path": "config.json", "content": "{\"v\": 2}\n"}]}],
   "branches": {"main": "c2"}, "tags": {"v1.0": "c1"}},
  {"hub": "ms", "type": "model", "id": "simorg/tiny-bert", "gitattributes": false,
   "commits": [{"key": "c1", "files": [{"path": "config.json", "content": "{\"v\": 1}\n"},
                                       {"path": "model.safetensors", "size": 700000, "seed": 201}]},
               {"key": "c2", "parent": "c1", "files": [{"path": "config.json", "content": "{\"v\": 2}\n"}]}],
   "branches": {"master": "c2"}, "tags": {"v1.0": "c1"}},
  {"hub": "hf", "type": "dataset", "id": "simorg/rows", "gitattributes": false,
   "commits": [{"key": "c1", "files": [{"path": "data.csv", "content": "a,b\n1,2\n"}]},
               {"key": "c2", "files": [{"path": "default/train/0000.parquet", "size": 4096, "seed": 202}]}],
   "branches": {"main": "c1"}, "converts": {"parquet": "c2"}}
 ]}
JSON
sync_from_fake hf:simorg/tiny-bert ms:simorg/tiny-bert hf:datasets/simorg/rows
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
serve_pid=${_pids[-1]}
fuse=1
[ "$(id -u)" = 0 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null || fuse=
trap '[ -n "$fuse" ] && for d in h m m2; do "$HUBMIRROR" umount "$T/$d" 2>/dev/null || umount -l "$T/$d" 2>/dev/null; done; _cleanup' EXIT
# commit HUB TYPE ID REV: the mirror's commit of that revision
commit() { curl -fsS "$M/api/p2p/torrent/$1/$2/$3?meta=1&rev=$4" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["commit"])'; }
btih() { curl -fsS "$M/api/p2p/torrent/$1/$2/$3?meta=1&rev=$4" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["btih"])'; }
hf_v1=$(commit hf model simorg/tiny-bert v1.0); ms_v1=$(commit ms model simorg/tiny-bert v1.0)
hf_main=$(commit hf model simorg/tiny-bert main); ms_master=$(commit ms model simorg/tiny-bert master)
rows_main=$(commit hf dataset simorg/rows main)
check "the twins' v1.0 share one torrent, with commits of their own" bash -c "
	test '$(btih hf model simorg/tiny-bert v1.0)' = '$(btih ms model simorg/tiny-bert v1.0)' && test '$hf_v1' != '$ms_v1'"
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --http 127.0.0.1:0
E=$(agent_endpoint)
entries() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(" ".join(sorted("%s@%s=%s" % (s["spec"], s["revision"], s["commit"][:8]) for s in json.load(sys.stdin)["snapshots"])))'; }

# a ModelScope twin of a held Hugging Face snapshot
check "pull hf:simorg/tiny-bert@v1.0" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:simorg/tiny-bert@v1.0
MODELSCOPE_CACHE=$T/msc "$HUBMIRROR" pull ms:simorg/tiny-bert@v1.0 >"$T/twin.out" 2>&1; rc=$?
sed 's/^/# /' "$T/twin.out"
check "pull of its ModelScope twin exits 0 (status $rc)" test "$rc" = 0
check "and names the ModelScope commit, not the Hugging Face one" grep -q "pulled ms:simorg/tiny-bert@v1.0 @ ${ms_v1:0:12}" "$T/twin.out"
check "status lists both, each with its own commit" test "$(entries)" = \
	"hf:simorg/tiny-bert@v1.0=${hf_v1:0:8} ms:simorg/tiny-bert@v1.0=${ms_v1:0:8}"
check "both ModelScope caches hold the twin under its commit" "$PY" - "$T/msc" "$ms_v1" <<'PY'
import os, pickle, sys
root, commit = sys.argv[1], sys.argv[2]
folder = os.path.join(root, "models", "simorg", "tiny-bert")
entries = pickle.load(open(os.path.join(folder, ".msc"), "rb"))
assert sorted(e["Path"] for e in entries) == ["config.json", "model.safetensors"], entries
assert all(e["Revision"] == commit for e in entries), entries
assert open(os.path.join(folder, "config.json")).read() == '{"v": 1}\n'
assert open(os.path.join(folder, ".mv")).read().startswith("Revision:" + commit + ",")
snap = os.path.join(root, "models", "simorg--tiny-bert", "snapshots", "v1.0")
assert open(os.path.join(snap, "config.json")).read() == '{"v": 1}\n'
assert os.path.getsize(os.path.join(snap, "model.safetensors")) == 700000
PY
check "the Hugging Face cache keeps its own commit" test "$(cat "$T/hfc/models--simorg--tiny-bert/refs/v1.0")" = "$hf_v1"

# each request's hub cache paths are its own
expect_status 1 "a pull into a hub cache that cannot be written fails" env HF_HOME=/proc/nope "$HUBMIRROR" pull hf:simorg/tiny-bert 2>"$T/nope.err"
check "saying where" grep -q "/proc/nope" "$T/nope.err"
HF_HOME=$T/hfhome "$HUBMIRROR" pull hf:simorg/tiny-bert >"$T/good.out" 2>&1; rc=$?
sed 's/^/# /' "$T/good.out"
check "the next pull with a good HF_HOME succeeds (status $rc)" test "$rc" = 0
check "and links there" test "$(cat "$T/hfhome/hub/models--simorg--tiny-bert/refs/main")" = "$hf_main"
check "without the earlier error" bash -c "! grep -q /proc/nope '$T/good.out'"

if [ -n "$fuse" ]; then
	check "mount hf:simorg/tiny-bert" "$HUBMIRROR" mount --hf-cache "$T/hfc" hf:simorg/tiny-bert "$T/h"
	MODELSCOPE_CACHE=$T/msc2 "$HUBMIRROR" mount ms:simorg/tiny-bert "$T/m" >"$T/mtwin.out" 2>&1
	check "a mount of its ModelScope twin names the ModelScope commit" grep -q "mounted ms:simorg/tiny-bert @ ${ms_master:0:12}" "$T/mtwin.out"
	check "and links both ModelScope caches" bash -c "
		cmp '$T/msc2/models/simorg/tiny-bert/config.json' '$T/m/config.json' &&
		cmp '$T/msc2/models/simorg--tiny-bert/snapshots/master/config.json' '$T/m/config.json'"
	"$HUBMIRROR" status --json >"$T/st.json"
	check "status shows each mount under its own spec" "$PY" -c '
import json, sys, os
t = os.environ["T"]
s = {(x["spec"], x["revision"]): x for x in json.load(open(t + "/st.json"))["snapshots"]}
assert s[("hf:simorg/tiny-bert", "main")]["mounts"] == [t + "/h"], s
assert s[("ms:simorg/tiny-bert", "master")]["mounts"] == [t + "/m"], s
assert s[("hf:simorg/tiny-bert", "main")]["btih"] == s[("ms:simorg/tiny-bert", "master")]["btih"]
'
	"$HUBMIRROR" umount "$T/h"; "$HUBMIRROR" umount "$T/m"
fi

# the mirror goes away: plain requests get the default branch
check "pull the dataset's main" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:datasets/simorg/rows
check "and its parquet conversion" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:datasets/simorg/rows@refs/convert/parquet
check "the SDK fetches v1.0 through the endpoint" cmp <(curl -fsS "$E/simorg/tiny-bert/resolve/v1.0/config.json") <(printf '{"v": 1}\n')
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
"$HUBMIRROR" pull --hf-cache "$T/hfc" hf:datasets/simorg/rows >"$T/off1.out" 2>"$T/off1.err"; rc=$?
sed 's/^/# /' "$T/off1.out" "$T/off1.err"
check "offline, a plain pull of the dataset exits 0 (status $rc)" test "$rc" = 0
check "with its main, not the conversion pulled last" grep -q "pulled hf:datasets/simorg/rows @ ${rows_main:0:12}" "$T/off1.out"
check "and says so: offline, which revision and commit, synced when" \
	grep -Eq "offline: using main @ ${rows_main:0:8} \(synced [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}\)" "$T/off1.err"
"$HUBMIRROR" pull --json --hf-cache "$T/hfc" hf:simorg/tiny-bert >"$T/off2.json" 2>/dev/null; rc=$?
check "offline, a plain pull of the model exits 0 (status $rc)" test "$rc" = 0
check "its --json lines say offline, with main and its commit, not the v1.0 the endpoint took last" "$PY" - "$T/off2.json" "$hf_main" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines, "no lines"
last = lines[-1]
assert last["verified"] and last["commit"] == sys.argv[2] and last["revision"] == "main", last
off = last["offline"]
assert off["revision"] == "main" and off["commit"] == sys.argv[2] and off["synced_at"] > 0 and off["why"], off
PY
"$HUBMIRROR" pull --hf-cache "$T/hfc" hf:simorg/tiny-bert@v1.0 >"$T/off3.out" 2>/dev/null
check "offline, @v1.0 still gets v1.0" grep -q "@ ${hf_v1:0:12}" "$T/off3.out"
if [ -n "$fuse" ]; then
	"$HUBMIRROR" mount --hf-cache "$T/hfc" hf:datasets/simorg/rows "$T/m2" >"$T/off4.out" 2>"$T/off4.err"
	check "offline, a plain mount of the dataset gets main" grep -q "mounted hf:datasets/simorg/rows @ ${rows_main:0:12}" "$T/off4.out"
	check "and says so" grep -q "offline: using main @ ${rows_main:0:8}" "$T/off4.err"
	check "its files are main's" test -f "$T/m2/data.csv"
	"$HUBMIRROR" umount "$T/m2"
fi
check "agent --stop" "$HUBMIRROR" agent --stop
check "a restarted agent keeps every name" bash -c "
	'$HUBMIRROR' agent --cache '$T/cache' --listen 127.0.0.1:0 >/dev/null &&
	'$HUBMIRROR' status --json | '$PY' -c '
import json,sys; s={(x[\"spec\"], x[\"revision\"]) for x in json.load(sys.stdin)[\"snapshots\"]}
want={(\"hf:simorg/tiny-bert\",\"v1.0\"),(\"ms:simorg/tiny-bert\",\"v1.0\"),(\"hf:simorg/tiny-bert\",\"main\"),
      (\"hf:datasets/simorg/rows\",\"main\"),(\"hf:datasets/simorg/rows\",\"refs/convert/parquet\")}
assert want <= s, s'"
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
