#!/usr/bin/env bash
# t0850-s3: the mirror's read-only S3 API (docs/protocols/s3.md) with real clients: the AWS CLI (ls,
# cp --recursive, s3api get-object --range; anonymous under /s3 and signed at the root), boto3 (the
# paginated listing of a 3,000-file dataset with v2 and v1, delimiters, ranged gets, presigned URLs
# good, tampered and expired, 8 concurrent ranged GETs of a shard with every byte checked), s3cmd and
# rclone, and virtual-host addressing on the operator's S3 host name. A guarded repo is refused
# without a key and to a key whose token has no grant, and served to one whose token does; a wrong
# secret and an unknown key get AWS's codes; under --auth all nothing goes without a token. Every
# byte is compared with what the Hub API serves for the same file.
. "$HM_SRC/tests/integration/lib.sh"
AWS=/usr/bin/aws
[ -x "$AWS" ] && command -v s3cmd >/dev/null && command -v rclone >/dev/null && "$PY" -c 'import boto3' 2>/dev/null ||
	skip "needs awscli, s3cmd, rclone and python3-boto3 (Debian's)"
"$PY" - >"$T/spec.json" <<'PY'
import json
print(json.dumps({
 "tokens": {"hf_ok": {"approved": ["acme/gated"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/llm",
   "branches": {"main": "c2"}, "prs": {"1": "c1"},
   "commits": [
    {"key": "c1", "title": "first", "files": [{"path": "config.json", "content": "{\"v\": 1}\n"}]},
    {"key": "c2", "parent": "c1", "title": "second", "files": [
     {"path": "config.json", "content": "{\"hidden_size\": 64}\n"},
     {"path": "empty.txt", "content": ""},
     {"path": "sub/dir/notes a+b c.txt", "content": "spaces, a plus and \u00e9\n"},
     {"path": "model-00001-of-00002.safetensors", "size": 3000000, "seed": 5},
     {"path": "model-00002-of-00002.safetensors", "size": 2500000, "seed": 6},
     {"path": "model.safetensors.index.json", "content": "{\"weight_map\": {}}\n"}]}]},
  {"hub": "hf", "type": "dataset", "id": "acme/rows",
   "generate": {"count": 3000, "size": 16, "prefix": "data/part-", "suffix": ".txt"}},
  {"hub": "ms", "type": "model", "id": "acme/ms-model",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "w.bin", "size": 300000, "seed": 9}]},
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual",
   "files": [{"path": "config.json", "content": "{\"gated\": 1}\n"}]}
 ]}))
PY
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
# first the model's refs/pr/1 (a ref with slashes), later its main
"$HUBMIRROR" add hf:acme/llm@refs/pr/1 hf:datasets/acme/rows hf:acme/gated ms:acme/ms-model >/dev/null
HF_TOKEN=hf_ok "$HUBMIRROR" sync >/dev/null
check "synced" test "$("$HUBMIRROR" ls --json | "$PY" -c 'import json,sys; print(sum(r["sync_status"]=="ok" for r in json.load(sys.stdin)))')" = 4

cat >"$T/tokens" <<'TOK'
tok-reader-abcdefgh hf:acme/gated
tok-other-abcdefghi hf:acme/elsewhere
TOK
cat >"$T/s3keys" <<'KEYS'
# ACCESS_KEY_ID SECRET_ACCESS_KEY TOKEN
AKIAREADER0000000001 reader/Secret+Key0000000000000000000001 tok-reader-abcdefgh
AKIAOTHER00000000002 other/Secret+Key00000000000000000000002 tok-other-abcdefghi
AKIANOTOKEN000000003 notoken/Secret+Key0000000000000000000003
KEYS
chmod 600 "$T/tokens"
chmod 644 "$T/s3keys"
check "a keys file others can read is refused" bash -c "! '$HUBMIRROR' serve --listen 127.0.0.1:0 --tokens '$T/tokens' --s3-keys '$T/s3keys' 2>'$T/refused' && grep -q 'chmod 600' '$T/refused'"
chmod 600 "$T/s3keys"
check "serve starts with S3 keys" start_serve --p2p-listen off --tokens "$T/tokens" --s3-keys "$T/s3keys" --s3-domain s3.hm.test
serve_pid=${_pids[-1]}

