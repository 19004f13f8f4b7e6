"""The Hugging Face Hub API of the fake hub (API host).

Routes on the raw path (so `refs%2Fpr%2F1` stays one segment until the
revision is decoded) and answers like the real Hub as described in
docs/protocols/huggingface.md, quirks included: relative 307 to /api/resolve-cache for
regular files on a branch, 302 to the signed CDN for LFS files, Xet headers
and `xetHash` fields a mirror must strip, 401 for unknown repos when
anonymous, X-Error-Code headers, weak ETags on JSON.
"""

import base64
import json
import mimetypes
import re
import time
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode

from content import Blob
from httpbase import Answered, truthy
from repos import iso_date

REPO_ACTIONS = {"revision", "tree", "paths-info", "refs", "commits", "treesize",
                "xet-read-token", "commit", "preupload", "resolve-cache"}
FILE_ACTIONS = {"resolve", "raw", "blob"}
REF_KINDS = ("pr", "heads", "tags", "convert")
XET_FILEINFO = "application/vnd.xet-fileinfo+json"
UNSAFE_NAMES = ["../evil", "/etc/passwd", "a/../../b", "a\u0000b"]
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")
TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}


# ---- errors and auth -----------------------------------------------------

def error(h, status, code, message, headers=()):
    headers = list(headers)
    if code:
        headers.append(("X-Error-Code", code))
    headers.append(("X-Error-Message", message))
    h.send_json(status, {"error": message}, headers, etag=False)
    raise Answered()


def unauthorized(h):
    """What the Hub answers anonymous requests for unknown or private repos."""
    error(h, 401, None, "Invalid username or password.",
          [("Www-Authenticate", 'Bearer realm="Authentication required"')])


def token_info(h):
    """(token, info) for a known token, (None, None) if anonymous; 401 if unknown."""
    auth = h.headers.get("Authorization")
    if not auth:
        return None, None
    parts = auth.split(None, 1)
    token = parts[1].strip() if len(parts) == 2 and parts[0].lower() == "bearer" else auth
    info = h.app.world.tokens.get(token)
    if info is None:
        error(h, 401, None, "Invalid credentials in Authorization header")
    return token, info


def listed(info, key, repo):
    names = (info or {}).get(key, [])
    return repo.id in names or "*" in names


def can_see(info, repo):
    return not repo.private or listed(info, "read", repo) or listed(info, "approved", repo)


def check_content_access(h, repo, info):
    """Gated and disabled repos: metadata is public, content is not."""
    if repo.disabled:
        error(h, 403, None, "Access to this resource is disabled.")
    if repo.gated and not listed(info, "approved", repo):
        kind = "model" if repo.type == "model" else repo.type
        if info is None:
            error(h, 401, "GatedRepo",
                  "Access to %s %s is restricted. You must have access to it and be authenticated"
                  " to access it. Please log in." % (kind, repo.id))
        error(h, 403, "GatedRepo",
              "Access to %s %s is restricted and you are not in the authorized list. Visit %s/%s"
              " to ask for access." % (kind, repo.id, h.app.api_base, repo_url_path(repo)))


def rate_headers(h, bucket):
    r, t, q = h.app.rate(bucket)
    return [("RateLimit", '"%s";r=%d;t=%d' % (bucket, r, t)),
            ("RateLimit-Policy", '"fixed window";"%s";q=%d;w=300' % (bucket, q))]


# ---- routing helpers -----------------------------------------------------

def repo_url_path(repo):
    return repo.id if repo.type == "model" else "%ss/%s" % (repo.type, repo.id)


def find_repo(h, rtype, prefix, rest, actions):
    """Split `rest` into a repo id and what follows; answers 307/401/404 itself.

    Returns (repo, remaining raw segments, token info).
    """
    token, info = token_info(h)
    candidates = []
    for n in (2, 1):
        if len(rest) >= n and (len(rest) == n or rest[n] in actions):
            candidates.append(("/".join(unquote(s) for s in rest[:n]), rest[n:]))
    world = h.app.world
    for repo_id, remaining in candidates:
        repo = world.get("hf", rtype, repo_id)
        if repo is None:
            new_id = world.renamed("hf", rtype, repo_id)
            if new_id:
                location = "/" + "/".join(prefix + [new_id] + remaining)
                if h.raw_query:
                    location += "?" + h.raw_query
                h.send_redirect(307, location, rate_headers(h, "api"))
                raise Answered()
            continue
        if can_see(info, repo):
            return repo, remaining, info
        break
    if token is None:
        unauthorized(h)
    error(h, 404, "RepoNotFound", "Repository not found")


