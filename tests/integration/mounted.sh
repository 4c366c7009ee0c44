#!/bin/bash
# mounted.sh — a device or image that is mounted, as anything and by any
# name, is never written by mkfs.lfs (even with -f) or lfs-tune: an ext4
# on a loop device, refused through the device and through the image
# behind it, naming the mount point, and left intact (fsck.ext4 clean, a
# file written before reads back); an lfs image mounted fuseblk, refused
# through the loop device its mount attached, and a second mount of it
# through that loop device or another is refused; each works once
# unmounted.
. "$(dirname "$0")/lib.sh"

command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 (package e2fsprogs) is missing"
TUNE="$top_builddir/lfs/lfs-tune"
EXT_IMG="$WORK/ext.img"
EXT_MNT="$WORK/ext"
EXT_LOOP=

undo() {
	local rc=$?
	if mountpoint -q "$EXT_MNT" 2>/dev/null; then umount "$EXT_MNT" || umount -l "$EXT_MNT"; fi
	if [ -n "$EXT_LOOP" ]; then losetup -d "$EXT_LOOP" || true; fi
	(exit $rc)
	cleanup
}
trap undo EXIT INT TERM

# refused WHERE CMD...: CMD must fail with status 1 and a message naming
# the mount point WHERE
refused() {
	local where=$1 rc=0
	shift
	"$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ $rc = 1 ] || { cat "$WORK/out" "$WORK/err"; fail "$*: exit status $rc, not 1"; }
	grep -qF "mounted at $where" "$WORK/err" || { cat "$WORK/err"; fail "$*: the message does not name $where"; }
	echo "ok refused: $* -> $(head -1 "$WORK/err")"
}

truncate -s 64M "$EXT_IMG"
mkfs.ext4 -q -F "$EXT_IMG"
EXT_LOOP=$(losetup -f --show "$EXT_IMG") || skip "no loop device"
mkdir "$EXT_MNT"
mount -t ext4 "$EXT_LOOP" "$EXT_MNT"
echo "written before" >"$EXT_MNT/file"
sync -f "$EXT_MNT/file"

refused "$EXT_MNT" "$MKFS" -f "$EXT_LOOP"
refused "$EXT_MNT" "$MKFS" -f -n "$EXT_LOOP"
refused "$EXT_MNT" "$MKFS" -f "$EXT_IMG"
grep -q "(ext4)" "$WORK/err" || fail "the message does not say the mount is ext4"
[ "$(cat "$EXT_MNT/file")" = "written before" ] || fail "the ext4's file changed under its mount"
umount "$EXT_MNT"
fsck.ext4 -fn "$EXT_LOOP" >"$WORK/fsck" 2>&1 || { cat "$WORK/fsck"; fail "the ext4 is damaged"; }
# read from the device, not from the page cache of the mount
[ "$(debugfs -R "cat /file" "$EXT_LOOP" 2>/dev/null)" = "written before" ] || fail "the ext4's file changed"
echo "ok the ext4 is intact: its file reads back, fsck.ext4 -fn is clean"
# unmounted (the loop device still attached, but nothing holds it): made
"$MKFS" -q -f "$EXT_LOOP" || fail "mkfs.lfs -f on the unmounted loop device"
losetup -d "$EXT_LOOP"
EXT_LOOP=
echo "ok mkfs.lfs -f once the ext4 is unmounted"

# an lfs mounted fuseblk over a loop device it attached: the device is
# another name for the image, which the image lock does not cover
mkfs_img 64M
lfs_mount
echo "lfs data" >"$MNT/file"
src=$(findmnt -n -o SOURCE --mountpoint "$MNT")
mkdir -p "$WORK/mnt2"
case "$src" in
/dev/loop*)
	refused "$MNT" "$MKFS" -f "$src"
	refused "$MNT" "$TUNE" -L other "$src"
	# a second daemon on the loop device lfs attached, or on another
	# loop device of the same image: refused at once, nothing mounted
	refused "$MNT" "$LFS" -f -o nocleaner "$src" "$WORK/mnt2"
	EXT_LOOP=$(losetup -f --show "$IMG") || fail "losetup of the mounted image"
	refused "$MNT" "$LFS" -f -o nocleaner "$EXT_LOOP" "$WORK/mnt2"
	refused "$MNT" "$TUNE" -L other "$EXT_LOOP"
	losetup -d "$EXT_LOOP"
	EXT_LOOP=
	mountpoint -q "$WORK/mnt2" && fail "a second mount of the image appeared"
	;;
*) echo "note: the lfs mount's source is $src, not a loop device: no device to try" ;;
esac
[ "$(cat "$MNT/file")" = "lfs data" ] || fail "the mounted lfs lost its file"
lfs_umount
"$TUNE" -L other "$IMG" >/dev/null || fail "lfs-tune -L on the unmounted image"
"$MKFS" -q -f "$IMG" || fail "mkfs.lfs -f on the unmounted lfs image"
echo "ok lfs-tune and mkfs.lfs -f once the lfs is unmounted"
