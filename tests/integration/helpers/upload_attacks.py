#!/usr/bin/python3
"""upload_attacks.py MIRROR DATA SCENARIO ... - attacks on the mirror's write side by a writer of one
namespace (t0844-upload-poison.sh), each result an "ok - X" or "not ok - X" line.

Tokens: hf_writer_acme_0001 writes hf:acme/*, hf_writer_evil_0003 writes hf:evil/*. DATA is the
mirror's data directory (the store's blobs are checked by sha256 there, as nobody else would).

Scenarios:
  held-part X_FILE    evil holds a part of content X open while acme uploads X whole; then evil's
                      part goes on: the published X must stay X's bytes
  foreign-complete    acme sends the parts of a private content and does not complete; evil asks
                      for its own upload of it and completes without a byte: refused, nothing gained
  busy-complete       a completion while a part of the same upload is still arriving: 409, nothing
                      changed; once the part is in, the completion goes through
  sparse              the last part of a huge declared object only, then completion: refused at once
  spent-cap           an upload URL, once its object is in, lets nobody in again
  slow-put SHA SIZE URL  evil PUTs content SHA slowly (holding it) while a client asks the mirror for
                      URL, a file of that content it fetches on demand: served, not kept waiting
"""
import hashlib
import http.client
import json
import os
import sys
import threading
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfupload  # noqa: E402
from hfupload import Api, HubError, check, status_of  # noqa: E402

M, DATA, SCENARIO, ARGS = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
ACME, EVIL = "hf_writer_acme_0001", "hf_writer_evil_0003"
CHUNK = 64 << 20




def blob_sha(oid):
    """The sha256 of the store's file named oid, or None."""
    p = os.path.join(DATA, "store", "blobs", oid[:2], oid)
    if not os.path.exists(p):
        return None
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def batch(api, repo, oid, size, multipart=True):
    body = {"operation": "upload", "transfers": ["basic", "multipart"] if multipart else ["basic"],
            "objects": [{"oid": oid, "size": size}], "hash_algo": "sha256"}
    ans = api.request("POST", f"{M}/{repo}.git/info/lfs/objects/batch", json.dumps(body).encode(), hfupload.LFS_HEADERS)
    return ans["objects"][0]


def parts_of(up):
    return sorted((int(k), v) for k, v in up["header"].items() if k.isdigit())


def complete(up, oid, nparts):
    body = json.dumps({"oid": oid, "parts": [{"partNumber": n, "etag": "x"} for n in range(1, nparts + 1)]}).encode()
    req = urllib.request.Request(up["href"], data=body, method="POST", headers=hfupload.LFS_HEADERS)
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class HeldPut:
    """A PUT whose body goes out when told: open() sends the head and `first` bytes, rest() the others."""

    def __init__(self, url, length):
        u = urllib.parse.urlsplit(url)
        self.conn = http.client.HTTPConnection(u.hostname, u.port, timeout=300)
        self.path = u.path + ("?" + u.query if u.query else "")
        self.length = length

    def open(self, first):
        self.conn.putrequest("PUT", self.path)
        self.conn.putheader("Content-Length", str(self.length))
        self.conn.endheaders()
        self.conn.send(first)

    def rest(self, data):
        try:
            self.conn.send(data)
            r = self.conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException) as e:
            return 0, str(e).encode()


def held_part(xfile):
    x = open(xfile, "rb").read()
    oid = hashlib.sha256(x).hexdigest()
    acme, evil = Api(M, ACME), Api(M, EVIL)
    evil.create_repo("evil/x", exist_ok=True)
    acme.create_repo("acme/m", exist_ok=True)
    o = batch(evil, "evil/x", oid, len(x))
    parts = parts_of(o["actions"]["upload"])
    held = HeldPut(parts[0][1], CHUNK)
    junk = b"\xee" * CHUNK
    held.open(junk[:1 << 20])  # the part is under way, its descriptor open
    time.sleep(0.5)
    # acme uploads the true bytes, whole (basic), and commits them
    up = batch(acme, "acme/m", oid, len(x), multipart=False)
    acme.put(up["actions"]["upload"]["href"], x)
    ans = acme.commit("acme/m", [{"key": "lfsFile", "value": {"path": "w.bin", "algo": "sha256", "oid": oid,
                                                               "size": len(x)}}], "weights")
    check("acme's upload of the content went in while evil's part was open", len(ans.get("commitOid", "")) == 40, ans)
    check("the store's copy is the content's bytes", blob_sha(oid) == oid)
    st, _ = held.rest(junk[1 << 20:])  # evil's held descriptor writes on
    time.sleep(0.3)
    check("after evil's part went on, the store's copy is still the content's bytes", blob_sha(oid) == oid,
          f"part answered {st}")
    req = urllib.request.Request(f"{M}/acme/m/resolve/main/w.bin", headers={"authorization": f"Bearer {ACME}"})
    got = hashlib.sha256(urllib.request.urlopen(req, timeout=120).read()).hexdigest()
    check("acme's file resolves to its bytes", got == oid)
    st, body = complete(o["actions"]["upload"], oid, len(parts))
    check("evil's completion of its junk is refused", st == 400, (st, body[:200]))
    check("... and the store's copy is still the content's bytes", blob_sha(oid) == oid)


