#!/bin/bash
# tmpfile.sh — open(2) with O_TMPFILE (FUSE_TMPFILE, fuse_io.c): an
# unnamed file with the caller's owner and mode under umask, that the
# directory does not list; linkat(2) names it (AT_EMPTY_PATH or
# /proc/self/fd) and the name survives remount; O_EXCL makes it
# unlinkable; closed unnamed, its space comes back; fsynced and left
# open across kill -9 of the daemon, the next mount frees it as an
# orphan and fsck.lfs finds the image clean.
. "$(dirname "$0")/lib.sh"

FSCK="$top_builddir/ckpt/fsck.lfs"
PY=/usr/bin/python3 # Debian's, which uid 65534 can run too
[ -x "$PY" ] || skip "python3 (package python3) is missing"
command -v setpriv >/dev/null || skip "setpriv (package util-linux) is missing"
mkfs_img 128M
chmod 755 "$WORK"
lfs_mount

cat >"$WORK/tmpfile.py" <<'PY'
import ctypes, errno, os, stat, sys, time
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_EMPTY_PATH, AT_SYMLINK_FOLLOW = -100, 0x1000, 0x400

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def linkat(fd, path, new, flags):
    if libc.linkat(fd, path.encode(), AT_FDCWD, new.encode(), flags) != 0:
        return ctypes.get_errno()
    return 0

def free_blocks(d):
    os.sync()
    return os.statvfs(d).f_bfree

what, d = sys.argv[1], sys.argv[2]
data = os.urandom(1 << 20)
if what == "basic":
    before = os.stat(d)
    os.umask(0o027)
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o666)
    st = os.fstat(fd)
    if stat.S_IMODE(st.st_mode) != 0o640 or not stat.S_ISREG(st.st_mode):
        fail("mode %o, not a regular file 0640 (0666 under umask 027)" % st.st_mode)
    if st.st_nlink != 0:
        fail("a new O_TMPFILE file has %d links" % st.st_nlink)
    if os.listdir(d):
        fail("the directory lists %s" % os.listdir(d))
    after = os.stat(d)
    if (after.st_mtime_ns, after.st_nlink) != (before.st_mtime_ns, before.st_nlink):
        fail("O_TMPFILE changed the directory")
    os.write(fd, data)
    if os.pread(fd, len(data), 0) != data:
        fail("read back through the descriptor differs")
    e = linkat(fd, "", d + "/named", AT_EMPTY_PATH)
    if e:
        fail("linkat AT_EMPTY_PATH: " + os.strerror(e))
    if os.fstat(fd).st_nlink != 1 or os.listdir(d) != ["named"]:
        fail("after linkat: nlink %d, listing %s" % (os.fstat(fd).st_nlink, os.listdir(d)))
    os.close(fd)
    fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o600)
    os.write(fd, data[:4096])
    e = linkat(AT_FDCWD, "/proc/self/fd/%d" % fd, d + "/viaproc", AT_SYMLINK_FOLLOW)
    if e:
        fail("linkat of /proc/self/fd: " + os.strerror(e))
    os.close(fd)
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR | os.O_EXCL, 0o600)
    if linkat(fd, "", d + "/excl", AT_EMPTY_PATH) != errno.ENOENT:
        fail("an O_EXCL O_TMPFILE file could be linked")
    os.close(fd)
    open(d + "/expect", "wb").write(data)
elif what == "freed":
    base = free_blocks(d)
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
    for _ in range(8):
        os.write(fd, data)
    os.fsync(fd)
    held = free_blocks(d)
    os.close(fd)
    # the kernel sends the release after close returns: until the space
    # is back (a minute is only the bound on a hang)
    for _ in range(600):
        back = free_blocks(d)
        if back >= base - 16:
            break
        time.sleep(0.1)
    print("free blocks: %d before, %d while 8 MiB open, %d after close" % (base, held, back))
    if base - held < 2048 or back < base - 16:
        fail("the space of a closed unnamed file did not come back")
elif what == "hold":
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
    for _ in range(8):
        os.write(fd, data)
    os.fsync(fd)
    open(sys.argv[3], "w").write("%d\n" % os.statvfs(d).f_bfree)
    time.sleep(600)
elif what == "owner":
    fd = os.open(d, os.O_TMPFILE | os.O_RDWR, 0o600)
    st = os.fstat(fd)
    if (st.st_uid, st.st_gid) != (65534, 65534):
        fail("owned by %d:%d, not the caller 65534:65534" % (st.st_uid, st.st_gid))
PY

"$PY" "$WORK/tmpfile.py" basic "$MNT" || fail "O_TMPFILE basics"
mkdir -m 1777 "$MNT/shared"
setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" "$WORK/tmpfile.py" owner "$MNT/shared" ||
	fail "O_TMPFILE by uid 65534"
lfs_umount
lfs_mount
cmp "$MNT/expect" "$MNT/named" || fail "a linked O_TMPFILE file differs after remount"
[ "$(stat -c %h "$MNT/named")" = 1 ] || fail "a linked O_TMPFILE file has $(stat -c %h "$MNT/named") links"
[ "$(stat -c %s "$MNT/viaproc")" = 4096 ] || fail "the file linked through /proc/self/fd lost its data"
"$PY" "$WORK/tmpfile.py" freed "$MNT" || fail "a closed O_TMPFILE file kept its space"

# fsynced, still open, and the daemon killed: an orphan on disk
"$PY" "$WORK/tmpfile.py" hold "$MNT" "$WORK/held" &
HOLDER=$!
for _ in $(seq 1 100); do [ -s "$WORK/held" ] && break; sleep 0.1; done
[ -s "$WORK/held" ] || fail "the holder did not start"
kill -9 "$LFS_PID"
wait "$LFS_PID" 2>/dev/null || true
LFS_PID=
kill "$HOLDER"
wait "$HOLDER" 2>/dev/null || true
umount -l "$MNT" 2>/dev/null || fusermount3 -u "$MNT" 2>/dev/null || true
"$FSCK" "$IMG" >"$WORK/fsck1.out" 2>&1 || { cat "$WORK/fsck1.out"; fail "fsck.lfs with an orphan O_TMPFILE file"; }
lfs_mount
grep -q "freed orphan inode" "$WORK/daemon.log" || { cat "$WORK/daemon.log"; fail "the mount freed no orphan"; }
held=$(cat "$WORK/held")
now=$(stat -f -c %f "$MNT")
echo "free blocks: $held with the unnamed 8 MiB file open, $now after the crash and mount"
[ $((now - held)) -ge 2000 ] || fail "the orphan's 8 MiB were not freed by the mount"
cmp "$MNT/expect" "$MNT/named" || fail "the named file changed"
lfs_umount
"$FSCK" "$IMG" >"$WORK/fsck2.out" 2>&1 || { cat "$WORK/fsck2.out"; fail "fsck.lfs after the orphan was freed"; }
echo "tmpfile: unnamed files, linkat, O_EXCL, freeing at close and after kill -9"
