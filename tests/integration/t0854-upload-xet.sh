#!/usr/bin/env bash
# t0854-upload-xet: Xet uploads into a local repo (docs/protocols/xet.md, "Uploads"). The official JS
# client's uploadFiles with its default settings goes through Xet (the batch answers "xet"; xorbs and a
# shard are posted, no LFS PUT) and the files read back byte for byte over plain HTTP and git-lfs's
# URL; huggingface_hub's flow as hf_xet sends it is replayed (helpers/xetupload.py: xet-write-token read from its
# headers as huggingface_hub reads them,
# xorbs with LZ4 and BG4-LZ4 chunks, a shard, the commit); and the attacks are refused with nothing
# stored, the mirror serving on: a forged xorb, chunk-hash and other lies in a shard, a shard naming
# another repo's private xorb, oversize xorbs and shards, commits naming an unknown or another repo's
# xetHash, and writes without a write token (a reader's request for one, the Hub token, an altered one).
. "$HM_SRC/tests/integration/lib.sh"
need_node_module @huggingface/hub

cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
hf_writer_other_0002 hf:other/*:write
hf_reader_acme_0003 hf:acme/*
TOK
chmod 600 "$T/tokens"
check "serve starts with local namespaces" start_serve --local acme,other --tokens "$T/tokens" || finish
W=hf_writer_acme_0001

# The JS client, default settings: it offers Xet and the mirror takes it.
nj=0
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "hfjs: ${line#ok - }"; nj=$((nj + 1)) ;;
	"not ok - "*) fail "hfjs: ${line#not ok - }"; nj=$((nj + 1)) ;;
	*) echo "# $line" ;;
	esac
done < <(cd "$JS" && timeout 120 node hfupload.mjs --hub-url "$M" --token "$W" --repo acme/js-xet --size 3000000 2>&1)
check "the JS client's run ran its checks ($nj)" test "$nj" -ge 5
check "its file came through Xet: xorbs in" grep -q "hf:acme/js-xet: xorb [0-9a-f]* in" "$T/serve.err"
check "... and a shard that made the file" grep -q "hf:acme/js-xet: Xet file [0-9a-f]* in as sha256" "$T/serve.err"
# requests of a route with a status, as /metrics counts them
requests() {
	curl -fsS -H "Authorization: Bearer $W" "$M/metrics" |
		sed -n "s/^hubmirror_http_requests_total{route=\"$1\",status=\"$2\"} //p" | grep . || echo 0
}
check "/metrics: xorbs and one shard posted, and Git LFS asked once (the batch): no PUT, no verify" \
	test "$(requests xet_xorb 200)" -ge 1 -a "$(requests xet_shard 200)" = 1 -a "$(requests git_lfs 200)" = 1

# huggingface_hub's flow as hf_xet sends it, then the attacks (helpers/xetupload.py says which)
command -v lz4 >/dev/null || { fail "the lz4 tool is missing (apt-get install lz4)"; finish; }
np=0
st=none
while IFS= read -r line; do
	case $line in
	"ok - "*) ok "py: ${line#ok - }"; np=$((np + 1)) ;;
	"not ok - "*) fail "py: ${line#not ok - }"; np=$((np + 1)) ;;
	"exit "*) st=${line#exit } ;;
	*) echo "# $line" ;;
	esac
done < <(timeout 120 "$PY" "$HM_SRC/tests/integration/helpers/xetupload.py" "$M" "$HUBMIRROR_DATA" \
	"$HM_BUILD/tests/unit/xet-ident" 2>&1; echo "exit $?")
check "the Python replay ran to the end ($np checks, status $st)" test "$np" -ge 30 -a \( "$st" = 0 -o "$st" = 1 \)
check "the mirror is still up" curl -fsS "$M/healthz"
check "serve stops clean (no sanitizer report in the sanitized build)" serve_stops_clean
finish
