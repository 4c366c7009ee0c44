#!/bin/bash
# fsx.sh — the randomized exerciser against a model directory on the host
# filesystem, with fixed seeds, remounting the filesystem under test
# every few thousand steps (persistence).  FSX_OPS and FSX_SEEDS scale it
# up for long runs: FSX_OPS=1000000 FSX_SEEDS="1 2 3" make check TESTS=...
. "$(dirname "$0")/lib.sh"

FSX="$top_builddir/tests/fsx/lfs_fsx"
ops=${FSX_OPS:-20000}
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
	rm -rf "$MNT/t" "$WORK/model"
	mkdir "$MNT/t" "$WORK/model"
	"$FSX" -s "$seed" -n "$ops" -R 5000 "$MNT/t" "$WORK/model" | tail -3 || fail "lfs_fsx seed $seed"
done
lfs_umount
