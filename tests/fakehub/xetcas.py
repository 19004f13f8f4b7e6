"""The fake Hub's Xet CAS: reconstructions (v1 and v2) and xorbs, as the Hub's CAS serves them.

Files are stored as the Hub's uploaders leave them: each content's chunks (xet.py's chunking) are
placed once, in the order contents are first asked for, and a later content that shares chunks with
an earlier one names the earlier one's xorbs for them (the global dedup an upload does); only its new
chunks go into new xorbs (at most 64 MiB or 8,192 chunks each). So a revision that changes 1% of a
file is a reconstruction whose terms are mostly the old xorbs' chunks, and a client that kept those
fetches only the rest.

Routes, on the API host (a token from xet-read-token: `Authorization: Bearer xet_<commit>`):
`GET /_xet-cas/v1/reconstructions/HASH` (terms and `fetch_info`: a signed URL and an inclusive byte
range per term) and `/v2/...` (`xorbs`: per xorb, a URL and `ranges` of `{chunks, bytes}`). On the
CDN host: `GET /xorbs/default/HASH?Expires=..&X-Amz-Signature=..` with a single `Range`, its bytes
counted as content (stats' `content_bytes.cdn`) and subject to the body faults. In every xorb, every
fourth chunk (the second, sixth, ...) is an LZ4 frame (made by the `lz4` tool), the others stored
uncompressed, so a reader must decode both.
"""

import subprocess
import threading
import time

import xet
from httpbase import Answered, parse_range

XORB_MAX_BYTES = 64 << 20
XORB_MAX_CHUNKS = 8192


def lz4_frame(data):
    return subprocess.run(["lz4", "-c", "-q", "-z"], input=data, capture_output=True, check=True).stdout


def chunk_record(data, index):
    """One chunk as a xorb holds it: its 8-byte header, then its bytes (LZ4 for every fourth)."""
    body, comp = data, 0
    if index % 4 == 1:
        body, comp = lz4_frame(data), 1
    n, m = len(body), len(data)
    return bytes([0]) + n.to_bytes(3, "little") + bytes([comp]) + m.to_bytes(3, "little") + body


class Cas:
    def __init__(self):
        self.lock = threading.Lock()
        self.chunk_at = {}      # chunk hash (bytes) -> (xorb hash text, index)
        self.xorbs = {}         # xorb hash text -> (bytes, [byte offset of each chunk, and the end])
        self.files = {}         # Xet hash -> [(xorb, first chunk, end chunk, unpacked bytes)]

    def _new_xorbs(self, data, sizes, hashes, offsets):
        """Put the chunks no xorb holds yet into new xorbs."""
        groups, cur, cur_bytes, seen = [], [], 0, set()
        for i, h in enumerate(hashes):
            if h in self.chunk_at or h in seen:
                continue
            seen.add(h)
            if cur and (cur_bytes + sizes[i] > XORB_MAX_BYTES or len(cur) == XORB_MAX_CHUNKS):
                groups.append(cur)
                cur, cur_bytes = [], 0
            cur.append(i)
            cur_bytes += sizes[i]
        if cur:
            groups.append(cur)
        for g in groups:
            name = xet.hash_text(xet.merkle_root([(hashes[i], sizes[i]) for i in g]))
            body, offs = [], [0]
            for k, i in enumerate(g):
                rec = chunk_record(data[offsets[i]:offsets[i] + sizes[i]], k)
                body.append(rec)
                offs.append(offs[-1] + len(rec))
                self.chunk_at[hashes[i]] = (name, k)
            self.xorbs[name] = (b"".join(body), offs)

    def terms(self, xet_hash, found):
        """The reconstruction terms of the content found = (blob, sizes, hashes), placed at first ask."""
        with self.lock:
            got = self.files.get(xet_hash)
            if got is not None:
                return got
            blob, sizes, hashes = found
            data = blob.read()
            offsets = [0]
            for s in sizes:
                offsets.append(offsets[-1] + s)
            self._new_xorbs(data, sizes, hashes, offsets)
            out = []
            for i, h in enumerate(hashes):
                name, k = self.chunk_at[h]
                if out and out[-1][0] == name and out[-1][2] == k:
                    x, a, _, n = out[-1]
                    out[-1] = (x, a, k + 1, n + sizes[i])
                else:
                    out.append((name, k, k + 1, sizes[i]))
            self.files[xet_hash] = out
            return out

    def xorb(self, name):
        with self.lock:
            return self.xorbs.get(name)


