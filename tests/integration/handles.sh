#!/bin/bash
# handles.sh — file handles outlive the kernel's inode and a remount, as
# an NFS server needs (lfs(8), EXPORTING): name_to_handle_at on files and
# directories, a remount (the kernel's inodes and the daemon's cache
# gone), then open_by_handle_at reads the same files, a directory's
# handle opens names under it after a rename of the directory (the
# kernel reconnects it by looking up ".."), a deleted file's handle and
# the handle of a file whose inode number went to a new file give ESTALE.
# The same steps run on kernel ext4 on a loop device and every answer
# must be the same.
. "$(dirname "$0")/lib.sh"

command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 (package e2fsprogs) is missing"
H="$top_builddir/tests/integration/handles"
HD="$WORK/h" # handles, and what each file held
mkdir -p "$HD"
head -c 300000 /dev/urandom >"$HD/big"

# answer DIR HANDLE [NAME]: the file the handle opens (a checksum of its
# bytes) or the error
answer() {
	if "$H" cat "$1" "$HD/$2.h" ${3:+"$3"} >"$WORK/answer" 2>"$WORK/error"; then
		md5sum <"$WORK/answer" | cut -d' ' -f1
	else
		sed 's/.*: //' "$WORK/error"
	fi
}

# prepare DIR: the tree, its handles, then the changes handles must survive
prepare() {
	local d=$1
	mkdir -p "$d/top/mid/low" "$d/elsewhere"
	cp "$HD/big" "$d/top/big"
	echo deep >"$d/top/mid/low/deep"
	echo linked >"$d/top/one"
	ln "$d/top/one" "$d/elsewhere/two"
	echo moved >"$d/top/moving"
	echo doomed >"$d/top/gone"
	echo late >"$d/top/late"
	echo old >"$d/top/old"
	"$H" save "$d" "$HD/root.h"
	"$H" save "$d/top/big" "$HD/big.h"
	"$H" save "$d/top/mid/low" "$HD/low.h"
	"$H" save "$d/top/one" "$HD/one.h"
	"$H" save "$d/top/moving" "$HD/moving.h"
	"$H" save "$d/top/gone" "$HD/gone.h"
	"$H" save "$d/top/late" "$HD/late.h"
	"$H" save "$d/top/old" "$HD/old.h"
	mv "$d/top/mid" "$d/elsewhere/mid" # low's parent moves: ".." must follow
	mv "$d/top/moving" "$d/elsewhere/moved"
	rm "$d/top/one" "$d/top/gone"
	# a new file takes old's inode number (both lfs and ext4 hand out the
	# lowest free one); its handle must not open the new file
	local old_ino new_ino i
	old_ino=$(stat -c %i "$d/top/old")
	rm "$d/top/old"
	for i in $(seq 1 20); do
		echo "new $i" >"$d/top/new$i"
		new_ino=$(stat -c %i "$d/top/new$i")
		[ "$new_ino" = "$old_ino" ] && break
	done
	[ "$new_ino" = "$old_ino" ] || fail "no new file in $d took inode $old_ino"
	echo "reused: $(answer "$d" old)"
	sync
}

# check DIR: what every handle opens now
check() {
	local d=$1 n
	echo "root/top/big: $(answer "$d" root top/big)"
	for n in big one moving gone old; do
		echo "$n: $(answer "$d" $n)"
	done
	echo "low/deep: $(answer "$d" low deep)"
	echo "low/..: $(answer "$d" low ../../moved)"
	echo "big ino: $("$H" ino "$d" "$HD/big.h" 2>&1 | sed "s/.*: //") of $(stat -c %i "$d/top/big")"
	rm "$d/top/late" # deleted while its inode is not in the kernel's cache
	echo "late: $(answer "$d" late)"
}

ext4_mount 64M
prepare "$EXT4_MNT" >"$WORK/ext4.out"
umount "$EXT4_MNT"
mount -o loop "$EXT4_IMG" "$EXT4_MNT"
check "$EXT4_MNT" | sed 's/ino: \([0-9]*\) of \1$/ino: same/' >>"$WORK/ext4.out"
umount "$EXT4_MNT"

mkfs_img 128M
lfs_mount
prepare "$MNT" >"$WORK/lfs.out"
lfs_umount
lfs_mount
check "$MNT" | sed 's/ino: \([0-9]*\) of \1$/ino: same/' >>"$WORK/lfs.out"
lfs_umount

cat "$WORK/lfs.out"
diff -u "$WORK/ext4.out" "$WORK/lfs.out" || fail "lfs's handles differ from ext4's (- ext4, + lfs)"
# and by value, so that two filesystems failing alike still fail
big=$(md5sum <"$HD/big")
has() { grep -qxF -- "$1" "$WORK/lfs.out" || fail "expected the line: $1"; }
has "big: ${big%% *}"
has "low/deep: $(echo deep | md5sum | cut -d' ' -f1)"
has "low/..: $(echo moved | md5sum | cut -d' ' -f1)"
has "one: $(echo linked | md5sum | cut -d' ' -f1)"
has "gone: ESTALE"
has "old: ESTALE"
has "reused: ESTALE"
has "late: ESTALE"
has "big ino: same"
echo "handles: $(grep -c . "$WORK/lfs.out") handle answers after a remount the same on lfs as on ext4"