anon() { "$AWS" --endpoint-url "$M/s3" --no-sign-request --region us-east-1 "$@"; }
as_reader() { AWS_ACCESS_KEY_ID=AKIAREADER0000000001 AWS_SECRET_ACCESS_KEY=reader/Secret+Key0000000000000000000001 \
	"$AWS" --endpoint-url "$M" --region us-east-1 "$@"; }
as_notoken() { AWS_ACCESS_KEY_ID=AKIANOTOKEN000000003 AWS_SECRET_ACCESS_KEY=notoken/Secret+Key0000000000000000000003 \
	"$AWS" --endpoint-url "$M" --region us-east-1 "$@"; }
as_other() { AWS_ACCESS_KEY_ID=AKIAOTHER00000000002 AWS_SECRET_ACCESS_KEY=other/Secret+Key00000000000000000000002 \
	"$AWS" --endpoint-url "$M" --region us-east-1 "$@"; }
export AWS_CONFIG_FILE=$T/aws-config AWS_SHARED_CREDENTIALS_FILE=$T/aws-credentials AWS_EC2_METADATA_DISABLED=true
: >"$AWS_CONFIG_FILE"
hub() { curl -fsS "$M/$1/resolve/$2/$3"; }
# (error answers by curl: each aws start costs a second, and the suite's time is bounded)
s3code() { curl -s -o "$T/err" -w '%{http_code}' "$@"; }
export -f anon as_reader as_other as_notoken hub s3code
export AWS

# ---- the AWS CLI ----
check "aws s3 ls s3://hf/acme/llm/: a revision per ref, refs/pr/1 as one segment" bash -c "anon s3 ls s3://hf/acme/llm/ | grep >/dev/null 'PRE refs%2Fpr%2F1/'"
check "... its file" test "$(anon s3 cp s3://hf/acme/llm/refs%2Fpr%2F1/config.json -)" = '{"v": 1}'
old_commit=$(curl -fsS "$M/api/models/acme/llm/revision/refs%2Fpr%2F1" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])')
"$HUBMIRROR" add hf:acme/llm >/dev/null
"$HUBMIRROR" sync hf:acme/llm >/dev/null
check "main synced" test "$(anon s3 cp s3://hf/acme/llm/main/config.json -)" = '{"hidden_size": 64}'
check "the first revision still, by its commit id" test "$(anon s3 cp "s3://hf/acme/llm/$old_commit/config.json" -)" = '{"v": 1}'
check "... which a listing under it finds" bash -c "curl -fsS '$M/s3/hf?list-type=2&prefix=acme/llm/$old_commit/' | grep -q '<Key>acme/llm/$old_commit/config.json</Key>'"
check "aws s3 ls: the buckets" bash -c "anon s3 ls >'$T/buckets' && grep -qw hf '$T/buckets' && grep -qw hf-datasets '$T/buckets' && grep -qw ms-datasets '$T/buckets'"
check "aws s3 ls s3://hf/: the orgs as folders" bash -c "anon s3 ls s3://hf/ | grep -x >/dev/null ' *PRE acme/'"
check "aws s3 ls s3://hf/acme/llm/: main" bash -c "anon s3 ls s3://hf/acme/llm/ | grep >/dev/null 'PRE main/'"
check "the gated repo is not listed to anonymous" bash -c "anon s3 ls s3://hf/acme/ >'$T/acme' && grep -q 'PRE llm/' '$T/acme' && ! grep -q gated '$T/acme'"
check "aws s3 ls --recursive of a revision lists every file with its size" \
	bash -c "anon s3 ls --recursive s3://hf/acme/llm/main/ >'$T/ls' && [ \$(wc -l <'$T/ls') = 7 ] && grep -q ' 3000000 acme/llm/main/model-00001-of-00002.safetensors' '$T/ls' && grep -q 'acme/llm/main/sub/dir/notes a+b c.txt' '$T/ls'"
