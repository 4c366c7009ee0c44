#!/bin/bash
# install.sh — make install, as users of nilfs-utils and e2fsprogs expect:
#  1. into a DESTDIR from this build: every program, man page, the mount
#     helper (and its fuseblk link), the systemd unit with the installed
#     paths in it, the config where lfs_cleanerd reads it; make uninstall
#     leaves nothing behind;
#  2. to another prefix (a build configured for it): mount(8) itself runs
#     the helper, with no PATH, for "mount -t fuse.lfs" and for an fstab
#     line, the daemon starts the cleaner installed with it, and the
#     cleaner reads the installed config.  mount(8) looks for helpers in
#     /sbin only: a private mount namespace lays the prefix's helper
#     directory over /usr/sbin (overlayfs), so the host's /sbin is never
#     touched.
. "$(dirname "$0")/lib.sh"
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}"

command -v unshare >/dev/null || skip "unshare (util-linux) is missing"

# make, on its own: not with the flags and variables of the make check
# that runs this test
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory "$@"; }
# dirs BUILDDIR: the expanded installation directories of that build
dirs() { mk -s -C "$1" print-installdirs; }

# installed_ok ROOT (DESTDIR or ""): the files make install must leave
installed_ok() {
	local root=$1 p
	for p in lfs dumplfs lfs-ckpt lfs-requests; do
		[ -x "$root$bindir/$p" ] || fail "$bindir/$p not installed"
	done
	for p in mkfs.lfs fsck.lfs lfs_cleanerd lfs-clean lfs-scrub lfs-tune lfs-resize lfs-probe; do
		[ -x "$root$sbindir/$p" ] || fail "$sbindir/$p not installed"
	done
	for p in $(cd "$top_srcdir/man" && ls); do
		[ -f "$root$mandir/man${p##*.}/$p" ] || fail "man page $p not installed"
	done
	local helper="$root$mounthelperdir/mount.fuse.lfs"
	[ -x "$helper" ] || fail "$mounthelperdir/mount.fuse.lfs not installed"
	[ "$(readlink "$root$mounthelperdir/mount.fuseblk.lfs")" = mount.fuse.lfs ] ||
		fail "$mounthelperdir/mount.fuseblk.lfs is not a link to mount.fuse.lfs"
	grep -q "^LFS='$bindir/lfs'\$" "$helper" || fail "the mount helper does not name $bindir/lfs"
	local unit="$root$systemdsystemunitdir/lfs_cleanerd@.service"
	[ -f "$unit" ] || fail "$systemdsystemunitdir/lfs_cleanerd@.service not installed"
	grep -q "^ExecStart=$sbindir/lfs_cleanerd -f %f\$" "$unit" || fail "the unit does not run $sbindir/lfs_cleanerd"
	unit_bound "$root" "$unit"
	! grep -n '@[a-z]*@' "$helper" "$unit" || fail "unsubstituted @variables@"
	grep -q "IMPORT{program}=\"$sbindir/lfs-probe -o udev \$devnode\"" "$root$udevrulesdir/59-lfs.rules" ||
		fail "$udevrulesdir/59-lfs.rules does not run $sbindir/lfs-probe"
	[ -f "$root$sysconfdir/lfs_cleanerd.conf" ] || fail "$sysconfdir/lfs_cleanerd.conf not installed"
	local rot="$root$sysconfdir/logrotate.d/lfs"
	[ -f "$rot" ] || fail "$sysconfdir/logrotate.d/lfs not installed"
	grep -q "^/var/log/lfs.log {" "$rot" || fail "logrotate.d/lfs does not rotate /var/log/lfs.log"
	# logrotate parses it (a dry run: -d reads, rotates nothing)
	logrotate -d "$rot" >"$WORK/logrotate.out" 2>&1 && ! grep -qi "error" "$WORK/logrotate.out" ||
		{ cat "$WORK/logrotate.out"; fail "logrotate -d $sysconfdir/logrotate.d/lfs"; }
	grep -aqF "$sysconfdir/lfs_cleanerd.conf" "$root$sbindir/lfs_cleanerd" ||
		fail "lfs_cleanerd does not read $sysconfdir/lfs_cleanerd.conf by default"
}

# unit_bound ROOT UNIT: the cleaner's unit, for the mount point
# /mnt/lfs, is bound to that mount's unit (systemd-analyze verify resolves
# BindsTo= against a mount unit of that name beside it, and fails on one
# it cannot find) and is wanted by it
unit_bound() {
	local d="$WORK/units"
	rm -rf "$d"
	mkdir -p "$d"
	printf '[Mount]\nWhat=/srv/lfs.img\nWhere=/mnt/lfs\nType=fuse.lfs\n' >"$d/mnt-lfs.mount"
	sed "s|^ExecStart=$sbindir/|ExecStart=$1$sbindir/|" "$2" >"$d/lfs_cleanerd@.service"
	ln -s lfs_cleanerd@.service "$d/lfs_cleanerd@mnt-lfs.service"
	(cd "$d" && systemd-analyze verify --man=no mnt-lfs.mount lfs_cleanerd@mnt-lfs.service) >"$WORK/verify" 2>&1 ||
		{ cat "$WORK/verify"; fail "systemd-analyze verify of the cleaner's unit"; }
	grep -qx "BindsTo=%i.mount" "$2" && grep -qx "WantedBy=%i.mount" "$2" ||
		fail "the cleaner's unit is not bound to its mount"
}

# ---------------------------------------------------------------- 1. DESTDIR
DEST="$WORK/dest"
mk -s -C "$top_builddir" install DESTDIR="$DEST" >"$WORK/install.log" 2>&1 ||
	{ cat "$WORK/install.log"; fail "make install DESTDIR"; }
