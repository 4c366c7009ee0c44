#!/usr/bin/env python3
"""layers.py — hold the sources to the layer list in lfs_int.h.

The list names every module of liblfs once, by its path under lfs/ (or
ckpt/), lowest layer first, and the folders of each layer.  Read from
the built objects (nm), every call from one module into another must go
to a module listed on an earlier line or the same line; a module missing
from the list, a list entry with no source, or a module outside its
layer's folders fails too.  No modules may call each other round a
circle, and no headers include each other round one.  Every source under
lfs/, ckpt/ and cleaner/ (programs too) lies in a listed folder and
includes headers only from folders of its own layer or lower (lfs.h,
image.h and lfs_int.h, at the top of lfs/, excepted).  Each library
source's top comment must name its file and its layer's number, and
each module must have a unit suite in tests/unit.

usage: layers.py SRCDIR LIBLFS.A [--inject FROM.c->TO.c] [--inject-include FROM.c->TO.h]
       layers.py --sources SRCDIR
       layers.py --cflags SRCDIR
  --inject adds a call the objects do not make, --inject-include an
  include the sources do not make, to show the checks fail; --sources
  prints the library's sources (liblfs_a_SOURCES in Makefile.am) and
  --cflags the -I options of its folders, for the scripts that build it
  by hand.
"""
import os
import re
import subprocess
import sys
import tempfile

MOD = r"[\w/]+\.c"
MODS = rf"{MOD}(?:, {MOD})*"


def die(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def base(name):
    return os.path.basename(name)[:-2]


TOP_HEADERS = {"lfs/lfs.h", "lfs/lfs_int.h", "lfs/image.h"}


def parse_list(path):
    """rows: [(layer, [module path, ...])] in order; upward: {(from, to)};
    folders: {folder: layer}"""
    text = open(path).read().split("*/", 1)[0]
    rows, upward, folders, layer, part = [], set(), {}, None, None
    for line in text.splitlines():
        if "Layers, lowest first" in line:
            part = "layers"
        elif "Upward calls" in line:
            part = "upward"
        elif part and line.strip() == "*":
            if part == "upward":
                break
        m = re.match(r"^ \* Layer (\d+),[^(]*\(([^)]*)\)", line)
        if part == "layers" and m:
            layer = int(m.group(1))
            for f in m.group(2).split(", "):
                folders[f] = layer
            continue
        m = re.match(rf"^ \*   ({MODS})(?: -> ({MODS}))?(?:\s|$)", line)
        if not m or not part:
            continue
        names = m.group(1).split(", ")
        if part == "layers" and not m.group(2):
            if layer is None:
                die(f"{path}: a module line before the first 'Layer N,' heading (with its folders)")
            rows.append((layer, names))
        elif part == "upward" and m.group(2):
            upward |= {(base(a), base(b)) for a in names for b in m.group(2).split(", ")}
    return rows, upward, folders


def source_path(srcdir, entry):
    """a list entry's source: under lfs/, or from the top (ckpt/...)"""
    return entry if os.path.exists(os.path.join(srcdir, entry)) and not \
        os.path.exists(os.path.join(srcdir, "lfs", entry)) else "lfs/" + entry


def all_sources(srcdir):
    out = []
    for top in ("lfs", "ckpt", "cleaner"):
        for d, _, files in os.walk(os.path.join(srcdir, top)):
            out += [os.path.relpath(os.path.join(d, f), srcdir) for f in files if f.endswith((".c", ".h"))]
    return sorted(out)


def folder_layer(folders, path):
    d = os.path.dirname(path)
    return folders.get(d)


def include_problems(srcdir, folders, upward, inject):
    """sources outside the listed folders, and includes that go up"""
    problems, srcs = [], all_sources(srcdir)
    by_name = {}
    for p in srcs:
        by_name.setdefault(os.path.basename(p), []).append(p)
    for name, paths in sorted(by_name.items()):
        if len(paths) > 1:
            problems.append(f"{' and '.join(paths)} share a name: includes and objects go by name")
    for p in srcs:
        if p not in TOP_HEADERS and folder_layer(folders, p) is None:
            problems.append(f"{p} is in no folder lfs_int.h's layer list names")
    for p in srcs:
        if p in TOP_HEADERS or folder_layer(folders, p) is None:
            continue
        incs = re.findall(r'^#include "([^"]+)"', open(os.path.join(srcdir, p)).read(), re.M)
        if inject and inject[0] == os.path.basename(p):
            incs.append(inject[1])
        for h in incs:
            found = by_name.get(os.path.basename(h))
            if not found or found[0] in TOP_HEADERS:
                continue
            lh, lp = folder_layer(folders, found[0]), folder_layer(folders, p)
            if lh is not None and lh > lp and (base(p), base(h[:-2] + ".c")) not in upward:
                problems.append(f"{p} (layer {lp}) includes {found[0]} (layer {lh}): an upward include")
    return problems


def library_sources(makefile):
    text = open(makefile).read()
    m = re.search(r"^liblfs_a_SOURCES\s*=((?:.*\\\n)*.*)$", text, re.M)
    if not m:
        die(f"no liblfs_a_SOURCES in {makefile}")
    return [s for s in m.group(1).replace("\\\n", " ").split() if s.endswith(".c")]


def calls(archive):
    """{(from, to): [symbols]} between the archive's objects"""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["ar", "x", os.path.abspath(archive)], cwd=tmp, check=True)
        objs = sorted(f for f in os.listdir(tmp) if f.endswith(".o"))
        defined, undefined = {}, {}
        for o in objs:
            path = os.path.join(tmp, o)
            out = subprocess.run(["nm", "-g", "--defined-only", path], capture_output=True, text=True,
                                 check=True).stdout
            for line in out.splitlines():
                defined[line.split()[-1]] = base(o)
            out = subprocess.run(["nm", "-u", path], capture_output=True, text=True, check=True).stdout
            undefined[base(o)] = [line.split()[-1] for line in out.splitlines() if line.strip()]
    edges = {}
    for mod, syms in undefined.items():
        for s in syms:
            to = defined.get(s)
            if to and to != mod:
                edges.setdefault((mod, to), []).append(s)
    return set(undefined), edges


