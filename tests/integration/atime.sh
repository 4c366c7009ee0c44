#!/bin/bash
# atime.sh — reads move atime as kernel ext4 moves it, with relatime (the
# default), strictatime, noatime and lazytime: atime_check runs the same
# steps on ext4 on a loop device and on lfs, each mounted with the
# option, and every line must be the same; then the relatime lines are
# checked by value, so that two filesystems agreeing on never moving
# atime would still fail.  A read and a write within one tick of the
# kernel's coarse clock is where lfs's finer atime clock once made
# relatime keep atime after a write (atime newer than the new mtime).
. "$(dirname "$0")/lib.sh"

command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 (package e2fsprogs) is missing"
CHECK="$top_builddir/tests/integration/atime_check"

ext4_mount 64M
umount "$EXT4_MNT"
mkfs_img 64M
for opt in relatime strictatime noatime lazytime; do
	mount -o loop,"$opt" "$EXT4_IMG" "$EXT4_MNT"
	rm -f "$EXT4_MNT/f"
	"$CHECK" "$EXT4_MNT" >"$WORK/ext4.$opt" || fail "atime_check on ext4 -o $opt"
	umount "$EXT4_MNT"
	lfs_mount "$opt"
	"$CHECK" "$MNT" >"$WORK/lfs.$opt" || fail "atime_check on lfs -o $opt"
	rm -f "$MNT/f"
	lfs_umount
	diff -u "$WORK/ext4.$opt" "$WORK/lfs.$opt" || fail "-o $opt: lfs differs from ext4 (- ext4, + lfs)"
	echo "ok -o $opt: $(grep -c moved "$WORK/lfs.$opt") of $(wc -l <"$WORK/lfs.$opt") reads moved atime, as on ext4"
done
# relatime by value: moved when atime was not newer than mtime and ctime
printf '%s\n' "read after create: moved" "read again: kept" "read after read and write in one tick: moved" \
	"read again: kept" "read after utimes (atime newer than mtime, ctime now): moved" "read again: kept" \
	"read after utimes (atime older than mtime): moved" >"$WORK/relatime.want"
diff -u "$WORK/relatime.want" "$WORK/lfs.relatime" || fail "-o relatime: not the rule (- expected, + lfs)"
grep -q kept "$WORK/lfs.strictatime" && fail "-o strictatime: a read kept atime"
grep -q moved "$WORK/lfs.noatime" && fail "-o noatime: a read moved atime"
echo "ok: relatime, strictatime, noatime and lazytime as ext4"
