#!/bin/bash
# demo.sh — set up everything on a fresh Debian 12 machine (as root), make
# a demo image, mount it with the cleaner running, and say how to use it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
"$top/scripts/build.sh" "$top/build"
IMG=${LFS_DEMO_IMAGE:-/var/tmp/lfs-demo.img}
MNT=${LFS_DEMO_MNT:-/mnt/lfs-demo}
mkdir -p "$MNT"
# not installed: the daemon runs the build tree's cleaner only if told to
export LFS_CLEANERD="$top/build/cleaner/lfs_cleanerd"
if mountpoint -q "$MNT"; then
	echo "demo: $MNT is already mounted"
else
	[ -f "$IMG" ] || "$top/build/lfs/mkfs.lfs" -s 1G -L demo "$IMG"
	"$top/build/lfs/lfs" "$IMG" "$MNT"
fi
cat <<MSG

lfs is mounted: $IMG on $MNT (log-structured, cleaner running).
  use it:       cp -a /usr/include "$MNT"/ && ls "$MNT"
  statistics:   $top/build/cleaner/lfs_cleanerd --status "$MNT"
  unmount:      fusermount3 -u "$MNT"      (or: umount "$MNT")
  remount:      LFS_CLEANERD=$LFS_CLEANERD $top/build/lfs/lfs "$IMG" "$MNT"
  manual:       man -l $top/man/lfs.8
MSG
