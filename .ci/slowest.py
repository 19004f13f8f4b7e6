#!/usr/bin/python3
"""slowest.py [-n N] [BUILD...]: the tests that took longest in each build's last run, read from
BUILD/meson-logs/testlog.json (build, build-asan and build-fuzz when none is named), with each run's
sum of test times beside the time it took (their ratio is how many ran at once, on average).
A test's time is wall time under whatever else ran beside it: compare tests of one run, not runs."""
import argparse
import json
import os
import sys


def read(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            out.append((r.get("duration") or 0.0, r.get("name", "?"), r.get("result", "?"),
                        r.get("starttime")))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=15, help="how many tests to list per build (15)")
    ap.add_argument("builds", nargs="*", help="build folders (build build-asan build-fuzz)")
    a = ap.parse_args()
    builds = a.builds or [b for b in ("build", "build-asan", "build-fuzz") if os.path.isdir(b)]
    seen = False
    for b in builds:
        path = os.path.join(b, "meson-logs", "testlog.json")
        if not os.path.exists(path):
            print("%s: no testlog.json" % b, file=sys.stderr)
            continue
        seen = True
        rows = read(path)
        total = sum(r[0] for r in rows)
        starts = [r[3] for r in rows if r[3] is not None]
        span = max((r[3] + r[0] for r in rows if r[3] is not None), default=0) - min(starts, default=0)
        line = "%s: %d tests, %.0f s of tests" % (b, len(rows), total)
        if span > 0:
            line += " in %.0f s (%.2f at once)" % (span, total / span)
        print(line)
        for d, name, res, _ in sorted(rows, reverse=True)[:a.n]:
            print("  %7.1f s  %5.1f%%  %-6s %s" % (d, 100 * d / total if total else 0, res, name))
    return 0 if seen else 1


if __name__ == "__main__":
    sys.exit(main())
