"""The fake hub's repositories: spec parsing, commits, files, refs.

Everything is built from a JSON spec (see README.md) without touching file
content, so startup is instant even for a spec with multi-GB files; hashes are
computed lazily through content.BlobStore.  Commits are immutable objects;
control requests (new commit, deleted ref) build new ones and move refs.
"""

import fnmatch
import hashlib
import json
import threading
import time

from content import LFS_POINTER, git_blob_sha1

LFS_SIZE = 10 << 20
LFS_PATTERNS = ("*.safetensors", "*.bin", "*.h5", "*.parquet", "*.gguf", "*.pt", "*.pth",
                "*.onnx", "*.msgpack", "*.ckpt", "*.arrow", "*.zip", "*.tar.gz")
BASE_DATE = 1704067200  # 2024-01-01T00:00:00Z: commit dates are deterministic
GITATTRIBUTES = "".join("%s filter=lfs diff=lfs merge=lfs -text\n" % p for p in LFS_PATTERNS)
DEFAULT_AUTHOR = "fakehub"


def sha1_hex(*parts):
    h = hashlib.sha1()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()


def iso_date(ts):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + ".%03dZ" % (int(ts * 1000) % 1000)


def is_lfs_path(path):
    name = path.rsplit("/", 1)[-1]
    return any(fnmatch.fnmatch(name, p) for p in LFS_PATTERNS)


class SpecError(ValueError):
    pass


class FileEntry:
    """One file of a commit: a path, a blob and whether it is stored in LFS."""

    def __init__(self, path, blob, lfs, store):
        self.path = path
        self.blob = blob
        self.lfs = lfs
        self.store = store

    @property
    def size(self):
        return self.blob.size

    @property
    def identity(self):
        return [self.path, self.blob.key, self.lfs]

    def hashes(self):
        return self.store.hashes(self.blob)

    @property
    def sha256(self):
        return self.hashes()[0]

    @property
    def content_sha1(self):
        """git blob sha1 of the content itself."""
        return self.hashes()[1]

    def pointer(self):
        """The LFS pointer text (the git blob of an LFS file)."""
        return LFS_POINTER.format(oid=self.sha256, size=self.size).encode()

    @property
    def oid(self):
        """The git object id: of the content, or of the pointer for LFS files."""
        return git_blob_sha1(self.pointer()) if self.lfs else self.content_sha1

    @property
    def etag(self):
        """What resolve answers as (X-Linked-)ETag: sha256 for LFS, git sha1 otherwise."""
        return self.sha256 if self.lfs else self.content_sha1

    @property
    def xet_hash(self):
        """The content's Xet file hash (xet.py), or None (too big to compute here)."""
        return self.store.xet_hash(self.blob, self.path)

    def git_blob(self):
        """Bytes of the git blob (raw endpoint)."""
        return self.pointer() if self.lfs else self.blob.read()

    def describe(self, with_hashes=True):
        d = {"path": self.path, "size": self.size, "lfs": self.lfs}
        if self.blob.seed is not None:
            d["seed"] = self.blob.seed
        if with_hashes:
            d.update(sha256=self.sha256, git_sha1=self.content_sha1, oid=self.oid, etag=self.etag)
            if self.lfs:
                d["pointer_size"] = len(self.pointer())
        return d


class Commit:
    """An immutable snapshot: files by path, a parent, a title and a date."""

    def __init__(self, repo_id, key, parent, files, title, date, message=None, author=None):
        self.key = key
        self.parent = parent
        self.files = dict(sorted(files.items()))
        self.title = title
        self.message = message if message is not None else title
        self.date = date
        self.author = author or DEFAULT_AUTHOR
        self.depth = parent.depth + 1 if parent else 0
        ident = json.dumps([repo_id, key, parent.id if parent else None,
                            [f.identity for f in self.files.values()]])
        self.id = hashlib.sha1(ident.encode()).hexdigest()
        self._dirs = None
        self._last = {}
        self._lock = threading.Lock()

    def ancestors(self):
        c = self
        while c:
            yield c
            c = c.parent

    def last_change(self, path):
        """The newest commit in this one's history that changed `path` (a file)."""
        with self._lock:
            if path in self._last:
                return self._last[path]
        f = self.files[path]
        p = self.parent
        if p and path in p.files and p.files[path].identity == f.identity:
            result = p.last_change(path)
        else:
            result = self
        with self._lock:
            self._last[path] = result
        return result

    def dir_last_change(self, directory):
        best = None
        for path in self.files_under(directory):
            c = self.last_change(path)
            if best is None or c.depth > best.depth:
                best = c
        return best or self

    def directories(self):
        """Map dir path ('' = root) -> sorted list of (name, is_dir)."""
        with self._lock:
            if self._dirs is not None:
                return self._dirs
        children = {"": set()}
        for path in self.files:
            parts = path.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                parent = "/".join(parts[:i - 1])
                children.setdefault(d, set())
                children.setdefault(parent, set()).add((parts[i - 1], True))
            children.setdefault("/".join(parts[:-1]), set()).add((parts[-1], False))
        result = {d: sorted(c) for d, c in children.items()}
        with self._lock:
            self._dirs = result
        return result

    def is_dir(self, path):
        return path in self.directories()

    def files_under(self, directory):
        prefix = directory + "/" if directory else ""
        return [p for p in self.files if p.startswith(prefix)]

    def dir_oid(self, directory):
        """A stable pseudo git tree id for a directory (derived without hashing content)."""
        ident = [self.files[p].identity for p in self.files_under(directory)]
        return sha1_hex("tree", directory, json.dumps(ident))

    def walk(self, directory, recursive):
        """Yield (path, is_dir) under `directory`, git-like order, depth first."""
        dirs = self.directories()
        for name, is_dir in dirs.get(directory, []):
            path = directory + "/" + name if directory else name
            yield path, is_dir
            if is_dir and recursive:
                yield from self.walk(path, True)

    def tree_size(self, directory=""):
        return sum(self.files[p].size for p in self.files_under(directory))


