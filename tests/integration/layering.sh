#!/bin/bash
# layering.sh — programs reach the core through its interfaces (lfs.h,
# image.h, tool.h, format.h, ...), never through the core's internal
# header lfs_int.h: only the library's own sources, liblfs_a_SOURCES in
# Makefile.am, include it.  Inside the library, modules call only
# downward, as the layer list in lfs_int.h says, and never round a
# circle (scripts/layers.py, on the built objects), and the folders are
# the layers: every source lies in its layer's folder and includes
# nothing from a higher one.  No function of lfs/,
# ckpt/ or cleaner/ is longer than 120 lines (scripts/funclen.py).  Each
# check must also catch what it forbids.
set -euo pipefail
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_builddir:=$top_srcdir}"
# PY: python3 itself, not a version manager's shim that PATH may name
# first (pyenv's costs a fifth of a CPU-second at every start)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || PY=
lib=$("$PY" "$top_srcdir/scripts/layers.py" --sources "$top_srcdir")
[ -n "$lib" ] || { echo "FAIL: no liblfs_a_SOURCES in $top_srcdir/Makefile.am"; exit 1; }
# offenders ROOT: program sources under ROOT that include lfs_int.h
shopt -s nullglob
offenders() {
	local f
	for f in "$1"/lfs/*.c "$1"/lfs/*/*.c "$1"/ckpt/*.c "$1"/ckpt/*/*.c "$1"/cleaner/*.c; do
		grep -q '^#include "lfs_int.h"' "$f" || continue
		grep -qxF "${f#"$1"/}" <<<"$lib" || echo "${f#"$1"/}"
	done
}
bad=$(offenders "$top_srcdir")
[ -z "$bad" ] || { echo "FAIL: programs that include the core's internal header lfs_int.h:" $bad; exit 1; }
echo "ok $(wc -w <<<"$lib") library sources; no program includes lfs_int.h"
tmp=$(mktemp -d /tmp/lfs-layering.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lfs" "$tmp/ckpt" "$tmp/cleaner"
printf '#include "lfs_int.h"\n' >"$tmp/cleaner/sneaky.c"
[ "$(offenders "$tmp")" = cleaner/sneaky.c ] || { echo "FAIL: the check missed cleaner/sneaky.c"; exit 1; }
echo "ok the check catches a program that includes it"
"$PY" "$top_srcdir/scripts/layers.py" "$top_srcdir" "$top_builddir/liblfs.a"
if "$PY" "$top_srcdir/scripts/layers.py" "$top_srcdir" "$top_builddir/liblfs.a" --inject 'seg.c->fs.c' >/dev/null; then
	echo "FAIL: the layer check missed an upward call from seg.c into fs.c"
	exit 1
fi
echo "ok the layer check catches an upward call"
if "$PY" "$top_srcdir/scripts/layers.py" "$top_srcdir" "$top_builddir/liblfs.a" --inject-include 'seg.c->ctl_ops.h' >/dev/null; then
	echo "FAIL: the folder check missed log/seg.c including fs/ctl_ops.h"
	exit 1
fi
echo "ok the folder check catches an upward include"
# a source left outside the layers' folders
cp -r "$top_srcdir/lfs" "$top_srcdir/ckpt" "$top_srcdir/cleaner" "$top_srcdir/Makefile.am" "$tmp/"
rm -rf "$tmp/tests" && mkdir -p "$tmp/tests" && cp -r "$top_srcdir/tests/unit" "$tmp/tests/"
printf '/* stray.c */\n' >"$tmp/lfs/stray.c"
out=$("$PY" "$top_srcdir/scripts/layers.py" "$tmp" "$top_builddir/liblfs.a" || true)
grep -q 'lfs/stray.c is in no folder' <<<"$out" || { echo "FAIL: the folder check missed lfs/stray.c: $out"; exit 1; }
echo "ok the folder check catches a source outside the folders"
# dir.c calls file.c, beside it on the same line: a call back is a circle
if "$PY" "$top_srcdir/scripts/layers.py" "$top_srcdir" "$top_builddir/liblfs.a" --inject 'file.c->dir.c' >/dev/null; then
	echo "FAIL: the layer check missed a circle: file.c -> dir.c -> file.c"
	exit 1
fi
echo "ok the layer check catches modules that call each other round a circle"

# no function over 120 lines, and the measure sees one that is
long=$("$PY" "$top_srcdir/scripts/funclen.py" --max 120 "$top_srcdir/lfs" "$top_srcdir/ckpt" "$top_srcdir/cleaner") ||
	{ echo "FAIL: functions over 120 lines (lines, where, name):"; echo "$long"; exit 1; }
echo "ok no function of lfs/, ckpt/ or cleaner/ is over 120 lines"
{
	printf 'static int\nlong_one(int x)\n{\n'
	for i in $(seq 1 120); do printf '\tx += %d;\n' "$i"; done
	printf '\treturn x;\n}\n'
} >"$tmp/cleaner/long.c"
if "$PY" "$top_srcdir/scripts/funclen.py" --max 120 "$tmp/cleaner" >"$tmp/long.out" ||
	! grep -q ' long_one$' "$tmp/long.out"; then
	echo "FAIL: funclen.py missed a function of 124 lines"
	exit 1
fi
echo "ok the length check catches a function over 120 lines"

# fs.c: an operation on one inode opens with lock_inode or
# lock_inode_for_change, not with its own copy of the lock and the iget
prologue='\tlock\(fs\);\n\tstruct lfs_inode \*\w+;\n\t(int err|ssize_t r) = (writable\(fs\)|lfs_iget)'
copies() { "$PY" -c 'import re, sys; print(len(re.findall(sys.argv[1], open(sys.argv[2]).read())))' "$prologue" "$1"; }
n=$(copies "$top_srcdir/lfs/fs/fs.c")
[ "$n" = 0 ] || { echo "FAIL: lfs/fs/fs.c has $n copies of the lock/iget prologue: use lock_inode"; exit 1; }
printf 'int\nf(struct lfs_fs *fs)\n{\n\tlock(fs);\n\tstruct lfs_inode *ip;\n\tint err = lfs_iget(fs, 2, &ip);\n' >"$tmp/fs.c"
[ "$(copies "$tmp/fs.c")" = 1 ] || { echo "FAIL: the prologue check missed a copy"; exit 1; }
echo "ok lfs/fs/fs.c opens its inode operations with lock_inode, and the check catches a copy"
