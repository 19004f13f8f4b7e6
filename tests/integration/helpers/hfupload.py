#!/usr/bin/python3
"""hfupload.py - huggingface_hub's write requests, replayed with the standard library.

huggingface_hub cannot be installed here; these are the requests its HfApi makes (create_repo,
delete_repo, preupload, the Git LFS batch with basic transfer and verify, create_commit's NDJSON),
with the same paths, headers and bodies, so the tests drive the mirror as that client would.

Used as a library by the tests (import hfupload) and from the shell:
  hfupload.py MIRROR TOKEN upload-folder REPO_ID DIR [--type dataset] [--parent SHA] [--summary S]
prints the commit id; exits 1 with the server's answer on a refusal.
"""
import base64
import hashlib
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

LFS_HEADERS = {"Accept": "application/vnd.git-lfs+json", "Content-Type": "application/vnd.git-lfs+json"}


class HubError(Exception):
    def __init__(self, status, body, headers):
        super().__init__(f"HTTP {status}: {body[:300]!r}")
        self.status, self.body, self.headers = status, body, headers


class Api:
    def __init__(self, endpoint, token=None):
        self.endpoint = endpoint.rstrip("/")
        self.token = token

    def _headers(self, extra=None):
        h = {"user-agent": "huggingface_hub/replay; python/3"}
        if self.token:
            h["authorization"] = f"Bearer {self.token}"
        h.update(extra or {})
        return h

    def request(self, method, url, data=None, headers=None, raw=False):
        if not url.startswith("http"):
            url = self.endpoint + url
        req = urllib.request.Request(url, data=data, method=method, headers=self._headers(headers))
        try:
            # (a silence this long is a hang; a loaded machine answers a commit of 20,000 files in
            # minutes: t0845's took over 120 s beside six busy builds)
            with urllib.request.urlopen(req, timeout=280) as r:
                body = r.read()
                return body if raw else (json.loads(body) if body else None)
        except urllib.error.HTTPError as e:
            raise HubError(e.code, e.read(), dict(e.headers)) from None

    def json(self, method, path, obj, headers=None):
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        return self.request(method, path, json.dumps(obj).encode(), h)

    # HfApi.create_repo: POST /api/repos/create {name, organization, visibility (since 1.8; before it
    # private: bool), type (not for models)}
    def create_repo(self, repo_id, repo_type=None, private=False, exist_ok=False, old_style=False):
        org, name = repo_id.split("/", 1)
        body = {"name": name, "organization": org}
        if old_style:
            body["private"] = private
        elif private:
            body["visibility"] = "private"
        if repo_type is not None:
            body["type"] = repo_type
        try:
            return self.json("POST", "/api/repos/create", body)["url"]
        except HubError as e:
            if exist_ok and e.status == 409:
                return None
            raise

    def delete_repo(self, repo_id, repo_type=None):
        org, name = repo_id.split("/", 1)
        body = {"name": name, "organization": org}
        if repo_type is not None:
            body["type"] = repo_type
        return self.json("DELETE", "/api/repos/delete", body)

    def _prefix(self, repo_type):
        return "datasets/" if repo_type == "dataset" else ""

    def _api(self, repo_type):
        return "datasets" if repo_type == "dataset" else "models"

    # _commit_api._fetch_upload_modes: POST /api/{type}s/{id}/preupload/{rev} {files: [{path, sample, size}]}
    def preupload(self, repo_id, files, repo_type=None, revision="main"):
        body = {"files": [{"path": p, "sample": base64.b64encode(c[:512]).decode(), "size": len(c)}
                          for p, c in files]}
        rev = urllib.parse.quote(revision, safe="")
        return self.json("POST", f"/api/{self._api(repo_type)}/{repo_id}/preupload/{rev}", body)

    # lfs.post_lfs_batch_info, then each object's upload (PUT) and verify (POST)
    def lfs_upload(self, repo_id, blobs, repo_type=None, revision="main"):
        objs = [{"oid": hashlib.sha256(c).hexdigest(), "size": len(c)} for c in blobs]
        url = f"{self.endpoint}/{self._prefix(repo_type)}{repo_id}.git/info/lfs/objects/batch"
        body = {"operation": "upload", "transfers": ["basic", "multipart"], "objects": objs,
                "hash_algo": "sha256", "ref": {"name": revision}}
        batch = self.request("POST", url, json.dumps(body).encode(), LFS_HEADERS)
        uploaded = 0
        for o, c in zip(batch["objects"], blobs):
            if "error" in o:
                raise HubError(o["error"].get("code", 0), json.dumps(o).encode(), {})
            actions = o.get("actions") or {}
            if "upload" not in actions:
                continue  # the server has it
            up = actions["upload"]
            header = up.get("header") or {}
            if "chunk_size" in header:  # lfs._upload_multi_part: the parts, then the completion
                self.multipart(o["oid"], c, up["href"], header)
            else:  # lfs._upload_single_part: neither header nor token goes with the PUT
                self.put(up["href"], c)
            uploaded += 1
            if "verify" in actions:
                v = actions["verify"]
                self.request("POST", v["href"], json.dumps({"oid": o["oid"], "size": o["size"]}).encode(),
                             dict(v.get("header") or {}))
        return uploaded

    def put(self, url, data):
        req = urllib.request.Request(url, data=data, method="PUT")
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                return r.headers
        except urllib.error.HTTPError as e:
            raise HubError(e.code, e.read(), dict(e.headers)) from None

    def multipart(self, oid, content, href, header):
        chunk = int(header["chunk_size"])
        parts = sorted((int(k), v) for k, v in header.items() if k.isdigit())
        if len(parts) != (len(content) + chunk - 1) // chunk:
            raise HubError(0, b"Invalid server response to upload large LFS file", {})
        done = []
        for n, url in parts:
            etag = self.put(url, content[(n - 1) * chunk:n * chunk]).get("etag")
            if not etag:
                raise HubError(0, b"Cannot get ETag of part during multipart upload", {})
            done.append({"partNumber": n, "etag": etag})
        req = urllib.request.Request(href, data=json.dumps({"oid": oid, "parts": done}).encode(), method="POST",
                                     headers=LFS_HEADERS)
        try:
            with urllib.request.urlopen(req, timeout=120) as r:
                r.read()
        except urllib.error.HTTPError as e:
            raise HubError(e.code, e.read(), dict(e.headers)) from None

    # HfApi.create_commit: POST /api/{type}s/{id}/commit/{rev}, application/x-ndjson
    def commit(self, repo_id, ops, summary="Upload files", description=None, parent=None, repo_type=None,
               revision="main"):
        header = {"summary": summary, "description": description or ""}
        if parent:
            header["parentCommit"] = parent
        lines = [{"key": "header", "value": header}] + ops
        data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
        rev = urllib.parse.quote(revision, safe="")
        return self.request("POST", f"/api/{self._api(repo_type)}/{repo_id}/commit/{rev}", data,
                            {"Content-Type": "application/x-ndjson"})

    # HfApi.create_branch / delete_branch / create_tag / delete_tag
    def create_branch(self, repo_id, branch, revision=None, repo_type=None):
        body = {"startingPoint": revision} if revision else {}
        b = urllib.parse.quote(branch, safe="")
        return self.json("POST", f"/api/{self._api(repo_type)}/{repo_id}/branch/{b}", body)

    def delete_branch(self, repo_id, branch, repo_type=None):
        b = urllib.parse.quote(branch, safe="")
        return self.request("DELETE", f"/api/{self._api(repo_type)}/{repo_id}/branch/{b}")

    def create_tag(self, repo_id, tag, revision=None, message=None, repo_type=None):
        body = {"tag": tag}
        if message:
            body["message"] = message
        rev = urllib.parse.quote(revision or "main", safe="")
        return self.json("POST", f"/api/{self._api(repo_type)}/{repo_id}/tag/{rev}", body)

    def delete_tag(self, repo_id, tag, repo_type=None):
        t = urllib.parse.quote(tag, safe="")
        return self.request("DELETE", f"/api/{self._api(repo_type)}/{repo_id}/tag/{t}")

    def upload_files(self, repo_id, files, repo_type=None, summary="Upload files", parent=None,
                     revision="main"):
        """upload_folder's flow: preupload, LFS upload of the large files, the commit. Returns
        (commit answer, number of LFS objects sent)."""
        for path, content in files:
            if path == "README.md":  # _commit_api: the card is validated first; the answer must be JSON
                self.json("POST", "/api/validate-yaml", {"content": content.decode(), "repoType": repo_type or "model"})
        modes = {f["path"]: f for f in self.preupload(repo_id, files, repo_type, revision)["files"]}
        ops, lfs = [], []
        for path, content in files:
            if modes[path]["uploadMode"] == "lfs":
                sha = hashlib.sha256(content).hexdigest()
                if modes[path].get("oid") == sha:
                    continue  # unchanged: the client leaves it out
                lfs.append(content)
                ops.append({"key": "lfsFile", "value": {"path": path, "algo": "sha256", "oid": sha,
                                                        "size": len(content)}})
            else:
                git = hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()
                if modes[path].get("oid") == git:
                    continue
                ops.append({"key": "file", "value": {"content": base64.b64encode(content).decode(),
                                                     "path": path, "encoding": "base64"}})
        sent = self.lfs_upload(repo_id, lfs, repo_type, revision) if lfs else 0
        return self.commit(repo_id, ops, summary, None, parent, repo_type, revision), sent


