#!/bin/bash
# t0100-fakehub: the fake upstream hub (tests/fakehub) answers like the docs say.
#
# Starts fakehub on 127.0.0.1 / 127.0.0.2 with a small spec, then checks the
# Hugging Face and ModelScope answers the mirror depends on, the real Hub's
# quirks, the CDN signature, fault injection and the control API with curl.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
FAKEHUB=${FAKEHUB:-$HERE/../fakehub/fakehub.py}
PY=${PYTHON:-/usr/bin/python3}
T=$(mktemp -d)
PID=
cleanup() {
	if [ -n "$PID" ]; then
		kill "$PID" 2>/dev/null || true
		wait "$PID" 2>/dev/null || true
	fi
	rm -rf "$T"
}
trap cleanup EXIT

failed=0
check() { # check NAME CONDITION...: CONDITION is evaluated by the shell
	local name=$1
	shift
	if eval "$@"; then
		echo "ok - $name"
	else
		echo "not ok - $name"
		failed=1
	fi
}

# req ARGS...: curl into $T/body and $T/hdr, status in $code
req() {
	rm -f "$T/body" "$T/hdr"
	: >"$T/body"
	code=$(curl -sS --max-time 10 -o "$T/body" -D "$T/hdr" -w '%{http_code}' "$@" 2>"$T/curlerr") ||
		code="curl-error-$?"
}
hdr() { grep -i "^$1:" "$T/hdr" | tail -n1 | cut -d' ' -f2- | tr -d '\r' || true; }
json() { "$PY" -c "import json,sys; d=json.load(open('$T/body')); print($1)"; }
spec() { "$PY" -c "import json,sys; d=json.load(open('$T/repos.json')); print($1)"; }
bodysha256() { sha256sum "$T/body" | cut -d' ' -f1; }
bodysize() { stat -c %s "$T/body"; }
ctl() { curl -sS --max-time 10 -o /dev/null -X POST -H 'Content-Type: application/json' --data "$2" "$API/_fake/$1"; }

cat >"$T/spec.json" <<'EOF'
{"tokens": {"hf_good": {"approved": ["acme/gated"]}, "hf_plain": {}, "hf_reader": {"read": ["acme/private"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/tiny-model", "renamed_from": ["acme/old-name"],
   "card": {"license": "mit", "tags": ["demo"], "pipeline_tag": "text-generation", "library_name": "transformers"},
   "branches": {"main": "c1"}, "tags": {"v1.0": "c1"}, "prs": {"1": "c2"},
   "commits": [
    {"key": "c1", "title": "initial", "files": [
      {"path": "config.json", "content": "{\"a\": 1}\n"},
      {"path": "empty.txt", "content": ""},
      {"path": "sub/dir/a.txt", "content": "aaa\n"},
      {"path": "sub/b.txt", "content": "bbb\n"},
      {"path": "model.safetensors", "size": 2097275, "seed": 11}]},
    {"key": "c2", "parent": "c1", "title": "update", "files": [{"path": "config.json", "content": "{\"a\": 2}\n"}],
     "delete": ["sub/b.txt"]}]},
  {"hub": "hf", "type": "dataset", "id": "acme/many-files", "generate": {"count": 25, "size": 64, "prefix": "data/part-"}},
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual",
   "files": [{"path": "config.json", "content": "{}\n"}, {"path": "weights.bin", "size": 1000, "seed": 3}]},
  {"hub": "hf", "type": "model", "id": "acme/private", "private": true, "files": [{"path": "config.json", "content": "{}\n"}]},
  {"hub": "hf", "type": "model", "id": "acme/disabled", "disabled": true, "files": [{"path": "config.json", "content": "{}\n"}]},
  {"hub": "ms", "type": "model", "id": "qwen/tiny",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "model.safetensors", "size": 2097275, "seed": 11}]},
  {"hub": "ms", "type": "dataset", "id": "acme/ms-ds", "generate": {"count": 7, "size": 100, "prefix": "shards/s-"},
   "files": [{"path": "README.md", "content": "# ms-ds\n"}]}
 ]}
