#!/usr/bin/env bash
# t0440-oci: the mirror's read-only OCI registry under /v2/ (docs/protocols/oci.md) with skopeo and
# curl: a snapshot is a CNCF ModelPack artifact, one raw layer per file whose digest is the file's
# sha256 and whose bytes are upstream's; the manifest by tag, by branch, by commit and by its own
# digest, always the same bytes; HEAD, Range on blobs, the config blob, tags/list (refs/pr/1 as the
# tag refs-pr-1), _catalog (a guarded repo only with its token), the Distribution spec's error bodies;
# a guarded repo refused without a token (401, a Bearer challenge naming the token endpoint) and served
# with one, by skopeo too (--creds through the token flow, --registry-token with the mirror's token);
# the token endpoint: a mirror token (Basic or Bearer) for a registry token, anonymous for open repos,
# an unknown token refused, an unknown registry token answered with the challenge again;
# a tag that moves to a new commit after the next sync; a ModelScope model; a snapshot listed on demand.
. "$HM_SRC/tests/integration/lib.sh"
command -v skopeo >/dev/null || skip "needs skopeo (Debian's)"
"$PY" - >"$T/spec.json" <<'PY'
import json
print(json.dumps({
 "tokens": {"hf_ok": {"approved": ["acme/gated"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/x",
   "branches": {"main": "c2"}, "tags": {"v1.0": "c1"}, "prs": {"1": "c1"},
   "commits": [
    {"key": "c1", "title": "first", "files": [{"path": "config.json", "content": "{\"v\": 1}\n"}]},
    {"key": "c2", "parent": "c1", "title": "second", "files": [
     {"path": "config.json", "content": "{\"architectures\": [\"LlamaForCausalLM\"], \"torch_dtype\": \"bfloat16\"}\n"},
     {"path": "README.md", "content": "# x\n"},
     {"path": "tokenizer.json", "content": "{\"t\": 1}\n"},
     {"path": "modeling_x.py", "content": "print(1)\n"},
     {"path": "sub/notes.txt", "content": "n\n"},
     {"path": "model-00001-of-00002.safetensors", "size": 3000000, "seed": 5},
     {"path": "model-00002-of-00002.safetensors", "size": 2500000, "seed": 6},
     {"path": "model.safetensors.index.json", "content": "{\"weight_map\": {}}\n"}]}]},
  {"hub": "hf", "type": "model", "id": "acme/prs", "branches": {"main": "p1"}, "prs": {"1": "p2"},
   "commits": [{"key": "p1", "title": "one", "files": [{"path": "a.txt", "content": "a\n"}]},
               {"key": "p2", "parent": "p1", "title": "two", "files": [{"path": "a.txt", "content": "b\n"}]}]},
  {"hub": "hf", "type": "model", "id": "acme/MixedCase",
   "files": [{"path": "w.gguf", "size": 10000, "seed": 3}]},
  {"hub": "hf", "type": "dataset", "id": "acme/rows",
   "files": [{"path": "data/train.parquet", "size": 5000, "seed": 7}]},
  {"hub": "ms", "type": "model", "id": "acme/ms-model",
   "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"}, {"path": "w.bin", "size": 3000, "seed": 9}]},
  {"hub": "hf", "type": "model", "id": "acme/od",
   "files": [{"path": "config.json", "content": "{\"od\": 1}\n"}, {"path": "model.safetensors", "size": 2000000, "seed": 8}]},
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual",
   "files": [{"path": "config.json", "content": "{\"gated\": 1}\n"}]}
 ]}))