def take_revision(segments):
    """(revision, rest): a raw `refs/pr/1` spans three segments, `refs%2Fpr%2F1` one."""
    if not segments:
        return None, []
    if segments[0] == "refs" and len(segments) >= 3 and segments[1] in REF_KINDS:
        return "refs/%s/%s" % (segments[1], unquote(segments[2])), segments[3:]
    return unquote(segments[0]), segments[1:]


def resolve_commit(h, repo, rev):
    commit = repo.resolve(rev)
    if commit is None:
        error(h, 404, "RevisionNotFound", "Invalid rev id: %s" % rev)
    return commit


def join_path(segments):
    return "/".join(unquote(s) for s in segments).strip("/")


def next_link(h, **params):
    """An absolute Link header to the same URL with some query parameters replaced."""
    query = [(k, v) for k, v in parse_qsl(h.raw_query, keep_blank_values=True) if k not in params]
    query += list(params.items())
    url = "%s%s?%s" % (h.app.api_base, h.raw_path, urlencode(query))
    return ("Link", '<%s>; rel="next"' % url)


def decode_cursor(cursor):
    try:
        return int(json.loads(base64.urlsafe_b64decode(cursor.encode() + b"==="))["o"])
    except (ValueError, KeyError, TypeError):
        return 0


def encode_cursor(offset):
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode().rstrip("=")


def paginate(h, items, default_size):
    """(page, Link header or None) for cursor pagination."""
    size = int(h.q("limit") or default_size)
    size = max(1, size)
    offset = decode_cursor(h.q("cursor")) if h.q("cursor") else 0
    page = items[offset:offset + size]
    link = next_link(h, cursor=encode_cursor(offset + size)) if offset + size < len(items) else None
    return page, link


# ---- entry and tree JSON -------------------------------------------------

def last_commit_json(commit):
    return {"id": commit.id, "title": commit.title, "date": iso_date(commit.date)}


def file_json(commit, f, expand):
    d = {"type": "file", "oid": f.oid, "size": f.size}
    if f.lfs:
        d["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": len(f.pointer())}
        if f.xet_hash:
            d["xetHash"] = f.xet_hash
    d["path"] = f.path
    if expand:
        d["lastCommit"] = last_commit_json(commit.last_change(f.path))
        d["securityFileStatus"] = {"status": "safe"}
    return d


def dir_json(commit, path, expand):
    d = {"type": "directory", "oid": commit.dir_oid(path), "size": 0, "path": path}
    if expand:
        d["lastCommit"] = last_commit_json(commit.dir_last_change(path))
    return d


def entry_json(commit, path, is_dir, expand):
    return dir_json(commit, path, expand) if is_dir else file_json(commit, commit.files[path], expand)


def unsafe_entries():
    return [{"type": "file", "oid": "0" * 40, "size": 4, "path": name} for name in UNSAFE_NAMES]


# ---- handlers ------------------------------------------------------------

def handle(h):
    segs = h.segments
    if segs[0] == "_xet-cas" and len(segs) == 4 and segs[1] in ("v1", "v2") and segs[2] == "reconstructions":
        import xetcas
        return xetcas.reconstruction(h, segs[1], segs[3])
    if segs[0] == "api" and len(segs) >= 2:
        if segs[1] == "resolve-cache":
            return resolve_cache(h, segs[2:])
        if segs[1] in TYPES:
            rtype = TYPES[segs[1]]
            if len(segs) == 2:
                return listing(h, rtype)
            if rtype == "space":
                error(h, 404, "RepoNotFound", "Repository not found")
            return repo_api(h, rtype, segs[:2], segs[2:])
    elif segs[0] == "datasets" and len(segs) > 1:
        return file_route(h, "dataset", segs[:1], segs[1:])
    elif segs[0] not in ("api", "spaces", ""):
        return file_route(h, "model", [], segs)
    h.send_json(404, {"error": "Sorry, we can't find the page you are looking for."}, etag=False)


