#!/usr/bin/env bash
# t0823-mirror-chain: tiers. The fake upstream feeds mirror A, A feeds B, B feeds C (each syncs from
# the one above through its Hub APIs: hf-upstream and ms-upstream). Every mirror of the chain answers
# the clients' requests byte for byte like A (Hugging Face info, tree, paths-info, refs, file
# downloads with their headers; ModelScope listing, info, revisions and files; a dataset; a tag),
# hands out the same info-hashes and the same torrent info dictionaries, and says in its catalog
# where it stands: tier 1, 2, 3, the upstream it syncs from, and when the Hub itself was last asked
# (carried down the chain). A new upstream commit reaches C after A then B sync.
. "$HM_SRC/tests/integration/lib.sh"
"$PY" -c 'import libtorrent' 2>/dev/null || skip "python3-libtorrent is not installed (bash .ci/setup installs it)"
"$PY" - "$T/spec.json" <<'PY'
import json, sys
json.dump({"repos": [
    {"hub": "hf", "type": "model", "id": "acme/chained",
     "commits": [{"key": "c1", "files": [{"path": "config.json", "content": "{\"v\": 1}\n"},
                                         {"path": "model.safetensors", "size": 3000000, "seed": 71}]},
                 {"key": "c2", "files": [{"path": "config.json", "content": "{\"v\": 2}\n"},
                                         {"path": "model.safetensors", "size": 3000000, "seed": 71},
                                         {"path": "sub/dir/notes.md", "content": "# notes\n"}]}],
     "branches": {"main": "c2"}, "tags": {"v1.0": "c1"}},
    {"hub": "hf", "type": "dataset", "id": "acme/chain-data",
     "files": [{"path": "data/train.parquet", "size": 1200000, "seed": 72},
               {"path": "README.md", "content": "---\nlicense: mit\n---\n# data\n"}]},
    {"hub": "ms", "type": "model", "id": "acme/ms-chained",
     "files": [{"path": "configuration.json", "content": "{\"framework\": \"pytorch\"}\n"},
               {"path": "weights.bin", "size": 2000000, "seed": 73}]},
]}, open(sys.argv[1], "w"))
PY
specs="hf:acme/chained hf:datasets/acme/chain-data ms:acme/ms-chained"
# shellcheck disable=SC2086  # a list of specs
check "A synced from the fake upstream" sync_from_fake $specs
check "A serves" start_serve --p2p-listen off
A=$M
# mirror_from DIR UPSTREAM: a mirror in DIR syncs the same list from the hubmirror at UPSTREAM
mirror_from() {
	# shellcheck disable=SC2086
	HUBMIRROR_HF_UPSTREAM=$2 HUBMIRROR_MS_UPSTREAM=$2 "$HUBMIRROR" add --data "$1" $specs >/dev/null &&
		HUBMIRROR_HF_UPSTREAM=$2 HUBMIRROR_MS_UPSTREAM=$2 "$HUBMIRROR" sync --data "$1" --no-progress >"$1.sync.out" 2>&1 ||
		{ sed 's/^/# /' "$1.sync.out"; return 1; }
}
sleep 1.1 # so that a time B wrote of its own would show
check "B synced from A" mirror_from "$T/b" "$A"
check "B serves" start_serve --data "$T/b" --p2p-listen off
B=$M
check "C synced from B" mirror_from "$T/c" "$B"
check "C serves" start_serve --data "$T/c" --p2p-listen off
C=$M

# The same requests to A and to C: bodies byte for byte, and the headers clients read.
cat >"$T/urls" <<'URLS'
/api/models/acme/chained
/api/models/acme/chained/revision/main
/api/models/acme/chained/revision/v1.0
/api/models/acme/chained/tree/main?recursive=true
/api/models/acme/chained/tree/main/sub
/api/models/acme/chained/refs
/acme/chained/resolve/main/model.safetensors
/acme/chained/resolve/v1.0/config.json
/acme/chained/resolve/main/sub/dir/notes.md
/api/datasets/acme/chain-data
/api/datasets/acme/chain-data/tree/main/data
/datasets/acme/chain-data/resolve/main/data/train.parquet
/api/v1/models/acme/ms-chained
/api/v1/models/acme/ms-chained/revisions
/api/v1/models/acme/ms-chained/repo/files?Revision=master&Recursive=true
/api/v1/models/acme/ms-chained/repo?Revision=master&FilePath=weights.bin
URLS
check "A, B and C answer every request byte for byte alike" "$PY" - "$T/urls" "$A" "$B" "$C" <<'PY'
import re, sys, urllib.request, urllib.error
urls = [u for u in open(sys.argv[1]).read().split("\n") if u]
bases = sys.argv[2:]
KEEP = ("content-type", "content-length", "etag", "x-repo-commit", "x-linked-etag", "x-linked-size",
        "accept-ranges", "x-error-code")
def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as r:
            # (ModelScope's envelope names each answer: RequestId differs, as upstream's does)
            body = re.sub(rb'"RequestId":"[^"]*"', b'"RequestId":""', r.read())
            return r.status, {k.lower(): v for k, v in r.headers.items() if k.lower() in KEEP}, body
    except urllib.error.HTTPError as e:
        return e.code, {}, e.read()
bad = 0
for u in urls:
    ref = get(bases[0] + u)
    if ref[0] != 200:
        print("# %s: A answered %d" % (u, ref[0])); bad += 1; continue
    for b in bases[1:]:
        got = get(b + u)
        if got != ref:
            print("# %s differs at %s: %r" % (u, b, [(x[:300] if isinstance(x, bytes) else x) for x in got]))
            print("#   A: %r" % ([(x[:300] if isinstance(x, bytes) else x) for x in ref],))
            bad += 1
