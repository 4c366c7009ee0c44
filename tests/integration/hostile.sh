#!/bin/bash
# hostile.sh — a hostile local user (uid 65534) against the control
# channel: names squatted before the mount neither stop the cleaner nor
# answer root's lfs-ckpt and lfs_cleanerd --status; the daemon turns the
# user away; a socket held by anyone but the mount's daemon is refused by
# the client; malformed, short, oversized and random requests, from the
# stranger and from root, do not crash the daemon or hurt the filesystem;
# lfs_cleanerd refuses an image whose superblock contradicts the daemon;
# root's tools (lfs-ckpt, lfs_cleanerd, lfs -o snapshot=) refuse the
# daemon of a user's mount unless LFS_TRUST_UID names the user, whose
# own tools keep using it.
. "$(dirname "$0")/lib.sh"
HOSTILE="$top_builddir/tests/integration/ctl_hostile"
CKPT="$top_builddir/ckpt/lfs-ckpt"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
FSCK="$top_builddir/ckpt/fsck.lfs"
[ -x "$HOSTILE" ] || fail "$HOSTILE is missing (make check builds it)"
command -v setpriv >/dev/null || skip "setpriv (package util-linux) is missing"
NOBODY=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 755 "$WORK"               # the stranger must reach the mountpoint
SQUAT_PID=
stop_squatter() {
	[ -n "$SQUAT_PID" ] || return 0
	kill "$SQUAT_PID" 2>/dev/null || true
	wait "$SQUAT_PID" 2>/dev/null || true
	SQUAT_PID=
}
USER_PID=
UMNT="$WORK/umnt"
stop_userd() {
	[ -n "$USER_PID" ] || return 0
	umount "$UMNT" 2>/dev/null || umount -l "$UMNT" 2>/dev/null || true
	wait "$USER_PID" 2>/dev/null || true
	USER_PID=
}
# cleanup (lib.sh) takes the exit status from $?
trap 'rc=$?; stop_squatter; stop_userd; (exit $rc) && cleanup || cleanup' EXIT INT TERM

mkfs_img 128M
# the names a squatter could guess: the one lfs used before, and others
"${NOBODY[@]}" "$HOSTILE" squat "lfs-ctl:$MNT" "lfs-ctl:$MNT/" "lfs-ctl:$IMG" >"$WORK/squat.out" 2>&1 &
SQUAT_PID=$!
for _ in $(seq 50); do grep -q ready "$WORK/squat.out" && break; sleep 0.1; done
grep -q ready "$WORK/squat.out" || { cat "$WORK/squat.out"; fail "squatter did not start"; }

# mounted with its cleaner, as root would
"$LFS" -f -o cleaner_conf=/dev/null "$IMG" "$MNT" 2>>"$WORK/daemon.log" &
LFS_PID=$!
for _ in $(seq 100); do mountpoint -q "$MNT" && break; sleep 0.1; done
mountpoint -q "$MNT" || { cat "$WORK/daemon.log"; fail "mount did not appear"; }
# until the cleaner has started, or the daemon has said it runs without
for _ in $(seq 600); do
	grep -q "lfs_cleanerd: cleaning $MNT\|without a cleaner\|no cleaner" "$WORK/daemon.log" && break
	sleep 0.1
done
grep -q "without a cleaner\|no cleaner" "$WORK/daemon.log" && { cat "$WORK/daemon.log"; fail "mounted without its cleaner"; }
grep -q "lfs_cleanerd: cleaning $MNT" "$WORK/daemon.log" || { cat "$WORK/daemon.log"; fail "the cleaner did not start"; }
pgrep -P "$LFS_PID" -x lfs_cleanerd >/dev/null || fail "no lfs_cleanerd child of the daemon"
echo "ok the cleaner starts with the names squatted"

"$CKPT" -l "$MNT" > "$WORK/ckpt" || fail "lfs-ckpt -l"
grep -q "^image $IMG, mounted at" "$WORK/ckpt" || { cat "$WORK/ckpt"; fail "lfs-ckpt -l did not name the real image"; }
grep -q squatter "$WORK/ckpt" && fail "lfs-ckpt listened to the squatter"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
"$CLEANERD" --status "$MNT" | matches "image $IMG)" || fail "lfs_cleanerd --status did not name the real image"
stop_squatter
grep -q "^connections 0$" "$WORK/squat.out" || { cat "$WORK/squat.out"; fail "a client reached the squatter"; }
echo "ok root's lfs-ckpt and lfs_cleanerd --status reach the daemon, not the squatter"

