#!/usr/bin/env bash
# t0883-store-rgw-xet-stage: with a bucket behind the store, a Xet upload's xorbs are kept in the
# bucket's staging area (xet-uploads/<mirror id>/<repo id>/<xorb hash> below its prefix, never under
# blobs/, with its table of chunks beside it, .idx), not on local disk, and the shard's file is rebuilt
# from ranges read back from there:
# 1. the JS client's uploadFiles of a file bigger than the local cache's bound goes through Xet: its
#    xorbs are in the staging area and xet-uploads/ holds no xorb file (on the code before, the xorbs
#    were files there: check 4 fails), the file lands in the bucket byte for byte and is served back;
#    its identity file removed, a Xet read makes it again from the bucket's bytes (hashed to the id),
#    the cache still within its bound;
# 2. gc keeps the staged xorbs within their 24 hours and removes them past the age it is given
#    (--xet-upload-age), with no unfinished upload left;
# 3. serve killed at the shard (HUBMIRROR_TEST_KILL=xet-shard: the xorbs staged, no file made, the
#    commit not sent) leaves nothing under blobs/, verify passes, and gc removes the staged xorbs;
#    a serve restarted takes the same upload again whole;
# 4. huggingface_hub's flow as hf_xet sends it and the attacks on it (helpers/xetupload.py, as t0854
#    runs them without a bucket) against the staging area: forged xorbs, chunk-hash lies, a shard naming
#    another repo's private xorb are refused with nothing stored; only the xorbs taken are staged;
# 5. a staged xorb damaged in the bucket (one byte of a stored chunk changed behind serve's back): the
#    shard naming it fails, the chunk read back hashed against the table its upload's check made (on a
#    shard job that trusted what the bucket gives back, the file's sha256 would catch it: a 400 that
#    blames the client), and nothing is stored.
. "$HM_SRC/tests/integration/lib.sh"
need_ceph
need_node_module @huggingface/hub
check "a Ceph cluster with its gateway starts" start_rgw
rgw_store t0883 4M
cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
hf_writer_other_0002 hf:other/*:write
hf_reader_acme_0003 hf:acme/*
TOK
chmod 600 "$T/tokens"
s3() { rgw_s3 "$@"; }
staged() { # the keys of the staging area, one a line
	s3 GET "/?list-type=2&prefix=t0883%2Fxet-uploads%2F" >/dev/null
	grep -o '<Key>[^<]*</Key>' "$T/s3.body" | sed 's/<[^>]*>//g'
}
nstaged() { staged | grep -vc '\.idx$' ; }    # the xorbs
ntables() { staged | grep -c '\.idx$' ; }     # their tables
uploads() { s3 GET "/?prefix=t0883%2F&uploads=" >/dev/null; grep -o '<UploadId>' "$T/s3.body" | wc -l; }
local_xorbs() { find "$HUBMIRROR_DATA" -type f -regextype posix-extended -regex '.*/[0-9a-f]{64}' \
	-path '*xet-uploads*' | wc -l; }
store_bytes() { find "$HUBMIRROR_DATA/store" -type f -printf '%s\n' | awk '{ n += $1 } END { print n + 0 }'; }
resolved() { # PATH: the sha256 of what resolve answers for acme/up's PATH (the tokens file guards acme)
	curl -fsS -H "Authorization: Bearer hf_writer_acme_0001" "$M/acme/up/resolve/main/$1" | sha256sum | cut -d' ' -f1
}
xetput() { # FILE PATH: the official client's uploadFiles through Xet, then its downloadFile; prints its checks
	local n=0 line
	while IFS= read -r line; do
		echo "# hfjs: $line" >&2
		case $line in "ok - "*) n=$((n + 1)) ;; "not ok - "*) n=-100 ;; esac
	done < <(cd "$JS" && timeout 300 node xetput.mjs --hub-url "$M" --token hf_writer_acme_0001 --repo acme/up \
		--file "$1" --path "$2" 2>&1)
	test "$n" -ge 2
}

