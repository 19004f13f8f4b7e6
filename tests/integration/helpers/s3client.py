#!/usr/bin/python3
"""s3client.py - boto3 (Debian's) against a hubmirror S3 endpoint, for tests: each subcommand prints
what the test compares, or exits non-zero with the S3 error code on stderr.

  s3client.py ENDPOINT list BUCKET PREFIX [--v1] [--delimiter D] [--page N]
      every key (or "PRE prefix") over all pages, one per line, and the page count on stderr
  s3client.py ENDPOINT get BUCKET KEY [--range R] [--out FILE]
  s3client.py ENDPOINT presign BUCKET KEY SECONDS      a presigned GET URL
  s3client.py ENDPOINT ranges BUCKET KEY FILE THREADS  THREADS concurrent ranged GETs cover the object;
      every byte compared with FILE; prints "ok N ranges"
Keys: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in the environment, or anonymous when unset.
S3_VHOST=DOMAIN: virtual-host addressing, ENDPOINT being http://DOMAIN:PORT; DOMAIN and every name under
it resolve to 127.0.0.1 in this process only (the test's own world: no resolver is touched).
"""
import concurrent.futures
import os
import socket
import sys

import boto3
import botocore
from botocore.config import Config


def vhost(domain):
    real = socket.getaddrinfo

    def fake(host, *args, **kw):
        if isinstance(host, str) and (host == domain or host.endswith("." + domain)):
            host = "127.0.0.1"
        return real(host, *args, **kw)
    socket.getaddrinfo = fake


def client(endpoint):
    anon = not os.environ.get("AWS_ACCESS_KEY_ID")
    style = "path"
    if os.environ.get("S3_VHOST"):
        vhost(os.environ["S3_VHOST"])
        style = "virtual"
    cfg = Config(signature_version=botocore.UNSIGNED if anon else "s3v4", s3={"addressing_style": style},
                 retries={"max_attempts": 1}, max_pool_connections=32)
    return boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", config=cfg)


def main():
    endpoint, cmd, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    s3 = client(endpoint)
    try:
        if cmd == "list":
            bucket, prefix = args[0], args[1]
            v1 = "--v1" in args
            delim = args[args.index("--delimiter") + 1] if "--delimiter" in args else None
            page = int(args[args.index("--page") + 1]) if "--page" in args else 1000
            kw = {"Bucket": bucket, "Prefix": prefix, "PaginationConfig": {"PageSize": page}}
            if delim:
                kw["Delimiter"] = delim
            pages = 0
            for p in s3.get_paginator("list_objects" if v1 else "list_objects_v2").paginate(**kw):
                pages += 1
                for c in p.get("Contents", []):
                    print("%s %d %s" % (c["Key"], c["Size"], c["ETag"]))
                for c in p.get("CommonPrefixes", []):
                    print("PRE " + c["Prefix"])
            print("pages %d" % pages, file=sys.stderr)
        elif cmd == "get":
            kw = {"Bucket": args[0], "Key": args[1]}
            if "--range" in args:
                kw["Range"] = args[args.index("--range") + 1]
            r = s3.get_object(**kw)
            data = r["Body"].read()
            if "--out" in args:
                with open(args[args.index("--out") + 1], "wb") as f:
                    f.write(data)
            else:
                sys.stdout.buffer.write(data)
        elif cmd == "presign":
            print(s3.generate_presigned_url("get_object", Params={"Bucket": args[0], "Key": args[1]},
                                            ExpiresIn=int(args[2])))
        elif cmd == "ranges":
            bucket, key, path, threads = args[0], args[1], args[2], int(args[3])
            want = open(path, "rb").read()
            size = s3.head_object(Bucket=bucket, Key=key)["ContentLength"]
            assert size == len(want), (size, len(want))
            step = max(1, (size + 4 * threads - 1) // (4 * threads))
            spans = [(a, min(size, a + step) - 1) for a in range(0, size, step)]

            def fetch(span):
                a, b = span
                got = s3.get_object(Bucket=bucket, Key=key, Range="bytes=%d-%d" % (a, b))["Body"].read()
                return got == want[a:b + 1]

            with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                results = list(pool.map(fetch, spans))
            if not all(results):
                print("%d of %d ranges differ" % (results.count(False), len(results)), file=sys.stderr)
                return 1
            print("ok %d ranges" % len(spans))
        else:
            print("unknown command " + cmd, file=sys.stderr)
            return 2
    except botocore.exceptions.ClientError as e:
        print(e.response.get("Error", {}).get("Code", "?"), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
