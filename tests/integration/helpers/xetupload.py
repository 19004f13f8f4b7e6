#!/usr/bin/python3
"""xetupload.py - huggingface_hub's upload through Xet, as hf_xet sends it, replayed with the standard
library (t0854-upload-xet.sh), and the attacks on it.

hf_xet cannot be installed here. Its requests are: the write token (GET .../xet-write-token/REV with the
Hub token), each xorb (POST {casUrl}/v1/xorbs/default/HASH, Bearer the write token: chunks behind their
8-byte headers, LZ4 frames or BG4-LZ4 or none, then the XETBLOB footer), the shard (POST
{casUrl}/v1/shards: the files as terms with verification hashes and sha256, the xorbs with their
chunks), then the NDJSON commit naming each file by sha256 (huggingface_hub's _commit_api.py). This
helper builds xorbs and shards itself: chunks, chunk hashes and the xorb, file and range hashes come
from the project's xet-ident (t0110 checks it against Hugging Face's own implementation), the LZ4
frames from Debian's lz4 tool; the formats are written here from the spec, field by field.

  xetupload.py MIRROR DATA_DIR XET_IDENT

Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
"""
import hashlib
import http.client
import json
import os
import struct
import subprocess
import sys
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from hfupload import Api, HubError  # noqa: E402

M, DATA, IDENT = sys.argv[1:4]
W, OTHER, READER = "hf_writer_acme_0001", "hf_writer_other_0002", "hf_reader_acme_0003"
failed = 0


def check(name, cond, detail=None):
    global failed
    print(f"{'ok' if cond else 'not ok'} - {name}" + ("" if cond or detail is None else f" ({detail})"))
    failed += 0 if cond else 1


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


def write_token(api, repo):
    t = api.request("GET", f"/api/models/{repo}/xet-write-token/main")
    return t["accessToken"], t["casUrl"]


def in_store(sha):
    return os.path.exists(os.path.join(DATA, "store", "blobs", sha[:2], sha))


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


w, other, reader = Api(M, W), Api(M, OTHER), Api(M, READER)
w.create_repo("acme/py-xet")
other.create_repo("other/secret", private=True)

# huggingface_hub's flow
tok, cas_url = write_token(w, "acme/py-xet")
check("the write token names the mirror's CAS", cas_url.startswith(M + "/"), cas_url)
good = file_of(payload(700_000, "good"))
st, ans = cas("POST", f"{cas_url}/v1/xorbs/default/{good['id']['xorb']}", tok, good["xorb"])
check("a xorb of LZ4, BG4-LZ4 and plain chunks with hf_xet's footer is taken", st == 200 and ans.get("was_inserted"),
      (st, ans))
st, ans = cas("GET", f"{cas_url}/v1/chunks/default-merkledb/{good['chunks'][0][0]}", tok)
check("the global dedup query: 404 (the mirror keeps no chunk index)", st == 404, st)
st, _ = cas("GET", f"{cas_url}/v1/chunks/default-merkledb/{good['chunks'][0][0]}", None)
check("... and 401 without a token", st == 401, st)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([good["file"]], [good["xorb_entry"]]))
check("the shard is taken", st == 200 and ans.get("result") == 1, (st, ans))
check("the file is in the store as its plain bytes, named by its sha256", in_store(good["sha"]))
c = w.commit("acme/py-xet", [{"key": "lfsFile", "value": {"path": "model.bin", "algo": "sha256",
                                                          "oid": good["sha"], "size": len(good["data"])}}], "xet")
check("the commit names it by sha256, as huggingface_hub sends it", len(c.get("commitOid", "")) == 40, c)
got = w.request("GET", "/acme/py-xet/resolve/main/model.bin", raw=True)
check("it reads back over plain HTTP byte for byte", got == good["data"], len(got))
want = {"operation": "download", "objects": [{"oid": good["sha"], "size": len(good["data"])}]}
b = w.request("POST", "/acme/py-xet.git/info/lfs/objects/batch", json.dumps(want).encode(),
              {"Accept": "application/vnd.git-lfs+json", "Content-Type": "application/vnd.git-lfs+json"})
act = b["objects"][0].get("actions", {}).get("download", {})
got = w.request("GET", act.get("href", M + "/none"), headers=act.get("header"), raw=True) if act else b""
check("... and through Git LFS's download batch, as git-lfs fetches it", got == good["data"], b)
c = w.commit("acme/py-xet", [{"key": "lfsFile", "value": {"path": "by-xet.bin", "xetHash": good["id"]["file"],
                                                          "size": len(good["data"])}}], "by xetHash")
got = w.request("GET", "/acme/py-xet/resolve/main/by-xet.bin", raw=True)
check("a commit may name it by its xetHash too, and it reads back", got == good["data"], (c, len(got)))


def commit_status(api, repo, value):
    try:
        api.commit(repo, [{"key": "lfsFile", "value": value}], "x")
        return 200
    except HubError as e:
        return e.status


def refused(name, st, want, ans):
    check(name, st == want, (st, ans))


# a forged xorb: the bytes of one under another's name, and another's bytes under its name
bad = file_of(payload(300_000, "forged"))
forged = bytearray(bad["xorb"])
forged[100] ^= 1
st, ans = cas("POST", f"{cas_url}/v1/xorbs/default/{bad['id']['xorb']}", tok, bytes(forged))
refused("a xorb whose bytes are not its hash's: 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/xorbs/default/{good['id']['xorb'][:-1]}0", tok, good["xorb"])
refused("a xorb posted under another hash: 400", st, 400, ans)
check("... nothing kept of either",
      not os.path.exists(os.path.join(DATA, "xet-uploads", bad["id"]["xorb"])) and
      not os.path.exists(os.path.join(DATA, "xet-uploads", good["id"]["xorb"][:-1] + "0")))
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([bad["file"]], []))
refused("... and a shard naming the refused xorb: 400", st, 400, ans)

