"""The ModelScope API of the fake hub (same API host, paths under /api/v1/).

Every JSON answer is wrapped in the ModelScope envelope
{"Code", "Success", "Data", "Message", "RequestId"}; errors keep the envelope
with Success false and Code set to the HTTP status.  The default branch is
`master`.  Big LFS files may answer 302 to the CDN host, like HF.
"""

import uuid
from urllib.parse import quote, unquote

from httpbase import Answered, truthy
from hfapi import UNSAFE_NAMES

BLOB_MODE, TREE_MODE = "33188", "16384"


def envelope(h, data, status=200, message="success"):
    body = {"Code": status, "Success": status == 200, "Data": data, "Message": message,
            "RequestId": str(uuid.uuid4())}
    h.send_json(status, body, etag=False)
    raise Answered()


def fail(h, status, message):
    envelope(h, None, status, message)


def token_info(h):
    """Token from `Authorization: Bearer` or the m_session_id cookie; unknown = anonymous."""
    token = None
    auth = h.headers.get("Authorization") or ""
    if auth.lower().startswith("bearer ") and not h.app.config.ms_cookie_auth_only:
        token = auth[7:].strip()
    for part in (h.headers.get("Cookie") or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == "m_session_id" and value:
            token = token or value
    return h.app.world.tokens.get(token) if token else None


def allowed(info, repo, key):
    names = (info or {}).get(key, [])
    return repo.id in names or "*" in names


def find(h):
    """(repo, remaining raw segments, token info) or an error envelope."""
    segs = h.segments
    if len(segs) < 4 or segs[2] not in ("models", "datasets"):
        fail(h, 404, "Not Found")
    rtype = segs[2][:-1]
    world = h.app.world
    if rtype == "dataset" and segs[3].isdigit():
        repo, rest = world.get_numeric("ms", "dataset", segs[3]), segs[4:]
        name = segs[3]
    elif len(segs) >= 5:
        name = unquote(segs[3]) + "/" + unquote(segs[4])
        repo, rest = world.get("ms", rtype, name), segs[5:]
    else:
        fail(h, 404, "Not Found")
    info = token_info(h)
    if repo is None:
        fail(h, 404, "%s %s not found" % (rtype, name))
    if repo.private and not (allowed(info, repo, "read") or allowed(info, repo, "approved")):
        fail(h, 403, "no permission to access %s %s" % (rtype, name))
    return repo, rest, info


def check_content(h, repo, info):
    if repo.disabled:
        fail(h, 403, "Access to this resource is disabled.")
    if repo.gated and not allowed(info, repo, "approved"):
        fail(h, 403, "no permission to download %s, please apply for access" % repo.id)


def commit_for(h, repo):
    rev = h.q("Revision") or h.q("Ref") or None
    commit = repo.resolve(rev)
    if commit is None:
        fail(h, 404, "Revision %s not found" % rev)
    return commit


def handle(h):
    repo, rest, info = find(h)
    if not rest:
        return info_answer(h, repo)
    if rest == ["revisions"]:
        return revisions_answer(h, repo)
    if rest == ["repo", "files"]:
        return files_answer(h, repo)
    if rest == ["repo", "tree"]:
        return dataset_tree_answer(h, repo)
    if rest == ["repo"]:
        check_content(h, repo, info)
        return download(h, repo)
    if rest[0] == "download":
        envelope(h, None)
    fail(h, 404, "Not Found")


def info_answer(h, repo):
    head = repo.resolve(h.q("Revision")) or repo.head()
    owner, _, name = repo.id.partition("/")
    card = repo.card or {}
    data = {"Id": repo.numeric_id, "Name": name, "ChineseName": name,
            "Description": "", "License": card.get("license", ""), "Tags": card.get("tags", []),
            "CreatedTime": int(repo.created), "LastUpdatedTime": int(head.date) if head else None,
            "Downloads": repo.downloads, "Stars": repo.likes,
            "Visibility": 1 if repo.private else 5, "IsAccessible": True,
            "Revision": h.q("Revision") or repo.default_branch}
    if repo.type == "model":
        data.update(Path=owner, Tasks=[{"Name": card["pipeline_tag"]}] if card.get(
            "pipeline_tag") else [], LibraryName=card.get("library_name"))
    else:
        data.update(Namespace=owner, Owner=owner, Type=int(card.get("ms_dataset_type", 2)))
    envelope(h, data)


def revisions_answer(h, repo):
    end = h.q("EndTime")

    def items(table):
        out = []
        for name, c in table.items():
            if end and c.date > float(end):
                continue
            out.append({"Revision": name, "CreatedAt": int(c.date), "CreatedBy": c.author,
                        "Message": c.title, "Url": ""})
        return out
    envelope(h, {"RevisionMap": {"Branches": items(repo.branches), "Tags": items(repo.tags)}})


def file_entry(commit, path, is_dir):
    """One entry of a ModelScope listing."""
    name = path.rsplit("/", 1)[-1]
    if is_dir:
        last = commit.dir_last_change(path)
        return {"Name": name, "Path": path, "Type": "tree", "Size": 0, "Sha256": "",
                "Revision": last.id, "IsLFS": False, "Mode": TREE_MODE,
                "CommitMessage": last.title, "CommittedDate": int(last.date),
                "CommitterName": last.author, "CommitId": None, "InCheck": False}
    f = commit.files[path]
    last = commit.last_change(path)
    return {"Name": name, "Path": path, "Type": "blob", "Size": f.size, "Sha256": f.sha256,
            "Revision": last.id, "IsLFS": f.lfs, "Mode": BLOB_MODE,
            "CommitMessage": last.title, "CommittedDate": int(last.date),
            "CommitterName": last.author, "CommitId": last.id, "InCheck": False}


def listing(h, repo):
    """All entries under Root for the requested Revision."""
    commit = commit_for(h, repo)
    root = unquote(h.q("Root") or "").strip("/")
    if root and not commit.is_dir(root):
        fail(h, 404, "Root %s not found" % root)
    recursive = truthy(h.q("Recursive", "false"))
    entries = [file_entry(commit, p, d) for p, d in commit.walk(root, recursive)]
    if h.take_fault(("unsafe_names",)):
        entries += [{"Name": n, "Path": n, "Type": "blob", "Size": 4, "Sha256": "0" * 64,
                     "Revision": commit.id, "IsLFS": False, "Mode": BLOB_MODE} for n in UNSAFE_NAMES]
    return entries


def files_answer(h, repo):
    envelope(h, {"Files": listing(h, repo)})


def dataset_tree_answer(h, repo):
    entries = listing(h, repo)
    size = max(1, int(h.q("PageSize") or 100))
    number = max(1, int(h.q("PageNumber") or 1))
    envelope(h, {"Files": entries[(number - 1) * size:number * size], "TotalCount": len(entries)})


def download(h, repo):
    commit = commit_for(h, repo)
    path = (h.q("FilePath") or "").strip("/")
    f = commit.files.get(path)
    if f is None:
        fail(h, 404, "file %s not found" % path)
    if f.lfs and f.size >= h.app.config.ms_cdn_threshold:
        h.send_redirect(302, h.app.cdn_url(repo, f))
        raise Answered()
    name = path.rsplit("/", 1)[-1]
    headers = [("Accept-Ranges", "bytes"),
               ("Content-Disposition", "attachment; filename=\"%s\"; filename*=UTF-8''%s"
                % (name.replace('"', ""), quote(name)))]
    h.send_blob(f.blob, headers, "application/octet-stream")