PY
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API HUBMIRROR_MS_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/x hf:acme/prs@refs/pr/1 >/dev/null
"$HUBMIRROR" add hf:acme/MixedCase hf:datasets/acme/rows hf:acme/gated ms:acme/ms-model >/dev/null
HF_TOKEN=hf_ok "$HUBMIRROR" sync >/dev/null
check "synced" test "$("$HUBMIRROR" ls --json | "$PY" -c 'import json,sys; print(sum(r["sync_status"]=="ok" for r in json.load(sys.stdin)))')" = 6
cat >"$T/tokens" <<'TOK'
tok-reader-abcdefgh hf:acme/gated
tok-other-abcdefghi hf:acme/elsewhere
TOK
chmod 600 "$T/tokens"
check "serve starts" start_serve --p2p-listen off --tokens "$T/tokens"
R=${M#http://}
SK="skopeo --override-os linux --override-arch amd64"

code() { curl -s -o "$T/body" -w '%{http_code}' "$@"; }
errcode() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["errors"][0]["code"])' "$T/body"; }
export -f code errcode
export T PY
hdr() { curl -sSI "${@:2}" | tr -d '\r' | awk -v k="$(echo "$1" | tr A-Z a-z)" 'tolower($1) == k":" { print $2 }'; }

# ---- the base, anonymous and with a token ----
check "/v2/ asks an anonymous client for credentials on a mirror with tokens (401, a Bearer challenge: the token endpoint)" \
	bash -c "[ \"\$(curl -s -o /dev/null -w '%{http_code}' '$M/v2/')\" = 401 ] && curl -sI '$M/v2/' | tr -d '\r' | grep -qix 'WWW-Authenticate: Bearer realm=\"$M/v2/token\",service=\"hubmirror\"'"
check "/v2/ with a token: 200 and the API version" \
	bash -c "curl -fsSI -u x:tok-other-abcdefghi '$M/v2/' | grep -qi '^Docker-Distribution-API-Version: registry/2.0'"
check "/v2/ with a wrong token: 401" test "$(code -u x:nope "$M/v2/")" = 401

# ---- skopeo: inspect and copy ----
check "skopeo inspect --raw by tag main" bash -c "$SK inspect --raw --tls-verify=false docker://$R/hf/acme/x:main >'$T/raw.json'"
"$PY" - "$T/raw.json" >"$T/layers" <<'PY' || fail "the manifest is a ModelPack artifact"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["schemaVersion"] == 2 and m["mediaType"] == "application/vnd.oci.image.manifest.v1+json", m
assert m["artifactType"] == "application/vnd.cncf.model.manifest.v1+json", m
assert m["config"]["mediaType"] == "application/vnd.cncf.model.config.v1+json", m
kinds = {l["annotations"]["org.cncf.model.filepath"]: l["mediaType"] for l in m["layers"]}
assert kinds["model-00001-of-00002.safetensors"] == "application/vnd.cncf.model.weight.v1.raw", kinds
assert kinds["config.json"] == "application/vnd.cncf.model.weight.config.v1.raw", kinds
assert kinds["tokenizer.json"] == "application/vnd.cncf.model.weight.config.v1.raw", kinds
assert kinds["README.md"] == "application/vnd.cncf.model.doc.v1.raw", kinds
assert kinds["modeling_x.py"] == "application/vnd.cncf.model.code.v1.raw", kinds
assert len(kinds) == 9 and len(m["layers"]) == 9, kinds  # and the fake hub's .gitattributes
for l in m["layers"]:
    print(l["digest"].split(":")[1], l["annotations"]["org.cncf.model.filepath"])
PY
# (skopeo's inspect without --raw reads an image's config: an artifact's is refused as no image's)
check "skopeo inspect: the artifact's digest, or the words that say it is no container image" bash -c "
	if $SK inspect --tls-verify=false docker://$R/hf/acme/x:main >'$T/inspect.json' 2>'$T/inspect.err'; then
		grep -q \"sha256:\$(sha256sum <'$T/raw.json' | cut -c1-64)\" '$T/inspect.json'
	else sed 's/^/# /' '$T/inspect.err'; grep -q 'application/vnd.cncf.model.config.v1+json' '$T/inspect.err'; fi"
