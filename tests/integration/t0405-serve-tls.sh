#!/usr/bin/env bash
# t0405-serve-tls: serve --tls-cert/--tls-key with a private CA. The same port answers HTTPS and plain
# HTTP; the classic ModelScope SDK's request sequence (its endpoint is always https://DOMAIN) and
# Hugging Face downloads with Range run over TLS byte for byte; keep-alive and pipelined requests over
# one TLS connection; URLs handed out say https; a garbage handshake is counted and harms no one; a
# half handshake is closed at the idle timeout; SIGHUP loads a renewed certificate (a connection
# open across it goes on) and a broken one is refused while the old stays; bad flag combinations and
# a key that does not match fail with clear words.
. "$HM_SRC/tests/integration/lib.sh"
command -v openssl >/dev/null || { echo "openssl is missing (.ci/setup installs it)"; exit 1; }

# ---- a private CA and two server certificates (the second is the "renewal") ----
ossl() { openssl "$@" >/dev/null 2>&1; }
ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/ca.key" -out "$T/ca.pem" \
	-days 30 -subj /CN=hubmirror-test-ca
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$T/ext"
for name in one two; do
	ossl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/$name.key" -out "$T/$name.csr" \
		-subj "/CN=mirror-$name.test"
	ossl x509 -req -in "$T/$name.csr" -CA "$T/ca.pem" -CAkey "$T/ca.key" -CAcreateserial -out "$T/$name.pem" \
		-days 30 -extfile "$T/ext"
done
cp "$T/one.pem" "$T/srv.pem"
cp "$T/one.key" "$T/srv.key"

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/tls-model",
   "files": [{"path": "config.json", "content": "{\"tls\": true}\n"},
             {"path": "model.safetensors", "size": 9000000, "seed": 21}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-llm",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
             {"path": "sub/tokenizer.json", "content": "{}\n"},
             {"path": "model.safetensors", "size": 1200000, "seed": 9}]},
  {"hub": "ms", "type": "dataset", "id": "acme/ms-rows",
   "generate": {"count": 120, "size": 30, "prefix": "rows/r-", "suffix": ".txt"}}
 ]}
JSON
check "synced from the fake upstream" sync_from_fake hf:acme/tls-model ms:acme/ms-llm ms:datasets/acme/ms-rows

# ---- bad input ----
"$HUBMIRROR" serve --listen 127.0.0.1:0 --tls-cert "$T/srv.pem" 2>"$T/e1"; st=$?
check "--tls-cert without --tls-key is a usage error" bash -c "[ $st = 2 ] && grep -q 'go together' '$T/e1'"
"$HUBMIRROR" serve --listen 127.0.0.1:0 --p2p-listen off --tls-cert "$T/one.pem" --tls-key "$T/two.key" 2>"$T/e2"; st=$?
check "a key that does not match the certificate is refused, naming the file" \
	bash -c "[ $st = 1 ] && grep -q 'does not match the certificate' '$T/e2' && grep -q 'two.key' '$T/e2'"

check "serve starts with a certificate" start_serve --p2p-listen off --idle-timeout 2 --tls-cert "$T/srv.pem" --tls-key "$T/srv.key"
S=${M/http:/https:}
tcurl() { curl -fsS --cacert "$T/ca.pem" "$@"; }
check "HTTPS on the port" test "$(tcurl "$S/healthz" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = ok
check "plain HTTP on the same port" test "$(curl -fsS "$M/healthz" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["status"])')" = ok
curl -fsS -o "$T/plain.bin" "$M/acme/tls-model/resolve/main/model.safetensors"
check "a 9 MB file over TLS, byte for byte" cmp <(tcurl "$S/acme/tls-model/resolve/main/model.safetensors") "$T/plain.bin"
check "a Range over TLS" cmp <(tcurl -r 4000000-4099999 "$S/acme/tls-model/resolve/main/model.safetensors") \
	<(tail -c +4000001 "$T/plain.bin" | head -c 100000)
check "keep-alive: three answers over one TLS connection" test "$(tcurl -o /dev/null -o /dev/null -o /dev/null \
	-w '%{num_connects}\n' "$S/healthz" "$S/api/models/acme/tls-model" "$S/acme/tls-model/resolve/main/config.json" | paste -sd' ')" = "1 0 0"
check "URLs handed out over TLS say https" bash -c "curl -fsS --cacert '$T/ca.pem' '$S/api/catalog/repos/hf/model/acme/tls-model' |
	'$PY' -c 'import json,sys; d=json.load(sys.stdin); assert d[\"endpoint_env\"] == \"HF_ENDPOINT=$S\", d[\"endpoint_env\"]'"
