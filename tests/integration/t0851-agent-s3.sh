#!/usr/bin/env bash
# t0851-agent-s3: the S3 API through an agent's local endpoint (docs/protocols/s3.md): listings and
# errors are the mirror's, signatures are checked by the mirror (the agent passes what was signed as it
# is), and an object's bytes come through the agent's cache from the swarm, verified, not from the
# mirror's S3 route. A streamer's pattern, 8 concurrent ranged GETs over each of 4 shards, gets every
# byte right; aws s3 cp --recursive, s3cmd, rclone and a presigned URL get the model byte for byte; a
# wrong secret and a tampered URL are refused. A guarded repo's object, signed with a key that grants
# it, comes through the swarm too: the agent takes its snapshot with a token of its own (agent
# --token-file), and the mirror's answer to the signed request carries no capability, which an S3
# client sending the agent's X-Hubmirror-Head itself would read; an agent without a token says why.
. "$HM_SRC/tests/integration/lib.sh"
AWS=/usr/bin/aws
[ -x "$AWS" ] && command -v s3cmd >/dev/null && command -v rclone >/dev/null && "$PY" -c 'import boto3' 2>/dev/null ||
	skip "needs awscli, s3cmd, rclone and python3-boto3 (Debian's)"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/shards",
   "files": [{"path": "config.json", "content": "{\"shards\": 4}\n"},
             {"path": "model-00001-of-00004.safetensors", "size": 3000000, "seed": 11},
             {"path": "model-00002-of-00004.safetensors", "size": 3100000, "seed": 12},
             {"path": "model-00003-of-00004.safetensors", "size": 2900000, "seed": 13},
             {"path": "model-00004-of-00004.safetensors", "size": 1000001, "seed": 14},
             {"path": "model.safetensors.index.json", "content": "{\"weight_map\": {}}\n"}]},
  {"hub": "hf", "type": "dataset", "id": "acme/rows",
   "generate": {"count": 1500, "size": 8, "prefix": "data/part-", "suffix": ".txt"}},
  {"hub": "hf", "type": "model", "id": "acme/guarded",
   "files": [{"path": "config.json", "content": "{\"guarded\": 1}\n"},
             {"path": "w.safetensors", "size": 2000000, "seed": 15}]}
 ]}
JSON
sync_from_fake hf:acme/shards hf:acme/guarded hf:datasets/acme/rows
cat >"$T/tokens" <<'TOK'
tok-reader-abcdefgh hf:acme/guarded
tok-agent-abcdefghi hf:acme/guarded
TOK
echo tok-agent-abcdefghi >"$T/agent-token"
chmod 600 "$T/agent-token"
cat >"$T/s3keys" <<'KEYS'
AKIAREADER0000000001 reader/Secret+Key0000000000000000000001 tok-reader-abcdefgh
KEYS
chmod 600 "$T/s3keys" "$T/tokens"
check "serve starts" start_serve --p2p-listen 127.0.0.1:0 --tokens "$T/tokens" --s3-keys "$T/s3keys"
check "an agent with a local endpoint (and a token of its own) starts" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache" \
	--listen 127.0.0.1:0 --http 127.0.0.1:0 --token-file "$T/agent-token"
E=$(agent_endpoint)
export AWS_CONFIG_FILE=$T/aws-config AWS_SHARED_CREDENTIALS_FILE=$T/aws-credentials AWS_EC2_METADATA_DISABLED=true
: >"$AWS_CONFIG_FILE"
anon() { "$AWS" --endpoint-url "$E/s3" --no-sign-request --region us-east-1 "$@"; }
signed() { AWS_ACCESS_KEY_ID=AKIAREADER0000000001 AWS_SECRET_ACCESS_KEY=${SECRET:-reader/Secret+Key0000000000000000000001} \
	"$AWS" --endpoint-url "$E" --region us-east-1 "$@"; }
export -f anon signed
export AWS E
S3PY="$HM_SRC/tests/integration/helpers/s3client.py"
for i in 1 2 3 4; do curl -fsS "$M/acme/shards/resolve/main/model-0000$i-of-00004.safetensors" -o "$T/want$i"; done

check "aws s3 ls through the agent: the mirror's listing" bash -c "anon s3 ls s3://hf/acme/shards/main/ >'$T/ls' && [ \$(wc -l <'$T/ls') = 7 ] && grep -q ' 3100000 model-00002-of-00004.safetensors' '$T/ls'"
check "boto3: 8 concurrent ranged GETs of shard 1 through the agent, every byte checked" \
	"$PY" "$S3PY" "$E/s3" ranges hf acme/shards/main/model-00001-of-00004.safetensors "$T/want1" 8