check "aws s3 cp --recursive copies a model folder" anon s3 cp --quiet --recursive s3://hf/acme/llm/main/ "$T/cp/"
for f in config.json empty.txt "sub/dir/notes a+b c.txt" model-00001-of-00002.safetensors model-00002-of-00002.safetensors; do
	check "... $f is the Hub API's bytes" bash -c "cmp -s '$T/cp/$f' <(hub acme/llm main '$(printf %s "$f" | sed 's/ /%20/g; s/+/%2B/g')')"
done
check "aws s3api get-object --range" bash -c "anon s3api get-object --bucket hf --key acme/llm/main/model-00001-of-00002.safetensors --range bytes=1000-1999 '$T/range' >'$T/range.json' && cmp -s '$T/range' <(curl -fsS -r 1000-1999 '$M/acme/llm/resolve/main/model-00001-of-00002.safetensors')"
check "... says its Content-Range" grep -q '"ContentRange": "bytes 1000-1999/3000000"' "$T/range.json"
check "a range past the end: 416 InvalidRange" bash -c "[ \$(s3code -r 999999- '$M/s3/hf/acme/llm/main/config.json') = 416 ] && grep -q '<Code>InvalidRange</Code>' '$T/err'"
check "a missing key: 404 NoSuchKey" bash -c "[ \$(s3code '$M/s3/hf/acme/llm/main/nothere.json') = 404 ] && grep -q '<Code>NoSuchKey</Code>' '$T/err'"
check "a ModelScope model in bucket ms, at its master" bash -c "anon s3 ls s3://ms/acme/ms-model/ | grep >/dev/null 'PRE master/' && [ \"\$(anon s3 cp s3://ms/acme/ms-model/master/configuration.json -)\" = '{\"framework\": \"pytorch\"}' ]"
check "... its weights byte for byte with ModelScope's route" bash -c "anon s3 cp s3://ms/acme/ms-model/master/w.bin '$T/msw' >/dev/null && cmp -s '$T/msw' <(curl -fsS '$M/api/v1/models/acme/ms-model/repo?Revision=master&FilePath=w.bin')"
check "a missing bucket: 404 NoSuchBucket" bash -c "[ \$(s3code '$M/s3/hf-spaces?list-type=2') = 404 ] && grep -q '<Code>NoSuchBucket</Code>' '$T/err'"
check "HeadObject: size, ETag, Last-Modified" bash -c "curl -fsS -I '$M/s3/hf/acme/llm/main/model-00002-of-00002.safetensors' | tr -d '\r' >'$T/head' && grep -qix 'content-length: 2500000' '$T/head' && grep -qi '^etag: \"[0-9a-f]\{64\}-1\"' '$T/head' && grep -qi '^last-modified: ' '$T/head'"

