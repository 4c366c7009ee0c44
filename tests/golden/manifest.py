#!/usr/bin/env python3
"""manifest.py DIR — one line per file below DIR, sorted by path: type,
mode, link count, size, mtime (regular files), sha256 of the content or
the symlink's target, and the user.* extended attributes.

The golden-image test (tests/integration/golden.sh) compares the lines for
the mounted image with the committed manifest, which was made by this
script from the host directory the image was filled from (README in this
directory), so the expectation comes from outside lfs."""
import hashlib
import os
import stat
import sys


def value(v):
    """An xattr value: hex when short, its sha256 when long."""
    return v.hex() if len(v) <= 32 else "sha256:" + hashlib.sha256(v).hexdigest()


def describe(path, rel):
    st = os.lstat(path)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode):
        kind, what = "l", "target=" + os.readlink(path)
    elif stat.S_ISDIR(st.st_mode):
        kind, what = "d", ""
    elif stat.S_ISREG(st.st_mode):
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                h.update(chunk)
        kind, what = "f", f"size={st.st_size} mtime={st.st_mtime_ns // 10**9} sha256={h.hexdigest()}"
    else:
        kind, what = "?", ""
    xattrs = ""
    if not stat.S_ISLNK(st.st_mode):
        names = sorted(n for n in os.listxattr(path) if n.startswith("user."))
        xattrs = " ".join(f"{n}={value(os.getxattr(path, n))}" for n in names)
    links = st.st_nlink if not stat.S_ISDIR(st.st_mode) else "-"
    return f"{rel} {kind} {mode:04o} nlink={links} {what} {xattrs}".rstrip()


def main():
    top = sys.argv[1]
    lines = [describe(top, ".")]
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(root, name)
            lines.append(describe(p, os.path.relpath(p, top)))
    for line in sorted(lines):
        print(line)


main()