# 1. through Xet into the bucket
check "serve starts" start_serve --local acme --tokens "$T/tokens" --p2p-listen off
head -c 20000000 /dev/urandom >"$T/big.bin"
big=$(sha256sum <"$T/big.bin" | cut -d' ' -f1)
check "the JS client's Xet upload lands and reads back byte for byte" xetput "$T/big.bin" big.bin
check "serve's log says its xorbs came in" grep -q "xorb [0-9a-f]* in" "$T/serve.err"
n1=$(nstaged)
check "its xorbs are in the bucket's staging area ($n1)" test "$n1" -ge 1
check "each with its table beside it ($(ntables))" test "$(ntables)" = "$n1"
check "no xorb file on local disk ($(local_xorbs))" test "$(local_xorbs)" = 0
bad=$(staged | grep -Evc '^t0883/xet-uploads/[0-9a-f]{32}/[0-9]+/[0-9a-f]{64}(\.idx)?$')
check "each staged key is xet-uploads/<mirror id>/<repo id>/<xorb hash>[.idx] ($bad others)" test "$bad" = 0
blobkeys() { s3 GET "/?list-type=2&prefix=t0883%2Fblobs%2F" >/dev/null; grep -o '<Key>[^<]*</Key>' "$T/s3.body" |
	sed 's/<[^>]*>//g'; }
bad=$(blobkeys | grep -Evc '^t0883/blobs/[0-9a-f]{2}/[0-9a-f]{64}$')
check "under blobs/ only contents ($bad others)" test "$bad" = 0
check "the file is in the bucket under its id" test "$(s3 GET "/t0883/blobs/${big:0:2}/$big")" = 200
check "byte for byte" test "$(sha256sum <"$T/s3.body" | cut -d' ' -f1)" = "$big"
check "the store's folder holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
check "resolve serves it back, byte for byte" test "$(resolved big.bin)" = "$big"
check "no unfinished upload is left" test "$(uploads)" = 0
# its identity file gone (a store from before identities, or lost): a Xet read makes it again from the
# bucket's bytes, hashed to the content's id, still never bringing the content into the cache
rm -f "$HUBMIRROR_DATA/store/xet/${big:0:2}/$big"
(cd "$JS" && timeout 300 node xetdownload.mjs --hub-url "$M" --repo acme/up --path big.bin --sha256 "$big" \
	--token hf_writer_acme_0001) >"$T/xd.out" 2>&1; st=$?
grep -v '^# ' "$T/xd.out" | sed 's/^/# /'
check "a Xet read with no identity file: byte for byte (exit $st)" test "$st" = 0
check "the identity file is made again" test -s "$HUBMIRROR_DATA/store/xet/${big:0:2}/$big"
check "the store's folder still holds no more than the cache ($(store_bytes) bytes)" test "$(store_bytes)" -le 4194304
check "serve stops clean" serve_stops_clean

# 2. gc: within the age kept, past it removed
"$HUBMIRROR" gc --wait --json >"$T/gc1.json"
check "gc keeps staged xorbs within their 24 hours" test "$(nstaged)" = "$n1"
"$HUBMIRROR" gc --wait --xet-upload-age 0 --json >"$T/gc2.json"
check "gc past the age removes them" "$PY" -c '
import json, sys; d = json.load(open(sys.argv[1])); assert d["xet_staged_removed"] == 2 * int(sys.argv[2]), d' \
	"$T/gc2.json" "$n1"
check "none is left in the staging area" test "$(staged | grep -c .)" = 0
check "the file stays" test "$(s3 HEAD "/t0883/blobs/${big:0:2}/$big")" = 200
check "verify passes" "$HUBMIRROR" verify

# 3. serve killed between the xorbs and the commit
HUBMIRROR_TEST_KILL=xet-shard start_serve --local acme --tokens "$T/tokens" --p2p-listen off || finish
serve_pid=${_pids[-1]}
head -c 20000000 /dev/urandom >"$T/two.bin"
two=$(sha256sum <"$T/two.bin" | cut -d' ' -f1)
xetput "$T/two.bin" two.bin 2>"$T/two.out"
wait "$serve_pid" 2>/dev/null; st=$?
check "serve killed itself at the shard (status $st)" test "$st" = 137
n2=$(nstaged)
check "the upload's xorbs were staged ($n2)" test "$n2" -ge 1
check "nothing under the file's id in the bucket" test "$(s3 HEAD "/t0883/blobs/${two:0:2}/$two")" = 404
check "nor in the local cache" test ! -e "$HUBMIRROR_DATA/store/blobs/${two:0:2}/$two"
check "no xorb file on local disk ($(local_xorbs))" test "$(local_xorbs)" = 0
check "no unfinished upload is left" test "$(uploads)" = 0
check "verify passes" "$HUBMIRROR" verify
check "serve starts again" start_serve --local acme --tokens "$T/tokens" --p2p-listen off
check "the same upload lands whole" xetput "$T/two.bin" two.bin
check "resolve serves it back, byte for byte" test "$(resolved two.bin)" = "$two"
check "serve stops clean" serve_stops_clean
"$HUBMIRROR" gc --wait --xet-upload-age 0 --json >"$T/gc3.json"
check "gc removes the staged xorbs and their tables" test "$(staged | grep -c .)" = 0
check "both files stay" bash -c "[ \"$(s3 HEAD "/t0883/blobs/${big:0:2}/$big")$(s3 HEAD "/t0883/blobs/${two:0:2}/$two")\" = 200200 ]"
check "verify passes" "$HUBMIRROR" verify