check "skopeo copy to dir:" bash -c "$SK copy --src-tls-verify=false docker://$R/hf/acme/x:main dir:$T/out >/dev/null 2>'$T/copy.err' || { cat '$T/copy.err'; false; }"
bad=0
while read -r sha path; do
	up=$(curl -fsSL "$FAKE_API/acme/x/resolve/main/$path" | sha256sum | cut -d' ' -f1)
	got=$(sha256sum <"$T/out/$sha" | cut -d' ' -f1)
	[ "$up" = "$sha" ] && [ "$got" = "$sha" ] || { echo "# $path: upstream $up, layer $sha, copied $got"; bad=1; }
done <"$T/layers"
check "every layer skopeo copied is the upstream file, byte for byte" test "$bad" = 0
check "the copied manifest is the one served" cmp "$T/out/manifest.json" "$T/raw.json"
cfg=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["digest"].split(":")[1])' "$T/raw.json")
check "the config: ModelPack's fields, from config.json and the files" "$PY" - "$T/out/$cfg" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c["descriptor"]["name"] == "hf/acme/x" and len(c["descriptor"]["revision"]) == 40, c
assert c["config"] == {"architecture": "LlamaForCausalLM", "format": "safetensors", "precision": "bfloat16"}, c
assert c["modelfs"]["type"] == "layers" and len(c["modelfs"]["diffIds"]) == 9, c
PY