eval "$(dirs "$top_builddir")"
installed_ok "$DEST"
"$DEST$sbindir/mkfs.lfs" --version >/dev/null || fail "the installed mkfs.lfs does not run"
n=$(find "$DEST" ! -type d | wc -l)
mk -s -C "$top_builddir" uninstall DESTDIR="$DEST" >"$WORK/install.log" 2>&1 ||
	{ cat "$WORK/install.log"; fail "make uninstall DESTDIR"; }
left=$(find "$DEST" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "ok DESTDIR: $n files installed where expected, all removed by make uninstall"

# ---------------------------------------------------------------- 2. a prefix
P="$WORK/prefix"
mkdir "$WORK/build"
t0=$(date +%s)
(cd "$WORK/build" && "$top_srcdir/configure" -q --prefix="$P" --with-mount-helper-dir="$P/helpers" \
	CFLAGS="-O0" && mk -s -j2 install) >"$WORK/install.log" 2>&1 ||
	{ tail -30 "$WORK/install.log"; fail "configure --prefix, make install"; }
eval "$(dirs "$WORK/build")"
installed_ok ""
echo "ok --prefix=$P: installed in $(( $(date +%s) - t0 )) s"

mkfs_img 64M
cat > "$WORK/fstab" <<EOF
$IMG $MNT fuse.lfs defaults,noauto,nofail,x-systemd.automount,log=$WORK/lfs.log 0 0
EOF
cat > "$WORK/ns.sh" <<'EOF'
set -eu
fail() { echo "FAIL: $*"; exit 1; }
# the daemon lives in this namespace: never leave it mounted here
trap 'if mountpoint -q "$MNT"; then umount "$MNT" || umount -l "$MNT"; fi' EXIT
mount -t overlay overlay -o "lowerdir=$P/helpers:/usr/sbin" /usr/sbin || exit 77
[ -x /sbin/mount.fuse.lfs ] || fail "helper not visible in /sbin"
# mount(8) as init or a unit runs it: no PATH at all
env -i /usr/bin/mount -t fuse.lfs -o "log=$WORK/lfs.log" "$IMG" "$MNT" || fail "mount -t fuse.lfs"
mountpoint -q "$MNT" || fail "mount -t fuse.lfs: nothing mounted"
echo hello > "$MNT/file"
# the cleaner installed with this lfs, reading the installed config
cleaner=
for i in $(seq 50); do
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$sbindir/lfs_cleanerd" ] || continue
		tr '\0' ' ' < "$p/cmdline" | grep -q " $MNT" && cleaner=${p#/proc/}
	done
	[ -n "$cleaner" ] && break
	sleep 0.1
done
[ -n "$cleaner" ] || fail "no $sbindir/lfs_cleanerd for $MNT"
grep -q "lfs_cleanerd\[[0-9]*\]: $MNT: cleaning $MNT .*settings from $sysconfdir/lfs_cleanerd.conf" "$WORK/lfs.log" ||
	{ cat "$WORK/lfs.log"; fail "the cleaner did not say it read $sysconfdir/lfs_cleanerd.conf"; }
# remount,ro and back, through the helper (mount.fuseblk.lfs as root)
env -i /usr/bin/mount -o remount,ro "$MNT" || fail "mount -o remount,ro"
grep " $MNT " /proc/mounts | grep -q " ro," || fail "remount,ro: the kernel's flag"
if touch "$MNT/new" 2>/dev/null; then fail "a write after remount,ro"; fi
"$sbindir/lfs_cleanerd" --status --json "$MNT" | grep -q '"readonly":true' || fail "remount,ro: the daemon is not read-only"
env -i /usr/bin/mount -o remount,rw "$MNT" || fail "mount -o remount,rw"
touch "$MNT/new" || fail "a write after remount,rw"
"$sbindir/lfs_cleanerd" --status --json "$MNT" | grep -q '"readonly":false' || fail "remount,rw: the daemon is read-only"
echo "ok mount -o remount,ro and remount,rw through mount.fuseblk.lfs"
env -i /usr/bin/umount "$MNT" || fail "umount"
for i in $(seq 100); do kill -0 "$cleaner" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$cleaner" 2>/dev/null || fail "the cleaner outlived the unmount"
echo "ok mount -t fuse.lfs with no PATH: mounted, cleaner $sbindir/lfs_cleanerd (pid $cleaner) ran, unmounted"
flock -w 60 "$IMG" true || fail "image still locked a minute after unmount"
# the fstab line
env -i /usr/bin/mount -T "$WORK/fstab" "$MNT" || fail "mount by the fstab line"
[ "$(cat "$MNT/file")" = hello ] || fail "file lost across mounts"
env -i /usr/bin/umount "$MNT" || fail "umount (fstab)"
echo "ok fstab: $(cat "$WORK/fstab")"
EOF
rc=0
P="$P" IMG="$IMG" MNT="$MNT" WORK="$WORK" sbindir="$sbindir" sysconfdir="$sysconfdir" \
	unshare -m --propagation private bash "$WORK/ns.sh" || rc=$?
[ $rc != 77 ] || skip "no overlayfs to show mount(8) the helper"
[ $rc = 0 ] || fail "mount(8) with the installed helper (status $rc)"
flock -w 60 "$IMG" true || fail "image still locked a minute after unmount"
"$P/sbin/fsck.lfs" "$IMG" >/dev/null || fail "fsck after the mounts"

(cd "$WORK/build" && mk -s uninstall) >"$WORK/install.log" 2>&1 || { cat "$WORK/install.log"; fail "make uninstall"; }
left=$(find "$P" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "ok make uninstall from $P removed everything"
