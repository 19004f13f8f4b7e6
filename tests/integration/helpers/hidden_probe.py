#!/usr/bin/python3
"""hidden_probe.py MIRROR HIDDEN MISSING SPEC.json - does the mirror answer for a repository a client may
not see exactly as for one it does not have? (t0846-private-local-hidden.sh)

SPEC.json: {"who": {NAME: {"token": T} or {"s3": [KEY_ID, SECRET]} or {}}, "vars": {VAR: [for HIDDEN,
for MISSING]}, "cases": [[LABEL, METHOD, PATH, BODY or null, {HEADER: VALUE}], ...]}. Each case is asked
about HIDDEN (an ORG/NAME) and about MISSING (one of the same length the mirror lacks), by each client
of "who" (a bearer token, an S3 key signing with Signature Version 4, or anonymous); in PATH and BODY,
{n} is the repo's name and {VAR} the variable's value for it. The two answers must have the same
status, the same headers but the volatile ones (Date, request ids) and the same body, once the name of
one is written as the other's and request ids are blanked. Prints "ok - X" / "not ok - X" lines.
"""
import http.client
import json
import re
import sys
import urllib.parse

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

M, HIDDEN, MISSING, SPEC = sys.argv[1:5]
spec = json.load(open(SPEC))
url = urllib.parse.urlsplit(M)
VOLATILE = {"date", "x-amz-request-id", "x-request-id"}
failed = 0


def ask(method, path, body, headers, who):
    h = dict(headers)
    data = body.encode() if body is not None else None
    if "token" in who:
        h["Authorization"] = "Bearer " + who["token"]
    elif "s3" in who:
        r = AWSRequest(method=method, url=M + path, data=data or b"", headers=h)
        SigV4Auth(Credentials(*who["s3"]), "s3", "us-east-1").add_auth(r)
        h = dict(r.headers.items())
    c = http.client.HTTPConnection(url.hostname, url.port, timeout=60)
    c.request(method, path, body=data, headers=h)
    r = c.getresponse()
    out = (r.status, sorted((k.lower(), v) for k, v in r.getheaders() if k.lower() not in VOLATILE), r.read())
    c.close()
    return out


def fill(s, name, i):
    if s is None:
        return None
    s = s.replace("{n}", name)
    for k, v in spec.get("vars", {}).items():
        s = s.replace("{" + k + "}", v[i])
    return s


def norm(answer, name, other):
    status, headers, body = answer
    body = body.replace(name.encode(), other.encode())
    # the request ids of AWS's XML and of ModelScope's envelope are random per answer
    body = re.sub(rb"<RequestId>[^<]*</RequestId>", b"<RequestId/>", body)
    body = re.sub(rb'"RequestId":"[^"]*"', b'"RequestId":""', body)
    # a request for a repository (/api/catalog/requests) is numbered and timed
    body = re.sub(rb'^\{"id":\d+,', b'{"id":0,', body)
    body = re.sub(rb'"requested_at":\d+', b'"requested_at":0', body)
    return status, [(k, v.replace(name, other)) for k, v in headers], body


for label, method, path, body, headers in spec["cases"]:
    for who_name, who in spec["who"].items():
        if "s3" in who and not path.startswith("/s3/"):
            continue
        a = norm(ask(method, fill(path, HIDDEN, 0), fill(body, HIDDEN, 0), headers, who), HIDDEN, MISSING)
        b = norm(ask(method, fill(path, MISSING, 1), fill(body, MISSING, 1), headers, who), MISSING, MISSING)
        same = a == b
        print(("ok - " if same else "not ok - ") + f"{label} ({who_name}): {a[0]} as for a missing repo")
        if not same:
            failed += 1
            print(f"#   private: {a[0]} {a[1]} {a[2][:300]!r}")
            print(f"#   missing: {b[0]} {b[1]} {b[2][:300]!r}")
sys.exit(1 if failed else 0)
