#!/usr/bin/python3
"""upload_scenario.py MIRROR TMPDIR - the write side of the Hub API on a mirror with local namespace
acme (t0840-upload.sh): huggingface_hub's requests replayed (hfupload.py), each result an "ok - X" or
"not ok - X" line. Tokens (t0840's tokens file): hf_writer_acme_0001 writes hf:acme/* and
hf:datasets/acme/*, hf_reader_acme_0002 reads hf:acme/*."""
import base64
import hashlib
import json
import os
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hfupload  # noqa: E402
from hfupload import Api, HubError, check, status_of  # noqa: E402

M, TMP = sys.argv[1], sys.argv[2]
W, R = "hf_writer_acme_0001", "hf_reader_acme_0002"




def get(path, token=W):
    req = urllib.request.Request(M + path, headers={"authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


w, r, anon = Api(M, W), Api(M, R), Api(M)
rnd = lambda n, seed: hashlib.shake_256(seed.encode()).digest(n)  # noqa: E731
weights = rnd(3 << 20, "weights")
config = b'{"hidden_size": 64}\n'
readme = b"# up-model\n\nA model pushed to the mirror.\n"

# create_repo
url = w.create_repo("acme/up-model")
check("create_repo answers the repo's URL", url == M + "/acme/up-model", url)
check("create_repo again: 409", status_of(lambda: w.create_repo("acme/up-model")) == 409)
check("create_repo exist_ok swallows the 409", status_of(lambda: w.create_repo("acme/up-model", exist_ok=True)) == 200)
check("create_repo in another case is the same repo: 409", status_of(lambda: w.create_repo("acme/UP-model")) == 409)
check("create_repo with a read-only token: 403", status_of(lambda: r.create_repo("acme/r-model")) == 403)
check("create_repo anonymous: 401", status_of(lambda: anon.create_repo("acme/a-model")) == 401)
check("create_repo outside the local namespaces: 403", status_of(lambda: w.create_repo("other/x")) == 403)
check("create_repo of a space: 400", status_of(lambda: w.create_repo("acme/sp", repo_type="space")) == 400)
info = json.loads(get("/api/models/acme/up-model")[1])
first = info.get("sha", "")
check("the new repo has its first commit, .gitattributes", len(first) == 40 and
      [s["rfilename"] for s in info.get("siblings", [])] == [".gitattributes"], info)

# preupload: which files go through LFS
modes = {f["path"]: f["uploadMode"] for f in w.preupload("acme/up-model", [
    ("config.json", config), ("model.safetensors", weights), ("blob.dat", b"\0\1binary"),
    ("big.txt", b"x" * (11 << 20))])["files"]}
check("preupload: a text file is regular, safetensors/binary/large go to LFS",
      modes == {"config.json": "regular", "model.safetensors": "lfs", "blob.dat": "lfs", "big.txt": "lfs"}, modes)

# upload_folder's flow: preupload, LFS batch + PUT + verify, commit
ans, sent = w.upload_files("acme/up-model", [("config.json", config), ("model.safetensors", weights),
                                              ("README.md", readme)], summary="Add the weights")
c1 = ans.get("commitOid", "")
check("commit answers a commit id and its URL", len(c1) == 40 and ans.get("commitUrl", "").endswith("/commit/" + c1), ans)
check("one LFS object went up", sent == 1, sent)
st, body = get("/acme/up-model/resolve/main/model.safetensors")
check("the weights resolve, byte for byte", st == 200 and body == weights, st)
st, body = get(f"/acme/up-model/resolve/{c1}/config.json")
check("config.json at the commit id", st == 200 and body == config, st)
info = json.loads(get("/api/models/acme/up-model")[1])
check("repo info's sha is the commit", info.get("sha") == c1, info.get("sha"))
st, _ = get("/acme/up-model/resolve/main/config.json", token=None)
check("a repo under a guarded namespace (hf:acme/*): anonymous 401", st == 401, st)
st, _ = get("/acme/up-model/resolve/main/config.json", token=R)
check("... and the namespace's read-only token reads it", st == 200, st)

# the second commit changes one file: only that file travels
weights2 = weights[:-1] + b"\x00"
ans, sent = w.upload_files("acme/up-model", [("config.json", config), ("model.safetensors", weights2),
                                              ("README.md", readme)], summary="New weights", parent=c1)
c2 = ans.get("commitOid", "")
check("second commit: only the changed file travels", sent == 1 and len(c2) == 40 and c2 != c1, (sent, ans))
st, body = get("/acme/up-model/resolve/main/model.safetensors")
check("the new weights are served", body == weights2)
st, body = get(f"/acme/up-model/resolve/{c1}/model.safetensors")
check("the old commit still has the old weights", body == weights)

# a large object goes up in parts (the multipart transfer: parts written in place, checked whole at the end)
shard = rnd(150 << 20, "shard")
ans, sent = w.upload_files("acme/up-model", [("big/shard.safetensors", shard)], summary="A big shard", parent=c2)
c2_weights, c2 = c2, ans.get("commitOid", c2)
st, body = get("/acme/up-model/resolve/main/big/shard.safetensors")
check("a 150 MiB object in 64 MiB parts, byte for byte", sent == 1 and st == 200 and body == shard, (sent, st))
other = rnd(130 << 20, "other")
oid = hashlib.sha256(other).hexdigest()
batch = w.request("POST", f"{M}/acme/up-model.git/info/lfs/objects/batch", json.dumps(
    {"operation": "upload", "transfers": ["basic", "multipart"], "objects": [{"oid": oid, "size": len(other)}],
     "hash_algo": "sha256"}).encode(), hfupload.LFS_HEADERS)
up = batch["objects"][0]["actions"]["upload"]
parts = sorted((int(k), v) for k, v in up["header"].items() if k.isdigit())
check("multipart: a URL per part and the chunk size", len(parts) == 3 and up["header"]["chunk_size"] == str(64 << 20))
w.put(parts[0][1], other[:64 << 20])
w.put(parts[2][1], other[128 << 20:])
def complete():
    req = urllib.request.Request(up["href"], data=json.dumps({"oid": oid, "parts": [
        {"partNumber": n, "etag": "x"} for n, _ in parts]}).encode(), method="POST", headers=hfupload.LFS_HEADERS)
    try:
        return urllib.request.urlopen(req).status
    except urllib.error.HTTPError as e:
        return e.code
check("a completion with a part missing: refused", complete() == 400)
w.put(parts[1][1], b"\0" * (64 << 20))
check("a completion whose parts do not hash to the oid: refused", complete() == 400)
st = status_of(lambda: w.commit("acme/up-model", [{"key": "lfsFile", "value": {"path": "o.bin", "algo": "sha256",
                                                                                "oid": oid}}], "x"))
check("... and nothing of it can be committed", st == 422, st)
st = status_of(lambda: w.put(parts[1][1] + "0", other[64 << 20:128 << 20]))
check("a part URL changed by hand: refused", st in (403, 404), st)

# parent_commit: a stale one is 412, the right one goes in
st = status_of(lambda: w.commit("acme/up-model", [{"key": "deletedFile", "value": {"path": "README.md"}}],
                                "stale", parent=c1))
check("a commit on a stale parent: 412", st == 412, st)
ans = w.commit("acme/up-model", [{"key": "deletedFile", "value": {"path": "README.md"}}], "Drop README", parent=c2)
c3 = ans["commitOid"]
check("delete_file on the right parent", get("/acme/up-model/resolve/main/README.md")[0] == 404 and
      get(f"/acme/up-model/resolve/{c2}/README.md")[0] == 200)
st = status_of(lambda: w.commit("acme/up-model", [{"key": "deletedFile", "value": {"path": "nope.txt"}}], "x"))
check("deleting a file that is not there: 404", st == 404, st)

# what may not go in
bogus = hashlib.sha256(b"never uploaded").hexdigest()
st = status_of(lambda: w.commit("acme/up-model", [{"key": "lfsFile", "value": {"path": "x.bin", "algo": "sha256",
                                                                                "oid": bogus, "size": 14}}], "x"))
check("an lfsFile whose object was never uploaded: refused", st == 422, st)
for bad in ["../evil.txt", "a/../../b", ".git/config", "/abs"]:
    st = status_of(lambda: w.commit("acme/up-model", [{"key": "file", "value": {
        "content": base64.b64encode(b"x").decode(), "path": bad, "encoding": "base64"}}], "x"))
    check(f"a path that leaves the repo is refused: {bad}", st == 400, st)
st = status_of(lambda: r.commit("acme/up-model", [{"key": "deletedFile", "value": {"path": "config.json"}}], "x"))
check("a commit with a read-only token: 403", st == 403, st)
st = status_of(lambda: anon.commit("acme/up-model", [{"key": "deletedFile", "value": {"path": "config.json"}}], "x"))
check("a commit without a token: 401", st == 401, st)
oid = hashlib.sha256(b"the right bytes").hexdigest()
try:
    w.request("PUT", f"{M}/acme/up-model.git/info/lfs/objects/{oid}", b"the wrong bytes", {})
    st = 200
except HubError as e:
    st = e.status
check("an LFS object whose bytes do not hash to its oid: 400", st == 400, st)
st = status_of(lambda: w.commit("acme/up-model", [{"key": "lfsFile", "value": {"path": "y.bin", "algo": "sha256",
                                                                                "oid": oid}}], "x"))
check("... and it cannot be committed", st == 422, st)
info = json.loads(get("/api/models/acme/up-model")[1])
check("after the refusals the head is still the last good commit", info.get("sha") == c3, info.get("sha"))

# what the clients ask besides
check("validate-yaml answers JSON", w.json("POST", "/api/validate-yaml", {"content": "---\nlicense: mit\n---\n",
                                                                       "repoType": "model"}) == {"errors": [], "warnings": []})
xt = w.request("GET", "/api/models/acme/up-model/xet-write-token/main")
check("a writer gets a Xet write token with the mirror's own CAS (docs/protocols/xet.md)",
      isinstance(xt.get("accessToken"), str) and xt.get("casUrl", "").startswith(M) and xt.get("exp", 0) > 0, xt)
w.create_repo("acme/vis-private", private=True)
check("visibility: private (huggingface_hub 1.8 and later) makes a private repo",
      json.loads(get("/api/models/acme/vis-private")[1]).get("private") is True and
      get("/api/models/acme/vis-private", token=None)[0] in (401, 404))

# branches and tags
w.create_branch("acme/up-model", "dev")
check("create_branch again: 409", status_of(lambda: w.create_branch("acme/up-model", "dev")) == 409)
check("create_branch with a read-only token: 403", status_of(lambda: r.create_branch("acme/up-model", "x")) == 403)
check("a branch name git would not take: 400", status_of(lambda: w.create_branch("acme/up-model", "a..b")) == 400)
ans, _ = w.upload_files("acme/up-model", [("dev.txt", b"on dev\n")], summary="On dev", revision="dev")
check("a commit to the branch", get("/acme/up-model/resolve/dev/dev.txt")[1] == b"on dev\n" and
      get("/acme/up-model/resolve/main/dev.txt")[0] == 404)
w.create_tag("acme/up-model", "v1.0", revision=c1, message="first weights")
check("a tag on an older commit serves that commit's files",
      get("/acme/up-model/resolve/v1.0/model.safetensors")[1] == weights)
refs = json.loads(get("/api/models/acme/up-model/refs")[1])
check("list_repo_refs shows the branch and the tag",
      sorted(b["name"] for b in refs["branches"]) == ["dev", "main"] and [t["name"] for t in refs["tags"]] == ["v1.0"]
      and refs["tags"][0]["targetCommit"] == c1, refs)
check("create_tag again: 409", status_of(lambda: w.create_tag("acme/up-model", "v1.0")) == 409)
st = status_of(lambda: w.commit("acme/up-model", [{"key": "deletedFile", "value": {"path": "config.json"}}], "x",
                                revision="v1.0"))
check("a commit to a tag: 400, the tag stays", st == 400 and
      json.loads(get("/api/models/acme/up-model/refs")[1])["tags"][0]["targetCommit"] == c1, st)
w.delete_tag("acme/up-model", "v1.0")
w.delete_branch("acme/up-model", "dev")
check("delete_tag and delete_branch", get("/acme/up-model/resolve/v1.0/config.json")[0] == 404 and
      get("/acme/up-model/resolve/dev/dev.txt")[0] == 404)
check("the default branch cannot be deleted", status_of(lambda: w.delete_branch("acme/up-model", "main")) == 403)
check("deleting a branch that is not there: 404", status_of(lambda: w.delete_branch("acme/up-model", "nope")) == 404)

# a private dataset: hidden from those without a grant
w.create_repo("acme/secret-data", repo_type="dataset", private=True, old_style=True)
ans, _ = w.upload_files("acme/secret-data", [("data/train.csv", b"a,b\n1,2\n")], repo_type="dataset")
check("a dataset commit", len(ans.get("commitOid", "")) == 40, ans)
check("the private dataset reads with the writer's token",
      get("/datasets/acme/secret-data/resolve/main/data/train.csv")[1] == b"a,b\n1,2\n")
check("the private dataset is not there for anonymous clients",
      get("/datasets/acme/secret-data/resolve/main/data/train.csv", token=None)[0] in (401, 404))
check("nor for a token without a grant of it",
      get("/datasets/acme/secret-data/resolve/main/data/train.csv", token=R)[0] in (403, 404))
names = lambda tok: [d["id"] for d in json.loads(get("/api/datasets?author=acme", token=tok)[1])]  # noqa: E731
check("listings show it to its grantee only", "acme/secret-data" in names(W) and "acme/secret-data" not in names(None)
      and "acme/secret-data" not in names(R), (names(W), names(None)))
# a public one: a write grant guards nothing, everyone reads it
w.create_repo("acme/open-data", repo_type="dataset")
w.upload_files("acme/open-data", [("x.txt", b"open\n")], repo_type="dataset")
check("a public local dataset reads without a token",
      get("/datasets/acme/open-data/resolve/main/x.txt", token=None) == (200, b"open\n"))

# delete_repo
st = status_of(lambda: r.delete_repo("acme/up-model"))
check("delete_repo with a read-only token: 403", st == 403, st)
w.create_repo("acme/doomed")
w.delete_repo("acme/doomed")
check("delete_repo: the repo is gone", get("/api/models/acme/doomed")[0] == 404)
check("delete_repo of a repo not there: 404", status_of(lambda: w.delete_repo("acme/doomed")) == 404)

# the last three commits of main, newest last (the shell's git checks)
json.dump({"c1": c2_weights, "c2": c2, "c3": c3}, open(os.path.join(TMP, "commits.json"), "w"))
sys.exit(1 if hfupload.FAILED else 0)
