#!/usr/bin/python3
"""xetupload.py - huggingface_hub's upload through Xet, as hf_xet sends it, replayed with the standard
library (t0854-upload-xet.sh), and the attacks on it.

hf_xet cannot be installed here. Its requests are: the write token (GET .../xet-write-token/REV with the
Hub token), each xorb (POST {casUrl}/v1/xorbs/default/HASH, Bearer the write token: chunks behind their
8-byte headers, LZ4 frames or BG4-LZ4 or none, then the XETBLOB footer), the shard (POST
{casUrl}/v1/shards: the files as terms with verification hashes and sha256, the xorbs with their
chunks), then the NDJSON commit naming each file by sha256 (huggingface_hub's _commit_api.py). This
helper builds xorbs and shards itself (xetformat.py: the formats written from the spec, the hashes
from the project's xet-ident, the LZ4 frames from Debian's lz4 tool).

  xetupload.py MIRROR DATA_DIR XET_IDENT

Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from hfupload import Api, HubError  # noqa: E402
import xetformat  # noqa: E402
from xetformat import cas, file_of, head_only, make_shard, payload, token_headers  # noqa: E402

M, DATA, xetformat.IDENT = sys.argv[1:4]
W, OTHER, READER = "hf_writer_acme_0001", "hf_writer_other_0002", "hf_reader_acme_0003"
failed = 0


def check(name, cond, detail=None):
    global failed
    print(f"{'ok' if cond else 'not ok'} - {name}" + ("" if cond or detail is None else f" ({detail})"))
    failed += 0 if cond else 1


def write_token(api, repo):
    """The write token as huggingface_hub takes it: from the answer's headers (utils/_xet.py), which must
    say what the JSON @huggingface/hub reads says."""
    st, info, body = token_headers(M, api.token, f"/api/models/{repo}/xet-write-token/main")
    if st != 200:
        raise HubError(st, json.dumps(body).encode(), {})
    check(f"xet-write-token of {repo}: X-Xet-Cas-Url, X-Xet-Access-Token, X-Xet-Token-Expiration, as the JSON",
          info is not None and body is not None and (info["endpoint"], info["access_token"], info["exp"]) ==
          (body["casUrl"], body["accessToken"], body["exp"]), (info, body))
    return info["access_token"], info["endpoint"]


def in_store(sha):
    return os.path.exists(os.path.join(DATA, "store", "blobs", sha[:2], sha))


w, other, reader = Api(M, W), Api(M, OTHER), Api(M, READER)
w.create_repo("acme/py-xet")
other.create_repo("other/secret", private=True)

# huggingface_hub's flow
tok, cas_url = write_token(w, "acme/py-xet")
check("the write token names the mirror's CAS", cas_url.startswith(M + "/"), cas_url)
good = file_of(payload(700_000, "good"))
st, ans = cas("POST", f"{cas_url}/v1/xorbs/default/{good['id']['xorb']}", tok, good["xorb"])
check("a xorb of LZ4, BG4-LZ4 and plain chunks with hf_xet's footer is taken", st == 200 and ans.get("was_inserted"),
      (st, ans))
st, ans = cas("GET", f"{cas_url}/v1/chunks/default-merkledb/{good['chunks'][0][0]}", tok)
check("the global dedup query for a chunk only a posted xorb holds (no stored file): 404", st == 404, st)
st, _ = cas("GET", f"{cas_url}/v1/chunks/default-merkledb/{good['chunks'][0][0]}", None)
check("... and 401 without a token", st == 401, st)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([good["file"]], [good["xorb_entry"]]))
check("the shard is taken", st == 200 and ans.get("result") == 1, (st, ans))
check("the file is in the store as its plain bytes, named by its sha256", in_store(good["sha"]))
c = w.commit("acme/py-xet", [{"key": "lfsFile", "value": {"path": "model.bin", "algo": "sha256",
                                                          "oid": good["sha"], "size": len(good["data"])}}], "xet")
check("the commit names it by sha256, as huggingface_hub sends it", len(c.get("commitOid", "")) == 40, c)
got = w.request("GET", "/acme/py-xet/resolve/main/model.bin", raw=True)
check("it reads back over plain HTTP byte for byte", got == good["data"], len(got))
want = {"operation": "download", "objects": [{"oid": good["sha"], "size": len(good["data"])}]}
b = w.request("POST", "/acme/py-xet.git/info/lfs/objects/batch", json.dumps(want).encode(),
              {"Accept": "application/vnd.git-lfs+json", "Content-Type": "application/vnd.git-lfs+json"})
act = b["objects"][0].get("actions", {}).get("download", {})
got = w.request("GET", act.get("href", M + "/none"), headers=act.get("header"), raw=True) if act else b""
check("... and through Git LFS's download batch, as git-lfs fetches it", got == good["data"], b)
c = w.commit("acme/py-xet", [{"key": "lfsFile", "value": {"path": "by-xet.bin", "xetHash": good["id"]["file"],
                                                          "size": len(good["data"])}}], "by xetHash")
got = w.request("GET", "/acme/py-xet/resolve/main/by-xet.bin", raw=True)
check("a commit may name it by its xetHash too, and it reads back", got == good["data"], (c, len(got)))


def commit_status(api, repo, value):
    try:
        api.commit(repo, [{"key": "lfsFile", "value": value}], "x")
        return 200
    except HubError as e:
        return e.status


def refused(name, st, want, ans):
    check(name, st == want, (st, ans))


# a forged xorb: the bytes of one under another's name, and another's bytes under its name
bad = file_of(payload(300_000, "forged"))
forged = bytearray(bad["xorb"])
forged[100] ^= 1
st, ans = cas("POST", f"{cas_url}/v1/xorbs/default/{bad['id']['xorb']}", tok, bytes(forged))
refused("a xorb whose bytes are not its hash's: 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/xorbs/default/{good['id']['xorb'][:-1]}0", tok, good["xorb"])
refused("a xorb posted under another hash: 400", st, 400, ans)
check("... nothing kept of either",
      not os.path.exists(os.path.join(DATA, "xet-uploads", bad["id"]["xorb"])) and
      not os.path.exists(os.path.join(DATA, "xet-uploads", good["id"]["xorb"][:-1] + "0")))
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([bad["file"]], []))
refused("... and a shard naming the refused xorb: 400", st, 400, ans)

# chunk-hash lies in a shard, over a xorb that was uploaded
lie = file_of(payload(400_000, "lie"))
st, ans = cas("POST", f"{cas_url}/v1/xorbs/default/{lie['id']['xorb']}", tok, lie["xorb"])
check("(a second xorb taken)", st == 200, (st, ans))
chunks = list(lie["chunks"])
chunks[1] = (good["chunks"][0][0], chunks[1][1])
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([lie["file"]], [(lie["id"]["xorb"], chunks)]))
refused("a shard listing a chunk hash its xorb does not have: 400", st, 400, ans)
fh, sha, [(xh, size, start, end, rh)] = lie["file"]
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([(fh, sha, [(xh, size, start, end, good["id"]["range"])])],
                                                             []))
refused("a term whose verification hash is not its chunks': 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([(good["id"]["file"], sha, [(xh, size, start, end, rh)])],
                                                             []))
refused("a file whose chunks are not its Xet hash: 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([(fh, good["sha"], [(xh, size, start, end, rh)])], []))
refused("a file whose bytes are not the sha256 the shard says: 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([(fh, sha, [(xh, size + 1, start, end, rh)])], []))
refused("a term whose size is not its chunks': 400", st, 400, ans)
check("... none of it in the store", not in_store(lie["sha"]))
try:
    w.commit("acme/py-xet", [{"key": "lfsFile", "value": {"path": "lie.bin", "algo": "sha256", "oid": lie["sha"],
                                                          "size": len(lie["data"])}}], "lie")
    st = 200
except HubError as e:
    st = e.status
check("... nor can a commit name it", st == 422, st)

st = commit_status(w, "acme/py-xet", {"path": "u.bin", "xetHash": bad["id"]["file"]})
check("a commit naming an unknown xetHash: 422", st == 422, st)
st = commit_status(w, "acme/py-xet", {"path": "u.bin", "xetHash": good["id"]["file"], "size": 5})
check("... or a known one with another size: 422", st == 422, st)

# another writer's private xorb
otok, ocas = write_token(other, "other/secret")
sec = file_of(payload(350_000, "secret"))
st, _ = cas("POST", f"{ocas}/v1/xorbs/default/{sec['id']['xorb']}", otok, sec["xorb"])
st2, _ = cas("POST", f"{ocas}/v1/shards", otok, make_shard([sec["file"]], [sec["xorb_entry"]]))
check("(the other writer's private file is in)", st == 200 and st2 == 200, (st, st2))
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([sec["file"]], []))
refused("a shard naming another repo's xorb: 400", st, 400, ans)
st, ans = cas("POST", f"{cas_url}/v1/shards", tok, make_shard([sec["file"]], [sec["xorb_entry"]]))
refused("... listing it too: 400", st, 400, ans)
try:
    w.commit("acme/py-xet", [{"key": "lfsFile", "value": {"path": "stolen.bin", "algo": "sha256", "oid": sec["sha"],
                                                          "size": len(sec["data"])}}], "steal")
    st = 200
except HubError as e:
    st = e.status
check("... and its sha256 cannot be committed here", st == 422, st)
st = commit_status(w, "acme/py-xet", {"path": "stolen.bin", "xetHash": sec["id"]["file"]})
check("... nor its xetHash (another repo's file): 422", st == 422, st)

# bounds, refused from the head
st = head_only(f"{cas_url}/v1/xorbs/default/{good['id']['xorb']}", tok, 65 << 20)
check("a xorb over 64 MiB (and a footer's room) is refused before its bytes: 413", st == 413, st)
st = head_only(f"{cas_url}/v1/shards", tok, (64 << 20) + 1)
check("a shard over 64 MiB: 413", st == 413, st)

# who may write
try:
    reader.request("GET", "/api/models/acme/py-xet/xet-write-token/main")
    st = 200
except HubError as e:
    st = e.status
check("a token without a write grant gets no write token: 403", st == 403, st)
st, _ = cas("POST", f"{cas_url}/v1/shards", W, make_shard([good["file"]], []))
check("the Hub token itself is no Xet token: 401", st == 401, st)
st, _ = cas("POST", f"{cas_url}/v1/shards", tok[:-2] + ("AA" if not tok.endswith("AA") else "BB"),
            make_shard([good["file"]], []))
check("a write token altered: 401", st == 401, st)
st, rinfo, rt = token_headers(M, W, "/api/models/acme/py-xet/xet-read-token/main")
check("xet-read-token: the same headers, saying what its JSON says", st == 200 and rinfo is not None and
      (rinfo["endpoint"], rinfo["access_token"], rinfo["exp"]) == (rt["casUrl"], rt["accessToken"], rt["exp"]),
      (st, rinfo, rt))
rtok = rinfo["access_token"]
check("reads and writes have one CAS", rinfo["endpoint"] == cas_url, (rinfo["endpoint"], cas_url))
st, _ = cas("POST", f"{cas_url}/v1/xorbs/default/{good['id']['xorb']}", rtok, good["xorb"])
check("a read token (the same writer's, the same repo) writes nothing: 401", st == 401, st)
st, _ = cas("POST", f"{cas_url}/v1/shards", rtok, make_shard([good["file"]], [good["xorb_entry"]]))
check("... nor a shard: 401", st == 401, st)
st, _ = cas("POST", f"{cas_url}/v1/shards", otok, make_shard([good["file"]], []))
check("other's token writes other's repo only: acme's xorb is not its own (400)", st == 400, st)

# the mirror serves on
got = Api(M, W).request("GET", "/acme/py-xet/resolve/main/model.bin", raw=True)
check("after all that the mirror serves the good file", got == good["data"])
sys.exit(1 if failed else 0)