sys.exit(1 if bad else 0)
PY
check "the creation times are upstream's (createdAt, CreatedTime)" "$PY" - "$FAKE_API" "$C" <<'PY'
import json, sys, urllib.request
up, c = sys.argv[1:]
get = lambda u: json.load(urllib.request.urlopen(u))
assert get(up + "/api/models/acme/chained")["createdAt"] == get(c + "/api/models/acme/chained")["createdAt"]
assert get(up + "/api/v1/models/acme/ms-chained")["Data"]["CreatedTime"] == get(c + "/api/v1/models/acme/ms-chained")["Data"]["CreatedTime"]
PY
check "the dataset's parquet is upstream's bytes" test "$(curl -fsS "$C/datasets/acme/chain-data/resolve/main/data/train.parquet" | sha256sum | cut -c1-64)" = \
	"$(curl -fsS -L "$FAKE_API/datasets/acme/chain-data/resolve/main/data/train.parquet" | sha256sum | cut -c1-64)"

# One swarm across tiers: the same info-hashes and info dictionaries everywhere.
check "every snapshot has the same torrent on A, B and C" "$PY" - "$A" "$B" "$C" <<'PY'
import sys, json, urllib.request
import libtorrent as lt
bad = 0
for path in ("hf/model/acme/chained", "hf/dataset/acme/chain-data", "ms/model/acme/ms-chained"):
    seen = []
    for base in sys.argv[1:]:
        rj = json.load(urllib.request.urlopen("%s/api/catalog/repos/%s" % (base, path)))
        t = lt.bdecode(urllib.request.urlopen("%s/api/p2p/torrent/%s" % (base, path)).read())
        info = lt.bencode(t[b"info"])
        seen.append((rj["swarm"]["btih"], info))
    if len({s[0] for s in seen}) != 1 or len({s[1] for s in seen}) != 1:
        print("# %s: info-hashes %s" % (path, [s[0] for s in seen])); bad += 1
sys.exit(1 if bad else 0)
PY

# The catalog says where each mirror stands.
repo_json() { curl -fsS "$1/api/catalog/repos/hf/model/acme/chained"; }
repo_json "$A" >"$T/a.json"; repo_json "$B" >"$T/b.json"; repo_json "$C" >"$T/c.json"
check "tiers 1, 2, 3, each naming its upstream, the Hub's last check carried down" "$PY" - "$T" "$FAKE_API" "$A" "$B" <<'PY'
import json, sys, time
t, fake, a, b = sys.argv[1:]
A, B, C = (json.load(open("%s/%s.json" % (t, n))) for n in "abc")
assert (A["tier"], B["tier"], C["tier"]) == (1, 2, 3), (A["tier"], B["tier"], C["tier"])
assert (A["upstream"], B["upstream"], C["upstream"]) == (fake, a, b), (A["upstream"], B["upstream"], C["upstream"])
assert A["origin_checked_at"] and B["origin_checked_at"] == A["origin_checked_at"] == C["origin_checked_at"], (A, B, C)
assert abs(A["origin_checked_at"] - A["last_sync_at"]) <= 1 and C["last_sync_at"] >= A["last_sync_at"], (A, C)
assert 0 <= C["lag_s"] <= time.time() - A["origin_checked_at"] + 1, C["lag_s"]
PY
check "a mirror says its tier to the next one down" bash -c "curl -fsS -D - -o /dev/null '$B/api/models/acme/chained/revision/main' | tr -d '\r' | grep -qix 'x-hubmirror-tier: 2'"
check "the web page's API shows the tier in the list too" "$PY" -c '
import json, sys, urllib.request
d = json.load(urllib.request.urlopen(sys.argv[1] + "/api/catalog/repos?q=chained"))
assert sorted((r["spec"], r["tier"]) for r in d["repos"]) == [("hf:acme/chained", 3), ("ms:acme/ms-chained", 3)], d' "$C"

# A new upstream commit flows down: A, then B, then C.
curl -fsS -X POST "$FAKE_API/_fake/commit" -d '{"repo": "acme/chained", "hub": "hf", "type": "model", "branch": "main",
  "title": "v3", "files": [{"path": "config.json", "content": "{\"v\": 3}\n"}]}' >/dev/null
sleep 1.1 # so the Hub's check has a later second than the first
check "A syncs the new commit" "$HUBMIRROR" sync --no-progress hf:acme/chained
check "B syncs it from A" env HUBMIRROR_HF_UPSTREAM="$A" "$HUBMIRROR" sync --data "$T/b" --no-progress hf:acme/chained
check "C syncs it from B" env HUBMIRROR_HF_UPSTREAM="$B" "$HUBMIRROR" sync --data "$T/c" --no-progress hf:acme/chained
check "C serves the new config" test "$(curl -fsS "$C/acme/chained/resolve/main/config.json")" = '{"v": 3}'
repo_json "$A" >"$T/a2.json"; repo_json "$C" >"$T/c2.json"
check "C's commit and Hub check are A's new ones" "$PY" -c '
import json, sys
a, c, a1 = (json.load(open(p)) for p in sys.argv[1:])
assert c["commit"] == a["commit"] != a1["commit"], (c["commit"], a["commit"])
assert c["origin_checked_at"] == a["origin_checked_at"] > a1["origin_checked_at"], (c, a)' "$T/a2.json" "$T/c2.json" "$T/a.json"
finish