CAS = Cas()


def xorb_url(app, name):
    path = "/xorbs/default/%s" % name
    ttl = str(app.config.cdn_expires)
    expires = str(int(time.time()) + app.config.cdn_expires)
    return "%s%s?X-Amz-Expires=%s&Expires=%s&X-Amz-Signature=%s" % (
        app.cdn_base, path, ttl, expires, app.sign(path, expires, ttl))


def merged_fetch(entries, offs):
    """One fetch range for the ranges of a xorb's terms that overlap or touch."""
    out = []
    for e in sorted(entries, key=lambda e: e["range"]["start"]):
        a, b = e["range"]["start"], e["range"]["end"]
        if out and a <= out[-1]["range"]["end"]:
            b = max(b, out[-1]["range"]["end"])
            a = out[-1]["range"]["start"]
            out.pop()
        out.append({"range": {"start": a, "end": b}, "url": e["url"],
                    "url_range": {"start": offs[a], "end": offs[b] - 1}})
    return out


def reconstruction(h, version, xet_hash):
    """GET /_xet-cas/v{1,2}/reconstructions/HASH on the API host."""
    import hfapi
    auth = h.headers.get("Authorization") or ""
    if not auth.startswith("Bearer xet_"):
        hfapi.error(h, 401, None, "Invalid Xet token")
    found = h.app.world.store.by_xet(xet_hash)
    if found is None:
        hfapi.error(h, 404, None, "File not found")
    terms = CAS.terms(xet_hash, found)
    out_terms, fetch, xorbs = [], {}, {}
    for name, a, b, n in terms:
        out_terms.append({"hash": name, "unpacked_length": n, "range": {"start": a, "end": b}})
        offs = CAS.xorb(name)[1]
        url = xorb_url(h.app, name)
        fetch.setdefault(name, []).append({"range": {"start": a, "end": b}, "url": url,
                                           "url_range": {"start": offs[a], "end": offs[b] - 1}})
        xorbs.setdefault(name, {"url": url, "ranges": []})["ranges"].append(
            {"chunks": {"start": a, "end": b}, "bytes": {"start": offs[a], "end": offs[b] - 1}})
    body = {"offset_into_first_range": 0, "terms": out_terms}
    if h.app.config.xet_fetch_merged:
        fetch = {name: merged_fetch(entries, CAS.xorb(name)[1]) for name, entries in fetch.items()}
    if version == "v1":
        body["fetch_info"] = fetch
    else:
        body["xorbs"] = {k: [v] for k, v in xorbs.items()}
    h.send_json(200, body, etag=False)
    raise Answered()


def xorb_bytes(h, name):
    """GET /xorbs/default/HASH on the CDN host: a signed URL, one Range."""
    import cdn
    app = h.app
    expires, ttl, signature = h.q("Expires", ""), h.q("X-Amz-Expires", ""), h.q("X-Amz-Signature")
    if not signature or signature != app.sign(h.raw_path, expires, ttl):
        cdn.xml_error(h, 403, "SignatureDoesNotMatch", "The request signature does not match.")
    if not expires.isdigit() or int(expires) < time.time():
        cdn.xml_error(h, 403, "AccessDenied", "Request has expired")
    got = CAS.xorb(name)
    if got is None:
        cdn.xml_error(h, 404, "NoSuchKey", "The specified key does not exist.")
    data = got[0]
    status, start, end, headers = 200, 0, len(data), [("Content-Type", "application/octet-stream")]
    rng = h.headers.get("Range")
    if rng and not h.take_fault(("ignore_range",)):
        r = parse_range(rng, len(data))
        if r == "416":
            cdn.xml_error(h, 416, "InvalidRange", "The requested range is not satisfiable")
        if r:
            status, (start, end) = 206, r
            headers.append(("Content-Range", "bytes %d-%d/%d" % (start, end - 1, len(data))))
    h.begin(status, headers, end - start)
    body = memoryview(data)[start:end]
    h.write_body((bytes(body[o:o + (1 << 20)]) for o in range(0, len(body), 1 << 20)), end - start, status, True)
    raise Answered()