# chunk-hash lies in a shard, over a xorb that was uploaded
lie = file_of(payload(400_000, "lie"))
st, ans = cas("POST", f"{cas_url}/v1/xorbs/default/{lie['id']['xorb']}", tok, lie["xorb"])
check("(a second xorb taken)", st == 200, (st, ans))
chunks = list(lie["chunks"])
chunks[1] = (good["chunks"][0][0], chunks[1][1])
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([lie["file"]], [(lie["id"]["xorb"], chunks)]))
refused("a shard listing a chunk hash its xorb does not have: 400", st, 400, ans)
fh, sha, [(xh, size, start, end, rh)] = lie["file"]
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([(fh, sha, [(xh, size, start, end, good["id"]["range"])])],
                                                             []))
refused("a term whose verification hash is not its chunks': 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([(good["id"]["file"], sha, [(xh, size, start, end, rh)])],
                                                             []))
refused("a file whose chunks are not its Xet hash: 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([(fh, good["sha"], [(xh, size, start, end, rh)])], []))
refused("a file whose bytes are not the sha256 the shard says: 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([(fh, sha, [(xh, size + 1, start, end, rh)])], []))
refused("a term whose size is not its chunks': 400", st, 400, ans)
check("... none of it in the store", not in_store(lie["sha"]))
try:
    w.commit("acme/py-xet", [{"key": "lfsFile", "value": {"path": "lie.bin", "algo": "sha256", "oid": lie["sha"],
                                                          "size": len(lie["data"])}}], "lie")
    st = 200
except HubError as e:
    st = e.status
check("... nor can a commit name it", st == 422, st)

st = commit_status(w, "acme/py-xet", {"path": "u.bin", "xetHash": bad["id"]["file"]})
check("a commit naming an unknown xetHash: 422", st == 422, st)
st = commit_status(w, "acme/py-xet", {"path": "u.bin", "xetHash": good["id"]["file"], "size": 5})
check("... or a known one with another size: 422", st == 422, st)

# another writer's private xorb
otok, ocas = write_token(other, "other/secret")
sec = file_of(payload(350_000, "secret"))
st, _ = cas("POST", f"{ocas}/v1/xorbs/default/{sec['id']['xorb']}", otok, sec["xorb"])
st2, _ = cas("POST", f"{ocas}/v1/shards", otok, make_shard([sec["file"]], [sec["xorb_entry"]]))
check("(the other writer's private file is in)", st == 200 and st2 == 200, (st, st2))
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([sec["file"]], []))
refused("a shard naming another repo's xorb: 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([sec["file"]], [sec["xorb_entry"]]))
refused("... listing it too: 400", st, 400, ans)
try:
    w.commit("acme/py-xet", [{"key": "lfsFile", "value": {"path": "stolen.bin", "algo": "sha256", "oid": sec["sha"],
                                                          "size": len(sec["data"])}}], "steal")
    st = 200
except HubError as e:
    st = e.status
check("... and its sha256 cannot be committed here", st == 422, st)
st = commit_status(w, "acme/py-xet", {"path": "stolen.bin", "xetHash": sec["id"]["file"]})
check("... nor its xetHash (another repo's file): 422", st == 422, st)

# bounds, refused from the head
st = head_only(f"{cas_url}/v1/xorbs/default/{good['id']['xorb']}", tok, 65 << 20)
check("a xorb over 64 MiB (and a footer's room) is refused before its bytes: 413", st == 413, st)
st = head_only(f"{cas_url}/v1/shards", tok, (64 << 20) + 1)
check("a shard over 64 MiB: 413", st == 413, st)

# who may write
try:
    reader.request("GET", "/api/models/acme/py-xet/xet-write-token/main")
    st = 200
except HubError as e:
    st = e.status
check("a token without a write grant gets no write token: 403", st == 403, st)
st, _ = cas("POST", f"{cas_url}/v1/shards", W, make_shard([good["file"]], []))
check("the Hub token itself is no Xet token: 401", st == 401, st)
st, _ = cas("POST", f"{cas_url}/v1/shards", tok[:-2] + ("AA" if not tok.endswith("AA") else "BB"),
            make_shard([good["file"]], []))
check("a write token altered: 401", st == 401, st)
rt = w.request("GET", "/api/models/acme/py-xet/xet-read-token/main")
rtok = rt["accessToken"]
check("reads and writes have one CAS", rt["casUrl"] == cas_url, (rt["casUrl"], cas_url))
st, _ = cas("POST", f"{cas_url}/v1/xorbs/default/{good['id']['xorb']}", rtok, good["xorb"])
check("a read token (the same writer's, the same repo) writes nothing: 401", st == 401, st)
st, _ = cas("POST", f"{cas_url}/v1/shards", rtok, make_shard([good["file"]], [good["xorb_entry"]]))
check("... nor a shard: 401", st == 401, st)
st, _ = cas("POST", f"{cas_url}/v1/shards", otok, make_shard([good["file"]], []))
check("other's token writes other's repo only: acme's xorb is not its own (400)", st == 400, st)

# the mirror serves on
got = Api(M, W).request("GET", "/acme/py-xet/resolve/main/model.bin", raw=True)
check("after all that the mirror serves the good file", got == good["data"])
sys.exit(1 if failed else 0)
