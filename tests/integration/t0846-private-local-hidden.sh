#!/usr/bin/env bash
# t0846-private-local-hidden: a private repository of a local namespace (create_repo(private=True)) is
# not there for anyone its grant does not cover (docs/uploads.md, docs/security.md): anonymous, a
# token of another namespace and that token's S3 key get, on every front, what they get for a repo
# the mirror does not have, status, headers and body (helpers/hidden_probe.py compares the two answers,
# the names swapped): the Hub API (info, revision, tree, treesize, paths-info, refs, commits, resolve
# and raw, preupload, commit, branch, tag, delete), Git LFS (batch, object, PUT, completion), git
# (clone and push URLs), the ModelScope API, the catalog API (page, card, files, a request for it), S3
# (object, HEAD, listing), the torrent (with and without a made-up capability), the web seed, the
# keyed web seed and the tracker. /metrics names it only to its grantee. The grantee reads it all.
. "$HM_SRC/tests/integration/lib.sh"
"$PY" -c 'import botocore' 2>/dev/null || skip "needs python3-botocore (Debian's)"

cat >"$T/tokens" <<'TOK'
tok-acme-writer-01 hf:acme/*:write hf:datasets/acme/*:write
tok-evil-writer-01 hf:evil/*:write
TOK
cat >"$T/s3keys" <<'KEYS'
AKIAEVIL00000000001 evil/Secret+Key00000000000000000000001 tok-evil-writer-01
AKIAACME00000000001 acme/Secret+Key00000000000000000000001 tok-acme-writer-01
KEYS
chmod 600 "$T/tokens" "$T/s3keys"
W=tok-acme-writer-01
E=tok-evil-writer-01
check "serve starts" start_serve --local acme,evil --tokens "$T/tokens" --s3-keys "$T/s3keys" --p2p-listen 127.0.0.1:0 || finish

# acme/secret: private, a small file and an LFS one (its name as long as acme/absent, the repo it is
# compared with)
"$PY" - "$M" "$W" "$HM_SRC/tests/integration/helpers" >"$T/made" <<'PY' || fail "the private repo is made"
import hashlib, sys
sys.path.insert(0, sys.argv[3])
from hfupload import Api
w = Api(sys.argv[1], sys.argv[2])
weights = hashlib.shake_256(b"secret weights").digest(300000)
w.create_repo("acme/secret", private=True)
w.upload_files("acme/secret", [("config.json", b'{"secret": 1}\n'), ("w.safetensors", weights)])
print(hashlib.sha256(weights).hexdigest())
PY
oid=$(cat "$T/made")
meta() { curl -fsS -H "Authorization: Bearer $W" "$M/api/p2p/torrent/hf/model/acme/secret?meta=1"; }
for i in $(seq 1 100); do meta >"$T/meta.json" 2>/dev/null && break; sleep 0.2; done
btih=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["btih"])' "$T/meta.json")
tname=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["name"])' "$T/meta.json")
check "the grantee reads its info" test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $W" "$M/api/models/acme/secret")" = 200
check "... its files" test "$(curl -fsS -H "Authorization: Bearer $W" "$M/acme/secret/resolve/main/config.json")" = '{"secret": 1}'
check "... its torrent" test -n "$btih"
check "... and over S3 with its key" bash -c "AWS_ACCESS_KEY_ID=AKIAACME00000000001 AWS_SECRET_ACCESS_KEY=acme/Secret+Key00000000000000000000001 \
	'$PY' '$HM_SRC/tests/integration/helpers/s3client.py' '$M/s3' get hf acme/secret/main/config.json | grep -q secret"
check "... and git clone" bash -c "GIT_TERMINAL_PROMPT=0 git -c credential.helper= ls-remote 'http://u:$W@${M#http://}/acme/secret' | grep -q refs/heads/main"

hash_q=$("$PY" -c 'import sys,urllib.parse; print(urllib.parse.quote(bytes.fromhex(sys.argv[1])))' "$btih")
fake=0123456789abcdef0123456789abcdef01234567
fake_q=$("$PY" -c 'import sys,urllib.parse; print(urllib.parse.quote(bytes.fromhex(sys.argv[1])))' "$fake")
zero=$(printf '%064d' 0)
cap=0.0123456789abcdef0123456789abcdef
lfs='{"Content-Type": "application/vnd.git-lfs+json", "Accept": "application/vnd.git-lfs+json"}'
js='{"Content-Type": "application/json"}'
cat >"$T/probe.json" <<JSON
{"who": {"anonymous": {}, "a token of another namespace": {"token": "$E"},
         "that token's S3 key": {"s3": ["AKIAEVIL00000000001", "evil/Secret+Key00000000000000000000001"]}},
 "vars": {"btih": ["$btih", "$fake"], "hash": ["$hash_q", "$fake_q"]},
 "cases": [
  ["info", "GET", "/api/models/{n}", null, {}],
  ["info of a revision", "GET", "/api/models/{n}/revision/main", null, {}],
  ["tree", "GET", "/api/models/{n}/tree/main?recursive=true", null, {}],
  ["treesize", "GET", "/api/models/{n}/treesize/main", null, {}],
  ["paths-info", "POST", "/api/models/{n}/paths-info/main", "paths=config.json", {"Content-Type": "application/x-www-form-urlencoded"}],
  ["refs", "GET", "/api/models/{n}/refs", null, {}],
  ["commits", "GET", "/api/models/{n}/commits/main", null, {}],
  ["resolve", "GET", "/{n}/resolve/main/config.json", null, {}],
  ["resolve, HEAD", "HEAD", "/{n}/resolve/main/w.safetensors", null, {}],
  ["raw", "GET", "/{n}/raw/main/config.json", null, {}],
  ["preupload", "POST", "/api/models/{n}/preupload/main", "{\"files\": []}", $js],
  ["commit", "POST", "/api/models/{n}/commit/main", "{\"key\": \"header\", \"value\": {\"summary\": \"x\"}}\n", {"Content-Type": "application/x-ndjson"}],
  ["a branch", "POST", "/api/models/{n}/branch/b1", "{}", $js],
  ["a tag", "POST", "/api/models/{n}/tag/main", "{\"tag\": \"t1\"}", $js],
  ["delete_repo", "DELETE", "/api/repos/delete", "{\"name\": \"{n}\"}", $js],
  ["LFS batch, download", "POST", "/{n}.git/info/lfs/objects/batch", "{\"operation\": \"download\", \"objects\": [{\"oid\": \"$oid\", \"size\": 300000}]}", $lfs],
  ["LFS batch, upload", "POST", "/{n}.git/info/lfs/objects/batch", "{\"operation\": \"upload\", \"objects\": [{\"oid\": \"$zero\", \"size\": 1}]}", $lfs],
  ["LFS object", "GET", "/{n}.git/info/lfs/objects/$oid", null, {}],
  ["LFS verify", "POST", "/{n}.git/info/lfs/objects/$oid", "{\"oid\": \"$oid\", \"size\": 300000}", $lfs],
  ["LFS PUT without a capability", "PUT", "/{n}.git/info/lfs/objects/$zero", "x", {}],
  ["LFS completion without a capability", "POST", "/{n}.git/info/lfs/objects/$zero/complete", "{}", $lfs],
  ["git clone's refs", "GET", "/{n}.git/info/refs?service=git-upload-pack", null, {}],
  ["git clone's refs, no .git", "GET", "/{n}/info/refs?service=git-upload-pack", null, {}],
  ["git clone's pack", "POST", "/{n}.git/git-upload-pack", "0000", {"Content-Type": "application/x-git-upload-pack-request"}],
  ["git push's refs", "GET", "/{n}.git/info/refs?service=git-receive-pack", null, {}],
  ["ModelScope: the repo", "GET", "/api/v1/models/{n}", null, {}],
  ["ModelScope: its files", "GET", "/api/v1/models/{n}/repo/files?Revision=master&Recursive=true", null, {}],
  ["ModelScope: a file", "GET", "/api/v1/models/{n}/repo?Revision=master&FilePath=config.json", null, {}],
  ["ModelScope: its revisions", "GET", "/api/v1/models/{n}/revisions", null, {}],
  ["catalog: its page", "GET", "/api/catalog/repos/hf/model/{n}", null, {}],
  ["catalog: its card", "GET", "/api/catalog/repos/hf/model/{n}/card", null, {}],
  ["catalog: its files", "GET", "/api/catalog/repos/hf/model/{n}/files", null, {}],
  ["catalog: a request for it", "POST", "/api/catalog/requests", "{\"spec\": \"hf:{n}\"}", $js],
  ["torrent", "GET", "/api/p2p/torrent/hf/model/{n}", null, {}],
  ["torrent's description", "GET", "/api/p2p/torrent/hf/model/{n}?meta=1", null, {}],
  ["torrent with a made-up capability", "GET", "/api/p2p/torrent/hf/model/{n}?meta=1&cap=$cap", null, {}],
  ["web seed", "GET", "/p2p/seed/{btih}/$tname/config.json", null, {}],
  ["keyed web seed, a made-up key", "GET", "/p2p/kseed/$cap/{btih}/$tname/config.json", null, {}],
  ["tracker", "GET", "/announce?info_hash={hash}&peer_id=-XX0001-abcdefghijkl&port=6881&uploaded=0&downloaded=0&left=10&compact=1", null, {}],
  ["tracker with a made-up key", "GET", "/announce?info_hash={hash}&peer_id=-XX0001-abcdefghijkl&port=6881&uploaded=0&downloaded=0&left=10&compact=1&hmcap=$cap", null, {}],
  ["S3 GetObject", "GET", "/s3/hf/{n}/main/config.json", null, {}],
  ["S3 HeadObject", "HEAD", "/s3/hf/{n}/main/w.safetensors", null, {}],
  ["S3 GetObject, a range", "GET", "/s3/hf/{n}/main/w.safetensors", null, {"Range": "bytes=0-9"}],
  ["S3 ListObjectsV2 of its folder", "GET", "/s3/hf?list-type=2&prefix={n}/", null, {}]
 ]}
JSON
n=0
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "${line#ok - }"; n=$((n + 1)) ;;
	"not ok - "*) fail "${line#not ok - }"; n=$((n + 1)) ;;
	*) echo "$line" ;;
	esac
done < <(timeout 200 "$PY" "$HM_SRC/tests/integration/helpers/hidden_probe.py" "$M" acme/secret acme/absent "$T/probe.json" 2>&1)
check "every front was compared ($n answers)" test "$n" -ge 92

# /metrics: the repo's series for its grantee only
curl -fsS "$M/metrics" >"$T/m.anon"
curl -fsS -H "Authorization: Bearer $E" "$M/metrics" >"$T/m.evil"
curl -fsS -H "Authorization: Bearer $W" "$M/metrics" >"$T/m.acme"
check "/metrics anonymous does not name it" bash -c "! grep -q 'acme/secret' '$T/m.anon'"
check "... nor to a token of another namespace" bash -c "! grep -q 'acme/secret' '$T/m.evil'"
check "... to its grantee it does, with its size" grep -q 'hubmirror_repo_size_bytes{hub="hf",type="model",repo="acme/secret"}' "$T/m.acme"
check "the grantee still reads it after all that" test "$(curl -fsS -H "Authorization: Bearer $W" "$M/acme/secret/resolve/main/config.json")" = '{"secret": 1}'
finish
