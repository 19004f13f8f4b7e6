#!/usr/bin/env bash
# t0400-serve-hf: the Hugging Face API served from a synced store, checked with curl header by header
# against docs/protocols/huggingface.md: repo info (blobs, revision by name and by commit), the paginated tree with an
# absolute Link to the mirror's own host (and behind a proxy), paths-info (form and JSON), refs,
# resolve HEAD/GET with the Hub's ETags, Range/206/416, raw, error codes, conditional requests, CORS,
# Xet offered for LFS files only (their identity, docs/protocols/xet.md; t0450 reads them by Xet),
# listings, gated repos, and /healthz.
. "$HM_SRC/tests/integration/lib.sh"
cat >"$T/spec.json" <<'JSON'
{"tokens": {"hf_ok": {"approved": ["acme/gated"]}},
 "repos": [
  {"hub": "hf", "type": "model", "id": "acme/llm",
   "card": {"license": "mit", "tags": ["llm"], "pipeline_tag": "text-generation", "library_name": "transformers"},
   "files": [{"path": "config.json", "content": "{\"hidden_size\": 64}\n"},
             {"path": "empty.txt", "content": ""},
             {"path": "sub/dir/notes md.txt", "content": "spaces and unicode \u00e9\n"},
             {"path": "model.safetensors", "size": 1500000, "seed": 5}]},
  {"hub": "hf", "type": "dataset", "id": "acme/rows",
   "generate": {"count": 1203, "size": 20, "prefix": "data/part-", "suffix": ".txt"}},
  {"hub": "hf", "type": "model", "id": "acme/gated", "gated": "manual",
   "files": [{"path": "config.json", "content": "{\"gated\": 1}\n"}]}
 ]}
JSON
check "fake upstream starts" start_fakehub --repos "$T/spec.json"
export HUBMIRROR_HF_UPSTREAM=$FAKE_API
"$HUBMIRROR" add hf:acme/llm hf:datasets/acme/rows hf:acme/gated >/dev/null
HF_TOKEN=hf_ok "$HUBMIRROR" sync >/dev/null
check "synced" test "$("$HUBMIRROR" ls --json | "$PY" -c 'import json,sys; print(sum(r["sync_status"]=="ok" for r in json.load(sys.stdin)))')" = 3

check "serve starts" start_serve
check "serve is up" curl -fsS "$M/healthz" -o "$T/health"
check "healthz is ok JSON" grep -q '"status":"ok"' "$T/health"
curl -fsS "$FAKE_API/_fake/repos" >"$T/upstream.json"
commit=$("$PY" -c 'import json,sys; print([r for r in json.load(open(sys.argv[1]))["repos"] if r["id"]=="acme/llm"][0]["sha"])' "$T/upstream.json")
up() { "$PY" - "$T/upstream.json" "$@" <<'PY'
import json, sys
spec = json.load(open(sys.argv[1]))
repo, path, field = sys.argv[2:5]
r = [r for r in spec["repos"] if r["id"] == repo and r["hub"] == "hf"][0]
f = [f for f in r["commits"][-1]["files"] if f["path"] == path][0]
print(f[field])
PY
}
hdr() { # hdr FILE NAME: a header's value from a curl -D dump
	grep -i "^$2:" "$1" | head -1 | cut -d' ' -f2- | tr -d '\r'
}

