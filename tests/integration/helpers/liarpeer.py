#!/usr/bin/python3
"""liarpeer.py --mirror URL --torrent FILE --ready-file F: a BitTorrent peer that claims every piece
of the torrent and never sends one. It announces itself to the mirror's tracker as a seed (v1
info-hash, compact), accepts the connections the swarm's peers make to it, answers their handshake
with a bitfield of every piece and an unchoke, and then reads their requests and answers none (a
keep-alive every 20 s, so the connection stays). For a test that an agent does not wait on such a
peer. Writes "PORT" to the ready file once it has announced, and a line "handshake HASH" to stdout
for each peer that came. Stops after 300 s."""
import argparse
import os
import socket
import threading
import time
import urllib.parse
import urllib.request

import libtorrent as lt


def serve(conn, info_hash, nbits):
    try:
        conn.settimeout(30)
        hs = b""
        while len(hs) < 68:
            chunk = conn.recv(68 - len(hs))
            if not chunk:
                return
            hs += chunk
        got = hs[28:48]  # answer with the info-hash the peer asked for (v1, or v2 truncated)
        print("handshake", got.hex(), flush=True)
        conn.sendall(b"\x13BitTorrent protocol" + bytes(8) + got + b"-LI0001-" + os.urandom(6).hex().encode()[:12])
        nbytes = (nbits + 7) // 8
        field = bytearray(b"\xff" * nbytes)
        if nbits % 8:
            field[-1] = (0xFF << (8 - nbits % 8)) & 0xFF  # spare bits must be 0
        conn.sendall((1 + nbytes).to_bytes(4, "big") + b"\x05" + bytes(field))
        conn.sendall((1).to_bytes(4, "big") + b"\x01")  # unchoke
        last = time.monotonic()
        conn.settimeout(1)
        while True:
            try:
                if not conn.recv(65536):
                    return
            except socket.timeout:
                pass
            if time.monotonic() - last >= 20:
                conn.sendall(bytes(4))
                last = time.monotonic()
    except OSError:
        return
    finally:
        conn.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", required=True)
    ap.add_argument("--torrent", required=True)
    ap.add_argument("--ready-file", required=True)
    a = ap.parse_args()
    ti = lt.torrent_info(a.torrent)
    v1 = bytes.fromhex(str(ti.info_hashes().v1))
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    port = srv.getsockname()[1]
    q = urllib.parse.urlencode({"peer_id": "-LI0001-" + os.urandom(6).hex(), "port": port, "uploaded": 0,
                                "downloaded": 0, "left": 0, "compact": 1, "event": "started"})
    url = "%s/announce?info_hash=%s&%s" % (a.mirror, urllib.parse.quote_from_bytes(v1), q)
    urllib.request.urlopen(url, timeout=10).read()
    with open(a.ready_file, "w") as f:
        f.write(str(port))
    srv.settimeout(1)
    end = time.monotonic() + 300
    while time.monotonic() < end:
        try:
            c, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve, args=(c, v1, ti.num_pieces()), daemon=True).start()


if __name__ == "__main__":
    main()
