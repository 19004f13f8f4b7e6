#!/usr/bin/python3
"""st_loader.py - what model loaders do with the files, for bench/loader_bench.py.

  st_loader.py safetensors FILE...   safetensors' load_file, one file at a time on each of 4 threads
                                     (a 160-shard checkpoint too): open, mmap, read the
                                     header (8 bytes of length, then JSON), copy every tensor out of the
                                     mapping in file order into memory of its own (numpy, which lets go
                                     of the GIL while it copies, so the threads fault pages in parallel)
  st_loader.py pagefault FILE        llama.cpp's mmap pattern over a GGUF file: map it and touch one
                                     byte of every page in order (a page fault each, one thread)

Prints one JSON line: {"bytes": N, "checksum": X} (the checksum sums a few bytes of every tensor, so
that nothing is optimized away and the bytes can be compared between runs).
"""
import json
import mmap
import os
import struct
import sys
import threading

import numpy as np

THREADS = 4  # loaders read a checkpoint's shards on a few threads, one shard at a time each


def load_safetensors(path, out, i):
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    try:
        (n,) = struct.unpack("<Q", m[:8])
        header = json.loads(m[8:8 + n])
        base = 8 + n
        tensors = sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                         key=lambda kv: kv[1]["data_offsets"][0])
        total, check = 0, 0
        for _, t in tensors:
            a, b = t["data_offsets"]
            src = np.frombuffer(m, dtype=np.uint8, count=b - a, offset=base + a)
            dst = np.empty(b - a, dtype=np.uint8)
            np.copyto(dst, src)  # the copy a loader makes into its own tensor
            total += b - a
            check += int(dst[0]) + int(dst[-1]) + int(dst[len(dst) // 2])
            del src
        out[i] = (total, check)
    finally:
        m.close()


def pagefault(path):
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    try:
        a = np.frombuffer(m, dtype=np.uint8)
        page = mmap.PAGESIZE
        # a strided view: one byte per page, touched in order
        touched = a[::page]
        check = int(touched.sum(dtype=np.uint64))
        del a, touched
        return os.path.getsize(path), check
    finally:
        m.close()


def main():
    mode, files = sys.argv[1], sys.argv[2:]
    if mode == "safetensors":
        out = [None] * len(files)
        todo = iter(range(len(files)))
        lock = threading.Lock()

        def worker():
            while True:
                with lock:
                    i = next(todo, None)
                if i is None:
                    return
                load_safetensors(files[i], out, i)

        threads = [threading.Thread(target=worker) for _ in range(min(THREADS, len(files)))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if any(o is None for o in out):
            sys.exit("a shard failed")
        print(json.dumps({"bytes": sum(o[0] for o in out), "checksum": sum(o[1] for o in out)}))
    elif mode == "pagefault":
        n, check = pagefault(files[0])
        print(json.dumps({"bytes": n, "checksum": check}))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
