"""xetjoin.py - a file put together from a Xet v1 reconstruction as hf_xet does: each term's chunks taken
from its fetch_info's url_range (one GET with that Range each), the chunk headers read and checked
(version 0, no compression), the term's chunks kept, the reconstruction's offset_into_first_range cut
off the front.

    xetjoin.py RECONSTRUCTION.json OUT [PREFIX]

With PREFIX (a base URL), every fetch URL must be PREFIX/xet-cas/xorb/...: the agent's endpoint
gives its own. A range answer of any other length, a chunk header that is off or a term whose bytes
are not its unpacked_length fails (exit status 1, with the assertion)."""
import json
import sys
import urllib.request


def main():
    rec, out_path = json.load(open(sys.argv[1])), sys.argv[2]
    prefix = sys.argv[3] if len(sys.argv) > 3 else None
    out = bytearray()
    for t in rec["terms"]:
        fi = [f for f in rec["fetch_info"][t["hash"]]
              if f["range"]["start"] <= t["range"]["start"] and f["range"]["end"] >= t["range"]["end"]][0]
        if prefix is not None:
            assert fi["url"].startswith(prefix + "/xet-cas/xorb/"), fi["url"]
        a, b = fi["url_range"]["start"], fi["url_range"]["end"]
        data = urllib.request.urlopen(urllib.request.Request(fi["url"], headers={"Range": "bytes=%d-%d" % (a, b)})).read()
        assert len(data) == b - a + 1, len(data)
        pos, idx, got = 0, fi["range"]["start"], bytearray()
        while pos < len(data):
            ver, c0, c1, c2, comp, u0, u1, u2 = data[pos:pos + 8]
            size, usize = c0 | c1 << 8 | c2 << 16, u0 | u1 << 8 | u2 << 16
            assert ver == 0 and comp == 0 and size == usize, (ver, comp, size, usize)
            if t["range"]["start"] <= idx < t["range"]["end"]:
                got += data[pos + 8:pos + 8 + size]
            pos, idx = pos + 8 + size, idx + 1
        assert len(got) == t["unpacked_length"], (len(got), t)
        out += got
    open(out_path, "wb").write(out[rec["offset_into_first_range"]:])


if __name__ == "__main__":
    main()
