#!/usr/bin/env bash
# t0727-agent-pull-interrupt: Ctrl-C during a pull stops the following, not the pull: the command
# says the agent carries on and where it will link the files, ends as SIGINT would, and the agent
# does finish and link them. (The mirror is stopped meanwhile, so the pull cannot end first.) No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/big",
            "files": [{"path": "config.json", "content": "{\"big\": 1}\n"}, {"path": "w.bin", "size": 3000000, "seed": 5}]}]}
JSON
sync_from_fake hf:acme/big
check "serve starts" start_serve --p2p-listen 127.0.0.1:0
spid=${_pids[-1]}
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/big"][0]["sha"])' "$T/up.json")
check "an agent starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" --listen 127.0.0.1:0 --mirror-timeout 1
check "it holds the small file of the repo" "$HUBMIRROR" pull --no-hf-cache --include config.json hf:acme/big

kill -STOP "$spid" # the mirror stops answering: the rest cannot come until it goes on
"$HUBMIRROR" pull --hf-cache "$T/hfc" hf:acme/big >"$T/pull.out" 2>"$T/pull.err" &
pull=$!
for _ in $(seq 100); do grep -q "offline" "$T/pull.err" && break; sleep 0.1; done
sleep 0.5
check "the pull is still following" kill -0 "$pull"
kill -INT "$pull"
wait "$pull"; st=$?
check "Ctrl-C ends the command as SIGINT would (130)" test "$st" = 130
check "saying the agent carries on, and where it links the files" grep -q \
	"stopped following; the agent carries on and links hf:acme/big -> $T/hfc/models--acme--big/snapshots/$commit once every byte is verified ('hubmirror status' shows how far)" "$T/pull.err"
kill -CONT "$spid"
for _ in $(seq 300); do [ -f "$T/hfc/models--acme--big/snapshots/$commit/w.bin" ] && break; sleep 0.1; done
check "and it does: the agent links every file there once verified" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/big "$T/hfc/models--acme--big/snapshots/$commit"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