# The scenarios' reporting (upload_scenario.py, upload_attacks.py, gc_writers.py): each check an
# "ok - X" or "not ok - X" line; FAILED counts the second kind.
FAILED = 0


def check(name, cond, detail=""):
    global FAILED
    print(("ok - " if cond else "not ok - ") + name + ("" if cond or not detail else f" ({detail})"), flush=True)
    FAILED += not cond


def status_of(fn):
    """The HTTP status fn's request ends with: 200, or the HubError's."""
    try:
        fn()
        return 200
    except HubError as e:
        return e.status


def read_folder(d):
    out = []
    for root, _, names in os.walk(d):
        for n in sorted(names):
            p = os.path.join(root, n)
            with open(p, "rb") as f:
                out.append((os.path.relpath(p, d), f.read()))
    return sorted(out)


def main(argv):
    mirror, token, cmd = argv[1:4]
    api = Api(mirror, token if token != "-" else None)
    if cmd == "upload-folder":
        repo_id, d = argv[4], argv[5]
        rest = argv[6:]
        opt = dict(zip(rest[::2], rest[1::2]))
        try:
            api.create_repo(repo_id, opt.get("--type"), exist_ok=True)
            answer, _ = api.upload_files(repo_id, read_folder(d), opt.get("--type"), opt.get("--summary", "Upload"),
                                         opt.get("--parent"))
        except HubError as e:
            print(f"refused: {e}", file=sys.stderr)
            return 1
        print(answer["commitOid"])
        return 0
    print(f"unknown command {cmd}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
