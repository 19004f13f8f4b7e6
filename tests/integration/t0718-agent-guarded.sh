#!/usr/bin/env bash
# t0718-agent-guarded: a repo the mirror guards with an operator token (serve --tokens) reaches an
# agent whose pull carries the token: its torrent names the capability web seed URL, and the fill
# fetches every piece through it (the mirror seeds no guarded torrent over BitTorrent); without the
# token the pull is refused and nothing is fetched. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/team",
            "files": [{"path": "w.bin", "size": 3000000, "seed": 181}, {"path": "config.json", "content": "{}\n"}]}]}
JSON
cat >"$T/tokens" <<'TOK'
team-token-0001 hf:acme/team
TOK
sync_from_fake hf:acme/team
check "serve starts with a token guarding acme/team" start_serve --tokens "$T/tokens" --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["repos"][0]["sha"])' "$T/up.json")
expect_status 1 "without the token the pull is refused" "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" \
	--hf-cache "$T/hfc" --listen 127.0.0.1:0 hf:acme/team 2>"$T/no.err"
check "and links nothing" test ! -e "$T/hfc/models--acme--team"
HUBMIRROR_TOKEN=team-token-0001 "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" --hf-cache "$T/hfc" \
	--listen 127.0.0.1:0 hf:acme/team >/dev/null 2>"$T/pull.err"
check "with it the pull completes" test $? = 0
check "every byte, as upstream has it" "$PY" "$HM_SRC/tests/integration/helpers/checkfiles.py" \
	"$T/up.json" hf acme/team "$T/hfc/models--acme--team/snapshots/$commit"
check "through the fill, over the capability's web seed URL" "$PY" -c '
import json,subprocess,sys
s = json.loads(subprocess.check_output([sys.argv[1], "status", "--json"]))["snapshots"][0]
assert s["fetched_over_http"] >= 3000000, s' "$HUBMIRROR"
check "the token is in no file of the agent's cache" bash -c "! grep -rq team-token-0001 '$T/cache'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"
finish
