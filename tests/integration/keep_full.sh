#!/bin/bash
# keep_full.sh — with the cleaner at its defaults, checkpoints are kept
# for an hour (checkpoint_protection 3600, as NILFS2), and a filesystem
# that what they hold fills still takes writes: the oldest plain ones
# give way, the daemon says so, a snapshot keeps what it reads.  Half
# the capacity in one file, overwritten in place until twice the
# capacity is written: no write(2) is refused, the file reads back as
# written, fsck.lfs finds nothing wrong.
. "$(dirname "$0")/lib.sh"

CKPT="$top_builddir/ckpt/lfs-ckpt"
FSCK="$top_builddir/ckpt/fsck.lfs"
snap_setup

mkfs_img 128M
: > "$WORK/empty.conf" # every setting at its default
lfs_mount_cleaner "$WORK/empty.conf"
# the cleaner tells the daemon its period once it has started
for _ in $(seq 1200); do
	"$CKPT" -l "$MNT" 2>/dev/null | matches "protection period 3600 s" && break
	sleep 0.05
done
"$CKPT" -l "$MNT" | matches "^kept checkpoints: protection period 3600 s" ||
	{ "$CKPT" -l "$MNT"; fail "the cleaner's default does not keep checkpoints for 3600 s"; }
echo "ok the default cleaner keeps checkpoints for 3600 s"

# a snapshot that holds 1 MiB: it must not give way
head -c $((1 << 20)) /dev/urandom > "$WORK/small"
cp "$WORK/small" "$MNT/small"
sync "$MNT/small"
"$CKPT" -s -n s1 "$MNT" >/dev/null || fail "taking the snapshot"
head -c $((1 << 20)) /dev/urandom | dd of="$MNT/small" conv=notrunc,fsync status=none

read -r bsize blocks < <(stat -f -c '%S %b' "$MNT")
echo "df before: $(df -k "$MNT" | tail -1)"
cap=$((bsize * blocks))
"$PY" - "$MNT/f" "$cap" <<'EOF' || fail "a write was refused or lost"
import os, sys
path, cap = sys.argv[1], int(sys.argv[2])
size = (cap // 2) & ~((1 << 20) - 1)
fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
written, p = 0, 0
while written < 2 * cap + size:
    new = os.urandom(size)
    for off in range(0, size, 1 << 20):
        os.pwrite(fd, new[off:off + (1 << 20)], off)  # ENOSPC raises: the test fails
    written += size
    os.fsync(fd)
    p += 1
os.close(fd)
with open('/proc/sys/vm/drop_caches', 'w') as f:
    f.write('3\n')
if open(path, 'rb').read() != new:
    sys.exit(f"the file does not read back as its last pass wrote it")
print(f"{p} passes of {size >> 20} MiB over {cap >> 20} MiB of capacity: {written >> 20} MiB, none refused")
EOF
matches "full: .* kept checkpoints\? (.*) gave way to writers, oldest first, the newest of them [0-9]* s old" \
	<"$WORK/daemon.log" || fail "no log line says that kept checkpoints gave way"
"$CKPT" -l "$MNT" > "$WORK/list" || fail "lfs-ckpt -l"
matches "snapshot .* s1$" <"$WORK/list" || { cat "$WORK/list"; fail "the snapshot is gone"; }
echo "df after: $(df -k "$MNT" | tail -1)"
grep -A3 "^kept checkpoints" "$WORK/list"
tail -2 "$WORK/list"
echo "ok twice the capacity overwritten with checkpoints kept: no write refused, the oldest gave way"

lfs_umount
snap_mount s1
cmp -s "$SNAP/small" "$WORK/small" || fail "the snapshot's file changed"
[ ! -e "$SNAP/f" ] || fail "the snapshot has a file made after it"
snap_umount
"$FSCK" "$IMG" > "$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck.lfs"; }
echo "ok the snapshot reads what it did; fsck.lfs clean"
echo "PASS"