check "... of shard 2 at once with shard 3 (16 streams)" bash -c "
	'$PY' '$S3PY' '$E/s3' ranges hf acme/shards/main/model-00002-of-00004.safetensors '$T/want2' 8 & a=\$!
	'$PY' '$S3PY' '$E/s3' ranges hf acme/shards/main/model-00003-of-00004.safetensors '$T/want3' 8 || exit 1
	wait \$a"
check "boto3: a 1,501-key dataset listed through the agent, 700 a page" bash -c "'$PY' '$S3PY' '$E/s3' list hf-datasets acme/rows/main/ --page 700 2>'$T/pages' >'$T/rows' && [ \$(wc -l <'$T/rows') = 1501 ] && grep -qx 'pages 3' '$T/pages' && [ \"\$(sed -n 2p '$T/rows' | cut -d' ' -f1)\" = acme/rows/main/data/part-00000.txt ]"
check "a HEAD through the agent: the object's size and ETag" bash -c "anon s3api head-object --bucket hf --key acme/shards/main/model-00004-of-00004.safetensors >'$T/head' && grep -q '\"ContentLength\": 1000001' '$T/head' && grep -q ETag '$T/head'"
check "aws s3 cp --recursive through the agent" anon s3 cp --quiet --recursive s3://hf/acme/shards/main/ "$T/cp/"
for i in 1 2 3 4; do
	check "... shard $i byte for byte" cmp -s "$T/cp/model-0000$i-of-00004.safetensors" "$T/want$i"
done
check "aws s3api get-object --range through the agent" bash -c "anon s3api get-object --bucket hf --key acme/shards/main/model-00002-of-00004.safetensors --range bytes=1048000-2097999 '$T/rng' >'$T/rng.json' && cmp -s '$T/rng' <(tail -c +1048001 '$T/want2' | head -c 1050000) && grep -q '\"ContentRange\": \"bytes 1048000-2097999/3100000\"' '$T/rng.json'"
check "a range past the end: 416 InvalidRange" bash -c "[ \$(curl -s -o '$T/err' -w '%{http_code}' -r 999999- '$E/s3/hf/acme/shards/main/config.json') = 416 ] && grep -q '<Code>InvalidRange</Code>' '$T/err'"
check "a missing key: the mirror's NoSuchKey" bash -c "[ \$(curl -s -o '$T/err' -w '%{http_code}' '$E/s3/hf/acme/shards/main/nothere') = 404 ] && grep -q '<Code>NoSuchKey</Code>' '$T/err'"
# the bytes: the mirror's S3 route sent headers only; they came over the swarm and its web seed
# (the log counts the headers too: about 430 bytes an answer)
objs=$(awk '$7 ~ /^\/s3\/[^\/]+\/./ { n++ } END { print n + 0 }' "$T/access.log")
big=$(awk '$7 ~ /^\/s3\/[^\/]+\/./ && $10 > 2048 { n++ } END { print n + 0 }' "$T/access.log")
check "the mirror's S3 route answered the agent's $objs object requests with headers only ($big with a body)" \
	test "$objs" -ge 64 -a "$big" = 0