# the stranger is turned away, with a reason
if "${NOBODY[@]}" "$CKPT" -c "$MNT" 2>"$WORK/err"; then fail "uid 65534 forced a checkpoint"; fi
grep -q "Permission denied" "$WORK/err" || { cat "$WORK/err"; fail "uid 65534: no reason given"; }
"${NOBODY[@]}" "$HOSTILE" garbage "$MNT" > "$WORK/garbage" || fail "ctl_hostile garbage as uid 65534"
grep -q "replies 1 errors 1 closed 1 first_error 13$" "$WORK/garbage" ||  # 13: EACCES
	{ cat "$WORK/garbage"; fail "uid 65534 was not turned away after one EACCES"; }
echo "ok uid 65534 is refused: $(cat "$WORK/garbage")"

# root's garbage: every message answered with an error, nothing crashes
"$HOSTILE" garbage "$MNT" > "$WORK/garbage" || fail "ctl_hostile garbage as root"
grep -q "^stats 0$" "$WORK/garbage" || { cat "$WORK/garbage"; fail "the daemon stopped serving after garbage"; }
grep -q "closed 0" "$WORK/garbage" || { cat "$WORK/garbage"; fail "the daemon dropped root's connection"; }
read -r sent replies < <(sed -n 's/^sent \([0-9]*\) replies \([0-9]*\).*/\1 \2/p' "$WORK/garbage")
[ "$sent" -gt 500 ] && [ "$sent" = "$replies" ] || { cat "$WORK/garbage"; fail "not every request was answered"; }
kill -0 "$LFS_PID" || fail "the daemon died"
# the largest replies, whole: a full page of kept checkpoints (past 512
# of them it overran the daemon's buffer), the inode map's addresses of
# one at and past their end, and a block it reads
# (a record is a struct lfs_ctl_ckpt: 96 bytes since protocol 10)
grep -qx "snap_list 0: 1024 records in $((48 + 1024 * 96)) bytes, [0-9]* in all" "$WORK/garbage" ||
	{ cat "$WORK/garbage"; fail "a full page of SNAP_LIST was not one whole reply"; }
[ "$(grep -c '^view_imap 0: ' "$WORK/garbage")" = 4 ] && grep -qx "view_imap 0: 1 records in 56 bytes" "$WORK/garbage" &&
	grep -qx "view_imap 0: 0 records in 48 bytes" "$WORK/garbage" ||
	{ cat "$WORK/garbage"; fail "VIEW_IMAP at and past its end"; }
[ "$(sed -n 's/^view_read \(.*\): \([0-9]*\) bytes$/\1 \2/p' "$WORK/garbage" | tr '\n' ' ')" = \
	"-22 48 -22 48 0 $((48 + 4096)) " ] || { cat "$WORK/garbage"; fail "VIEW_READ of a kept checkpoint"; }
# as many blocks as a reply holds (the blocks after an inode-map block
# may not be the checkpoint's: then an error), one more, a run that wraps
grep -Eqx "view_readv (0: $((48 + 131072))|-[0-9]+: 48) bytes" "$WORK/garbage" &&
	[ "$(sed -n 's/^view_readv \(.*\): \([0-9]*\) bytes$/\1 \2/p' "$WORK/garbage" | tail -2 | tr '\n' ' ')" = \
		"-22 48 -22 48 " ] || { cat "$WORK/garbage"; fail "VIEW_READ of several blocks"; }
echo "ok the largest replies: $(grep '^snap_list\|^view_' "$WORK/garbage" | tr '\n' ';')"
seq 200000 > "$MNT/after" && seq 200000 | cmp - "$MNT/after" || fail "the filesystem does not work after garbage"
echo "ok root's garbage: $(tail -1 "$WORK/garbage")"

# a socket held by someone else is refused by the client's check, even
# under the right name: uid 65534 is neither root nor the mount's owner,
# and a pid other than the daemon's is not the daemon
"${NOBODY[@]}" "$HOSTILE" squat "lfs-ctl:impostor-$$" >"$WORK/squat.out" 2>&1 &
SQUAT_PID=$!
for _ in $(seq 50); do grep -q ready "$WORK/squat.out" && break; sleep 0.1; done
[ "$("$HOSTILE" verify "lfs-ctl:impostor-$$" "$SQUAT_PID" 0)" = "Operation not permitted" ] ||
	fail "a socket of uid 65534 was taken for a root daemon's"
[ "$("$HOSTILE" verify "lfs-ctl:impostor-$$" "$LFS_PID" 65534)" = "Operation not permitted" ] ||
	fail "a socket held by another pid was taken for the daemon's"
[ "$(LFS_TRUST_UID=65534 "$HOSTILE" verify "lfs-ctl:impostor-$$" "$SQUAT_PID" 65534)" = 0 ] ||
	fail "the check refuses a mount owner's own daemon"
