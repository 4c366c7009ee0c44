#!/usr/bin/env python3
"""funclen.py — list the C functions longer than a limit.

A function is counted from the line that names it to its closing brace,
in the project's style: the name and its parameters start a line at
column 0, the body opens with "{" alone at column 0 and closes with "}"
alone at column 0.  Functions are listed longest first as
"LINES FILE:LINE NAME"; the exit status is 1 when any is over the limit.

usage: funclen.py [--max N] [--list] DIR|FILE...
  --max N   the limit (default 120): longer functions fail the check
  --list    print every function, not only those over the limit, and
            exit 0
"""
import os
import re
import sys

NAME = re.compile(r"^([A-Za-z_]\w*)\s*\(")


def functions(path):
    """yield (name, first line, number of lines) of each function in path"""
    lines = open(path, errors="replace").read().splitlines()
    name, start, body = None, 0, False
    for i, line in enumerate(lines, 1):
        if not body:
            m = NAME.match(line)
            if m and m.group(1) not in ("if", "for", "while", "switch", "return"):
                name, start = m.group(1), i
            elif line.startswith("{") and name:
                body = True
            elif line[:1] not in ("", " ", "\t") and not line.startswith("{"):
                # a new top-level line that is not part of the signature
                if not (name and (line.startswith(")") or line.endswith(","))):
                    name = None
        elif line.startswith("}"):
            yield name, start, i - start + 1
            name, body = None, False


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
