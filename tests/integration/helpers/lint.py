#!/usr/bin/python3
"""lint.py ROOT CHECK: the source rules of t0002-lint.sh that grep cannot hold. Prints what breaks a
rule, one line each, and exits 1 if anything does.

  banned-cpp   the C++ of the shim calls none of base/banned.h's functions (the C files meet the
               macros at compile time; comments and strings do not count)
  private      a private header (x-int.h, x-int.hpp) is included only from its own folder (and by
               the module's own unit tests: tests/unit/test-hub-*.c may include hub/http/httpd-int.h)
  docs         every docs/*.md a file names exists, and a section it quotes after it
               (docs/p2p.md, "One hash per byte") is a heading there
  flags        every option a command's table declares (CLI_STR("data", ...) in mirror/cli/) has its
               help beside it (the entry's last argument, a string that is not empty: `help CMD`
               prints it) and is on that command's page under docs/commands/ (or, for a command
               without a page, on one of them)
  columns      no line of C or C++ is wider than the 120 columns .clang-format declares (a tab
               taking the 8 it does there)
  long-functions
               no function is over 100 lines unless the comment above it says why, in a sentence
               that says "over 100 lines" and the reason
  fronts       in mirror/serve/, no front (a routes-*.c other than routes.c itself, or the on-demand
               engine) uses a symbol another front's object defines, and nothing below the fronts
               (the floor: floor-read.c, floor-write.c, spool.c, respond.c, defer.c, and the
               services access.c, card.c, seeder.c) uses a front's at all: the fronts stand on the
               floor and call each other never, and the floor calls up into no front
               (docs/ARCHITECTURE.md). Read with nm from the objects under $HM_BUILD; the on-demand
               engine's public mirror_ondemand_ API (ondemand.h) is a service the fronts use, not a
               front's. What one front asks of another, or the floor of a front, goes through
               routes.c's table (struct mirror__fronts), which this cannot see and need not
  depends-on   docs/ARCHITECTURE.md's table says, for each folder, what it depends on: the folders of
               ours and the libraries its files include, no more and no fewer
  prefixes     every name a folder's library gives the link (nm on the objects under $HM_BUILD), and
               every struct, union and enum a public header declares, starts with one of the
               folder's prefixes (ROOMS below: docs/CODING.md's table) or with the name of a header
               of the folder (base/buf.h: buf_; mirror/gitobj.h: gitobj_; config.h: struct config)
"""
import os
import re
import sys

SOURCES = ("base", "catalog", "hub", "mirror", "p2p")
TEXT = SOURCES + ("tests", "docs", "bench", ".ci", "README.md")
EXT = (".c", ".h", ".cpp", ".hpp", ".py", ".sh", ".md", ".mjs", ".build", ".html", ".js")


def files(root, tops, ext):
    for top in tops:
        p0 = os.path.join(root, top)
        if os.path.isfile(p0):
            yield p0
            continue
        for d, dirs, names in os.walk(p0):
            dirs[:] = sorted(x for x in dirs if x not in ("node_modules", "__pycache__", "corpus"))
            for n in sorted(names):
                if n.endswith(ext) or (n == "run" and d.endswith(".ci")):
                    yield os.path.join(d, n)


