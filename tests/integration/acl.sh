#!/bin/bash
# acl.sh — POSIX ACLs as kernel ext4 keeps them: the same script of
# setfacl, chmod, umask, default ACLs, set-group-ID and access checks by
# another user (uid 65534) runs on lfs and on ext4 on a loop device, and
# every resulting mode, owner, ACL and access answer must be the same,
# again after a remount of lfs; then a few of them are checked by value,
# so that two filesystems agreeing on no ACLs at all would still fail.
. "$(dirname "$0")/lib.sh"

command -v setfacl >/dev/null || skip "setfacl (package acl) is missing"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 (package e2fsprogs) is missing"
command -v setpriv >/dev/null || skip "setpriv (package util-linux) is missing"
[ -n "$PY" ] || skip "python3 (package python3) is missing"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 755 "$WORK"

# scenario DIR: build the cases in DIR (as root, then as uid 65534)
scenario() {
	cd "$1"
	umask 022
	mkdir d
	setfacl -m u:65534:rx,d:u:65534:rwx,d:g::rx,d:o::- d
	touch d/f
	mkdir d/sub
	mknod d/fifo p
	ln -s f d/link
	umask 077 # a default ACL replaces the umask
	touch d/f077
	mkdir d/sub077
	umask 022
	"$PY" -c 'import ctypes, os
fd = os.open("d", os.O_TMPFILE | os.O_RDWR, 0o666)
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_SYMLINK_FOLLOW = -100, 0x400
assert libc.linkat(AT_FDCWD, b"/proc/self/fd/%d" % fd, AT_FDCWD, b"d/tmp", AT_SYMLINK_FOLLOW) == 0'
	umask 077 # without one, the umask counts
	touch plain077
	mkdir plaindir077
	umask 022
	touch equiv
	setfacl -m u::rw,g::r,o::r equiv # says no more than a mode: not kept
	touch masked
	setfacl -m u:65534:rw masked
	chmod 600 masked # the mask follows the group bits
	touch chmodded
	setfacl -m u:65534:rwx,g:65534:r chmodded
	chmod 754 chmodded
	touch stripped
	setfacl -m u:65534:r stripped
	setfacl -b stripped
	mkdir kdir
	setfacl -m d:u:65534:r kdir
	setfacl -k kdir
	# set-group-ID: inherited with the group in a setgid directory; lost
	# when an owner outside the file's group sets an access ACL
	mkdir sg
	chgrp 100 sg
	chmod 2775 sg
	setfacl -m d:u:65534:rwx sg
	mkdir sg/x
	touch sg/y
	touch nb
	chown 65534:0 nb
	chmod 2775 nb
	"${NOBODY[@]}" setfacl -m u:1000:r nb
	# access: a named user's entry beats other, the mask limits it, a
	# named group's entry counts for its members
	echo data >r_by_user
	chmod 600 r_by_user
	setfacl -m u:65534:r r_by_user
	echo data >denied_by_user
	chmod 644 denied_by_user
	setfacl -m u:65534:- denied_by_user
	echo data >w_by_group
	chmod 644 w_by_group
	setfacl -m g:65534:rw w_by_group
	echo data >masked_out
	chmod 600 masked_out
	setfacl -m u:65534:rw,m::- masked_out
	mkdir -m 700 enter
	setfacl -m u:65534:x enter
	echo in >enter/file
	chmod 644 enter/file
	mkdir -m 755 shared
	setfacl -m u:65534:rwx,d:u:65534:rwx,d:u::rwx,d:g::r-x,d:o::r-x shared
	"${NOBODY[@]}" sh -c 'umask 077; mkdir shared/byn; touch shared/byn/f'
	cd - >/dev/null
}

# dump DIR: what the scenario left, in name order, and what uid 65534 may do
dump() {
	(
	cd "$1"
	find . -mindepth 1 ! -name lost+found ! -path './lost+found/*' | LC_ALL=C sort | while read -r p; do
		stat -c '%n %A %u %g' "$p"
		[ -L "$p" ] || getfacl -p "$p" 2>&1 | grep -v '^# file'
		# whether an ACL is stored at all (an equivalent one is not)
		"$PY" -c 'import os, sys; print("xattrs:", sorted(os.listxattr(sys.argv[1], follow_symlinks=False)))' "$p"
	done
	for f in r_by_user denied_by_user w_by_group masked_out enter/file; do
		if "${NOBODY[@]}" cat "$f" >/dev/null 2>&1; then echo "65534 reads $f"; else echo "65534 cannot read $f"; fi
		if "${NOBODY[@]}" sh -c "echo x >>$f" 2>/dev/null; then echo "65534 writes $f"; else echo "65534 cannot write $f"; fi
	done
	)
}

ext4_mount 64M
chmod 755 "$EXT4_MNT"
scenario "$EXT4_MNT"
dump "$EXT4_MNT" >"$WORK/ext4.out"
umount "$EXT4_MNT"

mkfs_img 128M
lfs_mount
chmod 755 "$MNT"
scenario "$MNT"
dump "$MNT" >"$WORK/lfs.out"
diff -u "$WORK/ext4.out" "$WORK/lfs.out" || fail "lfs differs from ext4 (- ext4, + lfs)"
lfs_umount
lfs_mount
dump "$MNT" >"$WORK/lfs2.out"
diff -u "$WORK/ext4.out" "$WORK/lfs2.out" || fail "after a remount lfs differs from ext4 (- ext4, + lfs)"

# a few answers by value
has() { grep -qxF -- "$1" "$WORK/lfs2.out" || fail "expected the line: $1"; }
has "./d/f -rw-rw---- 0 0"
has "./d/f077 -rw-rw---- 0 0" # the default ACL, not the umask 077
has "./plain077 -rw------- 0 0"
has "./equiv -rw-r--r-- 0 0"
grep -A8 -xF "./equiv -rw-r--r-- 0 0" "$WORK/lfs2.out" | matches -xF "xattrs: []" ||
	fail "an ACL equivalent to the mode was stored"
grep -A12 -xF "./d/f -rw-rw---- 0 0" "$WORK/lfs2.out" | matches -xF "xattrs: ['system.posix_acl_access']" ||
	fail "an inherited ACL was not stored"
has "./masked -rw------- 0 0"
has "./nb -rwxrwxr-x 65534 0" # set-group-ID gone
has "./sg/x drwxrwsr-x 0 100"
has "65534 reads r_by_user"
has "65534 cannot read denied_by_user"
has "65534 writes w_by_group"
has "65534 cannot read masked_out"
has "65534 reads enter/file"
n=$(grep -c . "$WORK/lfs2.out")
lfs_umount

# -o noacl: as ext4 mounted noacl, no setfacl, no inheritance, the umask
lfs_mount noacl
if setfacl -m u:65534:r "$MNT/equiv" 2>"$WORK/err"; then fail "setfacl worked under -o noacl"; fi
grep -q "Operation not supported" "$WORK/err" || { cat "$WORK/err"; fail "setfacl under -o noacl: not EOPNOTSUPP"; }
(umask 077 && touch "$MNT/d/noacl")
[ "$(stat -c %a "$MNT/d/noacl")" = 600 ] || fail "under -o noacl a default ACL still decided the mode"
lfs_umount
echo "acl: $n lines of modes, ACLs and access answers the same on lfs (also after remount) as on ext4; -o noacl turns them off"
