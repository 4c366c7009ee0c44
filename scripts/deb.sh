#!/bin/bash
# deb.sh [-b DIR | -i DIR] — the Debian package, as a user gets it:
# dpkg-buildpackage -us -uc in a clean clone of the committed tree (HEAD),
# lintian (an error or a warning fails), then install it, mount a test
# image with "mount -t fuse.lfs" (the packaged helper, as mount(8) runs
# it), write and read back, unmount, purge, and check that nothing it
# installed is left.  Needs root (dpkg -i, mount).  The unit suites run
# elsewhere in CI, so the package build skips them (nocheck) and the debug
# package (noddebs).
#
# -b DIR: only build and lintian, in the new directory DIR; -i DIR: only
# install, mount and purge the package built there, then remove DIR.
# scripts/test.sh builds beside the test passes and installs after them:
# install.sh and mount_flags.sh lay their own helpers over /usr/sbin,
# where the package installs its own.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=1 install=1
case "${1:-}" in
-b) install=0; work=$2; mkdir "$work" ;;
-i) build=0; work=$2 ;;
'') work=$(mktemp -d /tmp/lfs-deb.XXXXXX) ;;
*) echo "usage: deb.sh [-b DIR | -i DIR]"; exit 2 ;;
esac
mnt="$work/mnt"
cleanup() {
	local rc=$?
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	dpkg-query -W lfs >/dev/null 2>&1 && [ -n "${installed:-}" ] && dpkg --purge lfs >/dev/null
	# -b keeps what it built for -i, unless it failed
	[ $install = 0 ] && [ $rc = 0 ] || rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "deb.sh: FAIL: $*"; exit 1; }

# build_pkg: the package and its lintian, in $work
build_pkg() {
	git clone -q "$top" "$work/lfs"
	(cd "$work/lfs" && git checkout -q "$(git -C "$top" rev-parse HEAD)")
	t0=$(date +%s)
	(cd "$work/lfs" && DEB_BUILD_OPTIONS="nocheck noddebs parallel=$(nproc)" dpkg-buildpackage -us -uc \
		>"$work/build.log" 2>&1) || { tail -40 "$work/build.log"; fail "dpkg-buildpackage"; }
	deb=$(ls "$work"/lfs_*.deb)
	echo "ok dpkg-buildpackage -us -uc: $(basename "$deb") in $(( $(date +%s) - t0 )) s"
	lintian --fail-on error,warning "$work"/lfs_*.changes ||
		fail "lintian"
	echo "ok lintian: no errors or warnings"
}
[ $build = 0 ] || build_pkg
[ $install = 1 ] || exit 0

if dpkg-query -W -f='${Status}' lfs 2>/dev/null | grep -q "install ok installed"; then
	fail "a package lfs is installed already; this test installs and purges its own"
fi
deb=$(ls "$work"/lfs_*.deb)
dpkg -i "$deb" >/dev/null || fail "dpkg -i"
installed=1
files=$(dpkg -L lfs | while read -r f; do [ -d "$f" ] || echo "$f"; done)
mkdir -p "$mnt"
/usr/sbin/mkfs.lfs -q -s 64M "$work/img"
env -i /usr/bin/mount -t fuse.lfs -o nocleaner "$work/img" "$mnt" || fail "mount -t fuse.lfs with the package"
echo packaged > "$mnt/f"
umount "$mnt"
flock -w 60 "$work/img" true
env -i /usr/bin/mount -t fuse.lfs -o ro "$work/img" "$mnt" || fail "mount again"
[ "$(cat "$mnt/f")" = packaged ] || fail "the file did not survive a remount"
umount "$mnt"
flock -w 60 "$work/img" true
/usr/sbin/fsck.lfs "$work/img" >/dev/null || fail "fsck.lfs"
echo "ok installed: mount -t fuse.lfs, write, remount, fsck"
dpkg --purge lfs >/dev/null || fail "dpkg --purge"
installed=
for f in $files; do
	[ ! -e "$f" ] && [ ! -L "$f" ] || fail "$f is left after purge"
done
[ ! -e /etc/lfs_cleanerd.conf ] || fail "/etc/lfs_cleanerd.conf is left after purge"
echo "ok purged: $(echo "$files" | wc -w) files gone"
