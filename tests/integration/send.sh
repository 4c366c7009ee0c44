#!/bin/bash
# send.sh — lfs-send and lfs-receive (issue 39): a snapshot's tree sent
# as a stream and made again on another lfs is the same tree, attribute
# by attribute (a walk of both compares type, mode, owner, size, device,
# atime and mtime to the nanosecond, content, the extents that hold data,
# link targets, xattrs and ACLs, chattr flags, and which names share an
# inode), through a pipe and from a file received after the source was
# unmounted; changes made to the live tree after the snapshot are not in
# it; a stream cut short or with one byte changed is refused with a
# message and leaves nothing in the target directory.
. "$(dirname "$0")/lib.sh"

command -v setfacl >/dev/null || skip "setfacl (package acl) is missing"
send_setup
trap 'rc=$?; set +e; for m in "$SNAP:$SNAP_PID" "$MNT2:$PID2"; do [ -n "${m#*:}" ] || continue; fusermount3 -u "${m%%:*}" 2>/dev/null || umount -l "${m%%:*}"; wait "${m#*:}"; done; (exit $rc); cleanup' EXIT INT TERM

mkfs_img 256M
"$MKFS" -s 256M "$IMG2" >/dev/null
lfs_mount
"$LFS" -f -o nocleaner,noatime "$IMG2" "$MNT2" 2>>"$WORK/daemon2.log" &
PID2=$!
wait_mounted "$PID2" "$MNT2" "$WORK/daemon2.log"

# the tree: every kind of inode and attribute the stream carries
cd "$MNT"
mkdir -p d/sub/deeper empty "with space" "ünï"
printf 'tiny' > d/tiny                                   # inline
head -c 300000 /dev/urandom > d/big
truncate -s 100M d/sparse                                 # holes
head -c 4096 /dev/urandom | dd of=d/sparse bs=4096 seek=12800 conv=notrunc status=none
printf 'end' | dd of=d/sparse bs=1 seek=$((100 * 1048576 - 3)) conv=notrunc status=none
truncate -s 1M d/allhole
ln d/big d/hard1; ln d/big "with space/hard2"            # hard links
ln -s ../big d/sub/rel; ln -s /nowhere/at/all dangling    # symlinks
mknod d/null c 1 3; mknod d/loop b 7 0; mkfifo d/fifo
"$PY" -c 'import socket; socket.socket(socket.AF_UNIX).bind("d/sock")'
echo x > "ünï/owned"; chown 1234:5678 "ünï/owned"
echo s > d/suid; chown 1000:1000 d/suid; chmod 4755 d/suid
echo g > d/sgid; chmod 2711 d/sgid
: > d/nomode; chmod 0 d/nomode
setfattr -n user.a -v hello d/tiny
setfattr -n user.bin -v 0x00ff00ff d/big
setfattr -n trusted.t -v "$(head -c 3000 /dev/zero | tr '\0' 'v')" d/sub
setfattr -n user.dir -v on empty
head -c 200000 /dev/urandom > d/capped                    # a capability, after the data
setfattr -n security.capability -v 0x0100000200200000000000000000000000000000 d/capped
setfacl -m u:65534:rx,g:100:r d/tiny
setfacl -d -m u:65534:rwx,g::rx,o::- d/sub
chattr +d d/big 2>/dev/null || true
touch -d '2001-02-03 04:05:06.123456789' d/tiny
touch -h -d '1999-12-31 23:59:59.000000001' d/sub/rel
touch -a -d '2030-01-01 00:00:00.5' d/fifo
touch -d '1980-06-01 12:00:00.000000999' d/sub/deeper empty
cd /
"$CKPT" -s -n s1 "$MNT" >/dev/null || fail "taking the snapshot"
# after the snapshot: none of this may be sent
echo changed > "$MNT/d/tiny"; echo new > "$MNT/newfile"; rm "$MNT/d/hard1"

# walk DIR: one line per name, every attribute a receiver must keep
walk() {
	"$PY" "$WALK" "$1"
}