# 4. hf_xet's flow replayed, and the attacks
command -v lz4 >/dev/null || { fail "the lz4 tool is missing (apt-get install lz4)"; finish; }
check "serve starts with two local namespaces" start_serve --local acme,other --tokens "$T/tokens" --p2p-listen off
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
check "the Python replay ran to the end ($np checks, status $st)" test "$np" -ge 30 -a "$st" = 0
# (taken: its good xorb, the one its lies were told over, the other writer's; refused: the two forged)
check "only the xorbs taken are staged, each with its table ($(nstaged), $(ntables))" \
	test "$(nstaged)$(ntables)" = 33
check "no xorb file on local disk ($(local_xorbs))" test "$(local_xorbs)" = 0

# 5. a staged xorb damaged in the bucket
export HFU="$HM_SRC/tests/integration/helpers" XI="$HM_BUILD/tests/unit/xet-ident"
xetstep() { # STEP: "xorb" posts a xorb for acme/damaged (state in $T/dmg.json), "shard" its shard
	"$PY" - "$M" "$1" "$T/dmg.json" <<'PY'
import json, os, sys
sys.path.insert(0, os.environ["HFU"])
import xetformat
from hfupload import Api
from xetformat import cas, file_of, make_shard, payload, token_headers
M, step, state = sys.argv[1:4]
xetformat.IDENT = os.environ["XI"]
if step == "xorb":
    Api(M, "hf_writer_acme_0001").create_repo("acme/damaged", exist_ok=True)
    _, info, _ = token_headers(M, "hf_writer_acme_0001", "/api/models/acme/damaged/xet-write-token/main")
    f = file_of(payload(900_000, "damaged"))
    st, ans = cas("POST", f"{info['endpoint']}/v1/xorbs/default/{f['id']['xorb']}", info["access_token"], f["xorb"])
    assert st == 200, (st, ans)
    json.dump({"tok": info["access_token"], "cas": info["endpoint"], "xorb": f["id"]["xorb"], "sha": f["sha"],
               "file": f["file"], "entry": f["xorb_entry"]}, open(state, "w"))
    print(f["id"]["xorb"], f["sha"])
else:
    d = json.load(open(state))
    st, ans = cas("POST", f"{d['cas']}/v1/shards", d["tok"], make_shard([tuple(d["file"])], [tuple(d["entry"])]))
    print(st, json.dumps(ans))
PY
}
read -r dx dsha < <(xetstep xorb)
check "a xorb for the damage is taken" test -n "$dx"
dkey=$(staged | grep "/$dx\$")
check "it is staged" test -n "$dkey"
rgw_s3 GET "/$dkey" >/dev/null
"$PY" -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[20] ^= 1; open(sys.argv[2], "wb").write(b)' \
	"$T/s3.body" "$T/damaged.xorb"
check "one byte of its first chunk (stored as is) changed in the bucket" test "$(rgw_s3 PUT "/$dkey" "$T/damaged.xorb")" = 200
read -r dst dans < <(xetstep shard)
echo "# shard: $dst $dans"
check "the shard naming it fails, as the server's trouble ($dst)" test "$dst" = 500
check "the log says the chunk read back is not the one uploaded" \
	grep -q "a chunk read back from the bucket is not the one uploaded" "$T/serve.err"
check "nothing of it in the bucket under blobs/" test "$(s3 HEAD "/t0883/blobs/${dsha:0:2}/$dsha")" = 404
check "nor in the local cache" test ! -e "$HUBMIRROR_DATA/store/blobs/${dsha:0:2}/$dsha"
check "serve stops clean" serve_stops_clean
check "verify passes" "$HUBMIRROR" verify
finish
