#!/usr/bin/python3
"""cephrgw.py - a real single-node Ceph cluster with the RADOS Gateway, for the tests that need an S3
object store (Debian 12's Ceph 16.2: ceph-mon, ceph-osd, radosgw; .ci/setup installs them).

  cephrgw.py DIR --ready-file FILE [--memstore-bytes N]

As root, in DIR (made, and removed at the end) and on loopback ports of its own, it starts one monitor,
one OSD on memstore (RAM, no disk image to make: the tests store megabytes), pools of size 1, and the
RADOS Gateway; makes a user (radosgw-admin) and a bucket; waits until the gateway answers a signed
request; then writes FILE, JSON: {"endpoint", "access_key", "secret_key", "bucket", "conf", "start_s"}.
SIGUSR1 stops the gateway alone and SIGUSR2 starts it again on its port (a gateway restarted under a
running mirror); each writes FILE.gateway ("down", or "up" once it answers again) when done.
It stays in the foreground until SIGTERM/SIGINT, or until the process that started it dies (a test's
shell killed), then kills the daemons (SIGKILL: nothing of theirs is kept) and removes DIR: nothing is left
behind. Every daemon runs in the foreground as its child, dies with it (PR_SET_PDEATHSIG), and reads
DIR/ceph.conf only (-c): no system-wide Ceph configuration, data or service is read or touched.

Authentication between the daemons is off (auth none): the only credentials are the S3 user's keys,
which the gateway checks itself. Its log is DIR/log/*.log; on a failure to start it prints their tails.
"""
import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid

PR_SET_PDEATHSIG = 1
libc = ctypes.CDLL(None, use_errno=True)


def die_with_parent():
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


CONF = """[global]
fsid = {fsid}
mon host = v2:127.0.0.1:{mon_port}
mon initial members = a
auth cluster required = none
auth service required = none
auth client required = none
# a daemon's default is "secure", which auth none cannot give: the gateway would never reach the monitor
ms mon client mode = crc
ms bind ipv6 = false
run dir = {d}/run
admin socket = {d}/run/$name.asok
log file = {d}/log/$name.log
pid file = {d}/run/$name.pid
crash dir = {d}/crash
keyring = {d}/keyring
log to stderr = false
log to syslog = false
err to syslog = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 1
osd pool default pgp num = 1
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
# the gateway's first start makes its pools one after another, each a map change: propose them at once
paxos propose interval = 0.05
paxos min wait = 0.01
# the machine's disk is not ours to watch: a full /tmp must not stop the monitor mid-test
mon data avail warn = 1
mon data avail crit = 0
osd objectstore = memstore
memstore device bytes = {memstore_bytes}
osd op num shards = 1
osd op num threads per shard = 2

[mon]
mon data = {d}/mon.$id
mon cluster log file = {d}/log/cluster.log

[osd]
osd data = {d}/osd.$id

[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:{rgw_port}
rgw data = {d}/rgw
rgw thread pool size = 32
rgw enable usage log = false
rgw enable quota threads = false
"""


