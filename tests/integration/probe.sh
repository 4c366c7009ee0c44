#!/bin/bash
# probe.sh — lfs-probe, blkid and findfs for lfs: the blkid-style line,
# the udev variables (what 59-lfs.rules imports), -t UUID= / LABEL= among
# paths, exit status 2 for nothing found; a loop device of an lfs image
# is found by the scan of /proc/partitions; the mount helper resolves
# lfs:LABEL= and UUID= sources (called as mount(8) calls it).
. "$(dirname "$0")/lib.sh"
PROBE="$top_builddir/lfs/lfs-probe"

u=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
"$MKFS" -q -s 64M -L "my data" -U "$u" "$IMG"
head -c 1M /dev/urandom > "$WORK/other"

"$PROBE" "$IMG" "$WORK/other" >"$WORK/out" || fail "lfs-probe: status $?"
[ "$(cat "$WORK/out")" = "$IMG: LABEL=\"my data\" UUID=\"$u\" TYPE=\"lfs\" VERSION=\"1\"" ] ||
	fail "lfs-probe printed: $(cat "$WORK/out")"
rc=0; "$PROBE" "$WORK/other" >/dev/null || rc=$?
[ $rc = 2 ] || fail "lfs-probe on random bytes: status $rc"
"$PROBE" -o udev "$IMG" >"$WORK/udev"
for l in ID_FS_TYPE=lfs ID_FS_UUID=$u ID_FS_UUID_ENC=$u ID_FS_LABEL=my_data 'ID_FS_LABEL_ENC=my\x20data' \
	 ID_FS_USAGE=filesystem; do
	grep -qxF "$l" "$WORK/udev" || { cat "$WORK/udev"; fail "lfs-probe -o udev: no $l"; }
done
[ "$("$PROBE" -o device -t "UUID=${u^^}" "$WORK/other" "$IMG")" = "$IMG" ] || fail "-t UUID= (upper case)"
[ "$("$PROBE" -o device -t "LABEL=my data" "$IMG")" = "$IMG" ] || fail "-t LABEL="
rc=0; "$PROBE" -t LABEL=nothing "$IMG" 2>"$WORK/err" || rc=$?
[ $rc = 2 ] && grep -q "no lfs filesystem with LABEL=nothing" "$WORK/err" || fail "-t not found: status $rc"
# the block device scan finds a loop device of the image
loop=$(losetup -f --show -r "$IMG") || skip "no loop device"
found=$("$PROBE" -o device -t "UUID=$u" || true)
losetup -d "$loop"
[ "$found" = "$loop" ] || fail "the scan of /proc/partitions found '$found', not $loop"
# backup superblock: block 0 gone, still found
cp "$IMG" "$WORK/img0"
dd if=/dev/zero of="$WORK/img0" bs=4096 count=1 conv=notrunc status=none
"$PROBE" -o device -t "UUID=$u" "$WORK/img0" >/dev/null || fail "not found by its backup superblock"
echo "ok lfs-probe: blkid line, udev variables, -t UUID=/LABEL=, $loop found by the scan, backup superblock"

# the helper, as mount(8) runs it, with lfs:LABEL= (lfs-probe from the
# build tree: the helper names the installed one, so a copy of it is
# pointed here)
sed -e "s|^LFS=.*|LFS='$LFS'|" -e "s|^LFS_PROBE=.*|LFS_PROBE='$PROBE'|" "$top_builddir/lfs/daemon/mount.fuse.lfs" \
	>"$WORK/helper"
chmod +x "$WORK/helper"
env -i "$WORK/helper" "lfs:UUID=$u" "$MNT" -f -v -o nocleaner >"$WORK/out" 2>&1 || rc=$?
grep -q "no lfs filesystem with UUID=$u" "$WORK/out" ||
	{ cat "$WORK/out"; fail "an image not listed was found"; }
sed -i "s|^LFS_PROBE=.*|LFS_PROBE='$PROBE'; probe_paths='$IMG'|" "$WORK/helper"
sed -i 's|"$LFS_PROBE" -o device -t "$tag")|"$LFS_PROBE" -o device -t "$tag" $probe_paths)|' "$WORK/helper"
env -i "$WORK/helper" "lfs:LABEL=my data" "$MNT" -v -o nocleaner,log="$WORK/daemon.log" >"$WORK/out" 2>&1 ||
	{ cat "$WORK/out"; fail "mount.fuse.lfs lfs:LABEL="; }
grep -q "$LFS $IMG $MNT -o nocleaner" "$WORK/out" || { cat "$WORK/out"; fail "the helper ran: $(cat "$WORK/out")"; }
mountpoint -q "$MNT" || fail "lfs:LABEL= did not mount"
fusermount3 -u "$MNT"
flock -w 60 "$IMG" true
echo "ok mount.fuse.lfs resolves lfs:LABEL= and refuses a UUID it cannot find"