class Repo:
    """A repository on one hub ('hf' or 'ms') of one type ('model' or 'dataset')."""

    def __init__(self, hub, rtype, repo_id, numeric_id):
        self.hub = hub
        self.type = rtype
        self.id = repo_id
        self.numeric_id = numeric_id
        self.gated = False
        self.private = False
        self.disabled = False
        self.renamed_from = []
        self.card = {}
        self.branches = {}
        self.tags = {}
        self.prs = {}
        self.converts = {}  # "parquet" -> Commit: refs/convert/parquet
        self.commits = {}  # id -> Commit
        self.keys = {}  # spec key -> Commit
        self.created = BASE_DATE
        self.downloads = int(sha1_hex("dl", repo_id)[:4], 16)
        self.likes = int(sha1_hex("likes", repo_id)[:2], 16)

    @property
    def default_branch(self):
        want = "master" if self.hub == "ms" else "main"
        if want in self.branches or not self.branches:
            return want
        return next(iter(self.branches))

    @property
    def object_id(self):
        """The 24-hex '_id' the Hub gives every repo."""
        return sha1_hex("_id", self.hub, self.type, self.id)[:24]

    def head(self):
        return self.resolve(self.default_branch)

    def resolve(self, rev):
        """The commit a revision names (branch, tag, refs/..., full commit id), or None."""
        if rev in (None, "", "HEAD"):
            rev = self.default_branch
        if self.hub == "ms" and rev == "master" and rev not in self.branches:
            rev = self.default_branch  # ModelScope calls the default branch master
        for prefix, table in (("refs/heads/", self.branches), ("refs/tags/", self.tags)):
            if rev.startswith(prefix) and rev[len(prefix):] in table:
                return table[rev[len(prefix):]]
        if rev.startswith("refs/pr/"):
            return self.prs.get(rev[len("refs/pr/"):])
        if rev.startswith("refs/convert/"):
            return self.converts.get(rev[len("refs/convert/"):])
        if rev in self.branches:
            return self.branches[rev]
        if rev in self.tags:
            return self.tags[rev]
        if len(rev) == 40 and rev in self.commits:
            return self.commits[rev]
        return None

    def all_commits(self):
        return sorted(self.commits.values(), key=lambda c: (c.date, c.depth))


