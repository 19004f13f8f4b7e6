#!/usr/bin/env bash
# t0852-s3-signed-scope: what a signed S3 request means to the mirror is what its signature covers
# (docs/protocols/s3.md, "Access"; found by tests/fuzz/fuzz-s3). Requests are signed here by a small
# Signature Version 4 signer of the test's own (AWS's description, no SDK) and sent over raw HTTP with
# the Host the test picks, on the operator's S3 host name (--s3-domain), where the Host names the
# bucket. A model and a dataset share a name, so one key names a file in each bucket:
#  - a presigned URL whose signed headers leave out host is refused, so its Host cannot be changed
#    to another bucket's (hf.D -> hf-datasets.D read the dataset's file under the model's signature);
#  - a signed query that names a parameter twice is refused: the signature does not cover their
#    order, and the mirror read the first (two orders of one presigned listing, two listings);
#  - a parameter whose name is percent-encoded is read as the name it decodes to, as it is signed
#    ("%70refix=..." is signed as a prefix and was listed as no prefix at all).
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/twin",
   "files": [{"path": "config.json", "content": "{\"model\": 1}\n"}]},
  {"hub": "hf", "type": "dataset", "id": "acme/twin",
   "files": [{"path": "config.json", "content": "{\"dataset\": \"private rows\"}\n"}]}
 ]}
JSON
sync_from_fake hf:acme/twin hf:datasets/acme/twin
cat >"$T/s3keys" <<'KEYS'
AKIAREADER0000000001 reader/Secret+Key0000000000000000000001
KEYS
chmod 600 "$T/s3keys"
check "serve starts with S3 keys and an S3 host name" \
	start_serve --p2p-listen off --s3-keys "$T/s3keys" --s3-domain s3.hm.test
port=${M##*:}

# s3req HOST PATH PARAMS SIGNED_HEADERS: a presigned GET (PARAMS: "name=value" pairs, raw, before
# the X-Amz-* ones); prints the status and the body.
cat >"$T/s3req.py" <<'PY'
import datetime, hashlib, hmac, http.client, sys, urllib.parse

port, host, path, params, signed = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
key, secret, region = "AKIAREADER0000000001", "reader/Secret+Key0000000000000000000001", "us-east-1"
now = datetime.datetime.now(datetime.timezone.utc)
amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
raw = [p for p in params.split("&") if p] + [
    "X-Amz-Algorithm=AWS4-HMAC-SHA256",
    "X-Amz-Credential=" + urllib.parse.quote(f"{key}/{day}/{region}/s3/aws4_request", safe=""),
    "X-Amz-Date=" + amz_date, "X-Amz-Expires=300", "X-Amz-SignedHeaders=" + urllib.parse.quote(signed, safe="")]
# the canonical query: every name and value decoded, encoded again, sorted by name, then value
pairs = sorted((urllib.parse.quote(urllib.parse.unquote_plus(n), safe="-_.~"),
                urllib.parse.quote(urllib.parse.unquote_plus(v), safe="-_.~"))
               for n, _, v in (p.partition("=") for p in raw))
headers = {"host": host}
canon = "\n".join(["GET", path, "&".join(f"{n}={v}" for n, v in pairs),
                   "".join(f"{h}:{headers.get(h, '')}\n" for h in signed.split(";")), signed, "UNSIGNED-PAYLOAD"])
sts = "\n".join(["AWS4-HMAC-SHA256", amz_date, f"{day}/{region}/s3/aws4_request",
                 hashlib.sha256(canon.encode()).hexdigest()])
k = ("AWS4" + secret).encode()
for part in (day, region, "s3", "aws4_request"):
    k = hmac.new(k, part.encode(), hashlib.sha256).digest()
sig = hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
c = http.client.HTTPConnection("127.0.0.1", int(port), timeout=30)
c.putrequest("GET", path + "?" + "&".join(raw + ["X-Amz-Signature=" + sig]), skip_host=True)
c.putheader("Host", host)
c.endheaders()
r = c.getresponse()
print(r.status)
print(r.read().decode(errors="replace"))
PY
s3req() { "$PY" "$T/s3req.py" "$port" "$@"; }
# status_is N FILE [GREP]: the answer in FILE has status N (and says GREP)
status_is() { [ "$(head -1 "$2")" = "$1" ] && { [ -z "${3:-}" ] || grep -q "$3" "$2"; }; }
obj=/acme/twin/main/config.json

# signed as it should be: the model's file, the dataset's under the dataset's host
signed_host() {
	s3req hf.s3.hm.test $obj "" host >"$T/model" && status_is 200 "$T/model" '"model": 1' &&
	s3req hf-datasets.s3.hm.test $obj "" host >"$T/dataset" && status_is 200 "$T/dataset" "private rows"
}
check "a presigned URL that signs host reads the model's file on hf.D, the dataset's on hf-datasets.D" signed_host
# host left out of the signature: the Host, which names the bucket, would be anyone's to change
unsigned_host() {
	s3req hf.s3.hm.test $obj "" x-amz-date >"$T/out1" && status_is 400 "$T/out1" "must include host"
}
check "a presigned URL whose signed headers leave out host is refused (400)" unsigned_host
other_bucket() {
	s3req hf-datasets.s3.hm.test $obj "" x-amz-date >"$T/out2" && status_is 400 "$T/out2" &&
	! grep -q "private rows" "$T/out2"
}
check "... and its Host changed to another bucket's reads nothing of that bucket" other_bucket
# a parameter twice: one signature for two orders, which the mirror read as two listings
twice() {
	local p
	for p in "list-type=2&prefix=acme%2Ftwin%2F&prefix=acme%2Fnone%2F" \
		"list-type=2&prefix=acme%2Fnone%2F&prefix=acme%2Ftwin%2F"; do
		s3req s3.hm.test /hf "$p" host >"$T/out3" || return 1
		status_is 400 "$T/out3" "names a parameter twice" || return 1
	done
}
check "a signed listing that names prefix twice is refused, in either order (400)" twice
# a percent-encoded name is the name it decodes to, as the signature has it
encoded_name() {
	s3req s3.hm.test /hf "list-type=2&%70refix=acme%2Fnone%2F" host >"$T/out4" &&
	status_is 200 "$T/out4" "<KeyCount>0</KeyCount>" && ! grep -q "config.json" "$T/out4" &&
	s3req s3.hm.test /hf "list-type=2&prefix=acme%2Ftwin%2F" host >"$T/out5" &&
	status_is 200 "$T/out5" "acme/twin/main/config.json"
}
check "a signed listing's %70refix is its prefix: nothing under acme/none/, the file under acme/twin/" encoded_name
finish
