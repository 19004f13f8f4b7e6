#!/usr/bin/python3
"""serve_bench.py - the serving issue's numbers, hubmirror and nginx side by side in one run.

  /usr/bin/python3 bench/serve_bench.py [--hubmirror PATH] [--gib 1] [--idle 10000]

Needs nginx and wrk (apt-get install nginx-light wrk). Builds a data directory by hand (a blob of
GIB GiB of random bytes and a small config.json, recorded through the real schema), serves it with
`hubmirror serve` and the same blob files with nginx (one worker: hubmirror is one thread; sendfile
on, access log off), and measures over loopback:
  1. GET of the big file with curl (best of 3): MB/s, ratio to nginx (target >= 0.9);
  2. /{repo}/resolve/main/config.json with wrk -c64 -t2 -d5s (GET of 16 bytes: wrk cannot do HEAD):
     requests/s and p99, against nginx serving the same file (target >= 0.5x);
  3. RSS of hubmirror with N idle keep-alive connections (target < 100 MB);
  4. the same two over HTTPS (serve --tls-cert, nginx `listen ssl` with the same EC P-256 certificate
     and its default ciphers): the big file with curl, the small one with wrk. Without kernel TLS
     (this machine's kernel has no `tls` module) both encrypt in user space, one core each.
"""
import hashlib
import os
import re
import resource
import shutil
import socket
import sqlite3
import subprocess
import tempfile
import time

import benchlib  # noqa: E402  (bench/ is the script's folder)

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)


def make_data(hm, data, gib):
    subprocess.run([hm, "init", "--data", data], check=True, stdout=subprocess.DEVNULL)
    blobs = os.path.join(data, "store", "blobs")
    files = []
    big = os.path.join(data, "big.tmp")
    subprocess.run(["dd", "if=/dev/urandom", "of=" + big, "bs=1M", "count=%d" % (gib * 1024)], check=True,
                   stderr=subprocess.DEVNULL)
    for path, src in (("model.safetensors", big), ("config.json", None)):
        if src is None:
            src = os.path.join(data, "cfg.tmp")
            open(src, "wb").write(b'{"bench": true}\n')
        h = hashlib.sha256()
        with open(src, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 22), b""):
                h.update(chunk)
        sha = h.hexdigest()
        os.makedirs(os.path.join(blobs, sha[:2]), exist_ok=True)
        dst = os.path.join(blobs, sha[:2], sha)
        os.rename(src, dst)
        files.append((path, os.path.getsize(dst), sha))
    db = sqlite3.connect(os.path.join(data, "catalog.db"))
    now = int(time.time())
    rid = db.execute("INSERT INTO repos (hub, type, name, follow_rev, added_at, sync_status) VALUES "
                     "('hf','model','bench/big','main',?,'ok')", (now,)).lastrowid
    sid = db.execute("INSERT INTO snapshots (repo_id, commit_id, synced_at, file_count, total_size, selection) "
                     "VALUES (?,?,?,?,?,?)", (rid, "a" * 40, now, 2, sum(f[1] for f in files), "x")).lastrowid
    for path, size, sha in files:
        db.execute("INSERT INTO blobs (sha256, size, stored_at) VALUES (?,?,?)", (sha, size, now))
        db.execute("INSERT INTO files VALUES (?,?,?,?,?,?)",
                   (sid, path, size, "b" * 40, sha if path.endswith("safetensors") else None, sha))
    db.execute("INSERT INTO refs VALUES (?,?,?,?,?)", (rid, "main", "branch", sid, now))
    db.commit()
    db.close()
    return {p: (s, sha) for p, s, sha in files}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def curl_rate(url, extra=()):
    best = 0
    for _ in range(3):
        out = subprocess.run(["curl", "-sS"] + list(extra) + ["-o", "/dev/null", "-w", "%{speed_download}", url],
                             capture_output=True, text=True, check=True).stdout
        best = max(best, float(out))
    return best / 1e6