snap_mount s1
walk "$SNAP" > "$WORK/want"
[ "$(wc -l < "$WORK/want")" = 24 ] || fail "the walk saw $(wc -l < "$WORK/want") names"
grep -q "'d/tiny'.*user.a" "$WORK/want" || fail "the walk does not show xattrs"
grep -q "system.posix_acl_default" "$WORK/want" || fail "the walk does not show ACLs"
grep "'d/sparse'" "$WORK/want" | matches "(52428800, 52432896)" || fail "the walk does not show the sparse file's extents"
walk "$MNT" > "$WORK/live"
! cmp -s "$WORK/want" "$WORK/live" || fail "the live tree walks as the snapshot does: the compare is blind"

# through a pipe
"$SEND" s1 "$MNT" | cat | "$RECV" -v -x "$MNT2" > "$WORK/recv.out" || fail "send | cat | receive failed"
grep -q "received snapshot 's1'" "$WORK/recv.out" || fail "lfs-receive -v said: $(cat "$WORK/recv.out")"
walk "$MNT2/s1" > "$WORK/got"
diff "$WORK/want" "$WORK/got" > "$WORK/diff" || { head -20 "$WORK/diff"; fail "the received tree differs from the snapshot"; }
[ -z "$(ls -A "$MNT2" | grep -v '^s1$')" ] || fail "lfs-receive left $(ls -A "$MNT2")"
# the sparse file stays sparse on the target too
blocks=$(stat -c %b "$MNT2/s1/d/sparse")
[ "$blocks" -le 64 ] || fail "the received sparse file takes $blocks sectors"

# saved to a file, received after the source is gone; a second receive of
# the same name is refused and changes nothing
"$SEND" s1 "$MNT" > "$WORK/s1.stream" || fail "lfs-send to a file failed"
snap_umount
lfs_umount
"$RECV" -n < "$WORK/s1.stream" || fail "lfs-receive -n refused a good stream"
mkdir "$MNT2/later"
"$RECV" -x "$MNT2/later" < "$WORK/s1.stream" || fail "receiving the saved stream failed"
walk "$MNT2/later/s1" > "$WORK/got2"
diff "$WORK/want" "$WORK/got2" > "$WORK/diff" || { head -20 "$WORK/diff"; fail "the tree received from a file differs"; }
! "$RECV" -x "$MNT2/later" < "$WORK/s1.stream" 2>"$WORK/err" || fail "a second receive replaced s1"
[ "$(ls -A "$MNT2/later")" = s1 ] || fail "a refused receive left $(ls -A "$MNT2/later")"

# refused streams: cut short, one byte changed, not a stream; nothing is left
size=$(stat -c %s "$WORK/s1.stream")
refused() { # NAME: the stream in $WORK/bad is refused, the message matches, nothing made
	mkdir "$MNT2/$1"
	! "$RECV" -x "$MNT2/$1" < "$WORK/bad" 2>"$WORK/err" || fail "$1: a bad stream was received"
	grep -q "$2" "$WORK/err" || fail "$1: lfs-receive said: $(cat "$WORK/err")"
	[ -z "$(ls -A "$MNT2/$1")" ] || fail "$1: a refused stream left $(ls -A "$MNT2/$1")"
	! "$RECV" -n < "$WORK/bad" 2>/dev/null || fail "$1: lfs-receive -n took a bad stream"
}
head -c $((size / 2)) "$WORK/s1.stream" > "$WORK/bad"
refused cut "ends"
cp "$WORK/s1.stream" "$WORK/bad"
printf '\x5a' | dd of="$WORK/bad" bs=1 seek=$((size - 1000)) conv=notrunc status=none
refused flipped "crc"
head -c 4096 /dev/urandom > "$WORK/bad"
refused garbage "record 0"
: > "$WORK/bad"
refused empty "ends"
echo "send.sh: $(wc -l < "$WORK/want") names sent and received alike, through a pipe and a file; bad streams refused"
