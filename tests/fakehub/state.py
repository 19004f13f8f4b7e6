"""Shared mutable state of the fake hub: settings, request statistics, fault rules.

All three are shared by the API host and the CDN host and by every request
thread, so each guards itself with a lock.
"""

import re
import threading
import time

RECENT_MAX = 500

# Fault kinds and when they are looked up.
START_KINDS = ("status", "ratelimit", "slow")  # before routing
BODY_KINDS = ("truncate", "corrupt", "reset")  # when a 200/206 body is written
ALL_KINDS = START_KINDS + BODY_KINDS + ("ignore_range", "unsafe_names")


class Config:
    """Knobs that tests may change at run time through /_fake/config."""

    FIELDS = {"tree_page_size": int, "commits_page_size": int, "cdn_expires": int,
              "ms_cdn_threshold": int, "cdn_reject_auth": bool, "ms_cookie_auth_only": bool,
              "xet_fetch_merged": bool}

    def __init__(self, **values):
        self.tree_page_size = 1000
        self.commits_page_size = 50
        self.cdn_expires = 3600
        self.ms_cdn_threshold = 8 << 20
        self.cdn_reject_auth = False
        # ModelScope servers that know only the old SDK's m_session_id cookie, not the Bearer header
        self.ms_cookie_auth_only = False
        # a v1 reconstruction's fetch_info with one range for the terms of a xorb that overlap or
        # touch (as a CAS may answer): a client fetches more than a term and takes only its chunks
        self.xet_fetch_merged = False
        self.update(values)

    def update(self, values):
        for name, value in values.items():
            if name not in self.FIELDS:
                raise ValueError("unknown config field %r" % name)
            if value is not None:
                setattr(self, name, self.FIELDS[name](value))

    def as_dict(self):
        return {name: getattr(self, name) for name in self.FIELDS}


class Stats:
    """Counters of requests and of file-content bytes sent, per host."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.total = 0
            self.by_route = {}
            self.content_bytes = {"api": 0, "cdn": 0}
            self.body_bytes = {"api": 0, "cdn": 0}
            self.recent = []

    def begin(self, method, path, host, kind, auth, range_header):
        entry = {"t": round(time.time(), 3), "method": method, "path": path, "host": host,
                 "kind": kind, "auth": auth, "range": range_header, "status": None}
        with self.lock:
            self.total += 1
            route = "%s %s" % (method, kind)
            self.by_route[route] = self.by_route.get(route, 0) + 1
            self.recent.append(entry)
            del self.recent[:-RECENT_MAX]
        return entry

    def add_bytes(self, host, n, content):
        with self.lock:
            self.body_bytes[host] = self.body_bytes.get(host, 0) + n
            if content:
                self.content_bytes[host] = self.content_bytes.get(host, 0) + n

    def snapshot(self):
        with self.lock:
            return {"total": self.total, "by_route": dict(self.by_route),
                    "content_bytes": dict(self.content_bytes),
                    "body_bytes": dict(self.body_bytes),
                    "recent": [dict(e) for e in self.recent]}


class FaultRule:
    """One injected fault: where it matches, what it does, how often."""

    def __init__(self, spec):
        self.spec = dict(spec)
        self.kind = spec.get("kind", "status")
        if self.kind not in ALL_KINDS:
            raise ValueError("unknown fault kind %r" % self.kind)
        self.match = spec.get("match", "")
        self.count = int(spec.get("count", 1))  # negative: forever
        self.method = spec.get("method")
        self.host = spec.get("host")
        try:
            self.regex = re.compile(self.match)
        except re.error:
            self.regex = None

    def matches(self, path, host, method):
        if self.method and self.method.upper() != method:
            return False
        if self.host and self.host != host:
            return False
        return self.match in path or bool(self.regex and self.regex.search(path))

    def get(self, name, default=None):
        return self.spec.get(name, default)


class Faults:
    """The list of active fault rules; a rule fires `count` times then goes away."""

    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []

    def add(self, specs):
        if isinstance(specs, dict):
            specs = [specs]
        rules = [FaultRule(s) for s in specs]
        with self.lock:
            self.rules.extend(rules)
        return len(rules)

    def clear(self):
        with self.lock:
            self.rules = []

    def take(self, path, host, method, kinds):
        """Consume and return the first rule of one of `kinds` matching the request."""
        with self.lock:
            for rule in self.rules:
                if rule.kind in kinds and rule.matches(path, host, method):
                    if rule.count > 0:
                        rule.count -= 1
                        if rule.count == 0:
                            self.rules.remove(rule)
                    return rule
        return None

    def list(self):
        with self.lock:
            return [dict(r.spec, remaining=r.count) for r in self.rules]