def repo_api(h, rtype, prefix, rest):
    repo, rem, info = find_repo(h, rtype, prefix, rest, REPO_ACTIONS)
    action = rem[0] if rem else None
    if action is None:
        return info_answer(h, repo, None)
    rev, tail = take_revision(rem[1:])
    if action == "revision" and rev:
        return info_answer(h, repo, rev)
    if action == "tree" and rev:
        return tree_answer(h, repo, rev, join_path(tail))
    if action == "paths-info" and rev and h.command == "POST":
        return paths_info_answer(h, repo, rev)
    if action == "refs":
        return refs_answer(h, repo)
    if action == "commits" and rev:
        return commits_answer(h, repo, rev)
    if action == "treesize" and rev:
        commit = resolve_commit(h, repo, rev)
        path = join_path(tail)
        if path and not commit.is_dir(path) and path not in commit.files:
            error(h, 404, "EntryNotFound", "%s does not exist on \"%s\"" % (path, rev),
                  [("X-Repo-Commit", commit.id)])
        size = commit.files[path].size if path in commit.files else commit.tree_size(path)
        return send_api_json(h, {"path": path, "size": size})
    if action == "xet-read-token" and rev:
        return xet_token_answer(h, repo, rev)
    h.send_json(404, {"error": "Sorry, we can't find the page you are looking for."}, etag=False)


def send_api_json(h, obj, headers=()):
    h.send_json(200, obj, list(headers) + rate_headers(h, "api"))


def info_answer(h, repo, rev):
    commit = resolve_commit(h, repo, rev)
    blobs = truthy(h.q("blobs", ""))
    siblings = []
    for f in commit.files.values():
        s = {"rfilename": f.path}
        if blobs:
            s.update(size=f.size, blobId=f.oid)
            if f.lfs:
                s["lfs"] = {"size": f.size, "sha256": f.sha256, "pointerSize": len(f.pointer())}
        siblings.append(s)
    if h.take_fault(("unsafe_names",)):
        siblings += [{"rfilename": n} for n in UNSAFE_NAMES]
    d = repo_summary(repo, commit)
    d.update(siblings=siblings, spaces=[], usedStorage=commit.tree_size())
    if "securityStatus" in h.query:
        d["securityRepoStatus"] = {"scansDone": True, "filesWithIssues": []}
    expand = h.query.get("expand")
    if expand:
        fields = {"_id", "id"} | set(expand)
        d = {k: v for k, v in d.items() if k in fields}
    send_api_json(h, d)


def repo_summary(repo, commit):
    """The fields of info and of listings."""
    card = dict(repo.card or {})
    tags = list(card.get("tags", []))
    if card.get("library_name"):
        tags.insert(0, card["library_name"])
    if card.get("license"):
        tags.append("license:%s" % card["license"])
    tags.append("region:us")
    tags = list(dict.fromkeys(tags))
    d = {"_id": repo.object_id, "id": repo.id, "author": repo.id.split("/")[0] if "/" in repo.id
         else None, "sha": commit.id if commit else None,
         "lastModified": iso_date(commit.date) if commit else None,
         "private": bool(repo.private), "gated": repo.gated, "disabled": bool(repo.disabled),
         "downloads": repo.downloads, "likes": repo.likes, "tags": tags,
         "cardData": card, "createdAt": iso_date(repo.created)}
    if repo.type == "model":
        d.update(modelId=repo.id, pipeline_tag=card.get("pipeline_tag"),
                 library_name=card.get("library_name"))
    else:
        d.update(description="", citation="", paperswithcode_id=None)
    return d


def tree_answer(h, repo, rev, path):
    commit = resolve_commit(h, repo, rev)
    if path and not commit.is_dir(path):
        error(h, 404, "EntryNotFound", "%s does not exist on \"%s\"" % (path, rev),
              [("X-Repo-Commit", commit.id)])
    recursive = truthy(h.q("recursive", ""))
    expand = truthy(h.q("expand", ""))
    items = list(commit.walk(path, recursive))
    page, link = paginate(h, items, h.app.config.tree_page_size)
    out = [entry_json(commit, p, is_dir, expand) for p, is_dir in page]
    if h.take_fault(("unsafe_names",)):
        out += unsafe_entries()
    send_api_json(h, out, [link] if link else [])


def request_paths(h):
    """paths and expand from a form body (Python) or a JSON body (JS)."""
    ctype = (h.headers.get("Content-Type") or "").lower()
    body = h.body or b""
    if "json" in ctype or body.lstrip().startswith(b"{"):
        data = h.json_body() or {}
        paths = data.get("paths", [])
        return ([paths] if isinstance(paths, str) else list(paths)), truthy(data.get("expand"))
    form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    return form.get("paths", []), truthy((form.get("expand") or ["false"])[0])


def paths_info_answer(h, repo, rev):
    commit = resolve_commit(h, repo, rev)
    paths, expand = request_paths(h)
    out = []
    for p in paths:
        p = p.strip("/")
        if p in commit.files:
            out.append(file_json(commit, commit.files[p], expand))
        elif p and commit.is_dir(p):
            out.append(dir_json(commit, p, expand))
    send_api_json(h, out)


