#!/bin/bash
# overlay.sh — lfs as the writable upper layer of overlayfs, as a
# container runtime uses it: the mount needs RENAME_WHITEOUT of its
# upper filesystem; deleting a lower file or directory leaves a whiteout
# (a character device 0/0) in lfs, renaming a lower file copies it up
# and hides the old name; new files land in lfs; the merged view is the
# same after the overlay and lfs itself are mounted again, and fsck.lfs
# finds the image clean.
. "$(dirname "$0")/lib.sh"

FSCK="$top_builddir/ckpt/fsck.lfs"
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || true
grep -qw overlay /proc/filesystems || skip "no overlayfs in this kernel"
OVL="$WORK/ovl"
LOWER="$WORK/lower"
mkdir -p "$OVL" "$LOWER/dir/sub"
echo a >"$LOWER/a"
echo b >"$LOWER/b"
echo k >"$LOWER/keep"
echo y >"$LOWER/dir/sub/y"
ovl_mount() {
	mount -t overlay overlay -o "lowerdir=$LOWER,upperdir=$MNT/upper,workdir=$MNT/work" "$OVL" ||
		{ dmesg | tail -3; fail "overlay mount with an lfs upper layer"; }
}
ovl_umount() { umount "$OVL"; }
cleanup_ovl() {
	local rc=$?
	if mountpoint -q "$OVL"; then umount "$OVL" || umount -l "$OVL"; fi
	(exit $rc)
	cleanup
}
trap cleanup_ovl EXIT INT TERM
mkfs_img 128M
lfs_mount
mkdir "$MNT/upper" "$MNT/work"
ovl_mount
rm "$OVL/a"
mv "$OVL/b" "$OVL/b2"
rm -r "$OVL/dir"
echo new >"$OVL/c"
echo more >>"$OVL/keep"
mkdir "$OVL/dir" # over a whiteout: an opaque directory
touch "$OVL/dir/z"
check_view() {
	local got
	got=$(cd "$OVL" && find . | sort | tr '\n' ' ')
	[ "$got" = ". ./b2 ./c ./dir ./dir/z ./keep " ] || fail "merged view ($1): $got"
	[ "$(cat "$OVL/b2")" = b ] || fail "b2 ($1)"
	[ "$(cat "$OVL/keep")" = "k
more" ] || fail "keep ($1)"
	[ "$(cat "$LOWER/keep")" = k ] || fail "the lower layer was changed"
}
check_view "mounted"
# the whiteout for a, in lfs
st=$(stat -c '%F %t:%T %a' "$MNT/upper/a")
[ "$st" = "character special file 0:0 0" ] || fail "the whiteout of a is '$st'"
[ -c "$MNT/upper/b" ] || fail "no whiteout for the renamed b"
ovl_umount
ovl_mount
check_view "overlay mounted again"
ovl_umount
lfs_umount
"$FSCK" -n "$IMG" >"$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs after overlay use"; }
lfs_mount
ovl_mount
check_view "lfs mounted again"
ovl_umount
lfs_umount
echo "ok overlayfs with an lfs upper layer"
