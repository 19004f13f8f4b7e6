#!/usr/bin/env bash
# t0881-store-rgw-upload-parts: with a bucket behind the store, an LFS upload in parts (the multipart
# transfer) of an object bigger than the local cache streams into the bucket and never lies whole on
# local disk: parts hashed in file order as they come, a part ahead of its turn spooled until the
# parts before it came, the bucket's upload completed only once the whole hashed to the oid.
# 1. parts in order (huggingface_hub's way): in the bucket byte for byte, committed, read back; at no
#    answer did the data directory (its files but the cache's copies of other contents, and the
#    unlinked files serve holds open in it) hold as much as the object (on the code before, the
#    parts' file held all of it before the completion);
# 2. parts out of order (2, then 3, then 1), part 2 sent again while it arrives (409, the first copy
#    goes on) and once it came whole (taken, not hashed twice), a part sent again after the upload was
#    completed (403): lands byte for byte, the disk never holding the object; more parts ahead of
#    their turn than may wait: the fifth is answered 503 with Retry-After, and taken once the earlier
#    parts went in;
# 3. @huggingface/hub's upload (several parts at once) lands and reads back byte for byte;
# 4. a lying part (one byte changed): the completion is refused (400), nothing under the id, the
#    bucket's upload aborted;
# 5. a part cut short mid-body (20 MiB of it went into the bucket's upload), then sent again whole, as
#    clients retry a reset: its first 20 MiB compared with what went in, not taken twice; the upload
#    completes, byte for byte (on the code before: refused, the client to start again); sent again
#    with other bytes in what went in: refused (409), the completion too (400), the upload aborted;
# 6. serve killed mid-upload (HUBMIRROR_TEST_KILL=store-upload): nothing under the id, no file left in
#    the store's tmp/, the unfinished upload found and aborted by gc.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
check "a Ceph cluster with its gateway starts" start_rgw --memstore-bytes $((3 << 30)) # (1.5 GB go in)
rgw_store t0881 16M
printf 'hf_writer_acme_0001 hf:acme/*:write\n' >"$T/tokens"
chmod 600 "$T/tokens"
export HFU="$HM_SRC/tests/integration/helpers"
SIZE=$((128 * 1048576 + 3000000)) # 3 parts of 64 MiB at most: multipart starts at 128 MiB
s3() { rgw_s3 "$@"; }
# The test makes and uploads more than a GB and hashes what it reads back: its random bytes and its
# hashes are OpenSSL's (AES and SHA-256 in the CPU's own instructions: several times cheaper than
# /dev/urandom and sha256sum on the cores the whole suite shares), and each file's sha256 is taken
# once, as it is made.
sha() { openssl dgst -sha256 -r | cut -d' ' -f1; } # stdin's sha256
make_file() { # FILE SIZE: SIZE random bytes, their sha256 in FILE.sha
	openssl rand -out "$1" "$2" && sha <"$1" >"$1.sha"
}
uploads() { s3 GET "/?prefix=t0881%2F&uploads=" >/dev/null; grep -o '<UploadId>' "$T/s3.body" | wc -l; }
tmp_bytes() { find "$HUBMIRROR_DATA/store/tmp" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
in_bucket() { # FILE: the object under FILE's sha256 is in the bucket, byte for byte
	local h
	h=$(cat "$1.sha")
	[ "$(s3 GET "/t0881/blobs/${h:0:2}/$h")" = 200 ] && [ "$(sha <"$T/s3.body")" = "$h" ]
}
absent() { # FILE: nothing under FILE's sha256 in the bucket
	local h
	h=$(cat "$1.sha")
	[ "$(s3 HEAD "/t0881/blobs/${h:0:2}/$h")" = 404 ]
}
cat >"$T/parts.py" <<'PY'
# parts.py URL PID DATA FILE PATH ORDER [--lie N] [--again N] [--again-after N] [--cut N] [--again-cut N]
#          [--again-cut-lie] [--hold N] [--patient] [--no-commit]
# The LFS batch (multipart), the parts PUT in ORDER (e.g. 3,2,1), the completion, the commit. After each
# answer, what the data directory holds of this upload (its files but the cache's copies of other
# contents, which the reads before filled, and the unlinked files serve keeps open in it) is measured;
# the most of it is printed as "held N".
import hashlib, json, os, socket, sys, urllib.parse
sys.path.insert(0, os.environ["HFU"])
from hfupload import Api, HubError, LFS_HEADERS
m, pid, data, path, name, order = sys.argv[1:7]
opt = sys.argv[7:]
flag = lambda k: int(opt[opt.index(k) + 1]) if k in opt else 0
api = Api(m, "hf_writer_acme_0001")
c = open(path, "rb").read()
oid = hashlib.sha256(c).hexdigest()
held = 0

def measure():
    global held
    n = 0
    for d, _, files in os.walk(data):
        for f in files:
            if "/store/blobs/" in d + "/" and not f.startswith(oid):
                continue
            try:
                n += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                pass
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
            if t.startswith(data) and t.endswith("(deleted)"):
                n += os.stat(f"/proc/{pid}/fd/{fd}").st_size
        except OSError:
            pass
    held = max(held, n)

def cut(url, body, upto): # a PUT whose connection closes after upto bytes of its body
    u = urllib.parse.urlsplit(url)
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(f"PUT {u.path}?{u.query} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Length: {len(body)}\r\n\r\n".encode())
    s.sendall(body[:upto])
    s.close()

api.create_repo("acme/parts", exist_ok=True)
body = {"operation": "upload", "transfers": ["basic", "multipart"], "objects": [{"oid": oid, "size": len(c)}],
        "hash_algo": "sha256", "ref": {"name": "main"}}
o = api.request("POST", f"{api.endpoint}/acme/parts.git/info/lfs/objects/batch", json.dumps(body).encode(),
                LFS_HEADERS)["objects"][0]
up = o["actions"]["upload"]
chunk = int(up["header"]["chunk_size"])
urls = {int(k): v for k, v in up["header"].items() if k.isdigit()}
etags, refused = {}, set()

def put(n, lie=False):
    b = c[(n - 1) * chunk:n * chunk]
    if lie:
        b = b[:1000] + bytes([b[1000] ^ 1]) + b[1001:]
    for attempt in range(600):
        try:
            etags[n] = api.put(urls[n], b).get("etag")
            print(f"part {n} 200")
        except HubError as e:
            print(f"part {n} {e.status} {e.body[:200]!r}")
            if e.status == 409 and n == flag("--again-cut") and b"arriving" in e.body:
                import time; time.sleep(0.1) # (serve has not seen the cut connection close yet)
                continue
            if e.status == 503:
                print(f"part {n} retry-after {e.headers.get('Retry-After')}")
                if "--patient" in opt and n in refused: # (sent again: as a client does, until it is taken)
                    import time; time.sleep(0.2)
                    continue
                refused.add(n)
        break
    measure()

def spooling(): # serve holds an unlinked file in the data directory with bytes in it
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            t = os.readlink(f"/proc/{pid}/fd/{fd}")
            if t.startswith(data) and t.endswith("(deleted)") and os.stat(f"/proc/{pid}/fd/{fd}").st_size:
                return True
        except OSError:
            pass
    return False

if flag("--hold"): # part N's first 10 MiB, then the same part again while it arrives, then the rest
    import time
    n = flag("--hold")
    b = c[(n - 1) * chunk:n * chunk]
    u = urllib.parse.urlsplit(urls[n])
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(f"PUT {u.path}?{u.query} HTTP/1.1\r\nHost: {u.netloc}\r\nContent-Length: {len(b)}\r\n\r\n".encode())
    s.sendall(b[:10 << 20])
    for _ in range(3000):
        if spooling():
            break
        time.sleep(0.05)
    put(n)
    s.sendall(b[10 << 20:])
    head = b""
    while b"\r\n\r\n" not in head:
        got = s.recv(65536)
        if not got:
            break
        head += got
    s.close()
    print(f"part {n} first {head.split(b' ')[1].decode() if head else 'none'}")
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"etag:"):
            etags[n] = line.split(b":", 1)[1].strip().decode()

