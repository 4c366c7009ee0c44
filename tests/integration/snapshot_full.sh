#!/bin/bash
# snapshot_full.sh — an overwrite of what a snapshot holds takes new
# capacity: on a filesystem it fills, write() says ENOSPC, and every byte
# write() took is kept (fsync and close succeed, the file reads back as
# written, the snapshot is unchanged).  With the kernel's writeback cache
# (the default), whose overwrites lfs otherwise sees only at writeback,
# and with -o writethrough.
. "$(dirname "$0")/lib.sh"

CKPT="$top_builddir/ckpt/lfs-ckpt"
FSCK="$top_builddir/ckpt/fsck.lfs"
snap_setup
FILE_MIB=30 # the snapshot holds it, and its overwrite would need as much again: more than 64 MiB has

snap_check() { # the snapshot reads the file as it was taken
	snap_mount s1
	cmp -s "$SNAP/f" "$WORK/orig" || fail "$1: the snapshot's file changed"
	snap_umount
}

for mode in writeback writethrough; do
	opt=
	[ "$mode" = writethrough ] && opt=writethrough
	rm -f "$IMG"
	mkfs_img 64M
	lfs_mount "$opt"
	head -c $((FILE_MIB << 20)) /dev/urandom > "$WORK/orig"
	cp "$WORK/orig" "$MNT/f"
	sync "$MNT/f"
	"$CKPT" -s -n s1 "$MNT" >/dev/null || fail "$mode: taking the snapshot"
	# three passes of overwrites in place, 1 MiB a call, each until
	# write() refuses; what the file must hold is kept in $WORK/want
	cp "$WORK/orig" "$WORK/want"
	"$PY" - "$MNT/f" "$WORK/want" "$mode" <<'EOF' || fail "$mode: an overwrite was lost or misreported"
import os, sys
path, want_path, mode = sys.argv[1:]
want = bytearray(open(want_path, 'rb').read())
refused = 0
for p in range(3):
    new = os.urandom(len(want))
    fd = os.open(path, os.O_WRONLY)
    done = 0
    try:
        while done < len(new):
            n = os.pwrite(fd, new[done:done + (1 << 20)], done)
            want[done:done + n] = new[done:done + n]
            done += n
    except OSError as e:
        if e.errno != 28:
            raise
        refused += 1
    # what write() took must reach the disk: no error after it
    os.fsync(fd)
    os.close(fd)
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('3\n')
    got = open(path, 'rb').read()
    if got != want:
        bad = next(i for i in range(len(want)) if got[i] != want[i])
        sys.exit(f"pass {p}: {done} bytes written, the file differs at byte {bad}")
    print(f"{mode} pass {p}: {done >> 10} KiB of {len(new) >> 10} written before ENOSPC, all kept")
if refused == 0:
    sys.exit("no write was refused: the snapshot never filled the filesystem")
EOF
	matches "full: .* held for 1 kept checkpoints or snapshots" <"$WORK/daemon.log" ||
		fail "$mode: the full filesystem did not say the snapshot holds its space"
	snap_check "$mode"
	lfs_umount
	"$FSCK" "$IMG" > "$WORK/fsck" || { cat "$WORK/fsck"; fail "$mode: fsck.lfs"; }
	: > "$WORK/daemon.log"
done
echo "PASS"