# ---- manifests: by branch, commit, digest; HEAD; stable ----
dig=$(hdr Docker-Content-Digest "$M/v2/hf/acme/x/manifests/main")
check "HEAD's Docker-Content-Digest is the sha256 of the manifest's bytes" test "$dig" = "sha256:$(sha256sum <"$T/raw.json" | cut -d' ' -f1)"
check "... with the manifest's media type" test "$(hdr Content-Type "$M/v2/hf/acme/x/manifests/main")" = application/vnd.oci.image.manifest.v1+json
check "... and an ETag" test "$(hdr ETag "$M/v2/hf/acme/x/manifests/main")" = "\"$dig\""
commit=$(curl -fsS "$M/api/models/acme/x" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["sha"])')
check "the manifest by its commit id is the same bytes" bash -c "curl -fsS '$M/v2/hf/acme/x/manifests/$commit' | cmp - '$T/raw.json'"
check "the manifest by its digest is the same bytes" bash -c "curl -fsS '$M/v2/hf/acme/x/manifests/$dig' | cmp - '$T/raw.json'"
check "skopeo by digest" bash -c "$SK inspect --raw --tls-verify=false docker://$R/hf/acme/x@$dig | cmp - '$T/raw.json'"
check "the tag v1.0: another snapshot, another digest" bash -c "[ \"\$(curl -fsS '$M/v2/hf/acme/x/manifests/v1.0' | sha256sum | cut -c1-64)\" != '${dig#sha256:}' ]"
check "refs/pr/1 as the tag refs-pr-1: that snapshot's manifest" bash -c "curl -fsS '$M/v2/hf/acme/prs/manifests/refs-pr-1' | grep -q '\"a.txt\"' && [ \"\$(curl -fsS '$M/v2/hf/acme/prs/manifests/refs-pr-1' | '$PY' -c 'import json,sys; print(json.load(sys.stdin)[\"annotations\"][\"org.opencontainers.image.revision\"])')\" = \"\$(curl -fsS '$M/api/models/acme/prs/revision/refs%2Fpr%2F1' | '$PY' -c 'import json,sys; print(json.load(sys.stdin)[\"sha\"])')\" ]"
check "an unknown tag: 404 MANIFEST_UNKNOWN" bash -c "[ \"\$(code '$M/v2/hf/acme/x/manifests/nope')\" = 404 ] && [ \"\$(errcode)\" = MANIFEST_UNKNOWN ]"
check "an unknown digest: 404 MANIFEST_UNKNOWN" bash -c "[ \"\$(code '$M/v2/hf/acme/x/manifests/sha256:$(printf %064d 0)')\" = 404 ] && [ \"\$(errcode)\" = MANIFEST_UNKNOWN ]"
check "an unknown repository: 404 NAME_UNKNOWN" bash -c "[ \"\$(code '$M/v2/hf/acme/nope/manifests/main')\" = 404 ] && [ \"\$(errcode)\" = NAME_UNKNOWN ]"
check "a name in another case (OCI's are lowercase) finds the repo" bash -c "$SK inspect --raw --tls-verify=false docker://$R/hf/acme/mixedcase:main | grep -q 'weight.v1.raw'"
check "a ModelScope model: ms/, by its branch master, w.bin a pytorch weight" bash -c "curl -fsS '$M/v2/ms/acme/ms-model/manifests/master' | '$PY' -c 'import json,sys; m=json.load(sys.stdin); k={l[\"annotations\"][\"org.cncf.model.filepath\"]: l[\"mediaType\"] for l in m[\"layers\"]}; assert k[\"w.bin\"].endswith(\"weight.v1.raw\"), k'"
check "If-None-Match with the manifest's ETag: 304" test "$(code -H "If-None-Match: \"$dig\"" "$M/v2/hf/acme/x/manifests/main")" = 304
check "a dataset: hf-datasets/, its files dataset layers" bash -c "curl -fsS '$M/v2/hf-datasets/acme/rows/manifests/main' | grep -q 'application/vnd.cncf.model.dataset.v1.raw'"
# ---- blobs ----
w1=$(awk '$2 == "model-00001-of-00002.safetensors" { print $1 }' "$T/layers")
check "a blob's HEAD: its size and digest" bash -c "[ \"\$(curl -sSI '$M/v2/hf/acme/x/blobs/sha256:$w1' | tr -d '\r' | awk 'tolower(\$1) == \"content-length:\" { print \$2 }')\" = 3000000 ] && curl -sSI '$M/v2/hf/acme/x/blobs/sha256:$w1' | grep -qi 'Docker-Content-Digest: sha256:$w1'"
check "a Range of a blob: 206 and the bytes" bash -c "[ \"\$(curl -s -o '$T/part' -w '%{http_code}' -r 1000-1999 '$M/v2/hf/acme/x/blobs/sha256:$w1')\" = 206 ] && cmp '$T/part' <(tail -c +1001 '$T/out/$w1' | head -c 1000)"
check "the config blob by its digest" cmp <(curl -fsS "$M/v2/hf/acme/x/blobs/sha256:$cfg") "$T/out/$cfg"
check "an unknown blob: 404 BLOB_UNKNOWN" bash -c "[ \"\$(code '$M/v2/hf/acme/x/blobs/sha256:$(printf %064d 1)')\" = 404 ] && [ \"\$(errcode)\" = BLOB_UNKNOWN ]"
gw=$(curl -fsS -u x:tok-reader-abcdefgh "$M/v2/hf/acme/gated/manifests/main" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["layers"][-1]["digest"])')
check "another repo's blob is not this repo's: 404 BLOB_UNKNOWN" bash -c "[ \"\$(code '$M/v2/hf/acme/x/blobs/$gw')\" = 404 ] && [ \"\$(errcode)\" = BLOB_UNKNOWN ]"

# ---- tags/list, _catalog ----
check "tags/list: branches and tags" bash -c "curl -fsS '$M/v2/hf/acme/x/tags/list' | '$PY' -c 'import json,sys; d=json.load(sys.stdin); assert d[\"name\"] == \"hf/acme/x\" and sorted(d[\"tags\"]) == [\"main\", \"v1.0\"], d'"
check "tags/list: refs/pr/1 as refs-pr-1" bash -c "curl -fsS '$M/v2/hf/acme/prs/tags/list' | grep -q '\"refs-pr-1\"'"
check "_catalog anonymous: no guarded repo" bash -c "curl -fsS '$M/v2/_catalog' | '$PY' -c 'import json,sys; d=json.load(sys.stdin); assert d[\"repositories\"] == [\"hf-datasets/acme/rows\", \"hf/acme/mixedcase\", \"hf/acme/prs\", \"hf/acme/x\", \"ms/acme/ms-model\"], d'"
check "_catalog with the guarded repo's token: it too" bash -c "curl -fsS -u x:tok-reader-abcdefgh '$M/v2/_catalog' | grep -q '\"hf/acme/gated\"'"