for n in [int(x) for x in order.split(",")] if order else []:
    if n == flag("--cut"):
        cut(urls[n], c[(n - 1) * chunk:n * chunk], 20 << 20)
        print(f"part {n} cut")
        continue
    put(n, n == flag("--lie"))
    if n == flag("--again"):
        put(n)
for n in [flag("--again-cut")] if flag("--again-cut") else []:
    put(n, "--again-cut-lie" in opt)
done = {"oid": oid, "parts": [{"partNumber": n, "etag": etags.get(n, "")} for n in sorted(urls)]}
for attempt in range(600): # (a part cut short is answered 409 until serve saw the connection close)
    try:
        api.request("POST", up["href"], json.dumps(done).encode(), LFS_HEADERS)
        print("complete 200")
    except HubError as e:
        print(f"complete {e.status} {e.body[:200]!r}")
        if e.status == 409 and flag("--cut"):
            import time; time.sleep(0.1)
            continue
    break
measure()
if flag("--again-after"):
    put(flag("--again-after"))
if "--no-commit" not in opt:
    ans = api.commit("acme/parts", [{"key": "lfsFile", "value": {"path": name, "algo": "sha256", "oid": oid,
                                                                  "size": len(c)}}])
    print("commit", "200" if len(ans.get("commitOid", "")) == 40 else ans)
