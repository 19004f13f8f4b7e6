#!/usr/bin/python3
"""xetformat.py - Xet's formats written here from the spec, field by field, for the tests that replay
hf_xet's uploads (xetupload.py, t0854; t0857, t0858): a file's identity from the project's xet-ident
(t0110 checks it against Hugging Face's own implementation), xorbs with LZ4 frames from Debian's lz4
tool and BG4-LZ4, shards, and the CAS's requests.

  import xetformat; xetformat.IDENT = "<build>/tests/unit/xet-ident"
"""
import hashlib
import http.client
import json
import os
import struct
import subprocess
import urllib.parse

IDENT = None  # the path of tests/unit/xet-ident, set by the caller


def raw(h):
    """A hash's text form (four little-endian words) as its 32 bytes."""
    return b"".join(int(h[16 * i:16 * i + 16], 16).to_bytes(8, "little") for i in range(4))


def ident(data):
    path = os.path.join(os.environ.get("T", "/tmp"), "xet-ident.in")
    open(path, "wb").write(data)
    out = {"chunks": []}
    for line in subprocess.run([IDENT, path], capture_output=True, text=True, check=True).stdout.splitlines():
        w = line.split()
        if w[0] == "chunk":
            out["chunks"].append((int(w[1]), int(w[2]), w[3]))
        else:
            out[w[0]] = w[1]
    return out


def lz4(b):
    return subprocess.run(["lz4", "-c", "-q"], input=b, capture_output=True, check=True).stdout


def make_xorb(data, chunks):
    """The xorb of data's chunks: the first of every three stored as is, the second LZ4, the third BG4-LZ4;
    then a footer as hf_xet appends one (the mirror skips it)."""
    out = b""
    for i, (off, size, _) in enumerate(chunks):
        c = data[off:off + size]
        scheme = i % 3
        body = c if scheme == 0 else lz4(c) if scheme == 1 else lz4(b"".join(c[k::4] for k in range(4)))
        if len(body) >= size and scheme:
            scheme, body = 0, c
        out += bytes([0]) + len(body).to_bytes(3, "little") + bytes([scheme]) + size.to_bytes(3, "little") + body
    footer = b"XETBLOB\x01" + bytes(32) + struct.pack("<I", len(chunks)) + bytes(16)
    return out + footer + struct.pack("<I", len(footer))


TAG = b"HFRepoMetaData\x00" + bytes([85, 105, 103, 69, 106, 123, 129, 87, 131, 165, 189, 217, 92, 205, 209, 74, 169])
BOOKEND = b"\xff" * 32 + bytes(16)


def rec(h, *words):
    return raw(h) + struct.pack("<4I", *words)


def make_shard(files, xorbs):
    """files: [(file hash, sha256 hex, [(xorb hash, bytes, start, end, range hash)])];
    xorbs: [(xorb hash, [(chunk hash, size)])]."""
    s = TAG + struct.pack("<QQ", 2, 200)
    for fh, sha, terms in files:
        s += raw(fh) + struct.pack("<IIQ", 0x80000000 | 0x40000000, len(terms), 0)
        for xh, size, start, end, _ in terms:
            s += rec(xh, 0, size, start, end)
        for *_, rh in terms:
            s += raw(rh) + bytes(16)
        s += raw(sha) + bytes(16)
    s += BOOKEND
    xorb_off = len(s)
    for xh, chunks in xorbs:
        total = sum(size for _, size in chunks)
        s += raw(xh) + struct.pack("<IIII", 0, len(chunks), total, total)
        at = 0
        for ch, size in chunks:
            s += rec(ch, at, size, 0, 0)
            at += size
    s += BOOKEND
    footer = struct.pack("<QQQ", 1, 48, xorb_off) + bytes(48 + 32 + 16 + 48 + 24)
    return s + footer + struct.pack("<Q", len(s))


def cas(method, url, token, body=None, headers=None):
    """(status, JSON or text) of a CAS request."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    h = {"Authorization": f"Bearer {token}"} if token else {}
    h.update(headers or {})
    try:
        c.request(method, u.path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
    finally:
        c.close()
    try:
        return r.status, json.loads(data)
    except ValueError:
        return r.status, data


def head_only(url, token, length):
    """A POST that declares length bytes and sends none: the answer to its head."""
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    c.putrequest("POST", u.path)
    c.putheader("Authorization", f"Bearer {token}")
    c.putheader("Content-Length", str(length))
    c.putheader("Expect", "100-continue")
    c.endheaders()
    r = c.getresponse()
    r.read()
    c.close()
    return r.status


def file_of(data):
    """What one file needs: its identity, one xorb of all its chunks, its shard entry."""
    i = ident(data)
    sha = hashlib.sha256(data).hexdigest()
    chunks = [(h, size) for _, size, h in i["chunks"]]
    term = (i["xorb"], len(data), 0, len(chunks), i["range"])
    return {"data": data, "id": i, "sha": sha, "xorb": make_xorb(data, i["chunks"]), "chunks": chunks,
            "file": (i["file"], sha, [term]), "xorb_entry": (i["xorb"], chunks)}


def payload(n, seed):
    """n bytes, half random, half compressible (so that LZ4 and BG4 have something to do)."""
    r = hashlib.shake_256(seed.encode()).digest(n // 2)
    return r + bytes((i * 7) % 5 for i in range(n - n // 2))


def token_headers(mirror, hub_token, path):
    """GET a Xet token route as huggingface_hub does (utils/_xet.py: _fetch_xet_connection_info_with_url):
    (status, the connection info it parses from the answer's headers or None, the JSON body or None)."""
    u = urllib.parse.urlsplit(mirror + path)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        c.request("GET", u.path, headers={"Authorization": f"Bearer {hub_token}"})
        r = c.getresponse()
        data = r.read()
        try:  # parse_xet_connection_info_from_headers
            info = {"endpoint": r.headers["X-Xet-Cas-Url"], "access_token": r.headers["X-Xet-Access-Token"],
                    "exp": int(r.headers["X-Xet-Token-Expiration"])}
        except (KeyError, TypeError, ValueError):
            info = None
    finally:
        c.close()
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    return r.status, info, body
