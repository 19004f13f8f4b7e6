"""The control API under /_fake/ (answered by both hosts) that tests drive.

Control requests are not counted in the stats and never hit by faults.
"""

from httpbase import Answered, truthy
from repos import SpecError


def ok(h, obj=None, status=200):
    h.send_json(status, {"ok": status == 200, **(obj or {})}, etag=False)
    raise Answered()


def repo_key(body):
    return body.get("hub", "hf"), body.get("type", "model"), body.get("repo") or body.get("id")


def handle(h):
    app = h.app
    name = h.raw_path[len("/_fake/"):].strip("/")
    method = h.command
    if method == "GET" and name == "stats":
        h.send_json(200, app.stats.snapshot(), etag=False)
    elif method == "GET" and name in ("health", ""):
        ok(h, {"api": app.api_base, "cdn": app.cdn_base})
    elif method == "POST" and name == "reset":
        app.stats.reset()
        app.faults.clear()
        ok(h)
    elif name == "faults":
        faults(h)
    elif name == "config":
        config(h)
    elif method == "GET" and name == "repos":
        h.send_json(200, app.world.describe(with_hashes=truthy(h.q("hashes", "1"))), etag=False)
    elif method == "POST" and name == "commit":
        commit(h)
    elif method == "POST" and name in ("delete-repo", "delete-ref", "update-repo"):
        mutate(h, name)
    elif method == "POST" and name == "tag":
        body = h.json_body() or {}
        hub, rtype, repo_id = repo_key(body)
        c = h.app.world.set_tag(hub, rtype, repo_id, str(body.get("name", "")), str(body.get("rev", "")))
        ok(h, {"commit": c.id} if c else {"error": "no such repo or revision"}, 200 if c else 404)
    elif method == "POST" and name == "tokens":
        app.world.tokens.update(h.json_body() or {})
        ok(h)
    else:
        ok(h, {"error": "unknown control request %s %s" % (method, h.raw_path)}, 404)


def faults(h):
    app = h.app
    if h.command == "POST":
        try:
            added = app.faults.add(h.json_body() or [])
        except (ValueError, TypeError, AttributeError) as e:
            ok(h, {"error": str(e)}, 400)
        ok(h, {"added": added})
    if h.command == "DELETE":
        app.faults.clear()
        ok(h)
    h.send_json(200, app.faults.list(), etag=False)


def config(h):
    app = h.app
    if h.command == "POST":
        try:
            app.config.update(h.json_body() or {})
        except (ValueError, TypeError) as e:
            ok(h, {"error": str(e)}, 400)
    h.send_json(200, app.config.as_dict(), etag=False)


def commit(h):
    body = h.json_body() or {}
    if not repo_key(body)[2]:
        ok(h, {"error": "repo is required"}, 400)
    try:
        repo, c = h.app.world.commit(body)
    except (SpecError, KeyError, ValueError, TypeError) as e:
        ok(h, {"error": "bad commit: %s" % e}, 400)
    ok(h, {"commit": c.id, "sha": c.id, "repo": repo.id, "key": c.key})


def mutate(h, name):
    body = h.json_body() or {}
    world = h.app.world
    hub, rtype, repo_id = repo_key(body)
    if name == "delete-repo":
        done = world.delete_repo(hub, rtype, repo_id)
    elif name == "delete-ref":
        done = world.delete_ref(hub, rtype, repo_id, body.get("ref", ""))
    else:
        done = world.update_repo(hub, rtype, repo_id, body)
    ok(h, {} if done else {"error": "not found"}, 200 if done else 404)