print("held", held)
PY
parts() { # ARGS of parts.py after URL PID DATA: its output in $T/parts.out
	"$PY" "$T/parts.py" "$M" "$serve_pid" "$HUBMIRROR_DATA" "$@" >"$T/parts.out" 2>&1
	sed 's/^/# /' "$T/parts.out"
}
said() { grep -qx -- "$1" "$T/parts.out"; }
held_less() { test "$(sed -n 's/^held //p' "$T/parts.out")" -lt "$SIZE"; }
resolve_is() { # PATH FILE
	[ "$(curl -fsS "$M/acme/parts/resolve/main/$1" | sha)" = "$(cat "$2.sha")" ]
}

check "serve starts" start_serve --local acme --tokens "$T/tokens" --p2p-listen off
serve_pid=${_pids[-1]}

# 1. in order
make_file "$T/a.bin" "$SIZE"
parts "$T/a.bin" a.bin 1,2,3
check "parts in order: each taken" bash -c "grep -c '^part [123] 200$' '$T/parts.out' | grep -qx 3"
check "the completion is taken" said "complete 200"
check "the commit names it" said "commit 200"
check "the data directory never held the object (held $(sed -n 's/^held //p' "$T/parts.out") of $SIZE)" held_less
check "the object is in the bucket, byte for byte" in_bucket "$T/a.bin"
a=$(cat "$T/a.bin.sha")
check "the cache keeps no copy of it" test ! -e "$HUBMIRROR_DATA/store/blobs/${a:0:2}/$a"
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "no upload is left" test "$(uploads)" = 0
check "resolve reads it back, byte for byte" resolve_is a.bin "$T/a.bin"

# 2. out of order: part 2 first, sent again while it still arrives, then 3, 2 again once whole, 1; a
#    part sent again after the completion
make_file "$T/b.bin" "$SIZE"
parts "$T/b.bin" b.bin 3,2,1 --hold 2 --again-after 1
check "part 2 sent again while it arrives is refused (409)" bash -c "grep -q '^part 2 409' '$T/parts.out'"
check "its first copy is taken" said "part 2 first 200"
check "parts out of order, part 2 again once whole: each taken" bash -c "grep -c '^part [123] 200$' '$T/parts.out' | grep -qx 3"
check "the completion is taken" said "complete 200"
check "a part sent after the completion is refused (its URL is spent)" bash -c "grep -q '^part 1 403' '$T/parts.out'"
check "the commit names it" said "commit 200"
check "the data directory never held the object (held $(sed -n 's/^held //p' "$T/parts.out") of $SIZE)" held_less
check "the object is in the bucket, byte for byte" in_bucket "$T/b.bin"
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "no upload is left" test "$(uploads)" = 0
check "resolve reads it back, byte for byte" resolve_is b.bin "$T/b.bin"

