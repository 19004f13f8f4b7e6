#!/usr/bin/env bash
# t0711-agent-pull: `hubmirror pull` fetches snapshots whole into the agent's cache without FUSE (so it
# runs in containers without /dev/fuse, and here without root), and links them into the Hugging Face
# and ModelScope caches only once every byte is verified; --json prints progress lines; status shows
# them pinned; a bad spec or a repo the mirror lacks fails without leaving anything linked.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/pull-hf",
   "files": [{"path": "config.json", "content": "{\"pull\": 1}\n"},
             {"path": "sub/model.safetensors", "size": 2500000, "seed": 81}]},
  {"hub": "ms", "type": "model", "id": "acme/pull.ms",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "w.bin", "size": 900000, "seed": 82}]}
 ]}
JSON
sync_from_fake hf:acme/pull-hf ms:acme/pull.ms
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
hf_commit=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/pull-hf"][0]["sha"])' "$T/up.json")

MODELSCOPE_CACHE=$T/msc "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" --listen 127.0.0.1:0 \
	--pin --json hf:acme/pull-hf ms:acme/pull.ms >"$T/pull.json" 2>"$T/pull.err"
st=$?
check "pull exits 0 once both are verified" test "$st" = 0
sed 's/^/# /' "$T/pull.err"
tail -2 "$T/pull.json" | sed 's/^/# /'
check "its JSON lines end with both verified" "$PY" - "$T/pull.json" <<'PY'
import json, sys
last = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    last[d["spec"]] = d
assert set(last) == {"hf:acme/pull-hf", "ms:acme/pull.ms"}, last
assert all(d["verified"] and d["bytes_have"] == d["bytes_total"] > 0 for d in last.values()), last
assert last["hf:acme/pull-hf"]["path"].endswith("/hfc/models--acme--pull-hf/snapshots/" + last["hf:acme/pull-hf"]["commit"]), last
assert last["ms:acme/pull.ms"]["path"].endswith("/msc/models/acme/pull___ms"), last
PY
check "nothing was mounted" bash -c "! grep -q ' $T/' /proc/mounts"
check "the HF cache's ref names the commit" test "$(cat "$T/hfc/models--acme--pull-hf/refs/main")" = "$hf_commit"
check "the HF cache holds every file, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/pull-hf "$T/hfc/models--acme--pull-hf/snapshots/$hf_commit"
check "modelscope_hub's cache holds every file, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" ms acme/pull.ms "$T/msc/models/acme--pull.ms/snapshots/master"
check "the classic SDK's cache has them, with its index" bash -c "cmp '$T/msc/models/acme/pull___ms/w.bin' \
	'$T/msc/models/acme--pull.ms/snapshots/master/w.bin' && test -s '$T/msc/models/acme/pull___ms/.msc'"
"$HUBMIRROR" status --json >"$T/st.json"
check "status shows both pinned, verified, not mounted" "$PY" -c '
import json,sys; s=json.load(open(sys.argv[1]))["snapshots"]
assert len(s) == 2 and all(x["pinned"] and x["verified"] and x["complete"] and x["mounts"] == [] for x in s), s' "$T/st.json"
"$HUBMIRROR" pull --no-hf-cache hf:acme/pull-hf >"$T/again.out" 2>&1
check "pulling it again is at once verified (the agent holds it)" grep -q "pulled hf:acme/pull-hf" "$T/again.out"
script -qec "'$HUBMIRROR' pull --no-hf-cache hf:acme/pull-hf" /dev/null >"$T/tty-pull.out" 2>&1
check "on a terminal the pull draws its line: the spec, a bar, bytes" grep -aEq 'hf:acme/pull-hf \[#{20}\] [0-9.]+ MiB / [0-9.]+ MiB' "$T/tty-pull.out"
expect_status 1 "pulling a repo the mirror lacks fails" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/none 2>"$T/none.err"
check "and says so" grep -q "not on this mirror" "$T/none.err"
# a repo the mirror tracks whose sync failed (a typo of a name upstream has): the sync's reason, its hint
"$HUBMIRROR" add hf:acme/pull-hff >/dev/null 2>&1
"$HUBMIRROR" sync >/dev/null 2>&1
expect_status 1 "pulling a tracked repo whose sync failed fails" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/pull-hff 2>"$T/typo.err"
check "saying the sync's reason and the name meant" bash -c "grep -q 'its last sync failed' '$T/typo.err' &&
	grep -q 'did you mean hf:acme/pull-hf?' '$T/typo.err'" || sed 's/^/#   /' "$T/typo.err"
