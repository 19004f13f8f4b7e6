#!/usr/bin/python3
"""upload_bench.py - the intranet hub's uploads against nginx's WebDAV PUT, side by side in one run.

  /usr/bin/python3 bench/upload_bench.py [--hubmirror PATH] [--mib 2048] [--rounds 2]

Needs nginx (apt-get install nginx-light: it has the dav module), node with tests/js's
node_modules (@huggingface/hub), git and git-lfs. One file of MIB MiB of random bytes on disk, caches dropped before
each upload (sync; echo 3 > /proc/sys/vm/drop_caches: the file is read from disk by every client), and
each way of uploading it timed from start to the server's answer, alternating, best of ROUNDS:
  1. nginx (one worker, dav_methods PUT) with `curl -T`: what a plain file server does (writes the
     bytes, no hash, no fsync); also with a `sync` after, the time until the bytes are on disk;
  2. hubmirror serve --local acme: the same bytes with `curl -T` to the upload URL the LFS batch API
     gives (the server's part alone: streamed into the store's writer, hashed, fsynced, renamed);
  3. hubmirror with the official JS client: createRepo + uploadFiles of the file (the client hashes it
     first, asks preupload and the LFS batch, PUTs it, commits): what a user waits for;
  4. the JS client's own two steps against nginx (node's SHA-256 of the file, then fetch's PUT of it):
     how much of 3 is the client's;
  5. git and git-lfs (docs/uploads.md, "git push"): `git push` of the file committed through git-lfs
     (its basic transfer's PUT, then the pack and the pre-receive hook), and with the `git add` and
     `git commit` before it (git-lfs's clean filter hashes the file and copies it into .git/lfs).
Prints each time, MB/s and the ratios to nginx (the issue's target: uploadFiles within 1.3x of
curl -T to nginx).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request

import benchlib

JS = os.path.join(benchlib.TOP, "tests", "js")
UPLOAD_JS = r"""
import { openAsBlob } from "node:fs";
import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import * as hub from "@huggingface/hub";
const [hubUrl, token, repo, path] = process.argv.slice(2);
const t0 = performance.now();
if (repo === "--plain") {
	// what the client's own steps cost against nginx: the hash it makes, then fetch's PUT of the Blob
	const blob = await openAsBlob(path);
	const h = createHash("sha256");
	for await (const b of Readable.fromWeb(blob.stream())) h.update(b);
	const r = await fetch(hubUrl, { method: "PUT", body: blob, duplex: "half" });
	if (!r.ok) throw new Error(`PUT ${r.status}`);
	console.log(JSON.stringify({ s: (performance.now() - t0) / 1000 }));
	process.exit(0);
}
await hub.createRepo({ repo: { type: "model", name: repo }, accessToken: token, hubUrl });
const blob = await openAsBlob(path);
const res = await hub.uploadFiles({ repo: { type: "model", name: repo }, accessToken: token, hubUrl,
	files: [{ path: "model.safetensors", content: blob }] });
console.log(JSON.stringify({ s: (performance.now() - t0) / 1000, oid: res.commit.oid }));
"""


def drop_caches():
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


def timed(cmd, **kw):
    t = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, **kw)
    return time.monotonic() - t


def start_nginx(work):
    root = os.path.join(work, "ng")
    os.makedirs(os.path.join(root, "up"))
    os.makedirs(os.path.join(work, "ngtmp"))
    conf = os.path.join(work, "nginx.conf")
    with open(conf, "w") as f:
        f.write("""user root; worker_processes 1; daemon off; pid %s/nginx.pid; error_log %s/nginx.err;
events { worker_connections 64; }
http { access_log off; client_max_body_size 0; client_body_temp_path %s;
  server { listen 127.0.0.1:0; root %s;
    location /up/ { dav_methods PUT DELETE; create_full_put_path on; } } }
""" % (work, work, os.path.join(work, "ngtmp"), root))
    # nginx cannot tell its port when it picked one: take a free one first
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with open(conf) as f:
        text = f.read().replace("listen 127.0.0.1:0", "listen 127.0.0.1:%d" % port)
    with open(conf, "w") as f:
        f.write(text)
    ng = subprocess.Popen(["nginx", "-c", conf], stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    return ng, "http://127.0.0.1:%d" % port, root


def start_mirror(a, work, token):
    data = os.path.join(work, "data")
    subprocess.run([a.hubmirror, "init", "--data", data], check=True, stdout=subprocess.DEVNULL)
    tokens = os.path.join(work, "tokens")
    with open(tokens, "w") as f:
        f.write("%s hf:acme/*:write\n" % token)
    os.chmod(tokens, 0o600)
    ready = os.path.join(work, "url")
    env = dict(os.environ, HUBMIRROR_CONFIG="/dev/null")
    srv = subprocess.Popen([a.hubmirror, "serve", "--data", data, "--listen", "127.0.0.1:0", "--ready-file", ready,
                            "--local", "acme", "--tokens", tokens, "--p2p-listen", "off"], env=env,
                           stderr=open(os.path.join(work, "serve.err"), "w"))
    for _ in range(100):
        if os.path.exists(ready) and open(ready).read().strip():
            break
        time.sleep(0.1)
    return srv, open(ready).read().strip(), data


def api(m, token, method, path, body, ctype="application/json"):
    req = urllib.request.Request(m + path, data=json.dumps(body).encode(), method=method,
                                 headers={"authorization": "Bearer " + token, "content-type": ctype})
    with urllib.request.urlopen(req) as r:
        return json.loads(r.read() or b"null")


def curl_to_mirror(m, token, repo, path, oid, size):
    """createRepo, the LFS batch for the object, then curl -T to its upload URL: the PUT's time."""
    org, name = repo.split("/")
    api(m, token, "POST", "/api/repos/create", {"name": name, "organization": org})
    batch = api(m, token, "POST", "/%s.git/info/lfs/objects/batch" % repo,
                {"operation": "upload", "transfers": ["basic"], "objects": [{"oid": oid, "size": size}]},
                "application/vnd.git-lfs+json")
    href = batch["objects"][0]["actions"]["upload"]["href"]
    drop_caches()
    return timed(["curl", "-fsS", "-o", "/dev/null", "-T", path, href])