# ---- a guarded repo ----
check "a guarded repo without a token: 401 UNAUTHORIZED, the challenge's scope its pull" bash -c "[ \"\$(code -D '$T/h' '$M/v2/hf/acme/gated/manifests/main')\" = 401 ] && [ \"\$(errcode)\" = UNAUTHORIZED ] && tr -d '\r' <'$T/h' | grep -qix 'WWW-Authenticate: Bearer realm=\"$M/v2/token\",service=\"hubmirror\",scope=\"repository:hf/acme/gated:pull\"'"
check "... its blob too" bash -c "[ \"\$(code '$M/v2/hf/acme/gated/blobs/$gw')\" = 401 ]"
check "with a token that has no grant: 403 DENIED" bash -c "[ \"\$(code -u x:tok-other-abcdefghi '$M/v2/hf/acme/gated/manifests/main')\" = 403 ] && [ \"\$(errcode)\" = DENIED ]"
check "skopeo without credentials is refused" bash -c "! $SK inspect --raw --tls-verify=false docker://$R/hf/acme/gated:main >/dev/null 2>&1"
check "skopeo with the token as the password copies it" bash -c "$SK copy --src-creds x:tok-reader-abcdefgh --src-tls-verify=false docker://$R/hf/acme/gated:main dir:$T/gated >/dev/null && cmp '$T/gated/${gw#sha256:}' <(printf '{\"gated\": 1}\n')"
check "a bearer token works too" test "$(code -H 'Authorization: Bearer tok-reader-abcdefgh' "$M/v2/hf/acme/gated/tags/list")" = 200
check "skopeo --registry-token with the mirror's token" bash -c "$SK inspect --raw --tls-verify=false --registry-token tok-reader-abcdefgh docker://$R/hf/acme/gated:main | grep -q '\"config.json\"'"
check "skopeo --creds went through the token endpoint" grep -q 'GET /v2/token' "$T/access.log"
tokof() { "$PY" -c 'import json,sys; d=json.load(sys.stdin); assert d["token"] == d["access_token"] and d["expires_in"] == 300, d; print(d["token"])'; }
export -f tokof
check "the token endpoint: a mirror token as Basic's password for a registry token" bash -c "curl -fsS -u x:tok-reader-abcdefgh '$M/v2/token?service=hubmirror&scope=repository:hf/acme/gated:pull' | tokof >'$T/rt'"
check "... which reads the guarded repo" test "$(code -H "Authorization: Bearer $(cat "$T/rt")" "$M/v2/hf/acme/gated/manifests/main")" = 200
check "... and /v2/" test "$(code -H "Authorization: Bearer $(cat "$T/rt")" "$M/v2/")" = 200
check "a mirror token as Bearer for one too" bash -c "curl -fsS -H 'Authorization: Bearer tok-other-abcdefghi' '$M/v2/token' | tokof >'$T/rt2'"
check "... which may not read the guarded repo: 403 DENIED" bash -c "[ \"\$(code -H \"Authorization: Bearer \$(cat '$T/rt2')\" '$M/v2/hf/acme/gated/manifests/main')\" = 403 ] && [ \"\$(errcode)\" = DENIED ]"
check "anonymous: a registry token for the open repos" bash -c "curl -fsS '$M/v2/token?scope=repository:hf/acme/x:pull' | tokof >'$T/rt3' && [ \"\$(code -H \"Authorization: Bearer \$(cat '$T/rt3')\" '$M/v2/hf/acme/x/manifests/main')\" = 200 ] && [ \"\$(code -H \"Authorization: Bearer \$(cat '$T/rt3')\" '$M/v2/')\" = 200 ]"
check "... not the guarded one: 401 and the challenge" test "$(code -H "Authorization: Bearer $(cat "$T/rt3")" "$M/v2/hf/acme/gated/manifests/main")" = 401
check "an unknown mirror token at the token endpoint: 401" test "$(code -u x:nope "$M/v2/token")" = 401
check "an unknown registry token: 401 and the challenge again" bash -c "[ \"\$(code -D '$T/h2' -H 'Authorization: Bearer hmreg_0000000000000000000000000000000000000000' '$M/v2/hf/acme/x/manifests/main')\" = 401 ] && grep -qi '^WWW-Authenticate: Bearer realm=' '$T/h2'"
check "a reference that is not percent-encoding (%zz): 404 MANIFEST_UNKNOWN" bash -c "[ \"\$(code -u x:tok-other-abcdefghi '$M/v2/hf/acme/x/manifests/%zz')\" = 404 ] && [ \"\$(errcode)\" = MANIFEST_UNKNOWN ]"
check "a path under /v2/ of no registry shape is the Hub API's (an org named v2)" bash -c "[ \"\$(code '$M/v2/some-model/resolve/main/config.json')\" = 404 ] && ! grep -q '\"errors\"' '$T/body'"
check "writes are refused: 405 UNSUPPORTED" bash -c "[ \"\$(code -X PUT '$M/v2/hf/acme/x/manifests/main')\" = 405 ] && [ \"\$(errcode)\" = UNSUPPORTED ]"

