#!/bin/bash
# chown.sh — set-user-ID and set-group-ID as kernel ext4 leaves them after
# chown(2), write(2) and truncate(2): chown_check runs the same matrix
# (regular files, FIFOs, sockets, block and character devices; modes with
# and without group execute; the owner, root, root without CAP_FSETID;
# uid or gid -1) on ext4 on a loop device and on lfs, with the writeback
# cache and with -o writethrough, and every line must be the same, and
# the modes again after a remount; then a few lines are checked by value,
# so that two filesystems agreeing on keeping every bit would still fail.
. "$(dirname "$0")/lib.sh"

command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 (package e2fsprogs) is missing"
CHECK="$top_builddir/tests/integration/chown_check"
chmod 755 "$WORK" # the owner (uid 1000) makes its calls by path

# run DIR OUT: the matrix in DIR/t, its lines in OUT
run() {
	mkdir -m 755 "$1/t"
	"$CHECK" "$1/t" >"$2" || { cat "$2"; fail "chown_check in $1"; }
}
# modes DIR: what is left in DIR/t, by name
modes() { (cd "$1/t" && stat -c '%n %a %u:%g' -- * | LC_ALL=C sort); }

ext4_mount 64M
run "$EXT4_MNT" "$WORK/ext4.out"
modes "$EXT4_MNT" >"$WORK/ext4.modes"
umount "$EXT4_MNT"

for variant in writeback writethrough; do
	mkfs_img 128M -f
	if [ $variant = writethrough ]; then lfs_mount writethrough; else lfs_mount; fi
	run "$MNT" "$WORK/lfs.out"
	diff -u "$WORK/ext4.out" "$WORK/lfs.out" || fail "lfs ($variant) differs from ext4 (- ext4, + lfs)"
	lfs_umount
	lfs_mount
	modes "$MNT" >"$WORK/lfs.modes"
	diff -u "$WORK/ext4.modes" "$WORK/lfs.modes" || fail "after a remount lfs ($variant) differs from ext4"
	lfs_umount
done

# a few answers by value
has() { grep -qxF -- "$1" "$WORK/lfs.out" || fail "expected the line: $1"; }
has "fifo-6555-owner-chgrp: ok 0555 1000:1001"             # issue 35's case
has "reg-6745-owner-chgrp: ok 2745 1000:1001"              # no group execute: kept
has "sock-6745-owner-chgrp-from-outside: ok 0745 1000:1001" # ... unless outside the group
has "chr-4755-root-none: ok 0755 1000:1000"                # root, -1, -1: still cleared
has "blk-2745-root-gid: ok 2745 1000:2000"
has "blk-6745-root-nofsetid-gid: ok 0745 1000:1000"
has "reg-6755-owner-write: ok 0755 1000:1000"
has "reg-6755-root-write: ok 6755 1000:2000"
has "reg-2745-owner-truncate-outside: ok 0745 1000:2000"
has "reg-6755-stranger-chgrp: EPERM 6755 1000:1000"
echo "chown: $(grep -c . "$WORK/lfs.out") chown, write and truncate results the same on lfs (writeback, writethrough, after remount) as on ext4"
