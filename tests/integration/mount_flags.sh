#!/bin/bash
# mount_flags.sh — the mount flags an administrator gets through mount(8)
# and the helper, side by side with ext4 on a loop device, read from
# /proc/self/mountinfo (the mount's own flags, field 6):
#  - root's fstab "defaults" and "mount -t fuse.lfs": suid and dev, as
#    ext4 (a device node opens, a set-user-id program runs as its owner);
#    "user" implies nosuid,nodev,noexec, as for ext4;
#  - mount -o remount,ro and back keeps every other flag, with an fstab
#    line (bound over /etc/fstab) and without one;
#  - a mount made read-only (-o ro) is remounted read-write, as ext4's
#    is; a snapshot's stays read-only and says so.
# mount(8) looks for helpers in /sbin only: a private mount namespace
# lays a directory with the build's helper over /usr/sbin (overlayfs),
# and binds a file of its own over /etc/fstab.
. "$(dirname "$0")/lib.sh"
command -v unshare >/dev/null || skip "unshare (util-linux) is missing"
command -v setpriv >/dev/null || skip "setpriv (util-linux) is missing"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 (e2fsprogs) is missing"

mkdir "$WORK/helpers" "$WORK/ext4"
sed -e "s|^LFS=.*|LFS='$LFS'|" -e "s|^LFS_CLEAN=.*|LFS_CLEAN='$top_builddir/cleaner/lfs-clean'|" \
	"$top_builddir/lfs/daemon/mount.fuse.lfs" >"$WORK/helpers/mount.fuse.lfs"
chmod +x "$WORK/helpers/mount.fuse.lfs"
ln -s mount.fuse.lfs "$WORK/helpers/mount.fuseblk.lfs"
mkfs_img 64M
truncate -s 64M "$WORK/ext4.img"
mkfs.ext4 -q -F "$WORK/ext4.img"
# nobody runs the set-id program: it must reach the mounts
chmod 755 "$WORK"

cat >"$WORK/ns.sh" <<'EOF'
set -eu
fail() { echo "FAIL: $*"; exit 1; }
E4="$WORK/ext4"
loops=
trap 'for d in "$MNT" "$E4" "$MNT.snap"; do if mountpoint -q "$d"; then umount "$d" || umount -l "$d"; fi; done
      for l in $loops; do losetup -d "$l" 2>/dev/null || true; done' EXIT
mount -t overlay overlay -o "lowerdir=$WORK/helpers:/usr/sbin" /usr/sbin || exit 77
[ -x /sbin/mount.fuse.lfs ] || exit 77
: >"$WORK/fstab"
mount --bind "$WORK/fstab" /etc/fstab
flags() { findmnt -n -o VFS-OPTIONS -M "$1"; }
# same WHAT: lfs's flags are ext4's
same() {
	local l e
	l=$(flags "$MNT") e=$(flags "$E4")
	[ "$l" = "$e" ] || fail "$1: lfs $l, ext4 $e"
	echo "ok $1: $l, as ext4"
}
fstab() { # OPTIONS: the fstab lines of both
	cat >"$WORK/fstab" <<EOT
$IMG $MNT fuse.lfs $1,nocleaner,log=$WORK/lfs.log 0 0
$WORK/ext4.img $E4 ext4 $1,loop 0 0
EOT
}
both() { for d in "$MNT" "$E4"; do mount "$@" "$d" || fail "mount $* $d"; done; }
unmount() { umount "$MNT" && umount "$E4" || fail "umount"; }

# 1. root's defaults: a device node and a set-id program work
fstab defaults
both
same "fstab defaults"
for d in "$MNT" "$E4"; do
	rm -f "$d/null" "$d/id"
	mknod "$d/null" c 1 3
	echo x >"$d/null" || fail "the device node on $d does not open"
	cp /usr/bin/id "$d/id"
	chmod 4755 "$d/id"
	[ "$(setpriv --reuid=65534 --regid=65534 --clear-groups "$d/id" -u)" = 0 ] ||
		fail "a set-user-id program on $d does not run as its owner"
