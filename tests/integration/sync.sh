#!/bin/bash
# sync.sh — sync(1), syncfs(2) and umount tell the truth (as root, lfs
# mounts fuseblk over a loop device, so the kernel passes them on): data
# written before sync survives kill -9 of the daemon; when umount returns
# the image is complete, fsck.lfs finds it so at once; mounting an image
# that is mounted fails at once and names the mount point.
. "$(dirname "$0")/lib.sh"

FSCK="$top_builddir/ckpt/fsck.lfs"
mkfs_img 256M
lfs_mount
fstype=$(findmnt -n -o FSTYPE "$MNT")
[ "$fstype" = fuseblk.lfs ] || fail "mounted as $fstype, not fuseblk.lfs"

# a second mount of the same image: refused at once, naming the mount
mkdir "$WORK/mnt2"
start=$(date +%s)
if "$LFS" -f -o nocleaner "$IMG" "$WORK/mnt2" 2>"$WORK/second.log"; then
	fusermount3 -u "$WORK/mnt2" || true
	fail "a second mount of a mounted image succeeded"
fi
[ $(($(date +%s) - start)) -lt 5 ] || fail "the second mount took $(($(date +%s) - start)) s to fail"
grep -q "already mounted at $MNT" "$WORK/second.log" || { cat "$WORK/second.log"; fail "the refusal does not name $MNT"; }
# tools on a mounted image say so
if "$FSCK" "$IMG" >"$WORK/fsck-held.out" 2>&1; then
	cat "$WORK/fsck-held.out"; fail "fsck.lfs checked an image a daemon holds"
fi
grep -q "mounted at $MNT" "$WORK/fsck-held.out" || { cat "$WORK/fsck-held.out"; fail "fsck.lfs does not name $MNT"; }

crash_after() { # how to sync: sync(1) or syncfs(2) through sync -f
	head -c 10M /dev/urandom > "$WORK/data"
	cp "$WORK/data" "$MNT/$1"
	case $1 in
	sync) sync ;;
	syncfs) sync -f "$MNT/$1" ;;
	esac
	kill -9 "$LFS_PID"
	wait "$LFS_PID" 2>/dev/null || true
	LFS_PID=
	umount -l "$MNT" 2>/dev/null || fusermount3 -u "$MNT" 2>/dev/null || true
	lfs_mount
	cmp "$WORK/data" "$MNT/$1" || fail "data written before $1 lost to kill -9"
	echo "$1: 10 MiB written before it survived kill -9 of the daemon"
}
crash_after sync
crash_after syncfs

# sync on an idle filesystem writes nothing: any user of the machine may
# run sync(1) at any time (a parallel test's sync once made full.sh see
# an idle, full filesystem write 3 checkpoints in 10 s)
written_ckpts() {
	"$top_builddir/cleaner/lfs_cleanerd" --status --json "$MNT" |
		"$PY" -c 'import json,sys; s=json.load(sys.stdin); print(s["bytes_written"], s["checkpoints"])'
}
echo changed > "$MNT/idle"
sync
read -r w0 c0 < <(written_ckpts)
for _ in 1 2 3; do sync; sync -f "$MNT"; done
read -r w1 c1 < <(written_ckpts)
[ "$w1" = "$w0" ] && [ "$c1" = "$c0" ] ||
	fail "6 syncs of an idle filesystem wrote $((w1 - w0)) bytes, $((c1 - c0)) checkpoints"
echo again >> "$MNT/idle"
sync
read -r w2 c2 < <(written_ckpts)
[ "$c2" -gt "$c1" ] || fail "sync after a change wrote no checkpoint"
echo "idle: 6 syncs wrote nothing; a sync after a change wrote $((c2 - c1)) checkpoint(s), $((w2 - w1)) bytes"

# umount, then the image at once: complete
head -c 64M /dev/urandom > "$WORK/big"
cp "$WORK/big" "$MNT/big"
mkdir -p "$MNT/tree"
for i in $(seq 1 200); do echo "$i" > "$MNT/tree/f$i"; done
umount "$MNT"
"$FSCK" "$IMG" > "$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs right after umount"; }
live=$(sed -n 's/.* \([0-9.]*\) MiB live.*/\1/p' "$WORK/fsck.out")
"$PY" -c "import sys; sys.exit(0 if float('$live') >= 64 else 1)" ||
	{ cat "$WORK/fsck.out"; fail "right after umount the image holds $live MiB, not the 64 MiB written"; }
wait "$LFS_PID" || fail "the daemon exited with an error"
LFS_PID=
lfs_mount
cmp "$WORK/big" "$MNT/big" || fail "64 MiB file after umount and remount"
[ "$(cat "$MNT/tree/f200")" = 200 ] || fail "small files after umount and remount"
lfs_umount
echo "umount: the image was complete when umount returned ($live MiB live, fsck clean)"
echo "sync.sh: all passed"