class World:
    """All repositories, tokens and blobs; every mutation holds `lock`."""

    def __init__(self, store):
        self.store = store
        self.lock = threading.RLock()
        self.repos = {}  # (hub, type, id) -> Repo
        self.renames = {}  # (hub, type, old id) -> new id
        self.tokens = {}  # token -> {"approved": [...], "read": [...]}
        self._next_numeric = 10001
        self._control_seq = 0

    # ---- lookups -------------------------------------------------------
    def get(self, hub, rtype, repo_id):
        with self.lock:
            return self.repos.get((hub, rtype, repo_id))

    def get_numeric(self, hub, rtype, numeric_id):
        with self.lock:
            for r in self.repos.values():
                if (r.hub, r.type, str(r.numeric_id)) == (hub, rtype, str(numeric_id)):
                    return r
        return None

    def renamed(self, hub, rtype, repo_id):
        with self.lock:
            return self.renames.get((hub, rtype, repo_id))

    def list(self, hub, rtype):
        with self.lock:
            return sorted((r for r in self.repos.values() if (r.hub, r.type) == (hub, rtype)),
                          key=lambda r: r.id)

    def prehash(self):
        """Compute every file's hashes, small blobs first (run in a background thread)."""
        with self.lock:
            files = {id(f.blob): f for r in self.repos.values() for c in r.commits.values()
                     for f in c.files.values()}
        for f in sorted(files.values(), key=lambda f: f.size):
            f.hashes()

    # ---- building from a spec ------------------------------------------
    def load(self, spec):
        with self.lock:
            for name, info in (spec.get("tokens") or {}).items():
                self.tokens[name] = info or {}
            for rspec in spec.get("repos", []):
                self.add_repo(rspec)

    def add_repo(self, rspec):
        hub = rspec.get("hub", "hf")
        rtype = rspec.get("type", "model")
        repo_id = rspec.get("id") or rspec.get("repo")
        if hub not in ("hf", "ms") or rtype not in ("model", "dataset") or not repo_id:
            raise SpecError("bad repo spec: %r" % {k: rspec.get(k) for k in ("hub", "type", "id")})
        repo = Repo(hub, rtype, repo_id, rspec.get("numeric_id", self._next_numeric))
        self._next_numeric = max(self._next_numeric, int(repo.numeric_id)) + 1
        for attr in ("gated", "private", "disabled", "card"):
            if attr in rspec:
                setattr(repo, attr, rspec[attr])
        repo.renamed_from = list(rspec.get("renamed_from", []))
        commits = rspec.get("commits")
        if commits is None:
            commits = [{"key": "c1", "title": rspec.get("title", "initial commit"),
                        "files": rspec.get("files", [])}]
        for index, cspec in enumerate(commits):
            self._add_spec_commit(repo, rspec, cspec, index)
        refs = {"branches": rspec.get("branches"), "tags": rspec.get("tags", {}),
                "prs": rspec.get("prs", {}), "converts": rspec.get("converts", {})}
        if not refs["branches"]:
            refs["branches"] = {repo.default_branch: commits[-1].get("key", "c%d" % len(commits))}
        for kind, table in refs.items():
            for name, key in table.items():
                if key not in repo.keys:
                    raise SpecError("%s: %s %r names unknown commit %r" % (repo_id, kind, name, key))
                getattr(repo, kind)[str(name)] = repo.keys[key]
        self.repos[(hub, rtype, repo_id)] = repo
        for old in repo.renamed_from:
            self.renames[(hub, rtype, old)] = repo_id
        return repo

    def _add_spec_commit(self, repo, rspec, cspec, index):
        key = cspec.get("key", "c%d" % (index + 1))
        parent = repo.keys.get(cspec["parent"]) if cspec.get("parent") else None
        if cspec.get("parent") and parent is None:
            raise SpecError("%s: commit %r has unknown parent %r" % (repo.id, key, cspec["parent"]))
        files = dict(parent.files) if parent else {}
        if parent is None:
            if rspec.get("gitattributes", True):
                files[".gitattributes"] = self.make_file({"path": ".gitattributes",
                                                         "content": GITATTRIBUTES})
            if rspec.get("generate"):
                files.update(self.generated(rspec["generate"]))
        if cspec.get("generate"):
            files.update(self.generated(cspec["generate"]))
        for fspec in cspec.get("files", []):
            files[fspec["path"]] = self.make_file(fspec)
        for path in cspec.get("delete", []):
            files.pop(path, None)
        date = cspec.get("date", BASE_DATE + 86400 * index)
        commit = Commit(repo.id, key, parent, files, cspec.get("title", key), date,
                        cspec.get("message"), cspec.get("author"))
        repo.commits[commit.id] = commit
        repo.keys[key] = commit
        if index == 0:
            repo.created = date
        return commit

    def make_file(self, fspec):
        path = fspec["path"].lstrip("/")
        if "content" in fspec or "content_b64" in fspec:
            if "content_b64" in fspec:
                import base64
                data = base64.b64decode(fspec["content_b64"])
            else:
                data = fspec["content"].encode("utf-8")
            blob = self.store.get(len(data), data=data)
            lfs = fspec.get("lfs", False)
        else:
            size = int(fspec["size"])
            head = b""
            if "head_b64" in fspec:
                import base64
                head = base64.b64decode(fspec["head_b64"])
            patches = [(p["offset"], p["size"], p.get("seed", 0)) for p in fspec.get("patches", [])]
            blob = self.store.get(size, seed=fspec.get("seed", path), head=head,
                                  unique=fspec.get("blocks") == "unique", patches=patches)
            lfs = fspec.get("lfs", size >= LFS_SIZE or is_lfs_path(path))
        return FileEntry(path, blob, bool(lfs), self.store)

    def generated(self, gen):
        count, size = int(gen.get("count", 0)), int(gen.get("size", 64))
        prefix, suffix = gen.get("prefix", "data/part-"), gen.get("suffix", "")
        seed0 = int(gen.get("seed", 0))
        out = {}
        for i in range(count):
            fspec = {"path": "%s%05d%s" % (prefix, i, suffix), "size": size, "seed": seed0 + i}
            if "lfs" in gen:
                fspec["lfs"] = gen["lfs"]
            f = self.make_file(fspec)
            out[f.path] = f
        return out

    # ---- control mutations ---------------------------------------------
    def commit(self, req):
        """Add a commit on top of a branch (creating the repo if needed); returns (repo, commit)."""
        hub, rtype = req.get("hub", "hf"), req.get("type", "model")
        repo_id = req.get("repo") or req.get("id")
        with self.lock:
            repo = self.get(hub, rtype, repo_id)
            if repo is None:
                repo = self.add_repo({"hub": hub, "type": rtype, "id": repo_id, "commits": [
                    {"key": "c1", "title": req.get("title", "initial commit"),
                     "files": req.get("files", []), "delete": req.get("delete", [])}]})
                return repo, repo.head()
            branch = req.get("branch") or repo.default_branch
            parent = repo.resolve(branch)
            self._control_seq += 1
            files = dict(parent.files) if parent else {}
            for fspec in req.get("files", []):
                files[fspec["path"].lstrip("/")] = self.make_file(fspec)
            for path in req.get("delete", []):
                files.pop(path, None)
            date = max(time.time(), (parent.date + 1) if parent else 0)
            key = "control-%d" % self._control_seq
            commit = Commit(repo.id, key, parent, files, req.get("title", "update"), date,
                            req.get("message"), req.get("author"))
            repo.commits[commit.id] = commit
            repo.keys[key] = commit
            if branch.startswith("refs/pr/"):
                repo.prs[branch[len("refs/pr/"):]] = commit
            else:
                repo.branches[branch.replace("refs/heads/", "", 1)] = commit
            return repo, commit

    def delete_repo(self, hub, rtype, repo_id):
        with self.lock:
            repo = self.repos.pop((hub, rtype, repo_id), None)
            if repo:
                for old in repo.renamed_from:
                    self.renames.pop((hub, rtype, old), None)
            return repo is not None

    def delete_ref(self, hub, rtype, repo_id, ref):
        with self.lock:
            repo = self.get(hub, rtype, repo_id)
            if repo is None:
                return False
            for prefix, table in (("refs/heads/", repo.branches), ("refs/tags/", repo.tags),
                                  ("refs/pr/", repo.prs), ("refs/convert/", repo.converts),
                                  ("", repo.branches), ("", repo.tags)):
                if ref.startswith(prefix) and ref[len(prefix):] in table:
                    del table[ref[len(prefix):]]
                    return True
            return False

    def set_tag(self, hub, rtype, repo_id, name, rev):
        """Point tag name at the commit rev names (creating or moving it); the commit, or None."""
        with self.lock:
            repo = self.get(hub, rtype, repo_id)
            commit = repo.resolve(rev) if repo else None
            if commit is not None:
                repo.tags[name] = commit
            return commit

    def update_repo(self, hub, rtype, repo_id, changes):
        with self.lock:
            repo = self.get(hub, rtype, repo_id)
            if repo is None:
                return False
            for attr in ("gated", "private", "disabled", "card"):
                if attr in changes:
                    setattr(repo, attr, changes[attr])
            for old in changes.get("renamed_from", []):
                repo.renamed_from.append(old)
                self.renames[(hub, rtype, old)] = repo.id
            return True

    # ---- description for /_fake/repos ----------------------------------
    def describe(self, with_hashes=True):
        with self.lock:
            repos = list(self.repos.values())
        out = []
        for r in sorted(repos, key=lambda r: (r.hub, r.type, r.id)):
            out.append({
                "hub": r.hub, "type": r.type, "id": r.id, "numeric_id": r.numeric_id,
                "gated": r.gated, "private": r.private, "disabled": r.disabled,
                "renamed_from": r.renamed_from, "card": r.card,
                "default_branch": r.default_branch,
                "sha": r.head().id if r.head() else None,
                "branches": {k: c.id for k, c in r.branches.items()},
                "tags": {k: c.id for k, c in r.tags.items()},
                "prs": {k: c.id for k, c in r.prs.items()},
                "converts": {k: c.id for k, c in r.converts.items()},
                "commits": [{"key": c.key, "id": c.id, "parent": c.parent.id if c.parent else None,
                             "title": c.title, "date": iso_date(c.date),
                             "files": [f.describe(with_hashes) for f in c.files.values()]}
                            for c in r.all_commits()],
            })
        return {"repos": out, "tokens": self.tokens}
