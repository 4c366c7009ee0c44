#!/bin/bash
# coherence.sh — read-after-write with every kind of I/O mixed on one
# file (coherence.c: buffered, direct, libaio and io_uring batches in
# flight, a shared mapping, truncates; readers racing in other
# processes), checked against a model: on kernel ext4 on a loop device
# (the reference: it must pass there), then on lfs with the writeback
# cache and with -o writethrough.  COHERENCE_SEEDS and COHERENCE_STEPS
# make a longer run.
. "$(dirname "$0")/lib.sh"
COHERENCE="$top_builddir/tests/integration/coherence"
[ -x "$COHERENCE" ] || fail "$COHERENCE is missing (make check builds it)"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 (package e2fsprogs) is missing"
SEEDS=${COHERENCE_SEEDS:-2}
STEPS=$(soak "${COHERENCE_STEPS:-300}")

# run_seeds DIR WHAT: every seed on a new file in DIR
run_seeds() {
	for seed in $(seq 1 "$SEEDS"); do
		"$COHERENCE" "$1/f$seed" "$seed" "$STEPS" >"$WORK/out" 2>&1 ||
			{ cat "$WORK/out"; fail "$2: seed $seed"; }
		echo "ok $2, seed $seed: $(cat "$WORK/out")"
	done
}

ext4_mount 64M
run_seeds "$EXT4_MNT" "kernel ext4"
umount "$EXT4_MNT"

mkfs_img 128M
lfs_mount
run_seeds "$MNT" "lfs, writeback cache"
lfs_umount
lfs_mount writethrough
run_seeds "$MNT" "lfs, -o writethrough"
lfs_umount
"$top_builddir/ckpt/fsck.lfs" "$IMG" >"$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck after the runs"; }
echo "ok fsck clean"
