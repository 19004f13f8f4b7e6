#!/usr/bin/env bash
# t0718-agent-guarded: a repo the mirror guards with an operator token (serve --tokens) reaches an
# agent whose pull carries the token: its torrent names the capability web seed URL, and the fill
# fetches every piece through it (the mirror seeds no guarded torrent over BitTorrent); without the
# token the pull is refused and nothing is fetched. The local endpoint's offline copy answers a guarded
# repo only to the token it was answered for, and writes no client's Host into another's answers. No FUSE.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [{"hub": "hf", "type": "model", "id": "acme/team",
            "files": [{"path": "w.bin", "size": 3000000, "seed": 181}, {"path": "config.json", "content": "{}\n"}]},
           {"hub": "hf", "type": "model", "id": "acme/open",
            "files": [{"path": "config.json", "content": "{\"open\": 1}\n"}]}]}
JSON
cat >"$T/tokens" <<'TOK'
team-token-0001 hf:acme/team
other-token-0002 hf:acme/other
TOK
chmod 600 "$T/tokens" # (a tokens file others can read is refused)
sync_from_fake hf:acme/team hf:acme/open
check "serve starts with a token guarding acme/team" start_serve --tokens "$T/tokens" --p2p-listen 127.0.0.1:0
curl -fsS "$FAKE_API/_fake/repos" >"$T/up.json"
commit=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/team"][0]["sha"])' "$T/up.json")
expect_status 1 "without the token the pull is refused" "$HUBMIRROR" pull --mirror "$M" --cache "$T/cache" \
	--hf-cache "$T/hfc" --listen 127.0.0.1:0 hf:acme/team 2>"$T/no.err"
check "and links nothing" test ! -e "$T/hfc/models--acme--team"
check "saying the mirror wants a token, and where it goes" grep -q \
	"pull failed: hf:acme/team on $M: the mirror wants a token: set HUBMIRROR_TOKEN to one its operator gave you" "$T/no.err"
HUBMIRROR_TOKEN=wrong-token-0009 "$HUBMIRROR" pull --mirror "$M" hf:acme/team 2>"$T/wrong.err"
check "a token the mirror does not know: said so" grep -q \
	"the mirror refused the token (HUBMIRROR_TOKEN): it is not one of the mirror's tokens" "$T/wrong.err"
HUBMIRROR_TOKEN=other-token-0002 "$HUBMIRROR" pull --mirror "$M" hf:acme/team 2>"$T/other.err"
check "a token without a grant of the repo: said so" grep -q \
	"the token (HUBMIRROR_TOKEN) does not cover this repository: ask the mirror's operator for a grant of it" "$T/other.err"
"$HUBMIRROR" pull --mirror "$M" hf:acme/nowhere 2>"$T/none.err"
check "a repo the mirror lacks: ask for it, or search" grep -q \
	"pull failed: hf:acme/nowhere on $M: not on this mirror: ask for it with 'hubmirror request hf:acme/nowhere' (what it holds: 'hubmirror search WORDS')" "$T/none.err"
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
check "the mirror's access log shows the capability's web seed requests" grep -q '"GET /p2p/kseed/' "$T/access.log"
check "with the capability left out of every line" bash -c "! grep '/p2p/kseed/' '$T/access.log' | grep -v '/p2p/kseed/REDACTED/'"
check "and the access log readable by its owner and group only (640)" test "$(stat -c %a "$T/access.log")" = 640
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache/agent.log'"

# the local endpoint's offline copy keeps each grant's answers to that grant, and no client's Host
serve_pid=${_pids[-1]}
check "an agent with a local endpoint starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache2" --listen 127.0.0.1:0 --http 127.0.0.1:0
E=$(agent_endpoint)
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
auth=(-H "Authorization: Bearer team-token-0001")
check "without the token the endpoint relays the mirror's refusal" test "$(code "$E/api/models/acme/team/revision/main")" != 200
check "with it, the guarded repo's info" test "$(code "${auth[@]}" "$E/api/models/acme/team/revision/main")" = 200
check "and a file" cmp <(curl -fsS "${auth[@]}" "$E/acme/team/resolve/main/config.json") <(printf '{}\n')
curl -fsS -H "Host: evil.example" -D "$T/evil.h" -o /dev/null "$E/api/models?limit=1"
check "a client's own Host is in the Link the mirror wrote for it" grep -qi "^Link: <http://evil.example/" "$T/evil.h"
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
check "offline, the token's own requests are answered from the copy" test "$(code "${auth[@]}" "$E/api/models/acme/team/revision/main")" = 200
check "and its file" cmp <(curl -fsS "${auth[@]}" "$E/acme/team/resolve/main/config.json") <(printf '{}\n')
check "but not a request without the token" test "$(code "$E/api/models/acme/team/revision/main")" != 200
check "nor its file" test "$(code "$E/acme/team/resolve/main/config.json")" != 200
check "nor one with another token" test "$(code -H "Authorization: Bearer bogus" "$E/api/models/acme/team/revision/main")" != 200
curl -fsS -D "$T/off.h" -o /dev/null "$E/api/models?limit=1"
sed 's/^/# /' "$T/off.h" | grep -i link
check "offline, another client's Link names its own Host, not the earlier client's" grep -qi "^Link: <$E/" "$T/off.h"
check "and nowhere the earlier client's" bash -c "! grep -qi evil.example '$T/off.h'"
check "the token is in no file of the agent's cache" bash -c "! grep -rq team-token-0001 '$T/cache2'"
check "agent --stop" "$HUBMIRROR" agent --stop
check "the agent's log holds no sanitizer report" bash -c "! grep -E 'Sanitizer|runtime error' '$T/cache2/agent.log'"
finish
