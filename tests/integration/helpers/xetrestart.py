#!/usr/bin/python3
"""xetrestart.py - huggingface_hub's Xet upload (as hf_xet sends it: xetformat.py) cut by a restart of
the mirror, for t0857-upload-xet-restart.sh. Two phases, the script restarting serve between them:

  xetrestart.py before MIRROR XET_IDENT STATE   the repo made; file A: xorb and shard; B: its xorb only;
                                                C: its xorb only; D: xorb and shard. The write token
                                                and the hashes go to STATE (JSON).
  xetrestart.py after MIRROR XET_IDENT STATE    with the token from before: B's shard; commits naming
                                                A and B by xetHash, read back; C and D (whose records
                                                the script set past their time) refused.

Prints "ok - ..." / "not ok - ..." lines; exits 1 if any check failed.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from hfupload import Api, HubError  # noqa: E402
import xetformat  # noqa: E402
from xetformat import cas, file_of, make_shard, payload  # noqa: E402

PHASE, M, xetformat.IDENT, STATE = sys.argv[1:5]
W = "hf_writer_acme_0001"
REPO = "acme/restart-xet"
failed = 0


def check(name, cond, detail=None):
    global failed
    print(f"{'ok' if cond else 'not ok'} - {name}" + ("" if cond or detail is None else f" ({detail})"))
    failed += 0 if cond else 1


files = {k: file_of(payload(n, "restart-" + k)) for k, n in
         (("A", 700_000), ("B", 500_000), ("C", 300_000), ("D", 200_000))}
w = Api(M, W)


def xorb(tok, cas_url, f):
    return cas("POST", f"{cas_url}/v1/xorbs/default/{f['id']['xorb']}", tok, f["xorb"])


def shard(tok, cas_url, f):
    return cas("POST", f"{cas_url}/v1/shards", tok, make_shard([f["file"]], [f["xorb_entry"]]))


def commit_xet(path, f):
    try:
        c = w.commit(REPO, [{"key": "lfsFile", "value": {"path": path, "xetHash": f["id"]["file"],
                                                         "size": len(f["data"])}}], "after the restart")
        return 200, c
    except HubError as e:
        return e.status, e.body


if PHASE == "before":
    w.create_repo(REPO)
    t = w.request("GET", f"/api/models/{REPO}/xet-write-token/main")
    tok = t["accessToken"]
    for k in "ABCD":
        st, ans = xorb(tok, t["casUrl"], files[k])
        check(f"xorb of {k} taken", st == 200, (st, ans))
    for k in "AD":
        st, ans = shard(tok, t["casUrl"], files[k])
        check(f"shard of {k} taken", st == 200, (st, ans))
    json.dump({"token": tok, **{k: {"xorb": f["id"]["xorb"], "file": f["id"]["file"], "sha": f["sha"]}
                                for k, f in files.items()}}, open(STATE, "w"))
else:
    tok = json.load(open(STATE))["token"]
    cas_url = M + "/xet-cas"
    st, ans = shard(tok, cas_url, files["B"])
    check("after the restart, a shard naming a xorb posted before it is taken (with the token from before)",
          st == 200 and ans.get("result") == 1, (st, ans))
    st, c = commit_xet("a.bin", files["A"])
    check("a commit naming by xetHash a file a shard made before the restart works", st == 200, (st, c))
    st, c = commit_xet("b.bin", files["B"])
    check("... and one whose xorb came before the restart, its shard after", st == 200, (st, c))
    for path, k in (("a.bin", "A"), ("b.bin", "B")):
        got = w.request("GET", f"/{REPO}/resolve/main/{path}", raw=True)
        check(f"{path} reads back byte for byte", got == files[k]["data"], len(got))
    st, ans = shard(tok, cas_url, files["C"])
    check("a shard naming a xorb whose time ran out is refused (400): upload it again",
          st == 400 and ("no longer kept" in json.dumps(ans) or "not uploaded" in json.dumps(ans)), (st, ans))
    st, c = commit_xet("d.bin", files["D"])
    check("a commit naming a file whose time ran out is refused (422)", st == 422, (st, c))
    st, ans = xorb(tok, cas_url, files["C"])
    st2, ans2 = shard(tok, cas_url, files["C"])
    check("uploaded again, C is taken", st == 200 and st2 == 200, (st, ans, st2, ans2))
sys.exit(1 if failed else 0)
