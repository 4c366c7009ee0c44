#!/bin/bash
# fsx_busy.sh — the randomized exerciser (fsx_lib.sh) with the cleaner
# busy all the time on a small filesystem, then on files past the first
# tree of their block map with a 64 KiB inode cache as well.  FSX_OPS
# scales it up for long runs.
. "$(dirname "$0")/fsx_lib.sh"

fsx_dirs 512

# On a small filesystem with the cleaner working all the time:
# every operation races with live blocks being moved under it.
mkfs_img 40M
cat > "$WORK/busy.conf" <<CONF
min_clean_segments 60
max_clean_segments 80
protection_period 0
cleaning_interval 0.1
segments_per_clean 8
CONF
lfs_mount_cleaner "$WORK/busy.conf"
fsx_run "with the cleaner busy" -s 78 -n "$ops" -L 1048576
"$top_builddir/cleaner/lfs_cleanerd" --status "$MNT" | grep cleaner
lfs_umount
fsck_after "with the cleaner"

# Files past the first tree of their block map (over 2 MiB), with the
# cleaner busy and the same small cache: fsyncs of overwrites write
# relink records (lfs(5)), whose leaves the cleaner moves and the cache
# must keep while the nodes above them wait.
rm -f "$IMG"
mkfs_img 96M
: >"$WORK/daemon.log"
lfs_start "cleaner_conf=$WORK/busy.conf,cache=64K"
fsx_run "with large files, the cleaner busy" -s 80 -n "$ops" -L 6291456
lfs_umount
relinks=$(log_sum '.*fsync: \([0-9]*\) relink records.*')
[ "$relinks" -gt 0 ] || { tail "$WORK/daemon.log"; fail "large files: no relink record was written"; }
echo "large files: $relinks relink records"
fsck_after "with large files"
