#!/bin/bash
# superblock.sh — a bad block 0 is survived: the mount, fsck.lfs, dumplfs
# and lfs-ckpt fall back to the backup superblock in the last block and
# say so; fsck.lfs -n only reports, -y/-p rewrite the damaged copy, -b
# names a copy; an image without a backup (made before there was one)
# still mounts.  mkfs.lfs refuses to overwrite another filesystem (ext4,
# swap: libblkid's probe) or an lfs without -f.
. "$(dirname "$0")/lib.sh"
FSCK="$top_builddir/ckpt/fsck.lfs"
DUMP="$top_builddir/ckpt/dumplfs"
CKPT="$top_builddir/ckpt/lfs-ckpt"
BACKUP=$((64 * 256 - 1))        # the last 4 KiB block of a 64 MiB image

fsck_rc() { # expected status, fsck.lfs options...
	local want=$1 rc=0; shift
	"$FSCK" "$@" "$IMG" >"$WORK/fsck" 2>&1 || rc=$?
	[ $rc = "$want" ] || { cat "$WORK/fsck"; fail "fsck.lfs $*: status $rc, expected $want"; }
}

mkfs_img 64M
"$DUMP" -j "$IMG" | "$PY" -c "import json,sys; d=json.load(sys.stdin)['superblock']; \
assert d['backup_sb'] == $BACKUP and d['feature_compat'] & 1, d" || fail "dumplfs: backup_sb"
lfs_mount
seq 100000 > "$MNT/kept"
lfs_umount
fsck_rc 0 -v
grep -q "backup superblock at block $BACKUP is intact" "$WORK/fsck" || fail "fsck -v: backup not named"

# block 0 destroyed
dd if=/dev/urandom of="$IMG" bs=4096 count=1 conv=notrunc status=none
: > "$WORK/daemon.log"
lfs_mount
grep -q "using the backup superblock at block $BACKUP" "$WORK/daemon.log" ||
	{ cat "$WORK/daemon.log"; fail "mount did not say it used the backup"; }
seq 100000 | cmp - "$MNT/kept" || fail "file lost with block 0 destroyed"
echo more > "$MNT/new"
lfs_umount
echo "ok mount falls back to the backup superblock"

"$DUMP" "$IMG" >/dev/null 2>"$WORK/err" && fail "dumplfs: exit 0 with a damaged block 0"
grep -q "read the backup superblock at block $BACKUP" "$WORK/err" || { cat "$WORK/err"; fail "dumplfs message"; }
"$CKPT" -l "$IMG" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; fail "lfs-ckpt -l with a damaged block 0"; }
grep -q "backup superblock" "$WORK/err" || fail "lfs-ckpt did not say it read the backup"
echo "ok dumplfs and lfs-ckpt read the backup"

before=$(md5sum < "$IMG")
fsck_rc 4 -n
grep -q "superblock at block 0 is damaged" "$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck -n: no problem reported"; }
grep -q "lfs: block 0 .*using the backup superblock" "$WORK/fsck" || fail "fsck did not say it used the backup"
[ "$before" = "$(md5sum < "$IMG")" ] || fail "fsck -n wrote to the image"
fsck_rc 4 -b $BACKUP -n -v
grep -q "lfs: using the superblock at block $BACKUP" "$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck -b: not said"; }
grep -q "superblock at block 0 is damaged" "$WORK/fsck" || fail "fsck -b: block 0 not checked"
fsck_rc 8 -b 5
grep -q "no lfs superblock at block 5" "$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck -b 5 message"; }
fsck_rc 16 -n -y
echo "ok fsck -n reports, -b names the backup"

