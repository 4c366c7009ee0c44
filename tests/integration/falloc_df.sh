#!/bin/bash
# falloc_df.sh — fallocate(2) grants what df shows: on fresh filesystems
# of 64 MiB and 2 GiB, a range of exactly f_bavail blocks is granted and
# one block more is refused with ENOSPC (df unchanged by the refusal),
# and the promise holds: the whole range is then written over, after a
# remount too, with df at zero.  On a 1 TiB sparse image one block more
# than df shows is refused; granting all of it would write a terabyte of
# zeros (lfs has no unwritten extents), so check_space's df_is_admitted
# checks that admission instead.
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
	out=$(python3 "$WORK/falloc.py" "$MNT" grant 2>&1) || fail "$size: $out"
	echo "$size: $out"
	[ "$(stat -f -c %a "$MNT")" = 0 ] || fail "$size: df shows $(stat -f -c %a "$MNT") blocks after fallocate of all"
	lfs_umount
	lfs_mount
	out=$(python3 "$WORK/falloc.py" "$MNT" write 2>&1) || fail "$size: writing the allocated range after a remount: $out"
	echo "$size: $out"
	lfs_umount
done
mkfs_img 1T -f
lfs_mount
out=$(python3 "$WORK/falloc.py" "$MNT" refuse 2>&1) || fail "1T: $out"
echo "1T: $out"
lfs_umount
echo "ok: fallocate grants what df shows"
