#!/bin/bash
# degraded.sh — an image whose newest checkpoint cannot be used (the
# segment it was written in overwritten): a read-write mount is refused
# and says that -o ro falls back; `lfs -o ro` mounts the older
# checkpoint and the log after it as far as it verifies, serves every
# file it describes intact, logs what it could not use and stays
# read-only; fsck.lfs reports the lost checkpoint.
. "$(dirname "$0")/lib.sh"
DUMP="$top_builddir/ckpt/dumplfs"
FSCK="$top_builddir/ckpt/fsck.lfs"

mkfs_img 64M
lfs_mount
mkdir "$MNT/old"
for i in $(seq 1 20); do head -c $((i * 7000)) /dev/urandom >"$MNT/old/f$i"; done
(cd "$MNT/old" && md5sum f*) >"$WORK/old.md5"
"$top_builddir/ckpt/lfs-ckpt" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
head -c 3M /dev/urandom >"$MNT/late"
sync "$MNT/late"
lfs_umount

# the newest checkpoint's log head: the segment its tables went to
newest=$("$DUMP" -j "$IMG" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
regions = [r for r in d["checkpoints"] if r.get("valid")]
r = max(regions, key=lambda r: r["seq"])
sb = d["superblock"]
print(r["seq"], sb["seg0"] + r["head_seg"] * sb["seg_blocks"], sb["seg_blocks"], sb["block_size"])')
read -r seq first nblocks bs <<<"$newest"
head -c $((nblocks * bs)) /dev/urandom | dd of="$IMG" bs="$bs" seek="$first" conv=notrunc status=none

rc=0
"$LFS" -f -o nocleaner "$IMG" "$MNT" 2>"$WORK/rw.err" || rc=$?
[ $rc != 0 ] && ! mountpoint -q "$MNT" || fail "a read-write mount of the damaged image went through"
grep -q "checkpoint $seq cannot be used.*a read-only mount (-o ro) falls back" "$WORK/rw.err" ||
	{ cat "$WORK/rw.err"; fail "the refused read-write mount does not say that -o ro falls back"; }
echo "ok a read-write mount is refused, saying that -o ro falls back"

lfs_start "nocleaner,ro"
grep -q "checkpoint $seq cannot be used.*mounted read-only from checkpoint" "$WORK/daemon.log" ||
	fail "the mount does not say which checkpoint it could not use"
(cd "$MNT/old" && md5sum -c --quiet "$WORK/old.md5") || fail "the files of the older checkpoint differ"
touch "$MNT/new" 2>/dev/null && fail "a write to a mount of the older checkpoint"
"$top_builddir/cleaner/lfs-clean" --rw "$MNT" 2>"$WORK/rw2.err" && fail "lfs-clean --rw made it writable"
lfs_umount
echo "ok lfs -o ro mounts the older checkpoint: its 20 files intact, the log says so, it stays read-only"

rc=0
"$FSCK" "$IMG" >"$WORK/fsck.out" 2>&1 || rc=$?
[ $rc = 4 ] && grep -q "checkpoint $seq cannot be used" "$WORK/fsck.out" ||
	{ cat "$WORK/fsck.out"; fail "fsck.lfs: status $rc"; }
echo "ok fsck.lfs reports the checkpoint it could not use (status 4)"