# ---- guarded repos, keys and signatures ----
check "the gated repo anonymously: AccessDenied" bash -c "! anon s3api get-object --bucket hf --key acme/gated/main/config.json '$T/x' 2>'$T/err' && grep -q AccessDenied '$T/err'"
check "... saying what would open it" grep -q "needs a signed request with an access key whose token covers it" "$T/err"
check "... signed with a key whose token has no grant: AccessDenied" bash -c "! as_other s3api get-object --bucket hf --key acme/gated/main/config.json '$T/x' 2>'$T/err' && grep -q AccessDenied '$T/err'"
check "... saying the key's token does not cover it" grep -q "token does not cover this repository" "$T/err"
check "... signed with the reader's key (at the root): served" test "$(as_reader s3 cp s3://hf/acme/gated/main/config.json -)" = '{"gated": 1}'
check "... and listed to it" bash -c "as_reader s3 ls s3://hf/acme/ | grep >/dev/null 'PRE gated/'"
check "a key without a token reads what anonymous reads" test "$(as_notoken s3 cp s3://hf/acme/llm/main/config.json -)" = '{"hidden_size": 64}'
check "... and not the gated repo" bash -c "! as_notoken s3api get-object --bucket hf --key acme/gated/main/config.json '$T/x' 2>'$T/err' && grep -q AccessDenied '$T/err'"
check "a wrong secret: SignatureDoesNotMatch" bash -c "! AWS_ACCESS_KEY_ID=AKIAREADER0000000001 AWS_SECRET_ACCESS_KEY=wrong '$AWS' --endpoint-url '$M' --region us-east-1 s3 ls s3://hf/ 2>'$T/err' && grep -q SignatureDoesNotMatch '$T/err'"
check "an unknown key: InvalidAccessKeyId" bash -c "! AWS_ACCESS_KEY_ID=AKIANOBODY AWS_SECRET_ACCESS_KEY=x '$AWS' --endpoint-url '$M' --region us-east-1 s3 ls s3://hf/ 2>'$T/err' && grep -q InvalidAccessKeyId '$T/err'"
check "signed requests work in another region's signing too" bash -c "AWS_ACCESS_KEY_ID=AKIAREADER0000000001 AWS_SECRET_ACCESS_KEY=reader/Secret+Key0000000000000000000001 '$AWS' --endpoint-url '$M' --region eu-west-3 s3 ls s3://hf/acme/llm/main/ | grep >/dev/null config.json"
check "the S3 API is read-only: a PUT is refused" bash -c "[ \$(s3code -X PUT --data-binary @'$T/spec.json' '$M/s3/hf/acme/llm/main/new.json') = 405 ] && grep -q '<Code>MethodNotAllowed</Code>' '$T/err'"
check "nothing was logged of a secret" bash -c "! grep -q 'Secret+Key' '$T/serve.err' '$T/access.log'"

# ---- boto3 ----
export AWS_ACCESS_KEY_ID= AWS_SECRET_ACCESS_KEY=
S3PY="$HM_SRC/tests/integration/helpers/s3client.py"
"$PY" - "$T/want-rows" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("acme/rows/main/.gitattributes\n")
    for i in range(3000):
        f.write("acme/rows/main/data/part-%05d.txt\n" % i)