EOF

# ---- start, and time how long it takes to be ready ----
start_ns=$(date +%s%N)
"$PY" "$FAKEHUB" --repos "$T/spec.json" --ready-file "$T/ready" --cache-dir "$T/cache" --quiet --xet \
	>"$T/stdout" 2>"$T/stderr" &
PID=$!
for _ in $(seq 1 3000); do
	[ -s "$T/ready" ] && break
	sleep 0.01
done
ready_ms=$((($(date +%s%N) - start_ns) / 1000000))
# It starts in about 0.1 s (bytes and hashes are made when first asked for). The bound catches a fake
# that would make them all at start, not a loaded machine's 3 s.
check "fakehub ready without making its files first (${ready_ms} ms, bound 10 s)" '[ -s "$T/ready" ] && [ "$ready_ms" -lt 10000 ]'
[ -s "$T/ready" ] || { cat "$T/stderr"; exit 1; }
API=$("$PY" -c "import json; print(json.load(open('$T/ready'))['api'])")
CDN=$("$PY" -c "import json; print(json.load(open('$T/ready'))['cdn'])")
check "ready file names 127.0.0.1 and 127.0.0.2" '[[ $API == http://127.0.0.1:* ]] && [[ $CDN == http://127.0.0.2:* ]]'
check "stdout carries the same ready line" 'cmp -s "$T/ready" "$T/stdout"'

curl -sS --max-time 10 -o "$T/repos.json" "$API/_fake/repos"
C1=$(spec '[r for r in d["repos"] if r["id"]=="acme/tiny-model" and r["hub"]=="hf"][0]["branches"]["main"]')
C2=$(spec '[r for r in d["repos"] if r["id"]=="acme/tiny-model" and r["hub"]=="hf"][0]["prs"]["1"]')
file() { # file HUB ID PATH FIELD: a field of a file at the default branch head, from /_fake/repos
	spec "[f for r in d['repos'] if r['hub']=='$1' and r['id']=='$2' for c in r['commits'] if c['id']==r['sha'] for f in c['files'] if f['path']=='$3'][0]['$4']"
}
ST_SHA=$(file hf acme/tiny-model model.safetensors sha256)
ST_SIZE=$(file hf acme/tiny-model model.safetensors size)
CFG_SHA1=$(file hf acme/tiny-model config.json git_sha1)
check "/_fake/repos gives 40-hex commits and file hashes" '[[ $C1 =~ ^[0-9a-f]{40}$ ]] && [[ $C2 =~ ^[0-9a-f]{40}$ ]] && [ "$C1" != "$C2" ] && [[ $ST_SHA =~ ^[0-9a-f]{64}$ ]]'

# ---- Hugging Face API ----
req "$API/api/models/acme/tiny-model?blobs=true"
check "info: 200 with id, sha, gated, cardData" '[ "$code" = 200 ] && [ "$(json "d[\"id\"], d[\"sha\"], d[\"gated\"], d[\"cardData\"][\"license\"], d[\"private\"]")" = "acme/tiny-model $C1 False mit False" ]'
check "info blobs=true: siblings with size, blobId and lfs.sha256" \
	'[ "$(json "[(s[\"size\"], s[\"lfs\"][\"sha256\"], len(s[\"blobId\"]), s[\"lfs\"][\"pointerSize\"] > 100) for s in d[\"siblings\"] if s[\"rfilename\"]==\"model.safetensors\"][0]")" = "($ST_SIZE, '"'"'$ST_SHA'"'"', 40, True)" ]'
check "info: rate limit headers and a weak ETag" '[[ "$(hdr RateLimit)" == \"api\"\;r=* ]] && [[ "$(hdr RateLimit-Policy)" == *q=500\;w=300 ]] && [[ "$(hdr ETag)" == W/\"* ]]'
ETAG=$(hdr ETag)
req -H "If-None-Match: $ETAG" "$API/api/models/acme/tiny-model?blobs=true"
check "If-None-Match answers 304 with an empty body" '[ "$code" = 304 ] && [ "$(bodysize)" = 0 ]'

