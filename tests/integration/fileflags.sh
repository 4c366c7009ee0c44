#!/bin/bash
# fileflags.sh — chattr(1) and lsattr(1) (FS_IOC_SETFLAGS, FS_IOC_GETFLAGS
# and the FS_IOC_FSGETXATTR the kernel asks first): nodump (d) and
# noatime (A) are kept, on files and directories, across a remount;
# noatime keeps a read from moving atime, which it moves once cleared;
# immutable (i) and append-only (a), which lfs cannot enforce under the
# writeback cache, are refused and not shown; only the owner may set a
# flag.
. "$(dirname "$0")/lib.sh"

command -v chattr >/dev/null && command -v lsattr >/dev/null || skip "chattr, lsattr (package e2fsprogs) are missing"
command -v setpriv >/dev/null || skip "setpriv (package util-linux) is missing"
[ -n "$PY" ] || skip "python3 is missing"
mkfs_img 128M
lfs_mount strictatime
F="$MNT/f"
echo data >"$F"
mkdir "$MNT/d"
flags() { lsattr -d "$1" | cut -d' ' -f1 | tr -d -; }
[ -z "$(flags "$F")" ] || fail "a new file has flags $(flags "$F")"
chattr +d "$F" || fail "chattr +d"
[ "$(flags "$F")" = d ] || fail "after chattr +d: '$(flags "$F")'"
chattr +A "$F" || fail "chattr +A"
[ "$(flags "$F")" = dA ] || fail "after chattr +A: '$(flags "$F")'"
chattr +d "$MNT/d" || fail "chattr +d on a directory"
[ "$(flags "$MNT/d")" = d ] || fail "directory flags '$(flags "$MNT/d")'"
for f in i a; do
	if chattr +$f "$F" 2>"$WORK/err"; then fail "chattr +$f was accepted"; fi
	grep -q "Operation not supported" "$WORK/err" || { cat "$WORK/err"; fail "chattr +$f: wrong error"; }
done
[ "$(flags "$F")" = dA ] || fail "after refused +i/+a: '$(flags "$F")'"
if setpriv --reuid=65534 --regid=65534 --clear-groups chattr -d "$F" 2>/dev/null; then
	fail "another user changed the flags"
fi
[ "$(flags "$F")" = dA ] || fail "flags changed by another user"

# read(2) that reaches the daemon: the page cache dropped first
cat >"$WORK/atime.py" <<'PY'
import os, sys, time
path = sys.argv[1]
sync = os.open(path, os.O_RDONLY)
os.fsync(sync)
os.posix_fadvise(sync, 0, 0, os.POSIX_FADV_DONTNEED)
os.close(sync)
before = os.stat(path).st_atime_ns
time.sleep(0.01)
fd = os.open(path, os.O_RDONLY)
os.read(fd, 10)
os.close(fd)
print("moved" if os.stat(path).st_atime_ns != before else "kept")
PY
[ "$("$PY" "$WORK/atime.py" "$F")" = kept ] || fail "a read moved the atime of a noatime file"
chattr -A "$F"
[ "$("$PY" "$WORK/atime.py" "$F")" = moved ] || fail "a read left atime (strictatime) once noatime was cleared"
chattr +A "$F"
lfs_umount
lfs_mount
[ "$(flags "$F")" = dA ] || fail "after a remount: '$(flags "$F")'"
[ "$(flags "$MNT/d")" = d ] || fail "directory after a remount: '$(flags "$MNT/d")'"
lfs_umount
echo "ok chattr flags d and A kept and honoured, i and a refused"