PY
check "boto3: a 3,000-file dataset, list_objects_v2 paginated" bash -c "'$PY' '$S3PY' '$M/s3' list hf-datasets acme/rows/main/ 2>'$T/pages' | cut -d' ' -f1 >'$T/rows' && cmp -s '$T/rows' '$T/want-rows'"
check "... in 4 pages of up to 1,000" grep -qx 'pages 4' "$T/pages"
check "... with pages of 700 (a continuation token each time)" bash -c "'$PY' '$S3PY' '$M/s3' list hf-datasets acme/rows/ --page 700 2>'$T/pages' | cut -d' ' -f1 >'$T/rows' && cmp -s '$T/rows' '$T/want-rows' && grep -qx 'pages 5' '$T/pages'"
check "... list_objects (v1, markers)" bash -c "'$PY' '$S3PY' '$M/s3' list hf-datasets acme/rows/main/data/ --v1 --page 900 | cut -d' ' -f1 >'$T/rows' && cmp -s '$T/rows' <(tail -n +2 '$T/want-rows')"
check "... a delimiter gives folders" bash -c "'$PY' '$S3PY' '$M/s3' list hf-datasets acme/rows/main/ --delimiter / >'$T/dl' && [ \$(wc -l <'$T/dl') = 2 ] && grep -qx 'PRE acme/rows/main/data/' '$T/dl'"
check "... and a model folder's own level" bash -c "'$PY' '$S3PY' '$M/s3' list hf acme/llm/main/ --delimiter / --page 2 >'$T/lvl' && grep -qx 'PRE acme/llm/main/sub/' '$T/lvl' && [ \$(wc -l <'$T/lvl') = 7 ]"
check "boto3: a ranged get" bash -c "'$PY' '$S3PY' '$M/s3' get hf acme/llm/main/model-00002-of-00002.safetensors --range bytes=5-104 --out '$T/r2' && cmp -s '$T/r2' <(curl -fsS -r 5-104 '$M/acme/llm/resolve/main/model-00002-of-00002.safetensors')"
hub acme/llm main model-00001-of-00002.safetensors >"$T/shard1"
check "boto3: 8 concurrent ranged GETs of a shard, every byte checked" "$PY" "$S3PY" "$M/s3" ranges hf acme/llm/main/model-00001-of-00002.safetensors "$T/shard1" 8
url=$(AWS_ACCESS_KEY_ID=AKIAREADER0000000001 AWS_SECRET_ACCESS_KEY=reader/Secret+Key0000000000000000000001 "$PY" "$S3PY" "$M" presign hf acme/gated/main/config.json 300)
check "a presigned URL (boto3) serves the gated file to curl" test "$(curl -fsS "$url")" = '{"gated": 1}'
check "... tampered, it is refused: SignatureDoesNotMatch" bash -c "curl -s '${url/acme\/gated\/main\/config.json/acme/gated/main/config.jsoN}' | grep -q SignatureDoesNotMatch"
url1=$(AWS_ACCESS_KEY_ID=AKIAREADER0000000001 AWS_SECRET_ACCESS_KEY=reader/Secret+Key0000000000000000000001 "$PY" "$S3PY" "$M" presign hf acme/gated/main/config.json 1)
sleep 2.2
check "... expired, it is refused" bash -c "[ \$(curl -s -o '$T/exp' -w '%{http_code}' '$url1') = 403 ] && grep -q 'expired' '$T/exp'"

# ---- conditional requests, by hand ----
etag=$(curl -fsS -I "$M/s3/hf/acme/llm/main/config.json" | tr -d '\r' | awk -F': ' 'tolower($1)=="etag" {print $2}')
check "If-None-Match with its ETag: 304" test "$(curl -s -o /dev/null -w '%{http_code}' -H "If-None-Match: $etag" "$M/s3/hf/acme/llm/main/config.json")" = 304
check "If-Match with another: 412" test "$(curl -s -o /dev/null -w '%{http_code}' -H 'If-Match: "x"' "$M/s3/hf/acme/llm/main/config.json")" = 412
check "the unsigned root is still the Hub's (the web page)" bash -c "curl -fsS '$M/' | grep -qi '<html'"

