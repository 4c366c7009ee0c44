#!/bin/bash
# umount_free.sh — when umount returns, the image is free (issue 40,
# point 1): in each cycle a mount, a write, an unmount, and at once
# lfs-tune, mkfs.lfs -n -f and fsck.lfs on the image, none refused and none
# waiting for the daemon to exit.  UMOUNT_CYCLES cycles (default 20).
. "$(dirname "$0")/lib.sh"

TUNE="$top_builddir/lfs/lfs-tune"
FSCK="$top_builddir/ckpt/fsck.lfs"
cycles=${UMOUNT_CYCLES:-20}
mkfs_img 64M
daemons=()
trap 'rc=$?; set +e; mountpoint -q "$MNT" && umount "$MNT"; for p in "${daemons[@]}"; do wait "$p"; done; LFS_PID=; (exit $rc); cleanup' EXIT INT TERM
for i in $(seq 1 "$cycles"); do
	lfs_mount
	head -c $((i * 4096)) /dev/urandom > "$MNT/f$i"
	daemons+=("$LFS_PID")
	umount "$MNT" || fail "cycle $i: umount"
	# the daemon may still be exiting: it must not hold the image
	LFS_PID=
	"$TUNE" -L "c$i" "$IMG" >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "cycle $i: lfs-tune right after umount"; }
	"$MKFS" -n -f "$IMG" >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "cycle $i: mkfs.lfs -n right after umount"; }
	"$FSCK" "$IMG" >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "cycle $i: fsck.lfs right after umount"; }
	! grep -q -i "waiting\|in use\|held by" "$WORK/out" || { cat "$WORK/out"; fail "cycle $i: fsck.lfs waited"; }
done
for p in "${daemons[@]}"; do wait "$p" || fail "a daemon exited with status $?"; done
daemons=()
lfs_mount
for i in $(seq 1 "$cycles"); do
	[ "$(stat -c %s "$MNT/f$i")" = $((i * 4096)) ] || fail "f$i lost"
done
lfs_umount
echo "ok: $cycles cycles, the image free for lfs-tune, mkfs.lfs -n -f and fsck.lfs as umount returned"
