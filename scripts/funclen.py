#!/usr/bin/env python3
"""funclen.py — list the C functions longer than a limit.

A function is counted from the line that names it to its closing brace,
in the project's style: the name and its parameters start a line at
column 0 (after its type, or below it), the body opens with "{" at
column 0 and closes with "}" at column 0.  Functions are listed longest first as
"LINES FILE:LINE NAME"; the exit status is 1 when any is over the limit.

usage: funclen.py [--max N] [--list] DIR|FILE...
  --max N   the limit (default 120): longer functions fail the check
  --list    print every function, not only those over the limit, and
            exit 0
"""
import os
import re
import sys

# a top-level line that names a function: "name(" or "static int name("
NAME = re.compile(r"^[\w\s*]*?\b([A-Za-z_]\w*)\s*\(")
KEYWORDS = ("if", "for", "while", "switch", "return", "sizeof")


def functions(path):
    """yield (name, first line, number of lines) of each function in path"""
    lines = open(path, errors="replace").read().splitlines()
    name, start, body = None, 0, False
    for i, line in enumerate(lines, 1):
        if body:
            if line.startswith("}"):
                yield name, start, i - start + 1
                name, body = None, False
        elif line.startswith("{"):
            body = name is not None
        elif line[:1] in ("", " ", "\t", "/", "*", ")"):
            continue  # blank, a comment, or a signature's continuation
        else:
            m = NAME.match(line)
            declaration = line.rstrip().endswith(";") or "=" in line.split("(")[0]
            if m and m.group(1) not in KEYWORDS and not declaration:
                name, start = m.group(1), i
            else:
                name = None


def sources(args):
    for arg in args:
        if os.path.isdir(arg):
            for root, _, files in sorted(os.walk(arg)):
                for f in sorted(files):
                    if f.endswith(".c"):
                        yield os.path.join(root, f)
        else:
            yield arg


def main(argv):
    limit, show_all, paths = 120, False, []
    it = iter(argv)
    for a in it:
        if a == "--max":
            limit = int(next(it))
        elif a == "--list":
            show_all = True
        elif a.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            paths.append(a)
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    found = []
    for path in sources(paths):
        for name, start, n in functions(path):
            if show_all or n > limit:
                found.append((n, f"{path}:{start}", name))
    for n, where, name in sorted(found, key=lambda f: (-f[0], f[1])):
        print(f"{n:5d} {where} {name}")
    return 0 if show_all or not found else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