def foreign_complete():
    acme, evil = Api(M, ACME), Api(M, EVIL)
    secret = hashlib.shake_256(b"acme's secret").digest(130 << 20)
    oid = hashlib.sha256(secret).hexdigest()
    acme.create_repo("acme/secret", private=True, exist_ok=True)
    o = batch(acme, "acme/secret", oid, len(secret))
    parts = parts_of(o["actions"]["upload"])
    for n, url in parts:  # every part sent, no completion yet
        acme.put(url, secret[(n - 1) * CHUNK:n * CHUNK])
    evil.create_repo("evil/y", exist_ok=True)
    e = batch(evil, "evil/y", oid, len(secret))
    check("evil is asked to upload the content itself", "upload" in (e.get("actions") or {}), e)
    st, body = complete(e["actions"]["upload"], oid, len(parts))
    check("evil's completion without a byte of its own is refused", st == 400, (st, body[:200]))
    st = status_of(lambda: evil.commit("evil/y", [{"key": "lfsFile", "value": {"path": "s.bin", "algo": "sha256",
                                                                              "oid": oid}}], "take it"))
    check("evil cannot commit the content", st == 422, st)
    check("the content is not in the store", blob_sha(oid) is None)
    st, body = complete(o["actions"]["upload"], oid, len(parts))
    check("acme's own completion goes through", st == 200, (st, body[:200]))
    check("... byte for byte", blob_sha(oid) == oid)
    st = status_of(lambda: evil.commit("evil/y", [{"key": "lfsFile", "value": {"path": "s.bin", "algo": "sha256",
                                                                              "oid": oid}}], "take it"))
    check("evil still cannot commit it once it is in", st == 422, st)


def busy_complete():
    acme = Api(M, ACME)
    data = hashlib.shake_256(b"busy").digest(130 << 20)
    oid = hashlib.sha256(data).hexdigest()
    acme.create_repo("acme/busy", exist_ok=True)
    o = batch(acme, "acme/busy", oid, len(data))
    up = o["actions"]["upload"]
    parts = parts_of(up)
    for n, url in parts[:-1]:
        acme.put(url, data[(n - 1) * CHUNK:n * CHUNK])
    n, url = parts[-1]
    last = data[(n - 1) * CHUNK:]
    held = HeldPut(url, len(last))
    held.open(last[:1000])
    time.sleep(0.3)
    st, body = complete(up, oid, len(parts))
    check("a completion while a part still arrives: 409", st == 409, (st, body[:200]))
    check("... nothing published", blob_sha(oid) is None)
    st, _ = held.rest(last[1000:])
    check("the part then finishes", st == 200, st)
    st, body = complete(up, oid, len(parts))
    check("and the completion goes through, byte for byte", st == 200 and blob_sha(oid) == oid, (st, body[:200]))


def sparse():
    acme = Api(M, ACME)
    acme.create_repo("acme/sparse", exist_ok=True)
    size = 16 << 30
    oid = "ab" * 32
    o = batch(acme, "acme/sparse", oid, size)
    up = o["actions"]["upload"]
    parts = parts_of(up)
    acme.put(parts[-1][1], b"\0" * (size - (len(parts) - 1) * CHUNK))
    t0 = time.monotonic()
    st, body = complete(up, oid, len(parts))
    took = time.monotonic() - t0
    msg = json.loads(body or b"{}")
    check("a completion with only the last part of 16 GiB: refused, naming the first missing part",
          st == 400 and msg.get("part") == 1, (st, body[:200]))
    print(f"# (answered in {took:.2f} s)")
    o = batch(acme, "acme/sparse", oid, 600 << 30)
    check("an object over the mirror's largest is refused in the batch", "error" in o and "actions" not in o,
          sorted(o))


def spent_cap():
    acme = Api(M, ACME)
    acme.create_repo("acme/spent", exist_ok=True)
    data = b"spent " * 1000
    oid = hashlib.sha256(data).hexdigest()
    o = batch(acme, "acme/spent", oid, len(data), multipart=False)
    href = o["actions"]["upload"]["href"]
    q = urllib.parse.parse_qs(urllib.parse.urlsplit(href).query)
    expires = int(q["cap"][0].split(".")[0])
    check("an upload URL lasts the upload's time, not an hour", expires - time.time() <= 900 + 5, expires - time.time())
    acme.put(href, data)
    st = status_of(lambda: acme.put(href, data))
    check("once its object is in, the upload URL lets nobody in", st in (401, 403), st)


def slow_put(sha, size, url):
    size = int(size)
    evil = Api(M, EVIL)
    evil.create_repo("evil/slow", exist_ok=True)
    o = batch(evil, "evil/slow", sha, size, multipart=False)
    held = HeldPut(o["actions"]["upload"]["href"], size)
    held.open(b"\0" * 1024)  # and nothing more for now
    time.sleep(0.3)
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(M + url, timeout=60) as r:
            got = hashlib.sha256(r.read()).hexdigest()
            st = r.status
    except Exception as e:  # noqa: BLE001
        got, st = None, str(e)
    check("a file of that content is served while the upload hangs", st == 200 and got == sha, st)
    print(f"# (served in {time.monotonic() - t0:.2f} s)")
    st, _ = held.rest(b"\0" * (size - 1024))
    check("evil's upload of other bytes is refused at its end", st == 400, st)
    check("the store's copy is the content's bytes", blob_sha(sha) == sha)


{"held-part": held_part, "foreign-complete": foreign_complete, "busy-complete": busy_complete, "sparse": sparse,
 "spent-cap": spent_cap, "slow-put": slow_put}[SCENARIO](*ARGS)
sys.exit(1 if hfupload.FAILED else 0)
