#!/bin/bash
# fsx.sh — the randomized exerciser against a model directory on the host
# filesystem, with fixed seeds, remounting the filesystem under test
# every few thousand steps (persistence).  FSX_OPS and FSX_SEEDS scale it
# up for long runs: FSX_OPS=1000000 FSX_SEEDS="1 2 3" make check TESTS=...
. "$(dirname "$0")/lib.sh"

FSX="$top_builddir/tests/fsx/lfs_fsx"
ops=${FSX_OPS:-20000}
# the images and the model on a tmpfs (mem_dir): the fsyncs of both sides
# (one operation in twenty, and every remount) waited for the host's
# disk; the model only if it takes user xattrs (tmpfs since Linux 6.6),
# else lfs_fsx would leave out the xattr operations
mem_dir 3072
IMG="$MEM/img"
MODEL="$MEM/model"
: >"$MEM/probe"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "user.probe", b"x")' "$MEM/probe" 2>/dev/null ||
	MODEL="$WORK/model"
# fsx_run WHAT ARGS...: lfs_fsx with ARGS in a fresh directory against a
# fresh model
fsx_run() {
	local what=$1
	shift
	rm -rf "$MNT/t" "$MODEL"
	mkdir "$MNT/t" "$MODEL"
	"$FSX" "$@" "$MNT/t" "$MODEL" >"$WORK/fsx.out" ||
		{ tail -40 "$WORK/fsx.out"; fail "lfs_fsx $what"; }
	grep "model does not support" "$WORK/fsx.out" || true
	tail -1 "$WORK/fsx.out" | cut -c1-80
}
# fsck_after WHAT: fsck.lfs of the unmounted image finds nothing wrong
fsck_after() {
	"$top_builddir/ckpt/fsck.lfs" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after fsx $1"; }
}
# log_sum RE: the numbers the daemon logged where RE's \(...\) is, summed
log_sum() {
	sed -n "s/$1/\1/p" "$WORK/daemon.log" | awk '{ s += $1 } END { print s + 0 }'
}
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

# Once more on a small filesystem with the cleaner working all the time:
# every operation races with live blocks being moved under it.
rm -f "$IMG"
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

# Once more with an inode cache of 64 KiB (a few dozen inodes): clean
# inodes and block-map nodes are evicted under every operation, inodes the
# kernel still references among them, and must come back as they were.
rm -f "$IMG"
mkfs_img 512M
lfs_mount cache=64K
cat > "$LFS_FSX_REMOUNT" <<SH
#!/bin/bash
fusermount3 -u "$MNT" || exit 1
"$LFS" -o "nocleaner,cache=64K,log=$WORK/daemon.log" "$IMG" "$MNT"
SH
fsx_run "with a 64 KiB inode cache" -s 79 -n "$ops" -R 5000
lfs_umount
evicted=$(log_sum '.*inode cache: \([0-9]*\) inodes evicted.*')
[ "$evicted" -gt 1000 ] || { tail "$WORK/daemon.log"; fail "cache=64K: only $evicted inodes evicted: the budget was not exercised"; }
echo "cache=64K: $evicted inodes evicted across the remounts"
fsck_after "with a small cache"

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
