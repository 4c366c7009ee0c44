#!/bin/bash
# golden.sh — images of each on-disk format version keep working.  A
# small image that mkfs.lfs of format version 1 made and a mount filled
# (tests/golden/make_v1.sh says how), committed compressed with the
# manifest of the host tree it was filled from, must:
#   - pass fsck.lfs with no problem;
#   - mount read-only and show every file, directory, symlink, hard link
#     and user xattr as the manifest lists them (every file read whole);
#   - be left byte for byte as it was by the read-only mount;
#   - take a write through a read-write mount, and pass fsck.lfs after it.
. "$(dirname "$0")/lib.sh"

GOLDEN="$top_srcdir/tests/golden"
FSCK="$top_builddir/ckpt/fsck.lfs"
command -v xz >/dev/null || skip "xz (package xz-utils) is missing"
[ -n "$PY" ] || skip "python3 is missing"

for v in 1; do
	xz -dc "$GOLDEN/v$v.img.xz" > "$IMG"
	"$FSCK" "$IMG" > "$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "v$v: fsck of the golden image"; }
	before=$(sha256sum < "$IMG")
	lfs_mount ro
	"$PY" "$GOLDEN/manifest.py" "$MNT" > "$WORK/manifest" || fail "v$v: reading the mounted image"
	diff -u "$GOLDEN/v$v.manifest" "$WORK/manifest" || fail "v$v: the mount differs from the manifest"
	lfs_umount
	[ "$(sha256sum < "$IMG")" = "$before" ] || fail "v$v: a read-only mount changed the image"
	lfs_mount
	echo "written by $(basename "$0")" > "$MNT/new"
	rm "$MNT/dir/many_1"
	lfs_umount
	"$FSCK" "$IMG" > "$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "v$v: fsck after writing"; }
	echo "v$v: fsck clean, $(grep -c . "$GOLDEN/v$v.manifest") entries as the manifest says, writable"
done