def refs_answer(h, repo):
    def refs(table, prefix):
        return [{"name": name, "ref": prefix + name, "targetCommit": c.id}
                for name, c in table.items()]
    d = {"branches": refs(repo.branches, "refs/heads/"), "converts": refs(repo.converts, "refs/convert/"),
         "tags": refs(repo.tags, "refs/tags/")}
    if truthy(h.q("include_prs", "")):
        d["pullRequests"] = [{"name": "refs/pr/%s" % n, "ref": "refs/pr/%s" % n,
                              "targetCommit": c.id} for n, c in repo.prs.items()]
    send_api_json(h, d)


def commits_answer(h, repo, rev):
    commit = resolve_commit(h, repo, rev)
    items = list(commit.ancestors())
    size = max(1, int(h.q("limit") or h.app.config.commits_page_size))
    page_no = int(h.q("p") or 0)
    page = items[page_no * size:(page_no + 1) * size]
    out = [{"id": c.id, "title": c.title, "message": c.message, "date": iso_date(c.date),
            "authors": [{"user": c.author, "avatar": None}]} for c in page]
    headers = [("X-Total-Count", str(len(items)))]
    if (page_no + 1) * size < len(items):
        headers.append(next_link(h, p=str(page_no + 1)))
    send_api_json(h, out, headers)


def xet_token_answer(h, repo, rev):
    """The real Hub hands out Xet tokens; a mirror must answer 404 instead of passing this on."""
    commit = resolve_commit(h, repo, rev)
    exp = int(time.time()) + 3600
    cas = h.app.api_base + "/_xet-cas"
    headers = [("X-Xet-Access-Token", "xet_" + commit.id), ("X-Xet-Cas-Url", cas),
               ("X-Xet-Token-Expiration", str(exp))]
    send_api_json(h, {"accessToken": "xet_" + commit.id, "exp": exp, "casUrl": cas}, headers)


def listing(h, rtype):
    if rtype == "space":
        return send_api_json(h, [])
    token, info = token_info(h)
    search = (h.q("search") or "").lower()
    author = h.q("author")
    full = truthy(h.q("full", ""))
    items = []
    for repo in h.app.world.list("hf", rtype):
        if not can_see(info, repo) or (search and search not in repo.id.lower()):
            continue
        if author and repo.id.split("/")[0] != author:
            continue
        items.append(repo)
    page, link = paginate(h, items, 1000)
    out = []
    for repo in page:
        head = repo.head()
        d = repo_summary(repo, head)
        keep = {"_id", "id", "likes", "downloads", "private", "tags", "createdAt", "modelId",
                "pipeline_tag", "library_name", "author", "gated", "disabled", "lastModified",
                "sha", "description"}
        d = {k: v for k, v in d.items() if k in keep}
        if full and head:
            d["siblings"] = [{"rfilename": p} for p in head.files]
        out.append(d)
    if h.take_fault(("unsafe_names",)):
        out += [{"_id": "0" * 24, "id": n, "private": False} for n in UNSAFE_NAMES]
    send_api_json(h, out, [link] if link else [])


# ---- file content --------------------------------------------------------

def content_disposition(path):
    name = path.rsplit("/", 1)[-1]
    ascii_name = name.encode("ascii", "replace").decode().replace('"', "")
    return "inline; filename*=UTF-8''%s; filename=\"%s\";" % (quote(name), ascii_name)


def content_type(path):
    return mimetypes.guess_type(path)[0] or "application/octet-stream"


def file_route(h, rtype, prefix, rest):
    repo, rem, info = find_repo(h, rtype, prefix, rest, FILE_ACTIONS)
    if not rem or rem[0] not in FILE_ACTIONS:
        h.send_json(404, {"error": "Sorry, we can't find the page you are looking for."},
                    etag=False)
        return
    action = rem[0]
    rev, tail = take_revision(rem[1:])
    path = join_path(tail)
    if not rev or not path:
        error(h, 404, "EntryNotFound", "Entry not found")
    check_content_access(h, repo, info)
    commit = resolve_commit(h, repo, rev)
    f = commit.files.get(path)
    if f is None:
        error(h, 404, "EntryNotFound", "Entry not found", [("X-Repo-Commit", commit.id)])
    if action == "resolve":
        return resolve_answer(h, repo, rev, commit, f)
    if action == "raw":
        data = f.git_blob()
        headers = [("ETag", '"%s"' % f.oid), ("X-Repo-Commit", commit.id),
                   ("Accept-Ranges", "bytes")] + rate_headers(h, "resolvers")
        return h.send_blob(Blob(len(data), data=data), headers, "text/plain; charset=utf-8")
    page = "<!doctype html><title>%s</title><pre>%s</pre>" % (path, f.size)
    h.send_bytes(200, page.encode(), rate_headers(h, "api"), "text/html; charset=utf-8")


