#!/usr/bin/env python3
"""storewatch.py STORE OUT: inotify on STORE's tmp/ and blobs/ (and each folder made under blobs/):
every name made or moved in, relative to STORE, one a line in OUT (after a first line "ready"), until
killed. lib.sh's watch_store runs it (t0873, t0882)."""
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = libc.inotify_init1(0)
IN_MOVED_TO, IN_CREATE, IN_ISDIR = 0x80, 0x100, 0x40000000
root, out = sys.argv[1], open(sys.argv[2], "w", buffering=1)
wds = {}
def watch(p):
    w = libc.inotify_add_watch(fd, p.encode(), IN_CREATE | IN_MOVED_TO)
    if w < 0:
        sys.exit("inotify_add_watch %s: %s" % (p, os.strerror(ctypes.get_errno())))
    wds[w] = p
watch(root + "/tmp")
watch(root + "/blobs")
for d in os.listdir(root + "/blobs"):
    watch(root + "/blobs/" + d)
print("ready", file=out)
while True:
    buf, i = os.read(fd, 65536), 0
    while i < len(buf):
        w, mask, _, n = struct.unpack_from("iIII", buf, i)
        name = buf[i + 16:i + 16 + n].rstrip(b"\0").decode()
        i += 16 + n
        path = wds.get(w, "?") + "/" + name
        if mask & IN_ISDIR:
            watch(path)
        print(path[len(root) + 1:], file=out)
