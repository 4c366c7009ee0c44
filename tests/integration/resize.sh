#!/bin/bash
# resize.sh — lfs-tune and lfs-resize on an unmounted image: lfs-tune
# refuses a mounted one (lfs-resize asks its daemon: resize_shrink.sh);
# lfs-tune changes label and UUID (the checksums keep
# their seed) and lists the tunables; lfs-resize grows 64 MiB to 256 MiB
# with fsck clean, the data intact, the room usable and the backup
# superblock moved to the new last block (block 0 destroyed, it still
# mounts); -n changes nothing; a shrink the data would not fit and a size
# beyond what the checkpoint regions can describe are refused with a
# message; so are a
# symbolic link, an image fsck.lfs rejects and one not cleanly unmounted
# (-n too), each with the image untouched.
. "$(dirname "$0")/lib.sh"

TUNE="$top_builddir/lfs/lfs-tune"
RESIZE="$top_builddir/lfs/lfs-resize"
FSCK="$top_builddir/ckpt/fsck.lfs"
DUMPLFS="$top_builddir/ckpt/dumplfs"
sums() { (cd "$MNT" && find . -type f | sort | xargs md5sum); }
fsck_clean() {
	"$FSCK" "$IMG" >"$WORK/fsck" 2>&1 || { cat "$WORK/fsck"; fail "fsck after $1"; }
	[ "$(wc -l < "$WORK/fsck")" = 1 ] || { cat "$WORK/fsck"; fail "fsck after $1 says more than its summary"; }
}

mkfs_img 64M
lfs_mount
mkdir -p "$MNT/tree/sub"
for i in $(seq 20); do head -c $((i * 7000)) /dev/urandom > "$MNT/tree/sub/f$i"; done
head -c 20M /dev/urandom > "$MNT/big"
sums > "$WORK/sums"
# refused while mounted
for cmd in "$TUNE -L x $IMG"; do
	rc=0; $cmd >/dev/null 2>"$WORK/err" || rc=$?
	[ $rc = 1 ] || fail "$cmd on a mounted image: status $rc"
	grep -q "mounted" "$WORK/err" || { cat "$WORK/err"; fail "$cmd: message"; }
done
lfs_umount
echo "ok lfs-tune refuses a mounted image"

# lfs-tune
"$TUNE" "$IMG" >"$WORK/list" || fail "lfs-tune (list)"
for k in label uuid "checksum seed" "block size" "segment size" segments inodes "backup superblock"; do
	grep -q "^  $k " "$WORK/list" || { cat "$WORK/list"; fail "lfs-tune does not list $k"; }
done
seed=$(sed -n 's/^  checksum seed *\(0x[0-9a-f]*\).*/\1/p' "$WORK/list")
u=01234567-89ab-cdef-0123-456789abcdef
"$TUNE" -L archive -U "$u" "$IMG" >/dev/null || fail "lfs-tune -L -U"
"$DUMPLFS" "$IMG" >"$WORK/dump"
grep -q "label  *archive" "$WORK/dump" && grep -q "uuid  *$u" "$WORK/dump" || fail "label/uuid not in the superblock"
"$TUNE" -U random "$IMG" >/dev/null || fail "lfs-tune -U random"
"$TUNE" -l "$IMG" >"$WORK/list"
grep -q "^  checksum seed  *$seed (kept" "$WORK/list" || { cat "$WORK/list"; fail "the checksum seed changed"; }
! grep -q "$u" "$WORK/list" || fail "-U random kept the old uuid"
"$FSCK" -v "$IMG" | matches "backup superblock at block .* is intact" || fail "backup superblock not rewritten"
fsck_clean "lfs-tune"
rc=0; "$TUNE" -U nonsense "$IMG" 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "lfs-tune -U nonsense: status $rc"
echo "ok lfs-tune: label, uuid (twice; seed $seed kept), list, fsck clean"

