#!/bin/bash
# fsx.sh — the randomized exerciser against a model directory on the host
# filesystem, with fixed seeds, remounting the filesystem under test
# every few thousand steps (persistence), then with an inode cache of 64
# KiB.  FSX_OPS and FSX_SEEDS scale it up for long runs:
# FSX_OPS=1000000 FSX_SEEDS="1 2 3" make check TESTS=...  fsx_busy.sh
# runs it with the cleaner busy, beside this one.
. "$(dirname "$0")/fsx_lib.sh"

fsx_dirs 3072
mkfs_img 2G
lfs_mount
export LFS_FSX_REMOUNT="$WORK/remount.sh"
cat > "$LFS_FSX_REMOUNT" <<SH
#!/bin/bash
# unmount, wait for the daemon, mount again (run by lfs_fsx)
fusermount3 -u "$MNT" || exit 1
"$LFS" -o nocleaner "$IMG" "$MNT"
SH
chmod +x "$LFS_FSX_REMOUNT"
for seed in ${FSX_SEEDS:-501 502}; do
	fsx_run "seed $seed" -s "$seed" -n "$ops" -R 5000
done
lfs_umount

# Once more with an inode cache of 64 KiB (a few dozen inodes): clean
# inodes and block-map nodes are evicted under every operation, inodes the
# kernel still references among them, and must come back as they were.
rm -f "$IMG"
mkfs_img 512M
: >"$WORK/daemon.log"
lfs_mount cache=64K
cat > "$LFS_FSX_REMOUNT" <<SH
#!/bin/bash
fusermount3 -u "$MNT" || exit 1
"$LFS" -o "nocleaner,cache=64K,log=$WORK/daemon.log" "$IMG" "$MNT"
SH
fsx_run "with a 64 KiB inode cache" -s 79 -n "$ops" -R 5000
lfs_umount
evicted=$(log_sum '.*inode cache: \([0-9]*\) inodes evicted.*')
# the budget was exercised: an eviction in twenty operations at least
# (its soak scales the operations; 1,091 evictions in 6,000 seen)
[ "$evicted" -gt $((ops / 20)) ] || { tail "$WORK/daemon.log"; fail "cache=64K: only $evicted inodes evicted in $ops operations: the budget was not exercised"; }
echo "cache=64K: $evicted inodes evicted across the remounts"
fsck_after "with a small cache"