req "$API/api/models/acme/tiny-model/revision/refs%2Fpr%2F1"
check "revision refs%2Fpr%2F1 is the PR commit" '[ "$code" = 200 ] && [ "$(json "d[\"sha\"]")" = "$C2" ]'
req "$API/api/models/acme/tiny-model/revision/v1.0"
check "revision by tag name" '[ "$code" = 200 ] && [ "$(json "d[\"sha\"]")" = "$C1" ]'
req "$API/api/models/acme/tiny-model/revision/nope"
check "unknown revision: 404 RevisionNotFound" '[ "$code" = 404 ] && [ "$(hdr X-Error-Code)" = RevisionNotFound ]'

# tree: paginate with a small page size, following the absolute Link
url="$API/api/datasets/acme/many-files/tree/main?recursive=true&limit=4"
: >"$T/all"
pages=0
links_ok=1
while [ -n "$url" ]; do
	req "$url"
	[ "$code" = 200 ] || break
	json '"\n".join(e["type"] + " " + e["path"] for e in d)' >>"$T/all"
	pages=$((pages + 1))
	link=$(hdr Link)
	url=
	if [ -n "$link" ]; then
		[[ $link =~ ^\<(http://127\.0\.0\.1:[0-9]+/[^>]*cursor=[^>]*)\>\;\ rel=\"next\"$ ]] || links_ok=0
		url=${BASH_REMATCH[1]:-}
	fi
	[ "$pages" -lt 50 ] || break
done
check "tree pagination: absolute Link with cursor, all entries collected" \
	'[ "$links_ok" = 1 ] && [ "$pages" = 7 ] && [ "$(grep -c "^file data/part-" "$T/all")" = 25 ] && [ "$(wc -l <"$T/all")" = 27 ] && grep -qx "directory data" "$T/all"'
req "$API/api/models/acme/tiny-model/tree/main?recursive=true"
check "tree: xetHash and lfs on LFS entries only" \
	'[ "$(json "sorted(e[\"path\"] for e in d if \"xetHash\" in e and e[\"lfs\"][\"oid\"]==\"$ST_SHA\")")" = "['"'"'model.safetensors'"'"']" ] && [ "$(json "sum(\"lfs\" in e for e in d)")" = 1 ]'
req "$API/api/models/acme/tiny-model/tree/main/sub%2Fdir"
check "tree sub-path a%2Fb" '[ "$code" = 200 ] && [ "$(json "[e[\"path\"] for e in d]")" = "['"'"'sub/dir/a.txt'"'"']" ]'
req "$API/api/models/acme/tiny-model/tree/main/sub"
check "tree non-recursive lists one level, with directories" '[ "$(json "[(e[\"type\"], e[\"path\"]) for e in d]")" = "[('"'"'file'"'"', '"'"'sub/b.txt'"'"'), ('"'"'directory'"'"', '"'"'sub/dir'"'"')]" ]'

req -X POST --data 'paths=config.json&paths=nope.txt&paths=sub&expand=false' "$API/api/models/acme/tiny-model/paths-info/main"
check "paths-info (form): missing paths omitted" '[ "$code" = 200 ] && [ "$(json "[e[\"path\"] for e in d]")" = "['"'"'config.json'"'"', '"'"'sub'"'"']" ]'
req -X POST -H 'Content-Type: application/json' --data '{"paths": ["model.safetensors"], "expand": true}' "$API/api/models/acme/tiny-model/paths-info/refs%2Fpr%2F1"
check "paths-info (JSON, expand): lfs and lastCommit" '[ "$(json "d[0][\"lfs\"][\"oid\"], d[0][\"lastCommit\"][\"id\"]")" = "$ST_SHA $C1" ]'
req "$API/api/models/acme/tiny-model/refs?include_prs=1"
check "refs: branches, tags, converts, pullRequests" '[ "$(json "d[\"branches\"][0][\"targetCommit\"], d[\"tags\"][0][\"ref\"], d[\"converts\"], d[\"pullRequests\"][0][\"targetCommit\"]")" = "$C1 refs/tags/v1.0 [] $C2" ]'
req "$API/api/models/acme/tiny-model/commits/refs%2Fpr%2F1"
check "commits: history with authors" '[ "$(json "[c[\"id\"] for c in d] == [\"$C2\", \"$C1\"] and d[0][\"authors\"][0][\"user\"] != \"\" and d[0][\"title\"] == \"update\"")" = True ]'
req "$API/api/models/acme/tiny-model/treesize/main"
check "treesize" '[ "$code" = 200 ] && [ "$(json "d[\"size\"]")" = "$(spec "sum(f[\"size\"] for r in d[\"repos\"] if r[\"id\"]==\"acme/tiny-model\" and r[\"hub\"]==\"hf\" for c in r[\"commits\"] if c[\"id\"]==r[\"sha\"] for f in c[\"files\"])")" ]'
req "$API/api/models?search=tiny&limit=10"
check "model listing with search" '[ "$code" = 200 ] && [ "$(json "[m[\"id\"] for m in d]")" = "['"'"'acme/tiny-model'"'"']" ]'
req "$API/api/models?limit=1"
check "model listing paginates with an absolute Link" '[ "$(json "len(d)")" = 1 ] && [[ "$(hdr Link)" == \<http://127.0.0.1:*cursor=*\>\;\ rel=\"next\" ]]'
req "$API/api/models/acme/old-name/revision/main"
check "renamed repo: relative 307 to the new name" '[ "$code" = 307 ] && [ "$(hdr Location)" = /api/models/acme/tiny-model/revision/main ]'

# ---- resolve ----
req -I "$API/acme/tiny-model/resolve/main/config.json"
LOC=$(hdr Location)
check "regular file on a branch: relative 307 to /api/resolve-cache" \
	'[ "$code" = 307 ] && [[ "$LOC" == /api/resolve-cache/models/acme/tiny-model/$C1/config.json\?* ]] && [ "$(hdr X-Repo-Commit)" = "$C1" ] && [ "$(hdr X-Linked-Etag)" = "\"$CFG_SHA1\"" ] && [ "$(hdr X-Linked-Size)" = 9 ]'
req "$API$LOC"
check "resolve-cache serves the bytes (git sha1 matches)" \
	'[ "$code" = 200 ] && [ "$( (printf "blob %d\0" "$(bodysize)"; cat "$T/body") | sha1sum | cut -d" " -f1)" = "$CFG_SHA1" ] && [ "$(hdr ETag)" = "\"$CFG_SHA1\"" ]'
req "$API/acme/tiny-model/resolve/$C1/config.json"
check "regular file by commit id: direct 200 with ETag and headers" \
	'[ "$code" = 200 ] && [ "$(hdr ETag)" = "\"$CFG_SHA1\"" ] && [ "$(hdr X-Repo-Commit)" = "$C1" ] && [ "$(hdr Accept-Ranges)" = bytes ] && [ -n "$(hdr Content-Disposition)" ]'
req "$API/acme/tiny-model/resolve/refs/pr/1/config.json"
check "raw refs/pr/1 in a resolve path" '[ "$code" = 307 ] && [ "$(hdr X-Repo-Commit)" = "$C2" ]'
req "$API/acme/tiny-model/raw/main/model.safetensors"
check "raw gives the LFS pointer" '[ "$code" = 200 ] && grep -q "^oid sha256:$ST_SHA$" "$T/body"'

req -I "$API/acme/tiny-model/resolve/main/model.safetensors"
CDNURL=$(hdr Location)
check "LFS file: 302 to the CDN host with X-Linked-Etag/Size and Xet headers" \
	'[ "$code" = 302 ] && [[ "$CDNURL" == $CDN/*X-Amz-Signature=* ]] && [ "$(hdr X-Linked-Etag)" = "\"$ST_SHA\"" ] && [ "$(hdr X-Linked-Size)" = "$ST_SIZE" ] && [ "$(hdr X-Repo-Commit)" = "$C1" ] && [ -n "$(hdr X-Xet-Hash)" ] && [[ "$(hdr Link)" == *rel=\"xet-auth\"* ]]'
ctl reset '{}'
req -L -H "Authorization: Bearer hf_plain" "$API/acme/tiny-model/resolve/main/model.safetensors"
check "following the 302 gives the bytes (sha256 matches)" '[ "$code" = 200 ] && [ "$(bodysha256)" = "$ST_SHA" ]'
curl -sS --max-time 10 -o "$T/stats.json" "$API/_fake/stats"
stat_() { "$PY" -c "import json; d=json.load(open('$T/stats.json')); print($1)"; }
check "the CDN saw no Authorization, the API did" \
	'[ "$(stat_ "[(e[\"host\"], e[\"auth\"]) for e in d[\"recent\"]]")" = "[('"'"'api'"'"', True), ('"'"'cdn'"'"', False)]" ]'
check "stats count content bytes per host" '[ "$(stat_ "d[\"content_bytes\"][\"cdn\"], d[\"content_bytes\"][\"api\"], d[\"by_route\"][\"GET cdn\"]")" = "$ST_SIZE 0 1" ]'
req "${CDNURL%?}0"
[ "${CDNURL: -1}" != 0 ] || req "${CDNURL%?}1"
check "tampered CDN signature: 403" '[ "$code" = 403 ]'
ctl config '{"cdn_expires": -10}'
req -I "$API/acme/tiny-model/resolve/main/model.safetensors"
req "$(hdr Location)"
ctl config '{"cdn_expires": 3600}'
check "expired CDN URL: 403" '[ "$code" = 403 ] && grep -q expired "$T/body"'
req -H "Accept: application/vnd.xet-fileinfo+json" "$API/acme/tiny-model/resolve/main/model.safetensors"
check "Accept xet-fileinfo gets JSON, not the 302" '[ "$code" = 200 ] && [[ "$(hdr Content-Type)" == application/vnd.xet-fileinfo+json* ]]'

# ranges
req -H "Range: bytes=100-199" "$CDNURL"
check "CDN Range a-b: 206 + Content-Range" '[ "$code" = 206 ] && [ "$(hdr Content-Range)" = "bytes 100-199/$ST_SIZE" ] && [ "$(bodysize)" = 100 ]'
req -H "Range: bytes=-10" "$CDNURL"
check "CDN Range -N: last bytes" '[ "$code" = 206 ] && [ "$(hdr Content-Range)" = "bytes $((ST_SIZE - 10))-$((ST_SIZE - 1))/$ST_SIZE" ]'
req -H "Range: bytes=$ST_SIZE-" "$CDNURL"
check "Range past the end: 416 with bytes */size" '[ "$code" = 416 ] && [ "$(hdr Content-Range)" = "bytes */$ST_SIZE" ]'
req -H "Range: bytes=1000000-" "$CDNURL"
cp "$T/body" "$T/part2"
req -H "Range: bytes=0-999999" "$CDNURL"
check "two ranges rebuild the file" '[ "$(cat "$T/body" "$T/part2" | sha256sum | cut -d" " -f1)" = "$ST_SHA" ]'
req -H "Range: bytes=2-4" "$API/acme/tiny-model/resolve/$C1/config.json"
check "Range on a direct answer" '[ "$code" = 206 ] && [ "$(cat "$T/body")" = "a\":" ]'
req -H "Range: bytes=0-0" "$API/acme/tiny-model/resolve/$C1/empty.txt"
check "Range on an empty file: 416 (Hub quirk)" '[ "$code" = 416 ] && [ "$(hdr Content-Range)" = "bytes */0" ]'
req "$API/acme/tiny-model/resolve/$C1/empty.txt"
check "empty file without Range: 200, 0 bytes" '[ "$code" = 200 ] && [ "$(bodysize)" = 0 ] && [ "$(hdr Content-Length)" = 0 ]'

# ---- errors and auth ----
req "$API/acme/gated/resolve/main/weights.bin"
check "gated, anonymous: 401 GatedRepo" '[ "$code" = 401 ] && [ "$(hdr X-Error-Code)" = GatedRepo ]'
req -H "Authorization: Bearer hf_plain" "$API/acme/gated/resolve/main/weights.bin"
check "gated, token not approved: 403 GatedRepo" '[ "$code" = 403 ] && [ "$(hdr X-Error-Code)" = GatedRepo ]'
req -H "Authorization: Bearer hf_good" "$API/acme/gated/resolve/main/weights.bin"
check "gated, approved token: 302" '[ "$code" = 302 ]'
req "$API/api/models/acme/gated/tree/main"
check "gated: metadata is public" '[ "$code" = 200 ]'
req "$API/api/models/acme/nope"
check "anonymous unknown repo: 401 Invalid username or password." \
	'[ "$code" = 401 ] && [ "$(hdr X-Error-Message)" = "Invalid username or password." ] && [ -z "$(hdr X-Error-Code)" ] && [[ "$(hdr Www-Authenticate)" == Bearer* ]] && [ "$(json "d[\"error\"]")" = "Invalid username or password." ]'
req "$API/acme/private/resolve/main/config.json"
check "anonymous private repo: 401 like unknown" '[ "$code" = 401 ] && [ -z "$(hdr X-Error-Code)" ]'
req -H "Authorization: Bearer hf_reader" "$API/api/models/acme/private"
check "private repo with a reader token: 200" '[ "$code" = 200 ] && [ "$(json "d[\"private\"]")" = True ]'
req -H "Authorization: Bearer hf_plain" "$API/api/models/acme/nope"
check "valid token, unknown repo: 404 RepoNotFound" '[ "$code" = 404 ] && [ "$(hdr X-Error-Code)" = RepoNotFound ]'
req -H "Authorization: Bearer hf_bogus" "$API/api/models/acme/tiny-model"
check "unknown token: 401 Invalid credentials, even on a public repo" '[ "$code" = 401 ] && [ "$(hdr X-Error-Message)" = "Invalid credentials in Authorization header" ]'
req -I "$API/acme/tiny-model/resolve/main/generation_config.json"
check "missing file: 404 EntryNotFound with X-Repo-Commit" '[ "$code" = 404 ] && [ "$(hdr X-Error-Code)" = EntryNotFound ] && [ "$(hdr X-Repo-Commit)" = "$C1" ]'
req "$API/acme/disabled/resolve/main/config.json"
check "disabled repo: 403 on content" '[ "$code" = 403 ] && [ "$(hdr X-Error-Message)" = "Access to this resource is disabled." ]'

# ---- faults ----
ctl faults '[{"match": "/api/models/acme/tiny-model/revision", "kind": "ratelimit", "retry_after": 7}]'
req "$API/api/models/acme/tiny-model/revision/main"
check "ratelimit fault: 429 with Retry-After and RateLimit" '[ "$code" = 429 ] && [ "$(hdr Retry-After)" = 7 ] && [[ "$(hdr RateLimit)" == *r=0* ]]'
req "$API/api/models/acme/tiny-model/revision/main"
check "a fault fires count times, then the answer is normal" '[ "$code" = 200 ]'
ctl faults '[{"match": "resolve/main/config.json", "kind": "status", "status": 503, "count": 2}]'
req "$API/acme/tiny-model/resolve/main/config.json"
c1=$code
req "$API/acme/tiny-model/resolve/main/config.json"
c2=$code
req "$API/acme/tiny-model/resolve/main/config.json"
check "status fault 503 twice" '[ "$c1$c2$code" = 503503307 ]'
ctl faults '[{"match": "'"$ST_SHA"'", "kind": "truncate", "bytes": 1000}]'
req "$CDNURL"
check "truncate fault: fewer bytes than Content-Length" '[ "$(bodysize)" = 1000 ] && [ "$(hdr Content-Length)" = "$ST_SIZE" ] && [[ "$code" == curl-error-* ]]'
ctl faults '[{"match": "'"$ST_SHA"'", "kind": "corrupt", "offset": 12345}]'
req "$CDNURL"
check "corrupt fault: right size, wrong sha256" '[ "$code" = 200 ] && [ "$(bodysize)" = "$ST_SIZE" ] && [ "$(bodysha256)" != "$ST_SHA" ]'
ctl faults '[{"match": "'"$ST_SHA"'", "kind": "reset", "bytes": 5000}]'
req "$CDNURL"
check "reset fault: connection reset mid-body" '[[ "$code" == curl-error-* ]] && [ "$(bodysize)" -lt "$ST_SIZE" ]'
ctl faults '[{"match": "'"$ST_SHA"'", "kind": "ignore_range"}]'
req -H "Range: bytes=10-19" "$CDNURL"
check "ignore_range fault: 200 with the whole body" '[ "$code" = 200 ] && [ "$(bodysize)" = "$ST_SIZE" ]'
ctl faults '[{"match": "/tree/", "kind": "unsafe_names"}]'
req "$API/api/models/acme/tiny-model/tree/main"
hostile=$(json "len(set(e['path'] for e in d) & {'../evil', '/etc/passwd', 'a/../../b', 'a' + chr(0) + 'b'})")
check "unsafe_names fault injects hostile paths" '[ "$hostile" = 4 ]'
ctl faults '[{"match": "slowpath", "kind": "slow", "seconds": 0.3}]'
s0=$(date +%s%N)
req "$API/api/models/acme/tiny-model/revision/main?slowpath=1"
check "slow fault delays the answer" '[ "$code" = 200 ] && [ $((($(date +%s%N) - s0) / 1000000)) -ge 300 ]'

# ---- ModelScope ----
req "$API/api/v1/models/qwen/tiny?Revision=master"
check "ModelScope envelope" '[ "$code" = 200 ] && [ "$(json "d[\"Code\"], d[\"Success\"], d[\"Message\"], len(d[\"RequestId\"]) > 0")" = "200 True success True" ]'
req "$API/api/v1/models/qwen/tiny/revisions"
check "ModelScope revisions: master branch" '[ "$(json "[b[\"Revision\"] for b in d[\"Data\"][\"RevisionMap\"][\"Branches\"]], d[\"Data\"][\"RevisionMap\"][\"Tags\"]")" = "['"'"'master'"'"'] []" ]'
req "$API/api/v1/models/qwen/tiny/repo/files?Revision=master&Recursive=True"
check "ModelScope files: Sha256 equals the HF file's (same seed)" \
	'[ "$(json "[(f[\"Sha256\"], f[\"IsLFS\"], f[\"Type\"], len(f[\"Revision\"])) for f in d[\"Data\"][\"Files\"] if f[\"Path\"]==\"model.safetensors\"][0]")" = "('"'"'$ST_SHA'"'"', True, '"'"'blob'"'"', 40)" ] && [ "$(json "\".gitattributes\" in [f[\"Path\"] for f in d[\"Data\"][\"Files\"]]")" = True ]'
req -H "Range: bytes=0-1048575" "$API/api/v1/models/qwen/tiny/repo?Revision=master&FilePath=model.safetensors"
cp "$T/body" "$T/part1"
req -H "Range: bytes=1048576-" "$API/api/v1/models/qwen/tiny/repo?Revision=master&FilePath=model.safetensors"
check "ModelScope ranged download: sha256 of the parts matches" '[ "$code" = 206 ] && [ "$(cat "$T/part1" "$T/body" | sha256sum | cut -d" " -f1)" = "$ST_SHA" ]'
req "$API/api/v1/models/qwen/nope"
check "ModelScope unknown repo: 404 envelope" '[ "$code" = 404 ] && [ "$(json "d[\"Success\"], d[\"Code\"]")" = "False 404" ]'
req "$API/api/v1/datasets/acme/ms-ds"
DSID=$(json 'd["Data"]["Id"]')
check "ModelScope dataset info: numeric Id and Type" '[[ "$DSID" =~ ^[0-9]+$ ]] && [ -n "$(json "d[\"Data\"][\"Type\"]")" ]'
n=1
total=0
while :; do
	req "$API/api/v1/datasets/$DSID/repo/tree?Revision=master&Root=/&Recursive=True&PageNumber=$n&PageSize=3"
	got=$(json 'len(d["Data"]["Files"])')
	total=$((total + got))
	[ "$got" -lt 3 ] && break
	n=$((n + 1))
	[ "$n" -lt 20 ] || break
done
# 7 shards + README.md + .gitattributes + the shards directory
check "ModelScope dataset tree by numeric id, paged until a short page" '[ "$total" = 10 ] && [ "$n" = 4 ]'
req "$API/api/v1/datasets/acme/ms-ds/repo/tree?Revision=master&Root=/&Recursive=True&PageNumber=1&PageSize=200"
check "ModelScope dataset tree by owner/name" '[ "$(json "len(d[\"Data\"][\"Files\"])")" = 10 ]'
req "$API/api/v1/datasets/acme/ms-ds/repo?Source=SDK&Revision=master&FilePath=README.md&View=False"
check "ModelScope dataset download" '[ "$code" = 200 ] && [ "$(cat "$T/body")" = "# ms-ds" ]'
req -X POST "$API/api/v1/datasets/acme/ms-ds/download/increase"
check "ModelScope download/increase: 200" '[ "$code" = 200 ]'

# ---- control: a new commit moves the branch ----
curl -sS --max-time 10 -o "$T/body" -X POST -H 'Content-Type: application/json' \
	--data '{"repo": "acme/tiny-model", "hub": "hf", "type": "model", "branch": "main", "title": "add file", "files": [{"path": "new.txt", "content": "new\n"}], "delete": ["empty.txt"]}' \
	"$API/_fake/commit"
C3=$(json 'd["commit"]')
req "$API/api/models/acme/tiny-model"
check "/_fake/commit changes the sha and the files" '[[ $C3 =~ ^[0-9a-f]{40}$ ]] && [ "$(json "d[\"sha\"]")" = "$C3" ] && [ "$(json "\"new.txt\" in [s[\"rfilename\"] for s in d[\"siblings\"]] and \"empty.txt\" not in [s[\"rfilename\"] for s in d[\"siblings\"]]")" = True ]'
req "$API/api/models/acme/tiny-model/revision/$C1"
check "the old commit stays reachable by id" '[ "$code" = 200 ] && [ "$(json "d[\"sha\"]")" = "$C1" ]'
ctl delete-ref '{"repo": "acme/tiny-model", "ref": "v1.0"}'
req "$API/api/models/acme/tiny-model/revision/v1.0"
check "/_fake/delete-ref: the tag is gone" '[ "$code" = 404 ] && [ "$(hdr X-Error-Code)" = RevisionNotFound ]'
ctl delete-repo '{"repo": "acme/many-files", "type": "dataset"}'
req -H "Authorization: Bearer hf_plain" "$API/api/datasets/acme/many-files"
check "/_fake/delete-repo: the repo is gone" '[ "$code" = 404 ] && [ "$(hdr X-Error-Code)" = RepoNotFound ]'

# ---- clean exit on SIGTERM ----
kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
PID=
check "exits cleanly on SIGTERM" '[ "$rc" = 0 ]'

if [ "$failed" != 0 ]; then
	echo "# fakehub stderr:" && sed 's/^/# /' "$T/stderr" | tail -n 20
fi
exit "$failed"