def circles(edges):
    """the strongly connected sets of more than one node (Tarjan), each sorted"""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def header_includes(srcdir):
    """{(header, header)}: which headers of lfs/, ckpt/ and cleaner/ include which"""
    names, edges = {}, set()
    for top in ("lfs", "ckpt", "cleaner"):
        for d, _, files in os.walk(os.path.join(srcdir, top)):
            for f in files:
                if f.endswith(".h"):
                    names[f] = os.path.join(d, f)
    for f, path in names.items():
        for h in re.findall(r'^#include "([^"]+)"', open(path).read(), re.M):
            if os.path.basename(h) in names:
                edges.add((f, os.path.basename(h)))
    return edges


def top_comment(path):
    text = open(path).read()
    if not text.startswith("/*"):
        return None
    return text[:text.find("*/")]


def main():
    args = sys.argv[1:]
    if args[:1] == ["--sources"] and len(args) == 2:
        print("\n".join(library_sources(os.path.join(args[1], "Makefile.am"))))
        return
    if args[:1] == ["--cflags"] and len(args) == 2:
        _, _, folders = parse_list(os.path.join(args[1], "lfs", "lfs_int.h"))
        print(" ".join(f"-I{os.path.join(args[1], f)}" for f in ["lfs"] + sorted(folders)))
        return
    inject = inject_include = None
    if "--inject" in args:
        i = args.index("--inject")
        inject = tuple(base(x) for x in args[i + 1].split("->"))
        del args[i:i + 2]
    if "--inject-include" in args:
        i = args.index("--inject-include")
        inject_include = tuple(args[i + 1].split("->"))
        del args[i:i + 2]
    if len(args) != 2:
        die(__doc__.split("usage: ", 1)[1])
    srcdir, archive = args
    rows, upward, folders = parse_list(os.path.join(srcdir, "lfs", "lfs_int.h"))
    row_of, layer_of, listed = {}, {}, {}
    for i, (layer, names) in enumerate(rows):
        for entry in names:
            n = base(entry)
            if n in row_of:
                die(f"lfs_int.h lists {n}.c twice")
            row_of[n], layer_of[n], listed[n] = i, layer, source_path(srcdir, entry)
    sources = library_sources(os.path.join(srcdir, "Makefile.am"))
    in_lib = {base(s): s for s in sources}
    problems = include_problems(srcdir, folders, upward, inject_include)
    for n in sorted(set(in_lib) & set(listed)):
        if listed[n] != in_lib[n]:
            problems.append(f"lfs_int.h's layer list names {listed[n]}, the library {in_lib[n]}")
        elif folder_layer(folders, in_lib[n]) != layer_of[n]:
            problems.append(f"{in_lib[n]} is listed in layer {layer_of[n]}, outside that layer's folders")
    for n in sorted(set(in_lib) - set(row_of)):
        problems.append(f"{in_lib[n]} is in the library but not in lfs_int.h's layer list")
    for n in sorted(set(row_of) - set(in_lib)):
        problems.append(f"lfs_int.h's layer list names {n}.c, which is not in the library")
    objects, edges = calls(archive)
    if inject:
        edges.setdefault(inject, []).append("(injected)")
    for n in sorted(set(in_lib) - objects):
        problems.append(f"{in_lib[n]}: no object in {archive}")
    used_upward = set()
    for (a, b), syms in sorted(edges.items()):
        if a not in row_of or b not in row_of or row_of[b] <= row_of[a]:
            continue
        if (a, b) in upward:
            used_upward.add((a, b))
            continue
        problems.append(f"{a}.c calls up into {b}.c ({', '.join(sorted(syms)[:4])}), "
                        f"which lfs_int.h lists above it")
    for comp in circles(edges):
        ring = [f"{a}.c -> {b}.c ({', '.join(sorted(edges[(a, b)])[:2])})" for a, b in sorted(edges)
                if a in comp and b in comp]
        problems.append(f"modules call each other round a circle: {'; '.join(ring)}")
    for comp in circles(header_includes(srcdir)):
        problems.append(f"headers include each other round a circle: {', '.join(comp)}")
    for a, b in sorted(upward - used_upward):
        problems.append(f"lfs_int.h lists an upward call {a}.c -> {b}.c that the code does not make")
    for n, src in sorted(in_lib.items()):
        head = top_comment(os.path.join(srcdir, src))
        name = os.path.basename(src)
        if head is None or f"{name} —" not in head:
            problems.append(f"{src}: the top comment does not begin '{name} —'")
        elif n in layer_of and not re.search(rf"\blayer {layer_of[n]}\b", head):
            problems.append(f"{src}: the top comment does not name its layer, {layer_of[n]}")
    # each module has a unit suite: tests/unit/check_MODULE.c, or one
    # whose top comment names it
    suites = {}
    unit = os.path.join(srcdir, "tests", "unit")
    for f in sorted(os.listdir(unit)):
        if f.startswith("check_") and f.endswith(".c"):
            suites[f] = top_comment(os.path.join(unit, f)) or ""
    for n, src in sorted(in_lib.items()):
        name = os.path.basename(src)
        if f"check_{n}.c" not in suites and not any(re.search(rf"\b{re.escape(name)}\b", head)
                                                    for head in suites.values()):
            problems.append(f"{src} has no unit suite: no tests/unit/check_{n}.c, and no suite's top "
                            f"comment names {name}")
    if problems:
        for p in problems:
            print("FAIL: " + p)
        sys.exit(1)
    between = sum(1 for a, b in edges if a in row_of and b in row_of)
    but = f" but the {len(upward)} listed upward calls" if upward else ""
    print(f"ok {len(row_of)} modules in {len(rows)} lines of {len(set(layer_of.values()))} layers, "
          f"{len(folders)} folders, no upward include; "
          f"{between} module pairs call each other, all downward or beside{but}; "
          f"no circle of calls or includes; every module has a unit suite")


if __name__ == "__main__":
    main()
