#!/usr/bin/env python3
"""bigpost.py: a large POST that stops short of its end, and what it cost the mirror's disk meanwhile
(t0849-write-spool).

    bigpost.py URL PATH DIR MIB [--chunked] [--wait-100] [-H 'Name: value']...

Sends a POST to URL+PATH declaring a body of MIB MiB (Content-Length, or chunked with --chunked),
and sends all of it but its last MiB, so that the request is still open, in a thread, while this
thread reads the answer as it comes (a server may answer before the body, as curl reads it). Once the
sending has stopped (all of it went, or the server closed), it measures the free space of the file
system of DIR, and prints "STATUS SENT_MIB DROP_MIB": the answer's status (0 if none came), how much
was sent, and how much less free space DIR's file system had than before the request. With
--wait-100 the body is sent only after an interim 100 Continue (as curl does with Expect:
100-continue); an answer that comes instead ends the request unsent.
"""
import os
import socket
import sys
import threading
import time
import urllib.parse


def free(d):
    st = os.statvfs(d)
    return st.f_bavail * st.f_frsize


def main():
    url, path, d, mib = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    chunked, wait100, headers = False, False, []
    args = sys.argv[5:]
    while args:
        a = args.pop(0)
        if a == "--chunked":
            chunked = True
        elif a == "--wait-100":
            wait100 = True
        elif a == "-H":
            headers.append(args.pop(0))
    u = urllib.parse.urlsplit(url)
    before = free(d)
    s = socket.create_connection((u.hostname, u.port))
    head = [f"POST {path} HTTP/1.1", f"Host: {u.netloc}"] + headers
    head += ["Transfer-Encoding: chunked"] if chunked else [f"Content-Length: {mib << 20}"]
    if wait100:
        head.append("Expect: 100-continue")
    s.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
    s.settimeout(120)
    sent = [0]
    go = threading.Event()
    stop = threading.Event()

    def send():
        block = bytes(1 << 20)
        frame = (b"%x\r\n" % len(block)) + block + b"\r\n" if chunked else block
        if wait100:
            go.wait()
            if stop.is_set():
                return
        try:
            for _ in range(mib - 1):
                s.sendall(frame)
                sent[0] += 1
        except OSError:
            pass  # the server closed: it wants no more

    answer = {"data": b""}
    answered = threading.Event()

    def read():
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            data += chunk
            if data.startswith(b"HTTP/1.1 100") and b"\r\n\r\n" in data:
                data = data.split(b"\r\n\r\n", 1)[1]
                go.set()
                continue
            if b"\r\n\r\n" in data:
                break
        answer["data"] = data
        stop.set()
        go.set()
        answered.set()

    t = threading.Thread(target=send)
    r = threading.Thread(target=read, daemon=True)
    t.start()
    r.start()
    # the body goes until all of it but its last MiB went or the server closed (having answered)
    t.join()
    time.sleep(0.5)  # what the server still had in its socket reaches its disk
    drop = (before - free(d)) / (1 << 20)
    answered.wait(2)  # a server that keeps the body answers only after its end: none then
    data = answer["data"]
    status = int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.1 ") else 0
    print(status, sent[0], "%.1f" % drop)
    s.close()


if __name__ == "__main__":
    main()