done
echo "ok a device node opens and a set-user-id program runs as root on lfs, as on ext4"
# 2. remount,ro and back keeps them
both -o remount,ro
same "fstab defaults, remount,ro"
touch "$MNT/ro" 2>/dev/null && fail "a write after remount,ro"
both -o remount,rw
same "fstab defaults, remount,rw"
touch "$MNT/rw" || fail "a write after remount,rw"
unmount
fstab nosuid,nodev,noexec,noatime
both
same "fstab nosuid,nodev,noexec,noatime"
both -o remount,ro
same "fstab nosuid,nodev,noexec,noatime, remount,ro"
both -o remount,rw
same "fstab nosuid,nodev,noexec,noatime, remount,rw"
unmount
fstab defaults,user
both
same "fstab defaults,user"
unmount
# no fstab line: the mount's own flags are kept
: >"$WORK/fstab"
mount -t fuse.lfs -o nosuid,noexec,nocleaner,log="$WORK/lfs.log" "$IMG" "$MNT"
mount -t ext4 -o loop,nosuid,noexec "$WORK/ext4.img" "$E4"
same "mount -t, nosuid,noexec"
both -o remount,ro
same "mount -t, remount,ro"
both -o remount,rw
same "mount -t, remount,rw"
unmount

# 4. a -o ro mount becomes writable (ext4 on a loop device of its own:
# mount -o loop,ro would make the device read-only)
echo before >"$WORK/before.src"
mount -t fuse.lfs -o nocleaner,log="$WORK/lfs.log" "$IMG" "$MNT"
cp "$WORK/before.src" "$MNT/before"
"$top_builddir/ckpt/lfs-ckpt" -s -n s1 "$MNT" >/dev/null || fail "lfs-ckpt -s"
umount "$MNT"
e4dev=$(losetup -f --show "$WORK/ext4.img")
loops=$e4dev
mount -t fuse.lfs -o ro,log="$WORK/lfs.log" "$IMG" "$MNT"
mount -o ro "$e4dev" "$E4"
same "-o ro"
touch "$MNT/x" 2>/dev/null && fail "a write on a -o ro mount"
both -o remount,rw
same "-o ro, then remount,rw"
echo after >"$MNT/after" || fail "a write after remount,rw of a -o ro mount"
"$top_builddir/cleaner/lfs_cleanerd" --status --json "$MNT" | grep -q '"readonly":false' ||
	fail "remount,rw: the daemon is read-only"
both -o remount,ro
same "-o ro, remount,rw, remount,ro"
both -o remount,rw
echo again >"$MNT/again" || fail "a write after the second remount,rw"
unmount
losetup -d "$e4dev"
loops=
echo "ok a -o ro mount is remounted read-write and written, as ext4's"
# a snapshot has no log to write: refused, and says so
mkdir -p "$MNT.snap"
mount -t fuse.lfs -o ro,snapshot=s1,log="$WORK/lfs.log" "$IMG" "$MNT.snap"
mount -o remount,rw "$MNT.snap" 2>"$WORK/err" && fail "a snapshot was remounted read-write"
grep -q "snapshot s1 of $IMG, which stays read-only" "$WORK/err" || fail "remount,rw of a snapshot: $(cat "$WORK/err")"
[ "$(flags "$MNT.snap")" = "ro,relatime" ] || fail "the snapshot's mount: $(flags "$MNT.snap")"
cmp "$WORK/before.src" "$MNT.snap/before" || fail "the snapshot reads wrong"
umount "$MNT.snap"
echo "ok remount,rw of a snapshot: $(cat "$WORK/err")"
# an image that cannot be opened for writing stays read-only, and says so
rodev=$(losetup -r -f --show "$IMG")
loops=$rodev
mount -t fuse.lfs -o ro,nocleaner,log="$WORK/lfs.log" "$rodev" "$MNT"
mount -o remount,rw "$MNT" 2>"$WORK/err" && fail "a read-only device was remounted read-write"
grep -q "could not be opened for writing" "$WORK/err" || fail "remount,rw of a read-only device: $(cat "$WORK/err")"
[ "$(cat "$MNT/after")" = after ] || fail "the file written after remount,rw is lost"
umount "$MNT"
losetup -d "$rodev"
loops=
echo "ok remount,rw of a read-only device: $(head -1 "$WORK/err")"
EOF
rc=0
IMG="$IMG" MNT="$MNT" WORK="$WORK" top_builddir="$top_builddir" unshare -m --propagation private bash "$WORK/ns.sh" || rc=$?
[ $rc != 77 ] || skip "no overlayfs to show mount(8) the helper"
[ $rc = 0 ] || { cat "$WORK/lfs.log" 2>/dev/null; fail "status $rc"; }
flock -w 60 "$IMG" true || fail "image still locked a minute after unmount"
"$top_builddir/ckpt/fsck.lfs" "$IMG" >/dev/null || fail "fsck after the mounts"