def wrk(url):
    # GET of a 16-byte file, not HEAD: wrk 4.1 waits for a HEAD answer's Content-Length worth of body
    # and stalls. The work per request is the same: a catalog lookup and headers.
    out = subprocess.run(["wrk", "-t2", "-c64", "-d5s", "--latency", url],
                         capture_output=True, text=True, check=True).stdout
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)", out)
    p99 = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    return rps, p99


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def main():
    ap = benchlib.parser()
    ap.add_argument("--gib", type=int, default=1)
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--no-tls", action="store_true", help="plain HTTP only (a hubmirror without --tls-cert)")
    a = ap.parse_args()
    for tool in ("nginx", "wrk"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            raise SystemExit("serve_bench: %s is missing (apt-get install nginx-light wrk)" % tool)
    work = tempfile.mkdtemp(prefix="hm-servebench-")
    data = os.path.join(work, "data")
    files = make_data(a.hubmirror, data, a.gib)
    hm_port, ng_port, ngs_port = free_port(), free_port(), free_port()
    cert, key = os.path.join(work, "cert.pem"), os.path.join(work, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=bench",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    ready = os.path.join(work, "url")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, a.idle + 1000), hard))
    hm = subprocess.Popen([a.hubmirror, "serve", "--data", data, "--listen", "127.0.0.1:%d" % hm_port,
                           "--ready-file", ready, "--idle-timeout", "600", "--p2p-listen", "127.0.0.1:0"] +
                          ([] if a.no_tls else ["--tls-cert", cert, "--tls-key", key]), stderr=subprocess.DEVNULL)
    conf = os.path.join(work, "nginx.conf")
    open(conf, "w").write("""user root; worker_processes 1; daemon off; pid %s/nginx.pid; error_log %s/nginx.err;
events { worker_connections 20000; }
http { access_log off; sendfile on; tcp_nopush on; keepalive_requests 1000000;
  types { application/octet-stream safetensors; application/json json; }
  server { listen 127.0.0.1:%d; root %s/store/blobs; }
  server { listen 127.0.0.1:%d ssl; ssl_certificate %s; ssl_certificate_key %s; root %s/store/blobs; } }
""" % (work, work, ng_port, data, ngs_port, cert, key, data))
    ng = subprocess.Popen(["/usr/sbin/nginx", "-c", conf], stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            if os.path.exists(ready):
                break
            time.sleep(0.05)
        time.sleep(0.3)
        size, sha = files["model.safetensors"]
        csize, csha = files["config.json"]
        hm_big = "http://127.0.0.1:%d/bench/big/resolve/main/model.safetensors" % hm_port
        ng_big = "http://127.0.0.1:%d/%s/%s" % (ng_port, sha[:2], sha)
        subprocess.run(["cat", os.path.join(data, "store", "blobs", sha[:2], sha)], stdout=subprocess.DEVNULL)  # warm cache
        r_hm, r_ng = curl_rate(hm_big), curl_rate(ng_big)
        hm_head = "http://127.0.0.1:%d/bench/big/resolve/main/config.json" % hm_port
        ng_head = "http://127.0.0.1:%d/%s/%s" % (ng_port, csha[:2], csha)
        h_hm, h_ng = wrk(hm_head), wrk(ng_head)
        if not a.no_tls:
            tls = ["--cacert", cert]
            hms_big, ngs_big = hm_big.replace("http:", "https:"), "https://127.0.0.1:%d/%s/%s" % (ngs_port, sha[:2], sha)
            s_hm, s_ng = curl_rate(hms_big, tls), curl_rate(ngs_big, tls)
            hs_hm = wrk(hm_head.replace("http:", "https:"))
            hs_ng = wrk("https://127.0.0.1:%d/%s/%s" % (ngs_port, csha[:2], csha))
        base = rss_kib(hm.pid)
        socks = []
        for _ in range(a.idle):
            s = socket.create_connection(("127.0.0.1", hm_port))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: b\r\n\r\n")
            socks.append(s)
        for s in socks:
            s.recv(4096)
        time.sleep(0.5)
        idle_rss = rss_kib(hm.pid)
        for s in socks:
            s.close()
        rows = [
            ("GET %d GiB file, curl: hubmirror" % a.gib, "%.0f MB/s" % r_hm, "ratio %.2f (target >= 0.9)" % (r_hm / r_ng)),
            ("GET %d GiB file, curl: nginx (1 worker, sendfile)" % a.gib, "%.0f MB/s" % r_ng, ""),
            ("resolve config.json (16 B), wrk -c64: hubmirror", "%.0f req/s" % h_hm[0],
             "p99 %.2f ms; ratio %.2f (target >= 0.5)" % (h_hm[1], h_hm[0] / h_ng[0])),
            ("static config.json, wrk -c64: nginx (1 worker)", "%.0f req/s" % h_ng[0], "p99 %.2f ms" % h_ng[1]),
        ] + ([] if a.no_tls else [
            ("HTTPS: GET %d GiB file, curl: hubmirror" % a.gib, "%.0f MB/s" % s_hm, "ratio %.2f" % (s_hm / s_ng)),
            ("HTTPS: GET %d GiB file, curl: nginx (1 worker)" % a.gib, "%.0f MB/s" % s_ng, ""),
            ("HTTPS: resolve config.json, wrk -c64: hubmirror", "%.0f req/s" % hs_hm[0],
             "p99 %.2f ms; ratio %.2f" % (hs_hm[1], hs_hm[0] / hs_ng[0])),
            ("HTTPS: static config.json, wrk -c64: nginx (1 worker)", "%.0f req/s" % hs_ng[0], "p99 %.2f ms" % hs_ng[1]),
        ]) + [
            ("RSS with %d idle keep-alive connections" % a.idle, "%.1f MB" % (idle_rss / 1024.0),
             "%.1f MB before (target < 100 MB)" % (base / 1024.0)),
        ]
        print("| case | result | notes |")
        print("|---|---|---|")
        for r in rows:
            print("| %s | %s | %s |" % r)
    finally:
        benchlib.stop(hm, ng, work=work)


if __name__ == "__main__":
    main()
