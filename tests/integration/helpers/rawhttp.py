"""rawhttp.py - reading HTTP/1.1 answers off a plain socket, for tests that need to see which answer
comes first on which connection (no client library reorders or buffers them)."""


def read_answer(s):
    """One whole HTTP/1.1 answer (Content-Length framed) from socket s: (head, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, "closed before the head"
        data += chunk
    head, first = data.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")][0])
    rest = bytearray(first)  # (bytes += chunk copies the whole body each time: minutes for 68 MB)
    while len(rest) < n:
        chunk = s.recv(1 << 20)
        assert chunk, "closed in the body"
        rest += chunk
    return head.decode(), bytes(rest)