# lfs-resize
before=$(md5sum < "$IMG")
"$RESIZE" -n "$IMG" 256M | matches "would grow" || fail "lfs-resize -n"
[ "$before" = "$(md5sum < "$IMG")" ] || fail "lfs-resize -n changed the image"
rc=0; "$RESIZE" "$IMG" 32M 2>"$WORK/err" || rc=$?
[ $rc = 1 ] && grep -q "the data would not fit" "$WORK/err" || { cat "$WORK/err"; fail "shrinking: status $rc"; }
"$RESIZE" "$IMG" >"$WORK/out" || fail "lfs-resize to the size it has: status $?"
matches "nothing to do" <"$WORK/out" || fail "lfs-resize to the size it has said: $(cat "$WORK/out")"
"$RESIZE" "$IMG" 64M >/dev/null || fail "lfs-resize 64M of a 64M filesystem: status $?"
rc=0; "$RESIZE" "$IMG" 1T 2>"$WORK/err" || rc=$?
[ $rc = 1 ] && grep -q "the largest size it grows to is" "$WORK/err" || { cat "$WORK/err"; fail "1T: status $rc"; }
[ "$(stat -c %s "$IMG")" = $((64 << 20)) ] || fail "a refused resize changed the image size"
"$RESIZE" "$IMG" 256M >"$WORK/out" || fail "lfs-resize 256M"
cat "$WORK/out"
[ "$(stat -c %s "$IMG")" = $((256 << 20)) ] || fail "the image was not extended"
fsck_clean "lfs-resize"
"$FSCK" -v "$IMG" | matches "backup superblock at block 65535 is intact" || fail "no backup superblock in the new last block"
lfs_mount
sums | diff - "$WORK/sums" || fail "data changed by lfs-resize"
avail=$(stat -f -c '%a * %S' "$MNT")
[ $((avail)) -gt $((150 << 20)) ] || fail "only $((avail)) bytes free after growing to 256M"
head -c 120M /dev/zero > "$MNT/more" || fail "writing 120 MiB into the grown filesystem"
lfs_umount
fsck_clean "writing into the grown room"
# block 0 gone: the backup at the new end describes the grown filesystem
dd if=/dev/zero of="$IMG" bs=4096 count=1 conv=notrunc status=none
lfs_mount
sums | grep -v ' ./more$' | diff - "$WORK/sums" || fail "data after losing block 0"
[ "$(stat -c %s "$MNT/more")" = $((120 << 20)) ] || fail "the file in the grown room after losing block 0"
lfs_umount
echo "ok lfs-resize 64M -> 256M: fsck clean, data intact, 120 MiB more written, backup superblock moved"

# What it is handed is checked before anything is written: a symbolic
# link is refused (the image itself must be named, so none can be
# swapped in), so is an image fsck.lfs rejects, and one that was not
# cleanly unmounted (recovering it is a mount's work, not lfs-resize's);
# each leaves the image as it was.  Unmounted once, it grows.
unchanged() { # what
	[ "$before" = "$(md5sum < "$IMG")" ] || fail "$1: the image was written"
	[ "$(stat -c %s "$IMG")" = $((64 << 20)) ] || fail "$1: the image size changed"
}
refused() { # what, message, lfs-resize's arguments...
	local what=$1 msg=$2 rc=0
	shift 2
	"$RESIZE" "$@" >/dev/null 2>"$WORK/err" || rc=$?
	[ $rc = 1 ] && grep -q "$msg" "$WORK/err" || { cat "$WORK/err"; fail "$what: status $rc"; }
	unchanged "$what"
	echo "ok lfs-resize refuses $what: $(cat "$WORK/err")"
}
rm -f "$IMG"
mkfs_img 64M
lfs_mount
head -c 300K /dev/urandom > "$MNT/early"
lfs_umount
ln -s "$IMG" "$WORK/link"
before=$(md5sum < "$IMG")
refused "a symbolic link" "a symbolic link: name the image file or device itself" "$WORK/link" 128M

backup=$("$FSCK" -v "$IMG" | sed -n 's/.*backup superblock at block \([0-9]*\) is intact.*/\1/p')
[ -n "$backup" ] || fail "no backup superblock found"
cp "$IMG" "$WORK/good.img"
head -c 4096 /dev/urandom | dd of="$IMG" bs=4096 seek="$backup" conv=notrunc status=none
rc=0; "$FSCK" "$IMG" >/dev/null 2>&1 || rc=$?
[ $rc = 4 ] || fail "fsck.lfs: status $rc on an image with its backup superblock overwritten"
before=$(md5sum < "$IMG")
refused "an image fsck.lfs rejects" "fsck.lfs finds problems; nothing was changed" "$IMG" 128M

mv "$WORK/good.img" "$IMG"
lfs_mount
head -c 1M /dev/urandom > "$MNT/late"
sync "$MNT/late"
cp "$MNT/late" "$WORK/late"
kill -KILL "$LFS_PID"
wait "$LFS_PID" 2>/dev/null || true
LFS_PID=
umount "$MNT" 2>/dev/null || umount -l "$MNT"
flock -w 60 "$IMG" true || fail "image still locked a minute after the daemon was killed"
before=$(md5sum < "$IMG")
why="was not cleanly unmounted; nothing was changed: mount it with lfs and unmount it first"
refused "an image not cleanly unmounted" "$why" "$IMG" 128M
refused "an image not cleanly unmounted (-n)" "$why" -n "$IMG" 128M
lfs_mount
lfs_umount
"$RESIZE" "$IMG" 128M >/dev/null || fail "lfs-resize after a mount and unmount"
fsck_clean "lfs-resize after recovery"
lfs_mount
cmp "$MNT/late" "$WORK/late" || fail "the file written before the crash"
lfs_umount
echo "ok lfs-resize grows that image once mounted and unmounted"