"$HUBMIRROR" remove hf:acme/pull-hff >/dev/null 2>&1
check "and links nothing" test ! -e "$T/hfc/models--acme--none"
"$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/none hf:acme/pull-hf >"$T/two.out" 2>"$T/two.err"
check "one of two specs failing: the pull fails" test $? = 1
check "but the other one is pulled, and the end says where its files are" grep -qx \
	"pulled hf:acme/pull-hf @ ${hf_commit:0:12}: $T/hfc/models--acme--pull-hf/snapshots/$hf_commit" "$T/two.out"
check "and says which one failed, and why" bash -c "grep -qx 'failed hf:acme/none' '$T/two.out' && grep -q 'hf:acme/none.*not on this mirror' '$T/two.err'"
check "the path it names holds the files" test -f "$T/hfc/models--acme--pull-hf/snapshots/$hf_commit/config.json"
expect_status 2 "a malformed spec is a usage error" "$HUBMIRROR" pull 'hf:a/b/../c' 2>/dev/null
expect_status 2 "pull without a spec is a usage error" "$HUBMIRROR" pull 2>/dev/null
# the agent pull started has no local endpoint: agent --http gives it one, no restart
pid=$("$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
"$HUBMIRROR" agent --http 127.0.0.1:0 >"$T/http.out" 2>&1
check "agent --http on a running agent: it takes the endpoint" grep -Eq "^the agent \(pid $pid\) now has its local endpoint: http://127.0.0.1:[0-9]+ " "$T/http.out"
E=$(grep -Eo 'http://127.0.0.1:[0-9]+' "$T/http.out")
check "the same process, which answers the Hub API there" bash -c "[ \"\$('$HUBMIRROR' status --json | '$PY' -c 'import json,sys; print(json.load(sys.stdin)[\"pid\"])')\" = $pid ] &&
	curl -fsS '$E/api/models/acme/pull-hf' | grep -q '\"sha\":\"$hf_commit\"'"
"$HUBMIRROR" agent --http 127.0.0.1:0 >/dev/null 2>"$T/http2.err"
check "a second one is refused, saying where it listens" grep -q "runs already: the local endpoint already listens on 127.0.0.1:0 (port" "$T/http2.err"
# drop: out of the cache and out of the hub caches, like hf cache delete
"$HUBMIRROR" drop --hf-cache "$T/hfc" hf:acme/pull-hf >"$T/drop.out" 2>&1
check "drop of a pulled snapshot (pinned too)" grep -Eq "^dropped hf:acme/pull-hf @ ${hf_commit:0:12} from the cache, and its [0-9]+ links from the Hugging Face cache$" "$T/drop.out"
check "its HF cache entry is gone: snapshot, ref, folder" test ! -e "$T/hfc/models--acme--pull-hf"
check "the agent holds it no more" bash -c "! '$HUBMIRROR' status --json | grep -q '\"spec\": \"hf:acme/pull-hf\"'"
MODELSCOPE_CACHE=$T/msc "$HUBMIRROR" drop ms:acme/pull.ms >"$T/drop2.out" 2>&1
check "a ModelScope one: both of its caches' links, and the classic SDK's index" bash -c "grep -q '^dropped ms:acme/pull.ms @ ' '$T/drop2.out' &&
	[ ! -e '$T/msc/models/acme/pull___ms' ] && ! ls '$T/msc/models/acme--pull.ms/snapshots/'* >/dev/null 2>&1"
"$HUBMIRROR" drop hf:acme/pull-hf 2>"$T/drop3.err"
check "dropping what it does not hold: refused, said" bash -c "[ $? = 1 ] && grep -q 'this agent holds no snapshot of hf:acme/pull-hf' '$T/drop3.err'"
"$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/pull-hf >/dev/null 2>&1
check "a pull after it fetches it again, every byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/pull-hf "$T/hfc/models--acme--pull-hf/snapshots/$hf_commit"
check "agent --stop ends it" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
