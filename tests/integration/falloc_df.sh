#!/bin/bash
# falloc_df.sh — fallocate(2) grants what df shows: on fresh filesystems
# of 64 MiB, 2 GiB and 1 TiB (sparse), a range of exactly f_bavail blocks
# is granted and one block more is refused with ENOSPC (df unchanged by
# the refusal), and the promise holds: at 64 MiB and 2 GiB the whole
# range is then written over, after a remount, with df at zero; at 1 TiB
# parts of it all over the range, before and after a remount.  The
# grant marks the blocks unwritten (lfs(5)): at 1 TiB the image grows by
# a few blocks, not by the terabyte.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/falloc.py" <<'PY'
import errno, os, sys
d, what = sys.argv[1], sys.argv[2]
def bavail():
    st = os.statvfs(d)
    return st.f_bavail, st.f_frsize
def refuse_one_more():
    g = os.open(d + "/g", os.O_RDWR | os.O_CREAT, 0o644)
    # a checkpoint leaves nothing dirty, so the daemon's flush timer has
    # nothing to write (writing it moves df) between the two counts
    os.sync()
    n, bs = bavail()
    try:
        os.posix_fallocate(g, 0, (n + 1) * bs)
        sys.exit("one block more than df's %d was granted" % n)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    if bavail()[0] != n:
        sys.exit("a refused fallocate moved df from %d to %d" % (n, bavail()[0]))
    return n, bs
if what == "grant":
    f = os.open(d + "/f", os.O_RDWR | os.O_CREAT, 0o644)
    os.fsync(f)
    n, bs = refuse_one_more()
    try:
        os.posix_fallocate(f, 0, n * bs)
    except OSError as e:
        sys.exit("exactly df's %d blocks: %s" % (n, os.strerror(e.errno)))
    print("%d blocks granted, %d refused; df now %d" % (n, n + 1, bavail()[0]))
elif what == "refuse":
    print("%d blocks refused" % (refuse_one_more()[0] + 1))
elif what == "parts":
    # 1 MiB at the start, the end and 14 places between, each checked
    f = os.open(d + "/f", os.O_RDWR)
    size, seed = os.fstat(f).st_size, int(sys.argv[3])
    mib = 1 << 20
    offs = [min(size - mib, (size // 15) * i // mib * mib) for i in range(16)]
    for i, off in enumerate(offs):
        os.pwrite(f, bytes([(seed + i) % 256]) * mib, off)
    os.fsync(f)
    for i, off in enumerate(offs):
        if os.pread(f, mib, off) != bytes([(seed + i) % 256]) * mib:
            sys.exit("1 MiB at %d does not read back" % off)
    if os.pread(f, 4096, offs[1] - 4096) != bytes(4096):
        sys.exit("an unwritten block does not read as zeros")
    print("16 MiB written into the range, df %d" % bavail()[0])
else: # write: over the whole range, in 1 MiB writes
    f = os.open(d + "/f", os.O_RDWR)
    size, off, buf = os.fstat(f).st_size, 0, b"\xa5" * (1 << 20)
    while off < size:
        off += os.pwrite(f, buf[:min(len(buf), size - off)], off)
    os.fsync(f)
    print("%d bytes written over" % size)
PY

for size in 64M 2G; do
	mkfs_img "$size" -f
	lfs_mount
	out=$("$PY" "$WORK/falloc.py" "$MNT" grant 2>&1) || fail "$size: $out"
	echo "$size: $out"
	[ "$(stat -f -c %a "$MNT")" = 0 ] || fail "$size: df shows $(stat -f -c %a "$MNT") blocks after fallocate of all"
	lfs_umount
	lfs_mount
	out=$("$PY" "$WORK/falloc.py" "$MNT" write 2>&1) || fail "$size: writing the allocated range after a remount: $out"
	echo "$size: $out"
	lfs_umount
done
mkfs_img 1T -f
fresh=$(du -k "$IMG" | cut -f1)
lfs_mount
out=$("$PY" "$WORK/falloc.py" "$MNT" grant 2>&1) || fail "1T: $out"
echo "1T: $out"
[ "$(stat -f -c %a "$MNT")" = 0 ] || fail "1T: df shows $(stat -f -c %a "$MNT") blocks after fallocate of all"
out=$("$PY" "$WORK/falloc.py" "$MNT" parts 1 2>&1) || fail "1T: writing into the allocated range: $out"
echo "1T: $out"
[ "$(stat -f -c %a "$MNT")" = 0 ] || fail "1T: df shows $(stat -f -c %a "$MNT") blocks after writing into the range"
lfs_umount
# the grant wrote block-map nodes, not the terabyte: the image grew by
# the 16 MiB written into it and little more
used=$(du -k "$IMG" | cut -f1)
[ $((used - fresh)) -lt $((64 * 1024)) ] || fail "1T: the image grew by $((used - fresh)) KiB"
echo "1T: the image grew by $((used - fresh)) KiB (from $fresh KiB after mkfs)"
lfs_mount
out=$("$PY" "$WORK/falloc.py" "$MNT" parts 7 2>&1) || fail "1T: writing into the allocated range after a remount: $out"
echo "1T: after a remount, $out"
lfs_umount
echo "ok: fallocate grants what df shows"