def resolve_answer(h, repo, rev, commit, f):
    if f.lfs:
        if XET_FILEINFO in (h.headers.get("Accept") or "") and f.xet_hash:
            return xet_fileinfo(h, repo, commit, f)
        return lfs_redirect(h, repo, commit, f)
    if rev == commit.id:
        return direct_content(h, commit, f)
    location = "/api/resolve-cache/%ss/%s/%s/%s?%s" % (
        repo.type, repo.id, commit.id, quote(f.path),
        urlencode([("/%s/resolve/%s/%s" % (repo_url_path(repo), rev, f.path), ""),
                   ("etag", '"%s"' % f.etag)]))
    headers = [("X-Repo-Commit", commit.id), ("X-Linked-Etag", '"%s"' % f.etag),
               ("X-Linked-Size", str(f.size)), ("Accept-Ranges", "bytes"),
               ("Vary", "Origin, Accept")] + rate_headers(h, "resolvers")
    h.send_redirect(307, location, headers)


def direct_content(h, commit, f):
    headers = [("ETag", '"%s"' % f.etag), ("X-Repo-Commit", commit.id),
               ("Accept-Ranges", "bytes"), ("Content-Disposition", content_disposition(f.path)),
               ("Cache-Control", "public, max-age=31536000, immutable")]
    h.send_blob(f.blob, headers + rate_headers(h, "resolvers"), content_type(f.path))


def lfs_redirect(h, repo, commit, f):
    url = h.app.cdn_url(repo, f)
    base = h.app.api_base
    kind = repo.type + "s"
    xh = f.xet_hash
    links = ('<%s/api/%s/%s/xet-read-token/%s>; rel="xet-auth", '
             '<%s/_xet-cas/reconstructions/%s>; rel="xet-reconstruction-info"'
             % (base, kind, repo.id, commit.id, base, xh))
    headers = [("X-Repo-Commit", commit.id), ("X-Linked-Etag", '"%s"' % f.sha256),
               ("X-Linked-Size", str(f.size)), ("Accept-Ranges", "bytes"),
               ("ETag", '"%s"' % f.oid), ("Vary", "Origin, Accept")] + rate_headers(h, "resolvers")
    if xh:
        headers += [("X-Xet-Hash", xh), ("Link", links),
                    ("X-Xet-Refresh-Route", "/api/%s/%s/xet-read-token/%s" % (kind, repo.id, commit.id))]
    h.send_redirect(302, url, headers)


def xet_fileinfo(h, repo, commit, f):
    body = {"hash": f.xet_hash, "refreshRoute": "/api/%ss/%s/xet-read-token/%s" % (
        repo.type, repo.id, commit.id), "reconstructionUrl": "%s/_xet-cas/reconstructions/%s" % (
        h.app.api_base, f.xet_hash), "etag": f.sha256, "size": f.size}
    headers = [("X-Repo-Commit", commit.id), ("X-Xet-Hash", f.xet_hash),
               ("X-Linked-Size", str(f.size)), ("X-Linked-Etag", '"%s"' % f.sha256)]
    data = json.dumps(body).encode()
    h.send_bytes(200, data, headers + rate_headers(h, "resolvers"), XET_FILEINFO)


def resolve_cache(h, rest):
    """/api/resolve-cache/{models|datasets}/{repo}/{commit}/{path}: the bytes, 200."""
    if not rest or rest[0] not in ("models", "datasets"):
        error(h, 404, None, "Not Found")
    rtype = TYPES[rest[0]]
    for n in (2, 1):
        if len(rest) > n + 1 and COMMIT_RE.match(rest[n + 1]):
            # the commit id segment plays the part of the action after the repo id
            repo, rem, info = find_repo(h, rtype, ["api", "resolve-cache", rest[0]], rest[1:],
                                        {rest[n + 1]})
            break
    else:
        error(h, 404, "EntryNotFound", "Entry not found")
    check_content_access(h, repo, info)
    commit = repo.commits.get(rem[0])
    if commit is None:
        error(h, 404, "RevisionNotFound", "Invalid rev id: %s" % rem[0])
    f = commit.files.get(join_path(rem[1:]))
    if f is None:
        error(h, 404, "EntryNotFound", "Entry not found", [("X-Repo-Commit", commit.id)])
    direct_content(h, commit, f)