class Cluster:
    def __init__(self, d, memstore_bytes=1 << 30):
        self.d = os.path.abspath(d)
        self.memstore_bytes = memstore_bytes
        self.conf = os.path.join(self.d, "ceph.conf")
        self.procs = []

    def cmd(self, *args, timeout=60):
        """Run a Ceph tool against this cluster only; its output, or an exception with its words."""
        r = subprocess.run([args[0], "-c", self.conf] + list(args[1:]), capture_output=True, text=True,
            timeout=timeout, preexec_fn=die_with_parent)
        if r.returncode != 0:
            raise RuntimeError("%s: %s" % (" ".join(args[:3]), (r.stderr or r.stdout).strip()[-400:]))
        return r.stdout

    def daemon(self, *args):
        p = subprocess.Popen([args[0], "-c", self.conf, "-f"] + list(args[1:]), stdin=subprocess.DEVNULL,
            stdout=open(os.path.join(self.d, "log", "stdout"), "ab"), stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent)
        self.procs.append(p)
        return p

    def start(self):
        d = self.d
        for sub in ("run", "log", "crash", "mon.a", "osd.0", "rgw"):
            os.makedirs(os.path.join(d, sub), exist_ok=True)
        fsid = str(uuid.uuid4())
        self.mon_port, self.rgw_port = free_port(), free_port()
        with open(self.conf, "w") as f:
            f.write(CONF.format(fsid=fsid, d=d, mon_port=self.mon_port, rgw_port=self.rgw_port,
                memstore_bytes=self.memstore_bytes))
        monmap = os.path.join(d, "monmap")
        subprocess.run(["monmaptool", "--create", "--addv", "a", "[v2:127.0.0.1:%d]" % self.mon_port,
            "--fsid", fsid, monmap], check=True, capture_output=True)
        self.cmd("ceph-mon", "--mkfs", "-i", "a", "--monmap", monmap)
        self.daemon("ceph-mon", "-i", "a")
        osd_uuid = str(uuid.uuid4())
        osd_id = self.cmd("ceph", "osd", "new", osd_uuid).strip()
        self.cmd("ceph-osd", "-i", osd_id, "--mkfs", "--osd-uuid", osd_uuid)
        self.daemon("ceph-osd", "-i", osd_id)
        self.rgw = self.daemon("radosgw", "-n", "client.rgw.a")
        self.endpoint = "http://127.0.0.1:%d" % self.rgw_port
        self.access_key = "HM" + uuid.uuid4().hex[:18].upper()
        self.secret_key = uuid.uuid4().hex + uuid.uuid4().hex[:8]
        self.bucket = "hm-test"
        # the gateway writes the user into its pools, which exist once it has started
        self.wait(lambda: self.http("GET", "/") == 200, "the gateway answers")
        self.cmd("radosgw-admin", "user", "create", "--uid=hm", "--display-name=hubmirror tests",
            "--access-key=" + self.access_key, "--secret=" + self.secret_key)
        self.wait(lambda: self.http("PUT", "/" + self.bucket, signed=True) == 200, "the bucket is made")

    def gateway_stop(self):
        """Stop the gateway alone (SIGTERM, as a service restart does); the cluster stays."""
        if self.rgw in self.procs:
            self.procs.remove(self.rgw)
            self.rgw.terminate()
            try:
                self.rgw.wait(10)
            except subprocess.TimeoutExpired:
                self.rgw.kill()
                self.rgw.wait()

    def gateway_start(self):
        """Start the gateway again on its port, and wait until it answers."""
        if self.rgw not in self.procs:
            self.rgw = self.daemon("radosgw", "-n", "client.rgw.a")
            self.wait(lambda: self.http("GET", "/") == 200, "the gateway answers again")

    def http(self, method, path, signed=False):
        """A request through curl (its own SigV4; curl 7.88 wants the payload hash header given)."""
        args = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", method, "--max-time", "10"]
        if signed:
            args += ["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "--aws-sigv4", "aws:amz:us-east-1:s3",
                "--user", "%s:%s" % (self.access_key, self.secret_key)]
        r = subprocess.run(args + [self.endpoint + path], capture_output=True, text=True)
        try:
            return int(r.stdout)
        except ValueError:
            return 0

    def wait(self, ok, what, seconds=90):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError("%s exited (%d) before %s" % (p.args[0], p.returncode, what))
            if ok():
                return
            time.sleep(0.2)
        raise RuntimeError("not within %d s: %s" % (seconds, what))

    def stop(self):
        # killed, not asked to stop: their data is in RAM and DIR, both thrown away next, and a clean
        # shutdown of the three took 5 to 6 s of every test that starts a cluster
        for p in reversed(self.procs):
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []

    def logs(self):
        logdir = os.path.join(self.d, "log")
        for name in sorted(os.listdir(logdir)) if os.path.isdir(logdir) else []:
            with open(os.path.join(logdir, name), errors="replace") as f:
                lines = f.readlines()[-8:]
            sys.stderr.write("cephrgw: --- %s ---\n%s" % (name, "".join(lines)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--ready-file", required=True)
    ap.add_argument("--memstore-bytes", type=int, default=1 << 30,
        help="the OSD's store, in RAM (default 1 GiB; the benchmark's 1 GiB object needs more)")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("cephrgw: needs root (the OSD's store)")
    die_with_parent()
    asked = []

    def on_signal(sig, frame):
        raise KeyboardInterrupt

    def on_gateway(sig, frame):
        asked.append(sig)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGUSR1, on_gateway)
    signal.signal(signal.SIGUSR2, on_gateway)
    c = Cluster(a.dir, a.memstore_bytes)
    rc = 0
    try:
        t0 = time.monotonic()
        c.start()
        info = {"endpoint": c.endpoint, "access_key": c.access_key, "secret_key": c.secret_key,
            "bucket": c.bucket, "conf": c.conf, "start_s": round(time.monotonic() - t0, 2)}
        tmp = a.ready_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(info, f)
        os.rename(tmp, a.ready_file)
        while True:
            while asked:
                sig = asked.pop(0)
                if sig == signal.SIGUSR1:
                    c.gateway_stop()
                else:
                    c.gateway_start()
                with open(a.ready_file + ".gateway.tmp", "w") as f:
                    f.write("down\n" if sig == signal.SIGUSR1 else "up\n")
                os.rename(a.ready_file + ".gateway.tmp", a.ready_file + ".gateway")
            for p in c.procs:
                if p.poll() is not None:
                    raise RuntimeError("%s exited (%d)" % (p.args[0], p.returncode))
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    except Exception as e:
        sys.stderr.write("cephrgw: %s\n" % e)
        c.logs()
        rc = 1
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        c.stop()
        shutil.rmtree(c.d, ignore_errors=True)
    sys.exit(rc)


if __name__ == "__main__":
    main()
