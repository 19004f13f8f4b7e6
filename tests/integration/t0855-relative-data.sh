#!/usr/bin/env bash
# t0855-relative-data: a mirror whose --data is a relative path (`serve --data d`, as an operator
# types it in the mirror's folder) makes the torrent of a local repo's commit like any other: the
# commit's torrent names its files by absolute paths, which a relative data directory used to break
# ("torrent file needs an absolute source path", and no torrent ever).
. "$HM_SRC/tests/integration/lib.sh"

cd "$T" || exit 1
printf 'hf_writer_acme_0001 hf:acme/*:write\n' >tokens
chmod 600 tokens
W=hf_writer_acme_0001
check "serve starts on a relative data directory" start_serve --data d --local acme --tokens tokens \
	--p2p-listen 127.0.0.1:0 || finish
curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/json' \
	-d '{"name":"m","organization":"acme","type":"model"}' "$M/api/repos/create" || fail "create acme/m"
printf '%s\n%s\n' '{"key":"header","value":{"summary":"one file"}}' \
	"{\"key\":\"file\",\"value\":{\"path\":\"a.txt\",\"content\":\"$(echo hello | base64)\",\"encoding\":\"base64\"}}" \
	>commit.ndjson
curl -fsS -X POST -H "Authorization: Bearer $W" -H 'Content-Type: application/x-ndjson' \
	--data-binary @commit.ndjson "$M/api/models/acme/m/commit/main" >commit.json || fail "the commit"
oid=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["commitOid"])' commit.json)
torrent_made() {
	local i
	for i in $(seq 1 60); do
		curl -fsS -H "Authorization: Bearer $W" "$M/api/p2p/torrent/hf/model/acme/m?meta=1" >meta.json 2>/dev/null &&
			grep -q "$oid" meta.json && return 0
		sleep 0.5
	done
	cat meta.json 2>/dev/null | sed 's/^/# /'
	return 1
}
check "the commit gets its torrent" torrent_made
not_in_log() { ! grep -q "absolute source path" serve.err; }
check "no torrent was refused for its paths" not_in_log
check "serve stops clean" serve_stops_clean
finish