# ---- a tag follows the next sync ----
curl -fsS -X POST -d '{"repo": "acme/x", "files": [{"path": "config.json", "content": "{\"architectures\": [\"Other\"]}\n"}]}' \
	"$FAKE_API/_fake/commit" >/dev/null
"$HUBMIRROR" sync hf:acme/x >/dev/null
dig2=$(hdr Docker-Content-Digest "$M/v2/hf/acme/x/manifests/main")
check "after a new commit and a sync, main is a new manifest" bash -c "[ -n '$dig2' ] && [ '$dig2' != '$dig' ]"
check "... whose config says the new architecture" bash -c "$SK inspect --config --raw --tls-verify=false docker://$R/hf/acme/x:main 2>/dev/null | grep -q '\"Other\"' || curl -fsS '$M/v2/hf/acme/x/blobs/'\$(curl -fsS '$M/v2/hf/acme/x/manifests/main' | '$PY' -c 'import json,sys; print(json.load(sys.stdin)[\"config\"][\"digest\"])') | grep -q '\"Other\"'"
check "the old manifest is still found by its digest" bash -c "curl -fsS '$M/v2/hf/acme/x/manifests/$dig' | cmp - '$T/raw.json'"
check "... and skopeo copies it whole, its config.json no ref's any more" bash -c "$SK copy --src-tls-verify=false docker://$R/hf/acme/x@$dig dir:$T/old >/dev/null && cmp '$T/old/manifest.json' '$T/raw.json' && cmp <(ls '$T/old') <(ls '$T/out')"
check "serve stops clean" serve_stops_clean

# ---- a snapshot fetched on demand: no manifest until every file is in the store ----
check "serve with --on-demand starts" start_serve --p2p-listen off --hf-upstream "$FAKE_API" --on-demand 'hf:acme/od'
check "/v2/ on a mirror without tokens: 200 to anyone" test "$(code "$M/v2/")" = 200
check "a client's request lists acme/od on demand" test "$(curl -fsS "$M/acme/od/resolve/main/config.json")" = '{"od": 1}'
check "its manifest, its large file not fetched yet: 404 MANIFEST_UNKNOWN saying why" bash -c "[ \"\$(code '$M/v2/hf/acme/od/manifests/main')\" = 404 ] && [ \"\$(errcode)\" = MANIFEST_UNKNOWN ] && grep -q 'not wholly in the mirror' '$T/body'"
check "its large file fetched through the Hub API" bash -c "curl -fsS '$M/acme/od/resolve/main/model.safetensors' >/dev/null"
check "then its manifest is served" bash -c "curl -fsS '$M/v2/hf/acme/od/manifests/main' | grep -q '\"model.safetensors\"'"
check "serve stops clean (on demand)" serve_stops_clean
finish
