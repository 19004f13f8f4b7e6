#!/usr/bin/env bash
# t0867-xet-backfill: a mirror whose contents were stored without their Xet identities (an older
# hubmirror's: simulated by deleting them, the identity files and the catalog's Xet hashes and dedup
# index) offers them over plain HTTP only; serve's background job (--xet-backfill) computes them, and
# then @huggingface/hub's downloadFile reads the file through the mirror's CAS byte for byte, offered
# with upstream's Xet hash. A content whose Xet hash upstream states otherwise (learnt from a later
# sync's listing of a content the store held) is reported and not offered through Xet. A restart
# finds nothing left to compute (what is recorded is not taken again), and one after a kill -9 in the
# middle (what it recorded whole) takes exactly what was left. verify computes the same in its read,
# and reports the same refusal (docs/protocols/xet.md, "Identities of older contents").
. "$HM_SRC/tests/integration/lib.sh"
need_node_module @huggingface/hub

# other.bin and lie.safetensors are the same bytes; upstream states a wrong Xet hash for the second
cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "acme/x",
   "files": [{"path": "config.json", "content": "{\"a\": 1}\n"},
             {"path": "model.safetensors", "size": 3000000, "seed": 11},
             {"path": "other.bin", "size": 300000, "seed": 14}]},
  {"hub": "hf", "type": "model", "id": "acme/liar",
   "files": [{"path": "lie.safetensors", "size": 300000, "seed": 14}]}
 ]}