check "signed at the agent's root: the mirror checks the signature the client made" bash -c "signed s3 ls s3://hf/acme/shards/main/ | grep -q config.json"
check "... and a signed GetObject's bytes come from the agent" bash -c "signed s3 cp s3://hf/acme/shards/main/model-00004-of-00004.safetensors - | cmp -s - '$T/want4'"
url=$(AWS_ACCESS_KEY_ID=AKIAREADER0000000001 AWS_SECRET_ACCESS_KEY=reader/Secret+Key0000000000000000000001 "$PY" "$S3PY" "$E" presign hf acme/shards/main/model-00003-of-00004.safetensors 300)
check "a presigned URL for the agent (boto3): curl gets the shard" bash -c "curl -fsS '$url' | cmp -s - '$T/want3'"
check "... tampered: SignatureDoesNotMatch" bash -c "curl -s '${url/00003-of/00002-of}' | grep -q SignatureDoesNotMatch"
host=${E#http://}
printf '[default]\naccess_key = AKIAREADER0000000001\nsecret_key = reader/Secret+Key0000000000000000000001\nhost_base = %s\nhost_bucket = %s\nuse_https = False\nsignature_v2 = False\nbucket_location = us-east-1\n' "$host" "$host" >"$T/s3cfg"
check "s3cmd ls through the agent" bash -c "s3cmd -c '$T/s3cfg' ls s3://hf/acme/shards/main/ 2>&1 | grep -q 's3://hf/acme/shards/main/config.json'"
check "s3cmd get through the agent, no MD5 warning" bash -c "s3cmd -c '$T/s3cfg' get --force s3://hf/acme/shards/main/model-00001-of-00004.safetensors '$T/s3cmd.bin' >'$T/s3cmd.out' 2>&1 && cmp -s '$T/s3cmd.bin' '$T/want1' && ! grep -qi md5 '$T/s3cmd.out'"
export RCLONE_CONFIG_HM_TYPE=s3 RCLONE_CONFIG_HM_PROVIDER=Other RCLONE_CONFIG_HM_ENDPOINT=$E \
	RCLONE_CONFIG_HM_ACCESS_KEY_ID=AKIAREADER0000000001 RCLONE_CONFIG_HM_SECRET_ACCESS_KEY=reader/Secret+Key0000000000000000000001 \
	RCLONE_CONFIG_HM_FORCE_PATH_STYLE=true RCLONE_CONFIG=$T/rclone.conf
: >"$T/rclone.conf"
check "rclone copy through the agent, byte for byte" bash -c "env -u AWS_CA_BUNDLE rclone copy hm:hf/acme/shards/main '$T/rc' 2>'$T/rc-err' && diff -r '$T/rc' '$T/cp'"
# a guarded repo: the mirror admits the signed request, and the agent, which the client's signature
# cannot serve for the snapshot's torrent, asks for it with its own token
curl -fsS -H 'Authorization: Bearer tok-reader-abcdefgh' "$M/acme/guarded/resolve/main/w.safetensors" -o "$T/wantg"
check "a guarded repo through the agent anonymously: AccessDenied" bash -c "! anon s3api get-object --bucket hf --key acme/guarded/main/w.safetensors '$T/x' 2>'$T/err' && grep -q AccessDenied '$T/err'"
check "... signed with a key that grants it: its bytes, through the swarm" bash -c "signed s3 cp s3://hf/acme/guarded/main/w.safetensors - | cmp -s - '$T/wantg'"
check "... the agent holds its snapshot now" bash -c "'$HUBMIRROR' status --json | grep -q 'acme/guarded'"
check "the client was never given a capability's header" bash -c "! signed s3api head-object --bucket hf --key acme/guarded/main/config.json --debug 2>&1 | grep -qi 'x-hubmirror-capability'"
# a plain S3 client sends the agent's header to the mirror itself, signed with the key that grants the
# repo: the headers-only answer, and no capability in it
"$PY" - "$M" >"$T/head-only" <<'PY'
import http.client, sys, urllib.parse
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
m = sys.argv[1]
r = AWSRequest(method="GET", url=m + "/s3/hf/acme/guarded/main/w.safetensors", data=b"", headers={"X-Hubmirror-Head": "1"})
SigV4Auth(Credentials("AKIAREADER0000000001", "reader/Secret+Key0000000000000000000001"), "s3", "us-east-1").add_auth(r)
u = urllib.parse.urlsplit(m)
c = http.client.HTTPConnection(u.hostname, u.port)
c.request("GET", "/s3/hf/acme/guarded/main/w.safetensors", headers=dict(r.headers.items()))
a = c.getresponse()
print(a.status, len(a.read()))
for k, v in a.getheaders():
    print(k.lower() + ": " + v)
PY
check "a key holder's own X-Hubmirror-Head: the object's headers, no body" bash -c "head -1 '$T/head-only' | grep -qx '200 0' && grep -qx 'x-linked-size: 2000000' '$T/head-only'"
check "... and no capability" bash -c "! grep -qi 'capability' '$T/head-only'"
check "a made-up capability opens no torrent" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/api/p2p/torrent/hf/model/acme/guarded?cap=0.0123456789abcdef0123456789abcdef")" = 403
check "... nor its description" test "$(curl -s -o /dev/null -w '%{http_code}' "$M/api/p2p/torrent/hf/model/acme/guarded?meta=1&cap=0.0123456789abcdef0123456789abcdef")" = 403
check "a wrong secret through the agent: SignatureDoesNotMatch" bash -c "! SECRET=wrong signed s3 ls s3://hf/acme/shards/ 2>'$T/err' && grep -q SignatureDoesNotMatch '$T/err'"
# an agent without a token of its own reads open repos over S3, and says why not a guarded one
check "an agent without --token-file starts beside" "$HUBMIRROR" agent --mirror "$M" --cache "$T/cache2" --socket "$T/agent2.sock" \
	--listen 127.0.0.1:0 --http 127.0.0.1:0
E2=$(agent_endpoint --socket "$T/agent2.sock")
check "... an open object through it" bash -c "E='$E2' signed s3 cp s3://hf/acme/shards/main/config.json - | grep -q shards"
check "... a guarded one: refused, saying the agent has no token" bash -c "! E='$E2' signed s3api get-object --bucket hf --key acme/guarded/main/w.safetensors '$T/x2' >/dev/null 2>'$T/err2' && grep -q 'agent --token-file' '$T/err2' || { cat '$T/err2'; exit 1; }"
check "... and the bytes did not come" bash -c "! '$HUBMIRROR' status --json --socket '$T/agent2.sock' | grep -q 'acme/guarded'"
check "the second agent stops" "$HUBMIRROR" agent --stop --socket "$T/agent2.sock"
check "agent --stop" "$HUBMIRROR" agent --stop
finish