[ "$("$HOSTILE" verify "lfs-ctl:impostor-$$" "$SQUAT_PID" 65534)" = "Key was rejected by service" ] ||
	fail "root took the word of a daemon run by uid 65534 without LFS_TRUST_UID"
stop_squatter
echo "ok the client checks the server's pid and uid"

lfs_umount
"$FSCK" "$IMG" >"$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck after the hostile session"; }
echo "ok fsck clean after the hostile session"

# the cleaner believes no geometry the image's superblock does not bear
# out: the image replaced under the mount by one with smaller segments
lfs_mount
mv "$IMG" "$IMG.mounted"
"$MKFS" -s 64M -S 512K "$IMG" >/dev/null
if timeout 10 "$CLEANERD" -f "$MNT" 2>"$WORK/err"; then fail "lfs_cleanerd cleaned with another image's geometry"; fi
grep -q "the daemon's geometry .* is not that of the image's superblock" "$WORK/err" ||
	{ cat "$WORK/err"; fail "lfs_cleanerd: geometry mismatch not reported"; }
lfs_umount
mv -f "$IMG.mounted" "$IMG"
echo "ok lfs_cleanerd refuses an image whose superblock contradicts the daemon"

# A user's daemon (uid 65534, on a mount root reaches, as the user's
# allow_other would give) serves whatever image it likes: root's tools
# refuse to act on what it says, naming the way to trust it; told to
# (LFS_TRUST_UID, a uid or a name), they do; the user's own tools always
UIMG="$WORK/user.img"
mkdir -p "$UMNT"
"$MKFS" -s 64M "$UIMG" >/dev/null
chown 65534:65534 "$UIMG"
"$HOSTILE" userd 65534 "$UIMG" "$UMNT" "$LFS" -f -o nocleaner "$UIMG" @FUSE@ 2>"$WORK/user.log" &
USER_PID=$!
wait_mounted "$USER_PID" "$UMNT" "$WORK/user.log"
# the user's own lfs-ckpt: answered once the daemon serves (FUSE holds
# the request until then)
"${NOBODY[@]}" "$CKPT" -s -n mine "$UMNT" >/dev/null 2>"$WORK/err" || { cat "$WORK/err" "$WORK/user.log"; fail "uid 65534's own lfs-ckpt -s"; }
"${NOBODY[@]}" "$CKPT" -l "$UMNT" | matches "^image $UIMG, mounted at" || fail "uid 65534's own lfs-ckpt -l"
# (said before it served) its mount's dirty pages are bounded where lfs cannot see (a /dev/fd
# mount point): it writes through rather than let the kernel hold more
# than it keeps room for (lfs(8), Writes and a full filesystem)
grep -q "go through to the daemon" "$WORK/user.log" || { cat "$WORK/user.log"; fail "the user's daemon kept the writeback cache it cannot bound"; }
untrusted="the daemon of this mount runs as uid 65534, not root: root trusts it only with LFS_TRUST_UID=65534"
for cmd in "$CKPT -l" "$CKPT -c" "$CLEANERD --status" "$CLEANERD -f" "$top_builddir/cleaner/lfs-clean -s" "$top_builddir/cleaner/lfs-requests" "$top_builddir/cleaner/lfs-scrub -s $WORK/scrub.state"; do
	if timeout 20 $cmd "$UMNT" >"$WORK/out" 2>"$WORK/err"; then fail "root's $cmd took a user's daemon's word"; fi
	grep -qF "$untrusted" "$WORK/err" || { cat "$WORK/err"; fail "root's $cmd: no reason given"; }
done
mkdir -p "$WORK/smnt"
if "$LFS" -f -o snapshot=mine "$UIMG" "$WORK/smnt" 2>"$WORK/err"; then fail "root's snapshot mount read through a user's daemon"; fi
grep -qF "$untrusted" "$WORK/err" || { cat "$WORK/err"; fail "root's snapshot mount: no reason given"; }
LFS_TRUST_UID=65534 "$CKPT" -l "$UMNT" | matches "^image $UIMG, mounted at" || fail "LFS_TRUST_UID=65534: lfs-ckpt -l"
name=$(getent passwd 65534 | cut -d: -f1)
if [ -n "$name" ]; then
	LFS_TRUST_UID=$name "$CKPT" -l "$UMNT" | matches "  mine$" || fail "LFS_TRUST_UID=$name: lfs-ckpt -l"
fi
if LFS_TRUST_UID=1000 "$CKPT" -l "$UMNT" >/dev/null 2>&1; then fail "LFS_TRUST_UID=1000 trusted uid 65534"; fi
stop_userd
echo "ok root's tools refuse a daemon run by uid 65534 unless LFS_TRUST_UID names it${name:+ (or $name)}"