JSON
check "fake upstream starts (stating Xet hashes, one of them wrong)" start_fakehub --repos "$T/spec.json" \
	--xet-lie lie.safetensors
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
hm() { "$HUBMIRROR" "$@"; }
store="$HUBMIRROR_DATA/store"
db="$HUBMIRROR_DATA/catalog.db"
tree() { curl -fsS "$FAKE_API/api/models/$1/tree/main"; }
field() { "$PY" -c 'import json,sys
for e in json.load(sys.stdin):
    if e["path"] == sys.argv[1]:
        print(e["lfs"]["oid"] if sys.argv[2] == "sha" else e["xetHash"])' "$@"; }
sha=$(tree acme/x | field model.safetensors sha); xh=$(tree acme/x | field model.safetensors xet)
osha=$(tree acme/x | field other.bin sha); oxh=$(tree acme/x | field other.bin xet)
lxh=$(tree acme/liar | field lie.safetensors xet)
check "upstream states Xet hashes, another for the same bytes under the liar's name" \
	bash -c "[ ${#xh} = 64 ] && [ ${#oxh} = 64 ] && [ ${#lxh} = 64 ] && [ $lxh != $oxh ]"

hm add hf:acme/x >/dev/null
hm sync >"$T/sync1.out" 2>&1
check "acme/x syncs" grep -q "ok *hf:acme/x " "$T/sync1.out"
sql() { "$PY" -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for row in c.execute(sys.argv[2], sys.argv[3:]):
    print(*row)
c.commit()' "$db" "$@"; }
export -f sql
export db PY
# an older hubmirror's data: no identity files, no Xet hash, no dedup row
old_mirror() {
	sql "DELETE FROM blob_xet" && sql "DELETE FROM xet_dedup" && rm -rf "$store/xet"
}
export -f old_mirror
export store
check "the data made old" old_mirror
nblobs=$(sql 'SELECT count(*) FROM blobs')   # .gitattributes, config.json, model.safetensors, other.bin
check "  (the catalog knows no Xet hash)" [ "$(sql 'SELECT count(*) FROM blob_xet')" = 0 ]

# the liar's listing names a content the store holds (other.bin's): named without a fetch, and the
# Xet hash upstream states for it kept
hm add hf:acme/liar >/dev/null
hm sync hf:acme/liar >"$T/sync2.out" 2>&1
sed 's/^/# /' "$T/sync2.out"
check "acme/liar syncs from the store" grep -q "ok *hf:acme/liar " "$T/sync2.out"
check "upstream's statement for it is kept" [ "$(sql 'SELECT xet_hash, refused FROM xet_stated WHERE sha256 = ?' "$osha")" = "$lxh 0" ]

xethdr() { curl -sS -I "$M/$1/resolve/main/$2" | tr -d '\r' | awk -F': ' 'tolower($1) == "x-xet-hash" { print $2 }'; }
check "serve starts, without the background job" start_serve --xet-backfill 0
check "an old mirror's file is offered over plain HTTP only (no X-Xet-Hash)" [ -z "$(xethdr acme/x model.safetensors)" ]
check "serve stops" serve_stops_clean

# ---- serve's background job ----
check "serve starts, computing what is missing (4 MB/s)" start_serve --xet-backfill 4M
for _ in $(seq 600); do grep -q 'Xet identities: pass over' "$T/serve.err" && break; sleep 0.5; done
grep 'Xet identities' "$T/serve.err" | sed 's/^/# /'
check "its pass is over: every content's computed, one refused" grep -q "Xet identities: pass over: $((nblobs - 1)) computed, 1 refused" \
	"$T/serve.err"
check "the refusal names both hashes" grep -q "content ${osha:0:12}: upstream states Xet hash $lxh, its bytes make $oxh" \
	"$T/serve.err"
check "the file is offered by Xet now, with upstream's Xet hash" [ "$(xethdr acme/x model.safetensors)" = "$xh" ]
check "its identity file is back, and the catalog's Xet hash" bash -c \
	"[ -s $store/xet/${sha:0:2}/$sha ] && [ \"\$(sql 'SELECT xet_hash FROM blob_xet WHERE sha256 = ?' $sha)\" = $xh ]"
check "  and its dedup index" [ "$(sql 'SELECT count(*) FROM xet_dedup WHERE sha256 = ?' "$sha")" -ge 1 ]
check "the refused content is offered over plain HTTP only, under both names" bash -c \
	"[ -z \"\$(xethdr acme/x other.bin)\" ] && [ -z \"\$(xethdr acme/liar lie.safetensors)\" ] &&
	[ -z \"\$(sql 'SELECT xet_hash FROM blob_xet WHERE sha256 = ?' $osha)\" ]"

upstream_requests() { curl -fsS "$FAKE_API/_fake/stats" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["total"])'; }
mark=$(wc -l <"$T/access.log"); req0=$(upstream_requests)
node "$HM_SRC/tests/js/xetdownload.mjs" --hub-url "$M" --repo acme/x --path model.safetensors --sha256 "$sha" \
	--xet-hash "$xh" >"$T/js.out" 2>&1
sed 's/^/# /' "$T/js.out"
check "downloadFile: offered by Xet, upstream's hash" grep -q "^ok 1 " "$T/js.out"
check "downloadFile: the bytes, equal" grep -q "^ok 2 " "$T/js.out"
tail -n +$((mark + 1)) "$T/access.log" >"$T/js.log"
check "through the mirror's CAS: the token, the reconstruction and a xorb range" bash -c "
	grep -q 'GET /api/models/acme/x/xet-read-token/' '$T/js.log' && grep -q 'GET /xet-cas/v2/reconstructions/$xh ' '$T/js.log' &&
	grep -q 'GET /xet-cas/xorb/$sha/0?\.\.\. HTTP/1.1\" 206' '$T/js.log'"
check "no request reached the fake upstream" test "$(upstream_requests)" = "$req0"
check "serve stops" serve_stops_clean

check "serve starts again" start_serve --xet-backfill 4M
for _ in $(seq 600); do grep -q 'Xet identities: pass over' "$T/serve.err" && break; sleep 0.5; done
check "a restart finds nothing left to compute (nothing read)" \
	grep -q 'Xet identities: pass over: 0 computed, 0 refused (upstream states another Xet hash), 0 bytes' "$T/serve.err"
check "serve stops" serve_stops_clean

# ---- a kill in the middle: what was recorded stays, the rest is taken after the restart ----
check "the data made old again (and the refusal forgotten)" bash -c "old_mirror && sql 'UPDATE xet_stated SET refused = 0'"
unknown() { sql 'SELECT count(*) FROM blobs b WHERE b.present AND NOT EXISTS (SELECT 1 FROM blob_xet x WHERE
	x.sha256 = b.sha256) AND NOT EXISTS (SELECT 1 FROM xet_stated s WHERE s.sha256 = b.sha256 AND s.refused)'; }
check "serve starts, computing slowly (100 kB/s)" start_serve --xet-backfill 100k
for _ in $(seq 600); do [ "$(unknown)" -lt "$nblobs" ] && break; sleep 0.5; done
kill -KILL "${_pids[-1]}"; wait "${_pids[-1]}" 2>/dev/null
left=$(unknown)
echo "# killed with $left of $nblobs contents left to compute"
check "killed after it recorded some" [ "$left" -lt "$nblobs" ]
check "what it recorded is whole: each Xet hash the identity file's, each identity file parses" bash -c '
	for s in $(sql "SELECT sha256 FROM blob_xet"); do
		b=$store/blobs/${s:0:2}/$s; i=$store/xet/${s:0:2}/$s
		[ $(stat -c %s $b) -lt 8192 ] && continue
		[ "$("$HM_BUILD/tests/unit/xet-ident" "$b" | sed -n "s/^file //p")" = "$(sql "SELECT xet_hash FROM blob_xet WHERE sha256 = ?" $s)" ] &&
			"$PY" -c "import sys; b = open(sys.argv[1], \"rb\").read(8); assert b == b\"hmxetid\\x01\", b" "$i" || exit 1
	done'
check "serve starts again after the kill" start_serve --xet-backfill 4M
for _ in $(seq 600); do grep -q 'Xet identities: pass over' "$T/serve.err" && break; sleep 0.5; done
grep 'Xet identities' "$T/serve.err" | sed 's/^/# /'
check "the restart takes exactly what was left" bash -c "grep 'Xet identities: pass over' '$T/serve.err' |
	sed -n 's/.*pass over: \([0-9]*\) computed, \([0-9]*\) refused.*/\1 \2/p' | { read c r; [ \$((c + r)) = $left ]; }"
check "  and then every one is known" [ "$(unknown)" = 0 ]
check "serve stops" serve_stops_clean

# ---- verify, in its read ----
check "the data made old again (and the refusal forgotten)" bash -c "old_mirror && sql 'UPDATE xet_stated SET refused = 0'"
hm verify >"$T/verify.out" 2>&1; vrc=$?
sed 's/^/# /' "$T/verify.out"
check "verify exits 0 (a refusal is not damage), its output clean" bash -c \
	"[ $vrc = 0 ] && ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:' '$T/verify.out'"
check "verify computes the identities in its read, and reports the refusal" bash -c "
	grep -q 'verify: $((nblobs - 1)) Xet identities computed, 1 refused' '$T/verify.out' &&
	grep -q '^xet-hash  content ${osha:0:12}: upstream states Xet hash $lxh, its bytes make $oxh' '$T/verify.out' &&
	grep -q 'verify: .* 0 corrupt' '$T/verify.out'"
check "  recorded: the identity file, upstream's Xet hash; none for the refused one" bash -c \
	"[ -s $store/xet/${sha:0:2}/$sha ] && [ \"\$(sql 'SELECT xet_hash FROM blob_xet WHERE sha256 = ?' $sha)\" = $xh ] &&
	[ -z \"\$(sql 'SELECT xet_hash FROM blob_xet WHERE sha256 = ?' $osha)\" ]"
hm verify >"$T/verify2.out" 2>&1
check "a second verify computes none" bash -c "! grep -q 'Xet identit' '$T/verify2.out'"
finish
