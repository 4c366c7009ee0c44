#!/bin/bash
# posix.sh — the POSIX semantics checks (posix_check) on a real mount,
# then once more after an unmount and remount of the same image.
. "$(dirname "$0")/lib.sh"

CHECK="$top_builddir/tests/integration/posix_check"
mkfs_img 1G
lfs_mount
mkdir "$MNT/run1"
timeout 600 "$CHECK" "$MNT/run1" >"$WORK/run1.out" || { grep -v '^ok' "$WORK/run1.out"; fail "posix_check"; }
lfs_umount
lfs_mount
mkdir "$MNT/run2"
timeout 600 "$CHECK" "$MNT/run2" >"$WORK/run2.out" || { grep -v '^ok' "$WORK/run2.out"; fail "posix_check after remount"; }
tail -1 "$WORK/run2.out"
lfs_umount