def git_push_to_mirror(m, token, repo, path, work):
    """createRepo, a clone, the file committed through git-lfs (its clean filter hashes it and copies
    it into .git/lfs), then `git push` (git-lfs's basic transfer, then the pack): (add + commit, push)."""
    org, name = repo.split("/")
    api(m, token, "POST", "/api/repos/create", {"name": name, "organization": org})
    d = os.path.join(work, "g-" + name)
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", HOME=work)
    url = m.replace("http://", "http://user:%s@" % token) + "/" + repo
    subprocess.run(["git", "clone", "-q", url, d], check=True, env=env)
    for cmd in (["git", "lfs", "install", "--local"], ["git", "lfs", "track", "*.safetensors"],
                ["git", "config", "user.name", "bench"], ["git", "config", "user.email", "bench@localhost"]):
        subprocess.run(cmd, cwd=d, check=True, env=env, stdout=subprocess.DEVNULL)
    os.link(path, os.path.join(d, "model.safetensors"))
    drop_caches()
    t_add = timed(["sh", "-c", "git add -A && git commit -q -m bench"], cwd=d, env=env)
    drop_caches()
    t_push = timed(["git", "push", "-q", "origin", "main"], cwd=d, env=env)
    shutil.rmtree(d)
    return t_add, t_push


def main():
    a, work = benchlib.args("upload", mib=2048, rounds=2)
    token = "hf_bench_token_000001"
    if not shutil.which("nginx") or not os.path.isdir(os.path.join(JS, "node_modules", "@huggingface")):
        sys.exit("upload_bench: needs nginx (apt-get install nginx-light) and tests/js/node_modules")
    ng = srv = None
    try:
        path = os.path.join(work, "model.safetensors")
        h = hashlib.sha256()
        with open(path, "wb") as f:
            for _ in range(a.mib):
                b = os.urandom(1 << 20)
                h.update(b)
                f.write(b)
        oid, size = h.hexdigest(), a.mib << 20
        ng, ng_url, ng_root = start_nginx(work)
        srv, m, data = start_mirror(a, work, token)
        script = os.path.join(JS, "upload-bench.mjs")
        with open(script, "w") as f:
            f.write(UPLOAD_JS)
        best = {"nginx": 1e9, "nginx+sync": 1e9, "nginx, node hash + fetch PUT": 1e9, "mirror curl": 1e9,
                "mirror js": 1e9, "mirror git push (git-lfs)": 1e9, "mirror git add+commit+push": 1e9}
        for rnd in range(a.rounds):
            drop_caches()
            t = timed(["curl", "-fsS", "-o", "/dev/null", "-T", path, ng_url + "/up/m%d" % rnd])
            ts = t + timed(["sync"])
            best["nginx"], best["nginx+sync"] = min(best["nginx"], t), min(best["nginx+sync"], ts)
            os.unlink(os.path.join(ng_root, "up", "m%d" % rnd))
            drop_caches()
            out = subprocess.run(["node", script, ng_url + "/up/n%d" % rnd, "-", "--plain", path], cwd=JS, check=True,
                                 capture_output=True, text=True).stdout
            best["nginx, node hash + fetch PUT"] = min(best["nginx, node hash + fetch PUT"],
                                                       json.loads(out.strip().splitlines()[-1])["s"])
            os.unlink(os.path.join(ng_root, "up", "n%d" % rnd))
            best["mirror curl"] = min(best["mirror curl"], curl_to_mirror(m, token, "acme/c%d" % rnd, path, oid, size))
            # the store holds it now: drop it, so the JS client's upload writes it again
            shutil.rmtree(os.path.join(data, "store", "blobs", oid[:2]), ignore_errors=True)
            drop_caches()
            out = subprocess.run(["node", script, m, token, "acme/js%d" % rnd, path], cwd=JS, check=True,
                                 capture_output=True, text=True).stdout
            best["mirror js"] = min(best["mirror js"], json.loads(out.strip().splitlines()[-1])["s"])
            shutil.rmtree(os.path.join(data, "store", "blobs", oid[:2]), ignore_errors=True)
            t_add, t_push = git_push_to_mirror(m, token, "acme/g%d" % rnd, path, work)
            best["mirror git push (git-lfs)"] = min(best["mirror git push (git-lfs)"], t_push)
            best["mirror git add+commit+push"] = min(best["mirror git add+commit+push"], t_add + t_push)
            shutil.rmtree(os.path.join(data, "store", "blobs", oid[:2]), ignore_errors=True)
        mb = size / 1e6
        print("upload of %d MiB, caches dropped before each, best of %d:" % (a.mib, a.rounds))
        for k, v in best.items():
            print("  %-34s %7.2f s  %7.0f MB/s  %.2fx nginx, %.2fx nginx+sync" %
                  (k, v, mb / v, v / best["nginx"], v / best["nginx+sync"]))
        print("  mirror js / (node hash + fetch PUT to nginx): %.2fx" % (best["mirror js"] / best["nginx, node hash + fetch PUT"]))
    finally:
        benchlib.stop(ng, srv, work=work)
        try:
            os.unlink(os.path.join(JS, "upload-bench.mjs"))
        except OSError:
            pass


if __name__ == "__main__":
    main()
