"""Deterministic file content for the fake hub, and its hashes.

A Blob is the content of one file: either literal bytes from the spec, or
`size` bytes generated from a `seed`.  Generated content is made of 1 MiB
blocks: block 0 is random.Random(seed).randbytes(min(size, 1 MiB)), and block
i > 0 is block 0 with its first 8 bytes replaced by i (big endian).  So a
multi-GB file streams at memory speed and never sits in memory whole, and two
files with the same (seed, size) always have the same bytes.

Hashes (sha256 and the git blob sha1 of the content) are computed on first
need, kept in memory, and for big blobs also kept in a cache directory so a
restart does not hash gigabytes again.
"""

import hashlib
import json
import os
import random
import threading

import xet

BLOCK = 1 << 20
LFS_POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {size}\n"
DISK_CACHE_MIN = 4 * BLOCK  # blobs at least this big get their hashes cached on disk
XET_MAX = 256 << 20  # bigger blobs get no Xet hash (computing one in Python takes seconds a 100 MB)

_base_lock = threading.Lock()
_base_blocks = {}  # (seed, length) -> bytes, small LRU-ish cache


def _base_block(seed, length):
    """Block 0 of a generated blob; cached because every block derives from it."""
    key = (repr(seed), length)
    with _base_lock:
        data = _base_blocks.get(key)
        if data is not None:
            return data
    data = random.Random(seed).randbytes(length)
    with _base_lock:
        if len(_base_blocks) > 64:
            _base_blocks.clear()
        _base_blocks[key] = data
    return data