# hubmirror's own clients trust the CA the operator sets up (a second mirror syncing from this one)
outcome() { "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1]))["repos"][0]; print(r["outcome"], r.get("error") or "")' "$1"; }
t2() { env -u SSL_CERT_FILE -u CURL_CA_BUNDLE -u HUBMIRROR_CA_BUNDLE HUBMIRROR_DATA="$T/tier2" HUBMIRROR_HF_UPSTREAM="$S" "$@"; }
t2 "$HUBMIRROR" add hf:acme/tls-model >/dev/null
t2 "$HUBMIRROR" sync --json hf:acme/tls-model >"$T/t2a.json" 2>/dev/null
o=$(outcome "$T/t2a.json")
check "a mirror whose CA the client does not know: refused, the certificate named ($(echo "$o" | cut -c1-70))" \
	bash -c "[ '${o%% *}' != ok ] && echo '$o' | grep -qi 'certificate'"
check "and the way out said (HUBMIRROR_CA_BUNDLE)" bash -c "echo '$o' | grep -q 'point HUBMIRROR_CA_BUNDLE at its PEM certificate'"
t2 SSL_CERT_FILE="$T/ca.pem" "$HUBMIRROR" sync --json hf:acme/tls-model >"$T/t2b.json" 2>/dev/null
check "with SSL_CERT_FILE naming the site's CA, the second mirror syncs over HTTPS" test "$(outcome "$T/t2b.json" | cut -d' ' -f1)" = ok
t2 HUBMIRROR_CA_BUNDLE="$T/ca.pem" "$HUBMIRROR" sync --json hf:acme/tls-model >"$T/t2c.json" 2>/dev/null
check "... and with HUBMIRROR_CA_BUNDLE (it asked, over HTTPS: $(outcome "$T/t2c.json"))" \
	bash -c "[ '$(outcome "$T/t2c.json" | cut -d' ' -f1)' = unchanged ]"

# The classic ModelScope SDK: https:// + MODELSCOPE_DOMAIN, certificates from the CA bundle.
SSL_CERT_FILE=$T/ca.pem "$PY" "$HM_SRC/tests/integration/helpers/msclient.py" "$S" acme/ms-llm acme/ms-rows 120 >"$T/ms.out"; st=$?
sed 's/^/# /' "$T/ms.out"
check "the ModelScope SDK's request sequence over TLS ($(grep -c '^ok' "$T/ms.out") checks)" test "$st" = 0

# Pipelined requests in one TLS write: both answered, in order (bytes TLS holds are not forgotten).
check "two pipelined requests over TLS" "$PY" - "$S" "$T/ca.pem" <<'PY'
import socket, ssl, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
ctx = ssl.create_default_context(cafile=sys.argv[2])
with socket.create_connection((u.hostname, u.port)) as raw, ctx.wrap_socket(raw, server_hostname=u.hostname) as s:
    req = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /acme/tls-model/resolve/main/config.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    s.sendall(req.encode())
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
assert data.count(b"HTTP/1.1 200") == 2, data[:400]
assert data.index(b'"status"') < data.index(b'{"tls": true}'), data[:400]
PY

# A client that opens with a TLS record of garbage: closed, counted, the server goes on.
"$PY" - "$M" <<'PY'
import socket, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
with socket.create_connection((u.hostname, u.port), timeout=5) as s:
    s.sendall(b"\x16\x03\x01\x00\x10" + b"\x00" * 16)
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
PY
check "a garbage handshake is counted as a TLS error" metric_at_least hubmirror_http_tls_errors_total 1
check "a handshake that stalls halfway is closed at the idle timeout" "$PY" - "$M" <<'PY'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
with socket.create_connection((u.hostname, u.port), timeout=10) as s:
    s.sendall(b"\x16\x03\x01\x02")  # the first bytes of a ClientHello, then silence
    t = time.monotonic()
    assert s.recv(4096) == b"", "the server answered a half handshake"
    assert time.monotonic() - t < 8, "held past the idle timeout"
PY
check "TLS connections are counted" metric_at_least hubmirror_http_tls_connections_total 5

# ---- SIGHUP: a renewed certificate for new connections; a broken one is refused ----
subject() { "$PY" - "$S" "$T/ca.pem" <<'PY'
import socket, ssl, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
ctx = ssl.create_default_context(cafile=sys.argv[2])
with socket.create_connection((u.hostname, u.port)) as raw, ctx.wrap_socket(raw, server_hostname=u.hostname) as s:
    print(dict(x[0] for x in s.getpeercert()["subject"])["commonName"])
PY
}
check "the first certificate is served" test "$(subject)" = mirror-one.test
SERVE_PID=$(pgrep -f -- "--ready-file $T/url" | head -n1)
cp "$T/two.pem" "$T/srv.pem"
cp "$T/two.key" "$T/srv.key"
check "a connection open across SIGHUP goes on with its certificate" "$PY" - "$S" "$T/ca.pem" "$SERVE_PID" "$T/serve.err" <<'PY'
import os, signal, socket, ssl, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
ctx = ssl.create_default_context(cafile=sys.argv[2])
def get(s):
    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    data = b""
    while b'"status"' not in data:
        data += s.recv(4096)
    assert data.startswith(b"HTTP/1.1 200"), data
with socket.create_connection((u.hostname, u.port)) as raw, ctx.wrap_socket(raw, server_hostname=u.hostname) as s:
    get(s)
    os.kill(int(sys.argv[3]), signal.SIGHUP)
    for _ in range(50):
        if "certificate reloaded" in open(sys.argv[4]).read():
            break
        time.sleep(0.1)
    else:
        raise SystemExit("no reload logged")
    get(s)
    assert dict(x[0] for x in s.getpeercert()["subject"])["commonName"] == "mirror-one.test"
PY
check "after SIGHUP new connections get the renewed certificate" test "$(subject)" = mirror-two.test
echo "not a certificate" >"$T/srv.pem"
kill -HUP "$SERVE_PID"
for _ in $(seq 50); do grep -q 'not reloaded' "$T/serve.err" && break; sleep 0.1; done
check "a broken certificate file is refused and logged" grep -q 'not reloaded, the old one stays' "$T/serve.err"
check "the renewed certificate stays in use" test "$(subject)" = mirror-two.test
check "still serving files over TLS" test "$(tcurl "$S/acme/tls-model/resolve/main/config.json")" = '{"tls": true}'
finish
