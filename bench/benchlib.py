#!/usr/bin/python3
"""benchlib.py - what the benchmarks here share: the common part of their command lines (--hubmirror,
the build's binary) and stopping what a run started (its processes, then its work folder)."""
import argparse
import os
import shutil

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parser():
    """An ArgumentParser that already takes --hubmirror (default: this checkout's build)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--hubmirror", default=os.path.join(TOP, "build", "mirror", "cli", "hubmirror"))
    return ap


def stop(*procs, work=None):
    """Terminate each process a run started (None: it never started), reap them, then remove work."""
    for p in procs:
        if p is not None:
            p.terminate()
    for p in procs:
        if p is not None:
            p.wait()
    if work:
        shutil.rmtree(work, ignore_errors=True)