# 2b. more parts ahead of their turn than may wait: the fifth is answered 503 (Retry-After) until
#     the earlier ones went in, then taken
BIG=$((5 * 64 * 1048576 + 1048576))
make_file "$T/f.bin" "$BIG"
parts "$T/f.bin" f.bin 2,3,4,5,6,1,6 --patient
check "four parts wait spooled" bash -c "grep -c '^part [2345] 200$' '$T/parts.out' | grep -qx 4"
check "the fifth is answered 503 with Retry-After" bash -c "grep -q '^part 6 retry-after 5$' '$T/parts.out'"
check "sent again once the earlier ones went in, it is taken" said "part 6 200"
check "the completion is taken" said "complete 200"
check "the data directory never held the object (held $(sed -n 's/^held //p' "$T/parts.out") of $BIG)" \
	test "$(sed -n 's/^held //p' "$T/parts.out")" -lt "$BIG"
check "the object is in the bucket, byte for byte" in_bucket "$T/f.bin"
rm -f "$T/f.bin" "$T/s3.body"

# 3. the JS client, several parts at once
JS=$HM_SRC/tests/js
if command -v node >/dev/null && [ -f "$JS/node_modules/@huggingface/hub/package.json" ]; then
	n=0
	while IFS= read -r line; do
		echo "# hfjs: $line"
		case $line in "ok - "*) n=$((n + 1)) ;; "not ok - "*) n=-100 ;; esac
	done < <(cd "$JS" && timeout 280 node hfupload.mjs --hub-url "$M" --token hf_writer_acme_0001 --repo acme/js \
		--size "$SIZE" --no-xet 2>&1)
	check "@huggingface/hub's upload in parallel parts lands and reads back byte for byte" test "$n" -ge 5
	check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0
	check "no upload is left" test "$(uploads)" = 0
fi

# 4. a lying part
make_file "$T/c.bin" "$SIZE"
parts "$T/c.bin" c.bin 1,2,3 --lie 2 --no-commit
check "the lying part is taken as a part" said "part 2 200"
check "the completion is refused (400)" bash -c "grep -q '^complete 400' '$T/parts.out'"
check "nothing under its id" absent "$T/c.bin"
check "the bucket's upload was aborted" test "$(uploads)" = 0
check "no temporary file holds a byte ($(tmp_bytes))" test "$(tmp_bytes)" = 0

# 5. a part cut short mid-body, then sent again whole; then another cut and sent again with other bytes
make_file "$T/d.bin" "$SIZE"
parts "$T/d.bin" d.bin 1,2,3 --cut 2 --again-cut 2 --no-commit
check "the part sent again after it was cut short is taken" said "part 2 200"
check "the completion is taken" said "complete 200"
check "the object is in the bucket, byte for byte" in_bucket "$T/d.bin"
check "no upload is left" test "$(uploads)" = 0
make_file "$T/f.bin" "$SIZE"
parts "$T/f.bin" f.bin 1,2,3 --cut 2 --again-cut 2 --again-cut-lie --no-commit
check "sent again with other bytes than went in, it is refused (409)" bash -c "grep -q '^part 2 409' '$T/parts.out'"
check "the completion is refused (400)" bash -c "grep -q '^complete 400' '$T/parts.out'"
check "nothing under its id" absent "$T/f.bin"
check "the bucket's upload was aborted" test "$(uploads)" = 0
check "serve stops clean" serve_stops_clean

# 6. killed mid-upload
HUBMIRROR_TEST_KILL=store-upload start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish
serve_pid=${_pids[-1]}
make_file "$T/e.bin" "$SIZE"
parts "$T/e.bin" e.bin 2,1,3 --no-commit
wait "$serve_pid" 2>/dev/null; st=$?
check "serve killed itself mid-upload, a part in the bucket (status $st)" test "$st" = 137
check "nothing under its id" absent "$T/e.bin"
check "no file of it is left in the store's tmp/ ($(tmp_bytes))" test "$(tmp_bytes)" = 0
check "its multipart upload is left unfinished" test "$(uploads)" = 1
check "verify passes" "$HUBMIRROR" verify
"$HUBMIRROR" gc --partial-age 0 --json >"$T/gc.json"
check "gc aborts the orphan upload" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["bucket_uploads_aborted"] == 1, d' "$T/gc.json"
check "none is left" test "$(uploads)" = 0
finish