def git_blob_sha1(data):
    """The git object id of a blob holding `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class HashCache:
    """Hashes of big generated blobs, stored as small JSON files in a directory."""

    def __init__(self, directory):
        self.directory = directory

    def _file(self, key):
        name = hashlib.sha1(json.dumps(key).encode()).hexdigest()
        return os.path.join(self.directory, "hash-%s.json" % name)

    def get(self, key):
        try:
            with open(self._file(key)) as f:
                value = json.load(f)
            if value.get("key") == key:
                return value["sha256"], value["sha1"]
        except (OSError, ValueError, KeyError):
            pass
        return None

    def put(self, key, sha256, sha1):
        path = self._file(key)
        tmp = "%s.%d.tmp" % (path, threading.get_ident())
        try:
            with open(tmp, "w") as f:
                json.dump({"key": key, "sha256": sha256, "sha1": sha1}, f)
            os.replace(tmp, path)
        except OSError:
            pass


class Blob:
    """The bytes of one file; literal (`data`) or generated from (`seed`, `size`), its first bytes
    replaced by `head` when given (a file format's header over generated contents)."""

    def __init__(self, size, seed=None, data=None, head=b"", unique=False, patches=()):
        self.size = size
        self.seed = seed
        self.data = data
        self.head = head[:size] if data is None else b""
        self.unique = bool(unique) and data is None    # every block random on its own
        self.patches = tuple(sorted((int(o), int(n), p) for o, n, p in patches)) if data is None else ()
        self._hashes = None
        self._lock = threading.Lock()

    @property
    def key(self):
        """A JSON-able identity: equal keys mean equal bytes."""
        if self.data is not None:
            return ["lit", hashlib.sha1(self.data).hexdigest(), self.size]
        key = ["seed", self.seed, self.size]
        if self.head:
            key.append(hashlib.sha1(self.head).hexdigest())
        if self.unique or self.patches:
            key += [self.unique, [list(p) for p in self.patches]]
        return key

    def _block(self, index):
        if self.unique:
            block = random.Random("%r:%d" % (self.seed, index)).randbytes(BLOCK)
            return block[: max(0, min(BLOCK, self.size - index * BLOCK))]
        base = _base_block(self.seed, min(self.size, BLOCK))
        block = base if index == 0 else index.to_bytes(8, "big") + base[8:]
        return block[: max(0, min(BLOCK, self.size - index * BLOCK))]

    def iter_range(self, start, end):
        """Yield the bytes [start, end) in chunks of at most 1 MiB."""
        if self.data is not None:
            for off in range(start, end, BLOCK):
                yield self.data[off:min(end, off + BLOCK)]
            return
        pos = start
        while pos < end:
            index, off = divmod(pos, BLOCK)
            block = self._block(index)
            piece = block[off:off + (end - pos)]
            if not piece:
                break
            if pos < len(self.head):
                n = min(len(piece), len(self.head) - pos)
                piece = self.head[pos:pos + n] + piece[n:]
            piece = self._patched(pos, piece)
            yield piece
            pos += len(piece)

    def _patched(self, pos, piece):
        """piece (at pos) with the patches' bytes over it: a patch (offset, size, seed) is
        random.Random(seed).randbytes(size) at offset."""
        for off, n, seed in self.patches:
            lo, hi = max(pos, off), min(pos + len(piece), off + n)
            if lo < hi:
                data = random.Random(seed).randbytes(n)
                piece = piece[:lo - pos] + data[lo - off:hi - off] + piece[hi - pos:]
        return piece

    def read(self, start=0, end=None):
        """All bytes [start, end) at once; only for small blobs."""
        end = self.size if end is None else end
        return b"".join(self.iter_range(start, end))

    def hashes(self, cache=None):
        """(sha256 hex, git blob sha1 hex) of the content, computed once."""
        with self._lock:
            if self._hashes is None:
                self._hashes = self._compute(cache)
            return self._hashes

    def _compute(self, cache):
        use_disk = cache is not None and self.data is None and self.size >= DISK_CACHE_MIN
        if use_disk:
            found = cache.get(self.key)
            if found:
                return found
        sha256 = hashlib.sha256()
        sha1 = hashlib.sha1(b"blob %d\0" % self.size)
        for chunk in self.iter_range(0, self.size):
            sha256.update(chunk)
            sha1.update(chunk)
        result = (sha256.hexdigest(), sha1.hexdigest())
        if use_disk:
            cache.put(self.key, *result)
        return result


class BlobStore:
    """Deduplicates blobs by identity and indexes them by sha256 (for the CDN)."""

    def __init__(self, cache_dir=None, xet=False, xet_max=XET_MAX, xet_lie=None):
        self.cache = HashCache(cache_dir) if cache_dir else None
        self.xet = xet              # state Xet hashes at all (--xet): computing them costs a second a 3 MB
        self.xet_max = xet_max      # bigger blobs get no Xet hash (as LFS files the Hub stores without Xet)
        self._xet_lock = threading.Lock()   # one computation at a time: a second asker waits for the first
        self.xet_lie = xet_lie      # a path whose Xet hash is stated wrong (a test of the mirror's check)
        self._xet = {}
        self._xet_chunks = {}       # Xet hash -> (blob, chunk sizes, chunk hashes): the CAS's (xetcas.py)
        self._by_key = {}
        self._by_sha256 = {}
        self._lock = threading.Lock()

    def get(self, size, seed=None, data=None, head=b"", unique=False, patches=()):
        blob = Blob(size, seed=seed, data=data, head=head, unique=unique, patches=patches)
        k = json.dumps(blob.key)
        with self._lock:
            return self._by_key.setdefault(k, blob)

    def hashes(self, blob):
        sha256, sha1 = blob.hashes(self.cache)
        with self._lock:
            self._by_sha256.setdefault(sha256, blob)
        return sha256, sha1

    def xet_hash(self, blob, path=None):
        """The Xet file hash of blob (xet.py), computed once per content; None above xet_max."""
        if not self.xet or blob.size > self.xet_max:
            return None
        k = json.dumps(blob.key)
        with self._xet_lock:
            got = self._xet.get(k)
            if got is None:
                sizes, hashes, got = xet.identity(blob.read())
                self._xet[k] = got
                self._xet_chunks[got] = (blob, sizes, hashes)
        if path is not None and path == self.xet_lie:
            got = "%x" % (int(got[0], 16) ^ 1) + got[1:]
        return got

    def by_xet(self, xet_hash):
        """(blob, chunk sizes, chunk hashes) of the content whose Xet hash is xet_hash, once stated."""
        with self._xet_lock:
            return self._xet_chunks.get(xet_hash)

    def by_sha256(self, sha256):
        with self._lock:
            return self._by_sha256.get(sha256)