def strip_c(text):
    """C/C++ text without comments and string or character literals (newlines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def banned_cpp(root):
    names = re.findall(r"#define (\w+)\(", open(os.path.join(root, "base", "banned.h")).read())
    names = [x for x in names if x != "BANNED"]
    call = re.compile(r"\b(%s)\s*\(" % "|".join(names))
    for path in files(root, SOURCES, (".cpp", ".hpp")):
        for k, line in enumerate(strip_c(open(path).read()).split("\n"), 1):
            m = call.search(line)
            if m:
                yield "%s:%d: calls %s (base/banned.h)" % (os.path.relpath(path, root), k, m.group(1))


def private(root):
    inc = re.compile(r'^\s*#\s*include\s+"([^"]+-int\.h(?:pp)?)"', re.M)
    for path in files(root, SOURCES + ("tests",), (".c", ".h", ".cpp", ".hpp")):
        here = os.path.dirname(path)
        for m in inc.finditer(open(path).read()):
            name = m.group(1)
            found = [p for p in (os.path.join(here, name), os.path.join(root, name)) if os.path.exists(p)]
            where = os.path.dirname(os.path.realpath(found[0])) if found else None
            # (a module's own unit tests may look inside it: tests/unit/test-hub-*.c and hub/)
            m2 = re.match(r"tests/unit/test-([a-z0-9]+)-", os.path.relpath(path, root))
            if where and m2 and os.path.relpath(where, root).split(os.sep)[0] == m2.group(1):
                continue
            if where != os.path.realpath(here):
                yield "%s: includes %s, private to %s" % (os.path.relpath(path, root), name,
                                                          os.path.relpath(where, root) if where else "no folder here")


def docs(root):
    named = re.compile(r"docs/[A-Za-z0-9_./-]+\.md")
    quoted = re.compile(r'(docs/[A-Za-z0-9_./-]+\.md)(?:,\s*|\s+)(?:section\s+)?"([^"\n]{3,80})"')
    heads = {}
    for path in files(root, TEXT, EXT):
        rel = os.path.relpath(path, root)
        if rel == "tests/integration/helpers/lint.py":
            continue
        try:
            text = open(path, encoding="utf-8").read()
        except (UnicodeDecodeError, OSError):
            continue
        for m in named.finditer(text):
            if not os.path.isfile(os.path.join(root, m.group(0))):
                yield "%s: names %s, which does not exist" % (rel, m.group(0))
        # a comment's lines joined, so that a quoted section may wrap
        flat = re.sub(r"\n[ \t]*(?:\*|#|//)?[ \t]*", " ", text)
        for m in quoted.finditer(flat):
            doc, sec = m.groups()
            if not os.path.isfile(os.path.join(root, doc)):
                continue
            if doc not in heads:
                heads[doc] = [h.strip() for h in re.findall(r"^#+\s+(.*)$", open(os.path.join(root, doc)).read(), re.M)]
            if not any(sec in h for h in heads[doc]):
                yield '%s: quotes "%s" of %s, which has no such heading' % (rel, sec, doc)


def macro_args(text, start):
    """The arguments of the macro call whose '(' is at text[start], split at its top-level commas."""
    args, depth, cur, i = [], 0, "", start + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            lit = re.match(r'"(?:[^"\\\n]|\\.)*"', text[i:])
            cur += lit.group(0)
            i += len(lit.group(0))
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return args + [cur.strip()]
            depth -= 1
        elif c == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            i += 1
            continue
        cur += c
        i += 1
    return args + [cur.strip()]


def flags(root):
    cli = os.path.join(root, "mirror", "cli")
    table = open(os.path.join(cli, "commands.c")).read()
    # each command's entry: { "name", cmd_fn, synopsis, summary, prose }
    fns = {}
    for m in re.finditer(r'\{\s*"([a-z-]+)",\s*(cmd_[a-z_]+),', table):
        fns.setdefault(m.group(2), []).append(m.group(1))
    every = [c for cs in fns.values() for c in cs]
    pages = {os.path.basename(p)[:-3]: open(p).read()
             for p in (os.path.join(root, "docs", "commands", n) for n in os.listdir(os.path.join(root, "docs", "commands")))
             if p.endswith(".md")}
    decl = re.compile(r'CLI_(?:BOOL|NO|STR|INT|INT_TAKES|RATE|SIZE|FN)\("([a-z0-9-]+)"')
    for name in sorted(os.listdir(cli)):
        # the tables, and cli.h's entries several commands share (CLI_AGENT_FLAGS)
        if not (name.endswith(".c") or name == "cli.h") or name == "commands.c":
            continue
        # a macro's lines joined (a backslash-newline is outside every string)
        text = open(os.path.join(cli, name)).read().replace("\\\n", " ")
        # the commands this file implements (their cmd_ function is defined here); none: every one
        cmds = [c for fn, cs in fns.items() if re.search(r"^int %s\(" % fn, text, re.M) for c in cs] or every
        for m in decl.finditer(text):
            opt = "--" + m.group(1)
            help_ = macro_args(text, m.start() + text[m.start():].index("("))[-1]
            strings = re.fullmatch(r'(?:\s*"(?:[^"\\]|\\.)*")+\s*', help_)
            if not strings or not "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', help_)).strip():
                yield "mirror/cli/%s: %s has no help in its table (its entry's last argument: %s)" % (name, opt, help_)
            docs_of = [pages[c] for c in cmds if c in pages] or list(pages.values())
            if not any(opt in d for d in docs_of):
                yield "mirror/cli/%s: %s is on none of the pages of %s under docs/commands/" % (name, opt, ", ".join(cmds))


def columns(root):
    limit = 120
    for path in files(root, SOURCES + ("tests",), (".c", ".h", ".cpp", ".hpp")):
        for k, line in enumerate(open(path, encoding="utf-8"), 1):
            width = len(line.rstrip("\n").expandtabs(8))
            if width > limit:
                yield "%s:%d: %d columns" % (os.path.relpath(path, root), k, width)


def long_functions(root):
    most = 100
    for path in files(root, SOURCES, (".c", ".cpp")):
        lines = open(path, encoding="utf-8").read().split("\n")
        start = None
        for k, line in enumerate(lines):
            # a function's body opens and closes at the first column (the tree's style: .clang-format)
            if line.startswith("{") and start is None:
                start = k
            elif line.startswith("}") and start is not None:
                if k - start - 1 > most:
                    # its signature, and the comment above it
                    top = start - 1
                    while top > 0 and lines[top - 1].strip() and not lines[top - 1].rstrip().endswith((";", "}")):
                        top -= 1
                    if not any("over 100 lines" in x.lower() for x in lines[max(0, top - 12):start]):
                        yield "%s:%d: %s is %d lines, and no comment says why" % (
                            os.path.relpath(path, root), start, lines[start - 1].strip(), k - start - 1)
                start = None


FLOOR = ("floor-read", "floor-write", "floor-xet", "spool", "respond", "defer", "access", "card", "seeder",
         "xet-token")


def front_of(obj):
    """The front an object of mirror/serve/ belongs to (routes-hf-tree.c.o: "hf"), "floor" for what is
    below the fronts, or None (the map, routes.c, and the server above it all, serve.c)."""
    name = os.path.basename(obj)[:-len(".c.o")]
    if name in FLOOR:
        return "floor"
    if name.startswith("ondemand"):
        return "ondemand"
    if not name.startswith("routes-"):
        return None
    front = name[len("routes-"):]
    for family in ("hf", "s3", "oci", "xet-write"):
        if front == family or front.startswith(family + "-"):
            return family
    return front


def fronts(root):
    import glob
    import subprocess
    build = os.environ.get("HM_BUILD") or os.path.join(root, "build")
    objs = sorted(glob.glob(os.path.join(build, "mirror", "serve", "*.p", "*.c.o")))
    if not objs:
        yield "fronts: no object of mirror/serve/ under %s" % build
        return
    defined, used = {}, {}
    for o in objs:
        f = front_of(o)
        if f is None:
            continue
        out = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBRV" and f != "floor":
                defined[p[2]] = f
            elif len(p) == 2 and p[0] == "U":
                used.setdefault(os.path.basename(o)[:-len(".c.o")], set()).add((f, p[1]))
    for user, syms in used.items():
        for f, sym in syms:
            to = defined.get(sym)
            if to is not None and to != f and not sym.startswith("mirror_ondemand_"):
                yield "mirror/serve/%s.c: %s uses %s of the %s front" % (
                    user, "the floor" if f == "floor" else "the %s front" % f, sym, to)


# What an #include names, as docs/ARCHITECTURE.md's "depends on" column says it.
LIBS = (("jansson", "jansson"), ("sqlite3", "sqlite3"), ("curl/", "libcurl"), ("uv", "libuv"),
        ("openssl/ssl", "libssl"), ("openssl/", "libcrypto"), ("archive", "libarchive"), ("fuse", "libfuse3"),
        ("libtorrent/", "libtorrent-rasterbar"), ("http_parser", "http-parser"), ("ini", "inih"),
        ("blake3", "BLAKE3"), ("libxml/", "libxml2"))
OURS = ("base", "catalog", "hub", "hub/http", "hub/xet", "mirror", "mirror/serve", "p2p", "p2p/agent", "mirror/cli",
        "store")


def depends_on(root):
    rows = {}
    for line in open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and len(cells) == 4 and cells[0].rstrip("/") in OURS:
            rows[cells[0].rstrip("/")] = cells[3]
    for room in OURS:
        if room not in rows:
            yield "docs/ARCHITECTURE.md: no row for %s/" % room
            continue
        have = set()
        d = os.path.join(root, room)
        for n in os.listdir(d):
            if not n.endswith((".c", ".h", ".cpp", ".hpp")):
                continue
            text = open(os.path.join(d, n), encoding="utf-8").read()
            for inc in re.findall(r'#include "([a-z0-9/]+)/[^/"]+"', text):
                if inc in OURS and inc != room:
                    have.add(inc)
            for inc in re.findall(r"#include <([^>]+)>", text) + re.findall(r'#include "(blake3\.h)"', text):
                for pre, lib in LIBS:
                    if inc.startswith(pre) and (pre.endswith("/") or inc[len(pre):len(pre) + 1] in (".", "/")):
                        have.add(lib)
                        break
        said = rows[room]
        told = set(re.findall(r"[A-Za-z][A-Za-z0-9-]*(?:/[a-z]+)?", re.sub(r"\([^)]*\)", "", said)))
        if "everything" in told:  # the program: every folder and library there is
            continue
        for x in sorted(have - told):
            yield "docs/ARCHITECTURE.md: %s/ depends on %s, and its row does not say so" % (room, x)
        for x in sorted(told & (set(OURS) | {lib for _, lib in LIBS}) - have):
            yield "docs/ARCHITECTURE.md: %s/'s row says it depends on %s, and no file of it includes it" % (room, x)


# docs/CODING.md's table of prefixes: each folder's library and the names it gives the link. C++
# names (the shim's, mangled) and the compiler's own (DW.ref.) are not ours to name.
ROOMS = {
    "base": ("x",),  # and each header's name; x: the allocation family (xmalloc.h)
    "catalog": ("catalog_",),
    "hub": ("hub_", "hf_", "ms_", "s3_", "upstream__"),
    "hub/xet": ("xet_",),
    "hub/http": ("httpd_", "http__", "hub_http_", "hub_tls_", "hub_url_", "hub_link_"),
    "mirror": ("mirror_", "gitrepo__", "bundle__"),
    "mirror/serve": ("mirror_",),
    "mirror/cli": ("cli_", "cmd_", "main"),
    "p2p": ("p2p_", "_Z", "DW.ref."),
    "p2p/agent": ("agent_",),
    "store": ("store_",),
}


def room_prefixes(root, room):
    stems = [n[:-2] for n in os.listdir(os.path.join(root, room)) if n.endswith(".h") and not n.endswith("-int.h")]
    return ROOMS[room] + tuple(s + "_" for s in stems), tuple(stems)


def prefixes(root):
    import glob
    import subprocess
    build = os.environ.get("HM_BUILD") or os.path.join(root, "build")
    for room in ROOMS:
        allowed, stems = room_prefixes(root, room)
        objs = sorted(glob.glob(os.path.join(build, room, "*.p", "*.o")))
        if not objs:
            yield "prefixes: no object of %s/ under %s" % (room, build)
        for o in objs:
            if os.path.basename(o).startswith("_"):
                continue  # a source outside the tree, built into the library (BLAKE3's): not ours to name
            out = subprocess.run(["nm", "-g", "--defined-only", o], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBRVG" and not p[2].startswith(allowed) and p[2] not in stems:
                    src = os.path.basename(o)[:-len(".o")]
                    yield "%s/%s: %s is not named for its room (%s)" % (room, src, p[2], ", ".join(ROOMS[room]))
        for h in sorted(glob.glob(os.path.join(root, room, "*.h"))):
            if h.endswith("-int.h"):
                continue
            for k, line in enumerate(open(h, encoding="utf-8"), 1):
                m = re.match(r"(?:typedef )?(struct|union|enum) (\w+) \{", line)
                if m and not m.group(2).startswith(allowed) and m.group(2) not in stems:
                    yield "%s:%d: %s %s is not named for its room" % (os.path.relpath(h, root), k, m.group(1), m.group(2))


def main():
    root, check = sys.argv[1], sys.argv[2]
    bad = sorted(set({"banned-cpp": banned_cpp, "private": private, "docs": docs, "flags": flags, "columns": columns,
                      "long-functions": long_functions, "fronts": fronts,
                      "prefixes": prefixes, "depends-on": depends_on}[check](root)))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
