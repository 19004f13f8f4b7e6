#!/usr/bin/env bash
# t0844-upload-poison: a writer of one namespace cannot reach anyone else's bytes (docs/security.md,
# "Writers"). Each attack through the real binary, the store's copy checked by sha256 after it:
# a part of a multipart upload held open while another upload publishes the same content (its
# descriptor writes on, into a file of its own); another writer's completion of parts it never sent;
# a completion while a part still arrives (409, then it goes through); a sparse completion (refused
# at once, naming the missing part) and an object over the largest; an upload URL spent once its
# object is in, and short-lived; a slow PUT of a public content's id while the mirror fetches that
# content on demand (served at once); and a content the store got only from an upload, found
# damaged, fetched again from upstream before a sync names it.
. "$HM_SRC/tests/integration/lib.sh"

cat >"$T/spec.json" <<'JSON'
{"repos": [
  {"hub": "hf", "type": "model", "id": "pub/model",
   "files": [{"path": "config.json", "content": "{}\n"}, {"path": "w.bin", "size": 136314880, "seed": 844}]},
  {"hub": "hf", "type": "model", "id": "pub/od",
   "files": [{"path": "config.json", "content": "{}\n"}, {"path": "w2.bin", "size": 3000000, "seed": 845}]}
 ]}
JSON
cat >"$T/tokens" <<'TOK'
hf_writer_acme_0001 hf:acme/*:write
hf_writer_evil_0003 hf:evil/*:write
TOK
chmod 600 "$T/tokens"
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
check "serve starts with two local namespaces and on-demand" start_serve --local acme,evil --tokens "$T/tokens" \
	--p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:pub/od'

curl -fsS -L -o "$T/x.bin" "$FAKE_API/pub/model/resolve/main/w.bin"
X=$(sha256sum <"$T/x.bin" | cut -c1-64)
Y=$(curl -fsS -L "$FAKE_API/pub/od/resolve/main/w2.bin" | sha256sum | cut -c1-64)

attack() {
	local line st=none
	while IFS= read -r line; do
		case $line in
		"ok - "*) ok "$1: ${line#ok - }" ;;
		"not ok - "*) fail "$1: ${line#not ok - }" ;;
		"exit "*) st=${line#exit } ;;
		*) echo "# $line" ;;
		esac
	done < <(timeout 240 "$PY" "$HM_SRC/tests/integration/helpers/upload_attacks.py" "$M" "$HUBMIRROR_DATA" "$@" 2>&1
		echo "exit $?")
	[ "$st" = 0 ] || fail "$1: the scenario ended with status $st"
}
attack held-part "$T/x.bin"
attack foreign-complete
attack busy-complete
attack sparse
attack spent-cap
attack slow-put "$Y" 3000000 /pub/od/resolve/main/w2.bin

# Defence in depth: a content the store holds only because users uploaded it is fetched again from
# upstream before a mirrored repo names it. Its copy damaged by hand (as a bug could), a sync of the
# public repo that names it replaces it with upstream's verified bytes.
blob=$HUBMIRROR_DATA/store/blobs/${X:0:2}/$X
damaged() {
	chmod u+w "$blob" && printf 'poison' | dd of="$blob" bs=1 seek=4096 conv=notrunc status=none &&
		test "$(sha256sum <"$blob" | cut -c1-64)" != "$X"
}
check "the uploaded content's copy is damaged by hand" damaged
check "a sync of the public repo naming it" bash -c "'$HUBMIRROR' add hf:pub/model >/dev/null && '$HUBMIRROR' sync >'$T/sync.out' 2>&1"
check "... fetched it again: the store's copy is upstream's bytes" test "$(sha256sum <"$blob" | cut -c1-64)" = "$X"
check "... and the mirror serves them" test "$(curl -fsS "$M/pub/model/resolve/main/w.bin" | sha256sum | cut -c1-64)" = "$X"
check "no secret of the attacks' tokens in the log" bash -c "! grep -q 'hf_writer' '$T/serve.err' '$T/access.log'"
finish
