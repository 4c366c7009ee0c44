#!/bin/bash
# shutdown.sh — the shutdown control (lfs-ckpt -S: LFS_IOC_SHUTDOWN, or
# the generic FS_IOC_SHUTDOWN): writes fail with EIO at once, reads go on,
# what the flags promise is written first and nothing else is, only root
# or the daemon's user may ask, and afterwards the image mounts and
# recovers as after a power cut, with fsck.lfs finding nothing wrong.
. "$(dirname "$0")/lib.sh"

CKPT="$top_builddir/ckpt/lfs-ckpt"
FSCK="$top_builddir/ckpt/fsck.lfs"
command -v setpriv >/dev/null || skip "setpriv (package util-linux) is missing"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
# nothing reaches the log unless asked: no timed flush or checkpoint
QUIET=flush_ms=600000,ckpt_interval=0,ckpt_segs=0

expect_eio() { # what, command...
	local what=$1; shift
	if "$@" 2>"$WORK/err"; then fail "$what succeeded after the shutdown"; fi
	grep -q "Input/output error" "$WORK/err" || { cat "$WORK/err"; fail "$what: not EIO"; }
}

fsck_clean() {
	"$FSCK" "$IMG" >"$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs after $1"; }
}

mkfs_img 128M
chmod 755 "$WORK" # uid 65534 must reach the mountpoint to be refused by the daemon
head -c 3M /dev/urandom >"$WORK/durable"
head -c 2M /dev/urandom >"$WORK/late"

# --- nologflush: what was not fsynced is gone, what was is there.  A
# plain FUSE mount (noblkdev): the kernel would pass anyone's sync(1) on
# to a fuseblk mount as FUSE_SYNCFS, and a checkpoint then writes all
lfs_mount "writethrough,noblkdev,$QUIET"
cp "$WORK/durable" "$MNT/durable"
sync -d "$MNT/durable" # fdatasync: the data and its name
cp "$WORK/late" "$MNT/late"
# a user other than root and the daemon's is refused, and changes nothing
if "${NOBODY[@]}" "$CKPT" -S nologflush "$MNT" 2>"$WORK/err"; then fail "uid 65534 shut the filesystem down"; fi
grep -q "Operation not permitted" "$WORK/err" || { cat "$WORK/err"; fail "uid 65534: not EPERM"; }
echo ok >"$MNT/still-writable" || fail "writes failed after a refused shutdown"
if "$CKPT" -S sideways "$MNT" 2>/dev/null; then fail "an unknown shutdown mode was accepted"; fi
# LFS_IOC_SHUTDOWN on a regular file, with a flag ext4 does not know: EINVAL
"$PY" - "$MNT/durable" <<'PY' || fail "LFS_IOC_SHUTDOWN with flags 7 was not EINVAL"
import errno, fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    fcntl.ioctl(fd, (1 << 30) | (4 << 16) | (ord("L") << 8) | 2, struct.pack("I", 7))
except OSError as e:
    sys.exit(0 if e.errno == errno.EINVAL else 1)
sys.exit(1)
PY
echo ok >"$MNT/still-writable" || fail "writes failed after a refused shutdown"
"$CKPT" -S nologflush "$MNT" || fail "shutdown nologflush"
grep -q "shut down on request (nologflush)" "$WORK/daemon.log" || fail "the daemon did not log the shutdown"
# with -o writethrough write() itself reaches the daemon: EIO at once
expect_eio "write" dd if=/dev/zero of="$MNT/durable" bs=4k count=1 conv=notrunc status=none
expect_eio "create" touch "$MNT/new"
expect_eio "mkdir" mkdir "$MNT/dir"
expect_eio "unlink" rm "$MNT/late"
expect_eio "fsync" sync -d "$MNT/late"
cmp "$WORK/durable" "$MNT/durable" || fail "reads after the shutdown differ"
# a second shutdown is no error, as in ext4
"$CKPT" -S fullsync "$MNT" || fail "a second shutdown failed"
lfs_umount # exit status 0: a shutdown is not a failure
lfs_mount "$QUIET"
cmp "$WORK/durable" "$MNT/durable" || fail "fdatasynced data lost to the shutdown"
[ ! -e "$MNT/late" ] || fail "nologflush wrote data nobody flushed (late exists)"
[ ! -e "$MNT/still-writable" ] || fail "nologflush wrote a file nobody flushed"
echo "nologflush: fsynced 3 MiB kept, unflushed 2 MiB and a small file not written"

# --- fullsync (the writeback cache on): the kernel's dirty pages too
cp "$WORK/late" "$MNT/late"
mkdir "$MNT/d"
echo small >"$MNT/d/small"
# a file still open while the shutdown runs (a close, even of a child's
# copy of the descriptor, writes its pages back to the daemon).  FUSE's
# strict per-mount dirty limit usually has the kernel write them back
# during write() already, so this checks the outcome, not that the
# daemon's syncfs before the shutdown found pages to write.
head -c 400000 /dev/urandom >"$WORK/open"
"$PY" - "$WORK/open" "$MNT/open" "$CKPT" "$MNT" <<'PY' || fail "shutdown fullsync"
import os, subprocess, sys
data = open(sys.argv[1], "rb").read()
fd = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
os.write(fd, data)
rc = subprocess.run([sys.argv[3], "-S", "fullsync", sys.argv[4]]).returncode
os.close(fd)
sys.exit(rc)
PY
expect_eio "write through the page cache, at fsync" dd if=/dev/zero of="$MNT/d/small" bs=4k count=1 conv=fsync status=none
expect_eio "mkdir" mkdir "$MNT/dir"
lfs_umount
fsck_clean "the nologflush and fullsync shutdowns"
lfs_mount "$QUIET"
cmp "$WORK/late" "$MNT/late" || fail "fullsync lost data written before it"
[ "$(cat "$MNT/d/small")" = small ] || fail "fullsync lost a small file"
cmp "$WORK/open" "$MNT/open" || fail "fullsync lost the dirty pages of a file still open"
echo "fullsync: 2 MiB closed, 400 KB dirty in the page cache of an open file and a new directory kept"

# --- metaflush: the log already written is flushed; the image recovers
head -c 1M /dev/urandom >"$MNT/meta"
"$CKPT" -S metaflush "$MNT" || fail "shutdown metaflush"
expect_eio "mkdir" mkdir "$MNT/dir"
lfs_umount
lfs_mount "$QUIET"
cmp "$WORK/late" "$MNT/late" || fail "metaflush: earlier data lost"

# --- the generic FS_IOC_SHUTDOWN: its flags cannot reach a FUSE daemon,
# so it is taken as a full sync (lfs(8))
cp "$WORK/durable" "$MNT/generic"
"$CKPT" -S fs "$MNT" || fail "FS_IOC_SHUTDOWN"
expect_eio "mkdir" mkdir "$MNT/dir"
lfs_umount
lfs_mount "$QUIET"
cmp "$WORK/durable" "$MNT/generic" || fail "FS_IOC_SHUTDOWN (as fullsync) lost data written before it"
# and the filesystem works as before
cp "$WORK/late" "$MNT/after"
lfs_umount
fsck_clean "four shutdowns"
lfs_mount
cmp "$WORK/late" "$MNT/after" || fail "a file written after recovery is wrong"
lfs_umount
echo "shutdown: every mode stops writes with EIO and the image recovers; fsck.lfs clean"