# A: repo info
curl -fsS "$M/api/models/acme/llm?blobs=true" >"$T/info.json"
check "info: id, sha, siblings with blobs" "$PY" - "$T/info.json" "$commit" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["id"] == "acme/llm" and d["sha"] == sys.argv[2], d
sib = {s["rfilename"]: s for s in d["siblings"]}
assert set(sib) == {".gitattributes", "config.json", "empty.txt", "sub/dir/notes md.txt", "model.safetensors"}, sib
st = sib["model.safetensors"]
assert st["size"] == 1500000 and len(st["lfs"]["sha256"]) == 64 and st["lfs"]["pointerSize"] > 100, st
assert len(sib["config.json"]["blobId"]) == 40 and "lfs" not in sib["config.json"]
assert d["gated"] is False and d["cardData"]["license"] == "mit" and d["pipeline_tag"] == "text-generation"
assert "xet" not in json.dumps(d).lower()
PY
check "info by revision name" bash -c "curl -fsS '$M/api/models/acme/llm/revision/main' | grep -q '\"sha\":\"$commit\"'"
check "info by full commit id" bash -c "curl -fsS '$M/api/models/acme/llm/revision/$commit' | grep -q '\"sha\":\"$commit\"'"
curl -sS -D "$T/h404" -o /dev/null "$M/api/models/acme/nope"
check "unknown repo: 404 RepoNotFound" bash -c "head -1 $T/h404 | grep -q ' 404' && grep -qi '^X-Error-Code: RepoNotFound' $T/h404"
curl -sS -D "$T/hrev" -o /dev/null "$M/api/models/acme/llm/revision/refs%2Fpr%2F9"
check "unknown revision: 404 RevisionNotFound" bash -c "head -1 $T/hrev | grep -q ' 404' && grep -qi '^X-Error-Code: RevisionNotFound' $T/hrev"
etag=$(curl -sS -D - -o /dev/null "$M/api/models/acme/llm" | grep -i '^etag:' | cut -d' ' -f2- | tr -d '\r')
check "JSON answers carry a weak ETag" bash -c "[[ '$etag' == W/\\\"* ]]"
check "If-None-Match on info: 304" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'If-None-Match: $etag' '$M/api/models/acme/llm')\" = 304 ]"

# B: tree, paginated
"$PY" - "$M" <<'PY' >"$T/tree.out"
import json, sys, urllib.request, re
base = sys.argv[1]
url = base + "/api/datasets/acme/rows/tree/main?recursive=true"
files, pages, links = [], 0, []
while url:
    r = urllib.request.urlopen(url)
    pages += 1
    for e in json.load(r):
        if e["type"] == "file":
            files.append(e["path"])
    link = r.headers.get("Link")
    m = re.match(r'<(https?://[^>]+)>;\s+rel="next"', link or "")
    url = m.group(1) if m else None
    if url:
        links.append(url)
print(len(files), len(set(files)), pages, all(l.startswith(base + "/") for l in links))
PY
check "tree: 1204 files over 2 pages, Link absolute to the mirror" grep -qx '1204 1204 2 True' "$T/tree.out"
curl -fsS -H 'X-Forwarded-Proto: https' -H 'X-Forwarded-Host: mirror.example' -D "$T/hfw" -o /dev/null \
	"$M/api/datasets/acme/rows/tree/main/data?limit=10"
# (a client that is no --trusted-proxy: its X-Forwarded-* are ignored; t0421 has the trusted case)
check "Link ignores X-Forwarded-* from a client that is no trusted proxy" grep -qi "^Link: <$M/api/datasets/acme/rows/tree/main/data?" "$T/hfw"
curl -fsS "$M/api/models/acme/llm/tree/main" >"$T/root.json"
check "non-recursive root: files and one folder" "$PY" -c '
import json,sys; d = json.load(open(sys.argv[1]))
kinds = {e["path"]: e["type"] for e in d}
assert kinds == {".gitattributes": "file", "config.json": "file", "empty.txt": "file", "model.safetensors": "file", "sub": "directory"}, kinds
assert all(e.get("oid") for e in d) and [e["path"] for e in d if "xetHash" in e] == ["model.safetensors"], d
lfs = [e for e in d if e["path"] == "model.safetensors"][0]["lfs"]
assert lfs["size"] == 1500000 and len(lfs["oid"]) == 64
' "$T/root.json"
check "sub-path raw and encoded give the same listing" bash -c "[ \"\$(curl -fsS '$M/api/models/acme/llm/tree/main/sub/dir')\" = \"\$(curl -fsS '$M/api/models/acme/llm/tree/main/sub%2Fdir')\" ]"
check "tree of a missing folder: 404 EntryNotFound" bash -c "curl -sS -D - -o /dev/null '$M/api/models/acme/llm/tree/main/nope' | grep -qi '^X-Error-Code: EntryNotFound'"

