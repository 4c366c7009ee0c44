#!/bin/bash
# manpages.sh — every manual page's OPTIONS names the options its
# program's --help names, and no others (tests/man_options.py); and the
# checker itself catches an option a page adds.
set -euo pipefail
: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"
# PY: python3 itself, not a version manager's shim that PATH may name
# first (pyenv's costs a fifth of a CPU-second at every start)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || PY=
[ -n "$PY" ] || { echo "SKIP: python3 is missing"; exit 77; }
CHECK="$top_srcdir/tests/man_options.py"
"$PY" "$CHECK" "$top_srcdir/man" "$top_builddir" || { echo "FAIL: pages and --help disagree"; exit 1; }
# a page with an option its program does not have must fail
tmp=$(mktemp -d /tmp/lfs-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp "$top_srcdir"/man/* "$tmp"
sed -i 's/^\.SH OPTIONS$/.SH OPTIONS\n.TP\n.B \\-Z\nNo such option./' "$tmp/lfs-tune.8"
if "$PY" "$CHECK" "$tmp" "$top_builddir" >"$tmp/out"; then echo "FAIL: the checker missed -Z"; exit 1; fi
grep -q "lfs-tune.8: -Z is in the page" "$tmp/out" || { cat "$tmp/out"; echo "FAIL: the checker's message"; exit 1; }
echo "ok the checker catches an option only the page has"
