#!/bin/bash
# bad_input.sh — images that must be refused: not lfs, a newer format, a
# truncated image, a corrupt superblock; each with a clear message, a
# non-zero exit, and not one byte written.  mkfs refuses to overwrite an
# existing lfs without -f.
. "$(dirname "$0")/lib.sh"

expect_refused() { # name, expected message pattern
	local before after rc=0
	before=$(md5sum < "$IMG")
	timeout 20 "$LFS" -f -o nocleaner "$IMG" "$MNT" 2>"$WORK/err" || rc=$?
	after=$(md5sum < "$IMG")
	mountpoint -q "$MNT" && { umount "$MNT"; fail "$1: was mounted"; }
	[ $rc -ne 0 ] || fail "$1: exit status 0"
	[ $rc -ne 124 ] || fail "$1: hung"
	[ $rc -lt 128 ] || fail "$1: crashed (status $rc)"
	grep -qi "$2" "$WORK/err" || { cat "$WORK/err"; fail "$1: message does not say '$2'"; }
	[ "$before" = "$after" ] || fail "$1: the image was modified"
	echo "ok $1: $(head -1 "$WORK/err")"
}

# patch_super OFFSET FORMAT VALUE: rewrite a superblock field, fix its crc
patch_super() {
	"$PY" - "$IMG" "$1" "$2" "$3" <<'PY'
import struct, sys, zlib
path, off, fmt, val = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
with open(path, 'r+b') as f:
    sb = bytearray(f.read(256))
    struct.pack_into('<' + fmt, sb, off, val)
    struct.pack_into('<I', sb, 252, zlib.crc32(bytes(sb[:252])))
    f.seek(0)
    f.write(sb)
PY
}

head -c 64M /dev/urandom > "$IMG"
expect_refused "random bytes" "not an lfs image"

truncate -s 64M "$IMG"; dd if=/dev/zero of="$IMG" bs=1M count=64 status=none
expect_refused "zeros" "not an lfs image"

rm -f "$IMG"; mkfs_img 64M
patch_super 4 I 2
expect_refused "newer format version" "version"

rm -f "$IMG"; mkfs_img 64M
truncate -s 40M "$IMG"
expect_refused "truncated image" "truncated"

rm -f "$IMG"; mkfs_img 64M
# both copies: block 0 and the backup in the last block (superblock.sh
# checks that one bad copy is survived)
printf '\x01' | dd of="$IMG" bs=1 seek=30 conv=notrunc status=none
printf '\x01' | dd of="$IMG" bs=1 seek=$((64 * 1048576 - 4096 + 30)) conv=notrunc status=none
expect_refused "corrupt superblock" "corrupt"

rm -f "$IMG"; mkfs_img 64M
# both checkpoint regions destroyed
dd if=/dev/urandom of="$IMG" bs=4096 seek=1 count=2 conv=notrunc status=none
expect_refused "no valid checkpoint" "checkpoint"

# one checkpoint region torn: the other one is used
rm -f "$IMG"; mkfs_img 64M
lfs_mount
echo kept > "$MNT/file"
lfs_umount
lfs_mount
lfs_umount
dd if=/dev/urandom of="$IMG" bs=4096 seek=1 count=1 conv=notrunc status=none
lfs_mount
[ "$(cat "$MNT/file")" = kept ] || fail "file lost with one checkpoint region torn"
lfs_umount
echo "ok torn checkpoint region falls back to the other"

# mkfs.lfs will not overwrite an lfs without -f
if "$MKFS" -s 64M "$IMG" 2>"$WORK/err"; then fail "mkfs overwrote an lfs without -f"; fi
grep -q "already holds" "$WORK/err" || fail "mkfs message"
"$MKFS" -f -s 64M "$IMG" >/dev/null || fail "mkfs -f"
echo "ok mkfs refuses to overwrite without -f"

# names too long, through the kernel
lfs_mount
long=$(printf 'a%.0s' $(seq 256))
if touch "$MNT/$long" 2>"$WORK/err"; then fail "256-byte name accepted"; fi
grep -q "File name too long" "$WORK/err" || { cat "$WORK/err"; fail "ENAMETOOLONG expected"; }
lfs_umount
echo "ok ENAMETOOLONG"