# C: paths-info, form and JSON
curl -fsS -X POST -d 'paths=config.json&paths=sub&paths=missing&expand=false' "$M/api/models/acme/llm/paths-info/main" >"$T/pi1.json"
curl -fsS -X POST -H 'Content-Type: application/json' -d '{"paths": ["model.safetensors", "sub/dir/notes md.txt"], "expand": true}' \
	"$M/api/models/acme/llm/paths-info/main" >"$T/pi2.json"
check "paths-info form: file + folder, missing omitted" "$PY" -c '
import json,sys; d = json.load(open(sys.argv[1]))
assert [(e["path"], e["type"]) for e in d] == [("config.json", "file"), ("sub", "directory")], d' "$T/pi1.json"
check "paths-info JSON with expand: lastCommit" "$PY" -c '
import json,sys; d = json.load(open(sys.argv[1]))
assert len(d) == 2 and all(e["lastCommit"]["id"] == sys.argv[2] for e in d), d' "$T/pi2.json" "$commit"

# F: refs
check "refs: main -> commit" bash -c "curl -fsS '$M/api/models/acme/llm/refs' | /usr/bin/python3 -c '
import json,sys; d=json.load(sys.stdin); b=d[\"branches\"]
assert b[0][\"name\"]==\"main\" and b[0][\"ref\"]==\"refs/heads/main\" and b[0][\"targetCommit\"]==\"$commit\" and d[\"tags\"]==[] and d[\"converts\"]==[], d'"

# D: resolve
curl -sS -I "$M/acme/llm/resolve/main/config.json" >"$T/hcfg"
check "HEAD regular file: 200, ETag = git blob sha1, X-Repo-Commit" bash -c "
	head -1 $T/hcfg | grep -q ' 200' &&
	[ \"\$(grep -i '^etag:' $T/hcfg | cut -d' ' -f2 | tr -d '\r')\" = '\"$(up acme/llm config.json oid)\"' ] &&
	grep -qi '^X-Repo-Commit: $commit' $T/hcfg && grep -qi '^Content-Length: 20' $T/hcfg && grep -qi '^Accept-Ranges: bytes' $T/hcfg"
curl -sS -I "$M/acme/llm/resolve/main/model.safetensors" >"$T/hlfs"
sha=$(up acme/llm model.safetensors sha256)
check "HEAD LFS file: ETag and X-Linked-Etag = sha256, X-Linked-Size" bash -c "
	grep -qi '^ETag: \"$sha\"' $T/hlfs && grep -qi '^X-Linked-Etag: \"$sha\"' $T/hlfs && grep -qi '^X-Linked-Size: 1500000' $T/hlfs"
check "Xet headers on the LFS file only, its links at the mirror" bash -c "! grep -vi '^Access-Control-Expose-Headers' $T/hcfg | grep -qi 'xet' &&
	grep -qi '^X-Xet-Hash: [0-9a-f]\{64\}' $T/hlfs && grep -qi '^Link: <$M/api/models/acme/llm/xet-read-token/' $T/hlfs"
check "GET bytes hash to the sha256" bash -c "[ \"\$(curl -fsS '$M/acme/llm/resolve/main/model.safetensors' | sha256sum | cut -d' ' -f1)\" = $sha ]"
check "GET by commit id and encoded revision" bash -c "curl -fsS '$M/acme/llm/resolve/$commit/config.json' | grep -q hidden_size"
check "path with spaces, encoded" bash -c "curl -fsS '$M/acme/llm/resolve/main/sub/dir/notes%20md.txt' | grep -q 'spaces and unicode'"
curl -sS -D "$T/hr" -o "$T/range.bin" -H 'Range: bytes=100-199' "$M/acme/llm/resolve/main/model.safetensors"
check "Range a-b: 206, Content-Range, 100 bytes" bash -c "head -1 $T/hr | grep -q ' 206' && grep -qi '^Content-Range: bytes 100-199/1500000' $T/hr && [ \$(stat -c %s $T/range.bin) = 100 ]"
check "Range bytes are the right ones" bash -c "[ \"\$(curl -fsS '$M/acme/llm/resolve/main/model.safetensors' | tail -c +101 | head -c 100 | sha256sum)\" = \"\$(sha256sum < $T/range.bin)\" ]"
check "Range N- (resume)" bash -c "[ \"\$(curl -sS -H 'Range: bytes=1499990-' '$M/acme/llm/resolve/main/model.safetensors' | wc -c)\" = 10 ]"
check "Range -N (suffix)" bash -c "[ \"\$(curl -sS -H 'Range: bytes=-7' '$M/acme/llm/resolve/main/model.safetensors' | wc -c)\" = 7 ]"
check "Range past the end: 416 with bytes */size" bash -c "curl -sS -D - -o /dev/null -H 'Range: bytes=1500000-' '$M/acme/llm/resolve/main/model.safetensors' | grep -qi '^Content-Range: bytes \*/1500000'"
check "empty file: 200 to a Range probe" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code} %{size_download}' -H 'Range: bytes=0-0' '$M/acme/llm/resolve/main/empty.txt')\" = '200 0' ]"
lfs_etag=$(grep -i '^etag:' "$T/hlfs" | cut -d' ' -f2 | tr -d '\r')
check "If-None-Match on resolve: 304" bash -c "[ \"\$(curl -sS -o /dev/null -w '%{http_code}' -H 'If-None-Match: $lfs_etag' '$M/acme/llm/resolve/main/model.safetensors')\" = 304 ]"
curl -sS -D "$T/hmiss" -o /dev/null "$M/acme/llm/resolve/main/generation_config.json"
check "missing file: 404 EntryNotFound with X-Repo-Commit" bash -c "grep -qi '^X-Error-Code: EntryNotFound' $T/hmiss && grep -qi '^X-Repo-Commit: $commit' $T/hmiss"
check "datasets resolve" bash -c "curl -fsS '$M/datasets/acme/rows/resolve/main/data/part-00007.txt' | wc -c | grep -qx 20"

# E: raw
check "raw of an LFS file is its pointer" bash -c "curl -fsS '$M/acme/llm/raw/main/model.safetensors' | grep -q '^oid sha256:$sha'"
check "raw of a regular file is the file" bash -c "curl -fsS '$M/acme/llm/raw/main/config.json' | grep -q hidden_size"

# gated: metadata yes, content no (unless the operator opens it)
check "gated info readable, says gated" bash -c "curl -fsS '$M/api/models/acme/gated' | grep -q '\"gated\":\"manual\"'"
curl -sS -D "$T/hg" -o /dev/null "$M/acme/gated/resolve/main/config.json"
check "gated content: 401 GatedRepo" bash -c "head -1 $T/hg | grep -q ' 401' && grep -qi '^X-Error-Code: GatedRepo' $T/hg"
"$HUBMIRROR" add --open hf:acme/gated >/dev/null
check "opened by the operator: content served" bash -c "curl -fsS '$M/acme/gated/resolve/main/config.json' | grep -q gated"

# misc
check "xet-read-token: the mirror's own CAS" bash -c "curl -fsS '$M/api/models/acme/llm/xet-read-token/main' | grep -q '\"casUrl\":\"$M/xet-cas\"'"
check "CORS preflight" bash -c "curl -sS -X OPTIONS -D - -o /dev/null '$M/acme/llm/resolve/main/config.json' | grep -qi '^Access-Control-Allow-Origin: \*'"
check "CORS exposes X-Repo-Commit" grep -qi '^Access-Control-Expose-Headers: .*X-Repo-Commit' "$T/hcfg"
check "listing with search" bash -c "curl -fsS '$M/api/models?search=ll' | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert [m[\"id\"] for m in d]==[\"acme/llm\"], d'"
check "dataset listing" bash -c "curl -fsS '$M/api/datasets' | grep -q '\"id\":\"acme/rows\"'"
check "treesize" bash -c "curl -fsS '$M/api/datasets/acme/rows/treesize/main/data' | grep -q '\"size\":24060'"
check "access log has one line per request, no query strings" bash -c "grep -q '\"GET /api/models/acme/llm?... HTTP/1.1\" 200' $T/access.log && ! grep -q 'blobs=true' $T/access.log"
check "server log stayed quiet" bash -c "! grep -qiE 'error|sanitizer' $T/serve.err"
finish
