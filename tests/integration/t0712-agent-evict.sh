#!/usr/bin/env bash
# t0712-agent-evict: `agent --cache-size` keeps the cache under its size by evicting the least recently
# used snapshots that are neither mounted nor pinned: a mounted snapshot and a pinned one stay, the
# oldest unpinned pull goes (its folder and the contents only it held), the newest stays; once
# unmounted, a snapshot becomes evictable in turn; a mount of a snapshot being dropped takes it back
# whole (the drop's deletion never runs under it). Needs root and FUSE (for the mounted one).
. "$HM_SRC/tests/integration/lib.sh"
need_fuse
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/ev-a", "files": [{"path": "w.bin", "size": 1500000, "seed": 91}]},
  {"hub": "hf", "type": "model", "id": "acme/ev-b", "files": [{"path": "w.bin", "size": 1500000, "seed": 92}]},
  {"hub": "hf", "type": "model", "id": "acme/ev-c", "files": [{"path": "w.bin", "size": 1500000, "seed": 93}]},
  {"hub": "hf", "type": "model", "id": "acme/ev-d", "files": [{"path": "w.bin", "size": 1500000, "seed": 94}]},
  {"hub": "hf", "type": "model", "id": "acme/ev-e", "files": [{"path": "w.bin", "size": 1500000, "seed": 95}]}
 ]}
JSON
sync_from_fake hf:acme/ev-a hf:acme/ev-b hf:acme/ev-c hf:acme/ev-d hf:acme/ev-e
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
trap 'for d in a r; do "$HUBMIRROR" umount "$T/$d" 2>/dev/null || umount -l "$T/$d" 2>/dev/null; done; _cleanup' EXIT
export HUBMIRROR_URL=$M
check "an agent with a 5 MiB cache starts" "$HUBMIRROR" agent --cache "$T/cache" --cache-size 5M --keep-pulled 0 --listen 127.0.0.1:0
# held: the specs the agent has now, one per line
held() { "$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print("\n".join(sorted(s["spec"] for s in json.load(sys.stdin)["snapshots"])))'; }
# wait_held SPECS: up to 30 s until the agent holds exactly these (sizing runs every 10 s)
wait_held() { local i; for i in $(seq 150); do [ "$(held | tr '\n' ' ')" = "$* " ] && return 0; sleep 0.2; done; echo "# holds: $(held | tr '\n' ' ')"; return 1; }

check "mount a" "$HUBMIRROR" mount --no-hf-cache hf:acme/ev-a "$T/a"
check "read it whole" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/ev-a "$T/a"
check "pull --pin b" "$HUBMIRROR" pull --hf-cache "$T/hfc" --pin hf:acme/ev-b
check "pull c" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/ev-c
sleep 1
check "pull d" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/ev-d
check "past 5 MB, c (the oldest unpinned, unmounted) is evicted" wait_held hf:acme/ev-a hf:acme/ev-b hf:acme/ev-d
under() { "$HUBMIRROR" status --json | "$PY" -c '
import json,sys; d=json.load(sys.stdin); sys.exit(not (0 < d["cache_used"] <= d["cache_size"] == 5 << 20))'; }
wait_under() { local i; for i in $(seq 100); do under && return 0; sleep 0.2; done; return 1; }
check "then status says the cache is under its size" wait_under
check "its folder is gone from the cache (a, b and d are left)" bash -c "test \$(ls '$T/cache' | grep -cE '^[0-9a-f]{40}\$') = 3"
check "the mounted snapshot still reads whole" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/ev-a "$T/a"
check "the pinned one's HF cache still holds its files" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/ev-b \
	"$T/hfc/models--acme--ev-b/snapshots/$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/ev-b"][0]["sha"])' "$T/up.json")"
check "umount a" "$HUBMIRROR" umount "$T/a"
sleep 1
check "pull e" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/ev-e
# d must go before a (a was in use until its umount, after d's pull); a may go in the same round when
# the measured cache is still over after d (seen once under ASan, before a round counted a mounted
# snapshot's held pieces and a waiting writer's need as the writer's admission does: probably that)
d_first() { local i h; for i in $(seq 150); do h=" $(held | tr '\n' ' ')"
	case $h in *" hf:acme/ev-d "*) ;; *" hf:acme/ev-b "*"hf:acme/ev-e "*) echo "# holds:$h"; return 0 ;; esac
	sleep 0.2; done; echo "# holds: $(held | tr '\n' ' ')"; return 1; }
check "d goes (a was in use until its umount, after d's pull)" d_first
sleep 1
check "pull c again" "$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/ev-c
# a goes (the oldest unpinned), b (pinned) and c (just pulled) stay, and so does e: b, c and e fit in
# the bound, and a round evicts only what the writer asking for room needs (it once counted less than
# the writer's admission did, thinned a instead of dropping d, and later took e with a hollow a)
a_goes() { local i h; for i in $(seq 150); do h=" $(held | tr '\n' ' ')"
	case $h in " hf:acme/ev-b hf:acme/ev-c hf:acme/ev-e ") echo "# holds:$h"; return 0 ;; esac
	sleep 0.2; done; echo "# holds: $(held | tr '\n' ' ')"; return 1; }
check "now the unmounted a is the oldest and goes alone; the pinned b, c and e stay" a_goes
check "c's files are back, byte for byte" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf acme/ev-c \
	"$T/hfc/models--acme--ev-c/snapshots/$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/ev-c"][0]["sha"])' "$T/up.json")"
check "and the cache ends under its size" wait_under
# eviction racing a mount: each pull makes the agent drop the least recently used snapshot; as soon
# as the log says which, that one is mounted again, while its drop's deletion is still to run (the next
# sizing job, within a second): the deletion must not touch the files the mount took back
raced=0
for p in d a e c d; do
	n=$(grep -c evicting "$T/cache/agent.log")
	"$HUBMIRROR" pull --hf-cache "$T/hfc" "hf:acme/ev-$p" >/dev/null
	for i in $(seq 300); do [ "$(grep -c evicting "$T/cache/agent.log")" -gt "$n" ] && break; sleep 0.01; done
	q=$(grep evicting "$T/cache/agent.log" | sed -n "$((n + 1))s/.*evicting hf:acme\/ev-\([a-e]\) .*/\1/p")
	[ -n "$q" ] || continue # the pull found room: nothing to race
	raced=$((raced + 1))
	"$HUBMIRROR" mount --no-hf-cache "hf:acme/ev-$q" "$T/r" >/dev/null
	check "[pull $p, $q dropped and mounted at once] it reads whole" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf "acme/ev-$q" "$T/r"
	sleep 2.5
	check "[pull $p, $q dropped and mounted at once] and still does once the drop is deleted" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" "$T/up.json" hf "acme/ev-$q" "$T/r"
	qpath=$("$HUBMIRROR" status --json | "$PY" -c 'import json,sys; print([s["path"] for s in json.load(sys.stdin)["snapshots"] if s["spec"]==sys.argv[1]][0])' "hf:acme/ev-$q")
	check "[pull $p, $q dropped and mounted at once] its cache files are still there" test -f "$qpath/w.bin"
	"$HUBMIRROR" umount "$T/r"
done
check "three drops raced a mount ($raced)" test "$raced" -ge 3
check "nothing dropped is left behind" bash -c "test -z \"\$(ls -A '$T/cache/.dropped' 2>/dev/null)\""
grep 'evicting' "$T/cache/agent.log" | sed 's/^/# /'
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agents' log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