# ---- virtual-host addressing on the operator's S3 host name (serve --s3-domain) ----
port=${M##*:}
check "a bucket in the host name (curl)" test "$(curl -fsS -H "Host: hf.s3.hm.test:$port" "$M/acme/llm/main/config.json")" = '{"hidden_size": 64}'
check "the S3 host itself is the service, path-style" bash -c "curl -fsS -H 'Host: s3.hm.test:$port' '$M/' | grep >/dev/null ListAllMyBucketsResult"
check "boto3 with virtual-host addressing: a listing" bash -c "S3_VHOST=s3.hm.test '$PY' '$S3PY' 'http://s3.hm.test:$port' list hf acme/llm/main/ 2>/dev/null | grep >/dev/null '^acme/llm/main/config.json '"
check "... signed, the gated file" bash -c "[ \"\$(S3_VHOST=s3.hm.test AWS_ACCESS_KEY_ID=AKIAREADER0000000001 AWS_SECRET_ACCESS_KEY=reader/Secret+Key0000000000000000000001 '$PY' '$S3PY' 'http://s3.hm.test:$port' get hf acme/gated/main/config.json)\" = '{\"gated\": 1}' ]"
check "... a ranged get" bash -c "S3_VHOST=s3.hm.test '$PY' '$S3PY' 'http://s3.hm.test:$port' get hf acme/llm/main/model-00002-of-00002.safetensors --range bytes=7-9006 --out '$T/vr' && cmp -s '$T/vr' <(curl -fsS -r 7-9006 '$M/acme/llm/resolve/main/model-00002-of-00002.safetensors')"

# ---- s3cmd and rclone ----
host=${M#http://}
cat >"$T/s3cfg" <<CFG
[default]
access_key = AKIAREADER0000000001
secret_key = reader/Secret+Key0000000000000000000001
host_base = $host
host_bucket = $host
use_https = False
signature_v2 = False
bucket_location = us-east-1
CFG
check "s3cmd ls" bash -c "s3cmd -c '$T/s3cfg' ls s3://hf/acme/llm/main/ >'$T/s3cmd-ls' 2>&1 && grep -q 's3://hf/acme/llm/main/config.json' '$T/s3cmd-ls' && grep -q 'DIR.*s3://hf/acme/llm/main/sub/' '$T/s3cmd-ls'"
check "s3cmd get, with no MD5 warning" bash -c "s3cmd -c '$T/s3cfg' get --force s3://hf/acme/llm/main/model-00002-of-00002.safetensors '$T/s3cmd.bin' >'$T/s3cmd-get' 2>&1 && cmp -s '$T/s3cmd.bin' <(hub acme/llm main model-00002-of-00002.safetensors) && ! grep -qi 'md5' '$T/s3cmd-get'"
check "s3cmd get of the gated file with the reader's key" bash -c "s3cmd -c '$T/s3cfg' get --force s3://hf/acme/gated/main/config.json '$T/g.json' >/dev/null 2>&1 && grep -q gated '$T/g.json'"
export RCLONE_CONFIG_HM_TYPE=s3 RCLONE_CONFIG_HM_PROVIDER=Other RCLONE_CONFIG_HM_ENDPOINT=$M \
	RCLONE_CONFIG_HM_ACCESS_KEY_ID=AKIAREADER0000000001 RCLONE_CONFIG_HM_SECRET_ACCESS_KEY=reader/Secret+Key0000000000000000000001 \
	RCLONE_CONFIG_HM_FORCE_PATH_STYLE=true RCLONE_CONFIG=$T/rclone.conf
unset AWS_CA_BUNDLE # (a machine's own; rclone cannot take a CA bundle over plain HTTP)
: >"$T/rclone.conf"
check "rclone lsf -R a revision" bash -c "rclone lsf -R hm:hf/acme/llm/main >'$T/rc-ls' 2>'$T/rc-err' && grep -qx 'sub/dir/notes a+b c.txt' '$T/rc-ls' && grep -qx 'config.json' '$T/rc-ls'"
check "rclone copy a model folder" rclone copy hm:hf/acme/llm/main "$T/rc" 2>"$T/rc-err"
check "... byte for byte" bash -c "diff -r '$T/rc' '$T/cp'"

# ---- --auth all: no request without a valid token, and a key is its token ----
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null
check "serve starts with --auth all" start_serve --p2p-listen off --tokens "$T/tokens" --s3-keys "$T/s3keys" --auth all
check "anonymous S3: AccessDenied" bash -c "[ \$(s3code '$M/s3/hf?list-type=2') = 403 ] && grep -q '<Code>AccessDenied</Code>' '$T/err'"
check "a key without a token: AccessDenied" bash -c "! as_notoken s3 ls s3://hf/ 2>'$T/err' && grep -q AccessDenied '$T/err'"
check "the reader's key reads its grant" test "$(as_reader s3 cp s3://hf/acme/gated/main/config.json -)" = '{"gated": 1}'
finish