# -y refuses to write under a mounted filesystem, then repairs
lfs_mount
fsck_rc 8 -y
grep -q "already mounted at $MNT" "$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck -y under a mount"; }
lfs_umount
fsck_rc 1 -y
grep -q "rewrote the superblock copy at block 0" "$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck -y"; }
fsck_rc 0
: > "$WORK/daemon.log"
lfs_mount
grep -q "backup" "$WORK/daemon.log" && fail "mount still uses the backup after fsck -y"
[ "$(cat "$MNT/new")" = more ] || fail "file lost after the repair"
lfs_umount
echo "ok fsck -y rewrites block 0 from the backup"

# the backup destroyed: nothing changes for the mount, fsck -p repairs it
dd if=/dev/zero of="$IMG" bs=4096 seek=$BACKUP count=1 conv=notrunc status=none
: > "$WORK/daemon.log"
lfs_mount
lfs_umount
fsck_rc 4
grep -q "backup superblock at block $BACKUP is damaged" "$WORK/fsck" || { cat "$WORK/fsck"; fail "bad backup not reported"; }
fsck_rc 1 -p
fsck_rc 0
echo "ok a damaged backup is reported and rewritten by fsck -p"

# both copies gone: refused
dd if=/dev/urandom of="$IMG" bs=4096 count=1 conv=notrunc status=none
dd if=/dev/urandom of="$IMG" bs=4096 seek=$BACKUP count=1 conv=notrunc status=none
fsck_rc 8
grep -q "no backup superblock" "$WORK/fsck" || { cat "$WORK/fsck"; fail "both copies bad: message"; }

# an image from before the backup: feature bit and field cleared
rm -f "$IMG"; mkfs_img 64M
"$PY" - "$IMG" <<'PY'
import struct, sys, zlib
with open(sys.argv[1], 'r+b') as f:
    sb = bytearray(f.read(256))
    struct.pack_into('<I', sb, 8, 0)
    struct.pack_into('<Q', sb, 168, 0)
    struct.pack_into('<I', sb, 252, zlib.crc32(bytes(sb[:252])))
    f.seek(0); f.write(sb)
    f.seek(64 * 1048576 - 4096); f.write(bytes(4096))
PY
lfs_mount
echo old > "$MNT/old"
lfs_umount
fsck_rc 0 -v
grep -q "has no backup superblock" "$WORK/fsck" || { cat "$WORK/fsck"; fail "old image: fsck -v"; }
echo "ok an image without a backup mounts and checks"

# mkfs.lfs will not overwrite another filesystem, a partition table, or an
# lfs whose block 0 is gone
mkfs_refused() { # what, message
	local before rc=0
	before=$(md5sum < "$IMG")
	"$MKFS" "$IMG" >/dev/null 2>"$WORK/err" || rc=$?
	[ $rc != 0 ] || fail "mkfs.lfs overwrote $1 without -f"
	grep -q "$2" "$WORK/err" || { cat "$WORK/err"; fail "mkfs.lfs on $1: message"; }
	[ "$before" = "$(md5sum < "$IMG")" ] || fail "mkfs.lfs modified $1"
	"$MKFS" -f "$IMG" >/dev/null || fail "mkfs.lfs -f over $1"
	echo "ok mkfs.lfs refuses $1: $(cat "$WORK/err")"
}
rm -f "$IMG"; truncate -s 64M "$IMG"
mkfs.ext4 -q -F -L precious "$IMG" || fail "mkfs.ext4"
mkfs_refused ext4 "already holds a filesystem of type ext4 labelled 'precious'"
rm -f "$IMG"; truncate -s 64M "$IMG"
mkswap -q "$IMG" >/dev/null || fail "mkswap"
mkfs_refused "swap space" "already holds a filesystem of type swap"
dd if=/dev/zero of="$IMG" bs=4096 count=1 conv=notrunc status=none
mkfs_refused "an lfs with block 0 zeroed" "already holds an lfs filesystem"
# a fresh file of zeros is taken without -f
rm -f "$IMG"; truncate -s 64M "$IMG"
"$MKFS" "$IMG" >/dev/null || fail "mkfs.lfs on a file of zeros"
echo "ok mkfs.lfs takes a file of zeros"
