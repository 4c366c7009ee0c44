#!/bin/bash
# incr.sh — incremental send and receive (issue 39, point 3): lfs-send -p
# P1 S2 carries only what changed between two snapshots of the source,
# and lfs-receive applies it on a target that holds P1 (received before),
# committing S2 there in one checkpoint.  The changes: a rename (of a file
# and of a directory, across directories), deletions (a file, a
# directory tree), a truncation, scattered overwrites, a punched hole,
# chmod, chown, utimes and xattrs only, a new hard link, a lost hard
# link, new files, directories and symlinks; then rounds of random
# changes (tree_mutate.py), each sent from the last.  The received S2, walked
# attribute by attribute (tree_walk.py), is the source's S2.  The stream's
# size follows the change: 1 MiB of scattered 4 KiB overwrites in a 256
# MiB file sends less than 2 MiB.  A target whose P1 is not the source's
# (its own snapshot of that name, or one received from another
# filesystem) refuses the stream before writing anything: its snapshots
# and live tree as they were; so does a stream cut short, or crafted (a
# REF naming what the parent has not, its crcs sealed again), on the
# right parent.
. "$(dirname "$0")/lib.sh"

send_setup
FSCK="$top_builddir/ckpt/fsck.lfs"
IMG3="$WORK/img3"
MNT3="$WORK/mnt3"
SNAP2="$WORK/snap2"
mkdir -p "$MNT3" "$SNAP2"
PID3=
SPID2=
trap 'rc=$?; set +e; for m in "$SNAP:$SNAP_PID" "$SNAP2:$SPID2" "$MNT2:$PID2" "$MNT3:$PID3"; do [ -n "${m#*:}" ] || continue; fusermount3 -u "${m%%:*}" 2>/dev/null || umount -l "${m%%:*}"; wait "${m#*:}"; done; (exit $rc); cleanup' EXIT INT TERM

mkfs_img 768M
"$MKFS" -s 256M "$IMG2" >/dev/null
"$MKFS" -s 256M "$IMG3" >/dev/null
lfs_mount noatime
"$LFS" -f -o nocleaner,noatime "$IMG2" "$MNT2" 2>>"$WORK/daemon2.log" &
PID2=$!
wait_mounted "$PID2" "$MNT2" "$WORK/daemon2.log"
"$LFS" -f -o nocleaner,noatime "$IMG3" "$MNT3" 2>>"$WORK/daemon3.log" &
PID3=$!
wait_mounted "$PID3" "$MNT3" "$WORK/daemon3.log"

# snaps MNT: the snapshots lfs-ckpt -l lists (not the plain checkpoints,
# which a daemon writes when it will)
snaps() { "$CKPT" -l "$1" | grep -E " (snapshot|received) " || true; }

# walk SNAPSHOT IMAGE: the snapshot's tree, as tree_walk.py prints it
walk() {
	"$LFS" -f -o "snapshot=$1" "$2" "$SNAP2" 2>>"$WORK/snap2.log" &
	SPID2=$!
	wait_mounted "$SPID2" "$SNAP2" "$WORK/snap2.log"
	"$PY" "$WALK" "$SNAP2"
	fusermount3 -u "$SNAP2"; wait "$SPID2"; SPID2=
}

# P1: the parent
cd "$MNT"
mkdir -p a/b/c d/e keep gone/deep/er
printf 'tiny' > a/tiny
head -c 300000 /dev/urandom > a/big
head -c 200000 /dev/urandom > a/b/c/moved
head -c 100000 /dev/urandom > d/e/shrinks
head -c 400000 /dev/urandom > d/holes
echo hard > keep/h1; ln keep/h1 keep/h2; ln keep/h1 a/h3
echo meta > keep/meta; setfattr -n user.old -v 1 keep/meta; setfattr -n user.stays -v same keep/meta
echo bye > gone/deep/er/f; ln -s ../x gone/sym
echo going > a/going
CAP=0x0100000200200000000000000000000000000000 # cap_net_raw=ep
echo cap > keep/capped; setfattr -n security.capability -v $CAP keep/capped
ln -s target keep/link
touch -d '2001-02-03 04:05:06.123456789' keep/meta
cd /
"$CKPT" -s -n p1 "$MNT" >/dev/null || fail "taking p1"
"$SEND" p1 "$MNT" > "$WORK/p1.full" || fail "lfs-send p1"
"$RECV" "$MNT2" < "$WORK/p1.full" || fail "receiving p1"

# the changes
cd "$MNT"
mv a/b/c/moved d/moved-here                      # a file renamed across directories
mv a/b d/e/b-moved                                # a directory renamed under another
rm a/going; rm -r gone                            # deletions, a tree
truncate -s 5000 d/e/shrinks                      # truncation
for off in 3 17 40 71; do head -c 4096 /dev/urandom | dd of=a/big bs=4096 seek=$off conv=notrunc status=none; done
fallocate -p -o 102400 -l 102400 d/holes          # a hole punched
chmod 0600 keep/meta; chown 4321:8765 keep/meta   # metadata only
setfattr -n user.new -v 2 keep/meta; setfattr -x user.old keep/meta
touch -d '2011-12-13 14:15:16.987654321' keep/meta
ln keep/h1 d/h4; rm keep/h2                       # a new hard link, one gone
mkdir -p new/dir/deeper; echo fresh > new/dir/deeper/file; ln new/dir/deeper/file new/twin
ln -s ../keep new/link; printf 'tiny2' > a/tiny
mv keep/link keep/link2
echo more >> keep/capped; setfattr -n security.capability -v $CAP keep/capped # as before, the data not
cd /
"$CKPT" -s -n s2 "$MNT" >/dev/null || fail "taking s2"
"$SEND" -p p1 s2 "$MNT" > "$WORK/s2.incr" || fail "lfs-send -p p1 s2"
"$SEND" s2 "$MNT" > "$WORK/s2.full" || fail "lfs-send s2"
incr=$(stat -c %s "$WORK/s2.incr"); full=$(stat -c %s "$WORK/s2.full")
[ "$incr" -lt $((full / 2)) ] || fail "the incremental stream ($incr bytes) is not much smaller than the full one ($full)"
"$RECV" -n < "$WORK/s2.incr" || fail "lfs-receive -n refused the incremental stream"

# the wrong parents: the target's own snapshot p1, one received from another filesystem
mkdir "$MNT3/p1tree"; echo other > "$MNT3/p1tree/f"
"$CKPT" -s -n p1 "$MNT3" >/dev/null || fail "a p1 of the third filesystem"
"$SEND" p1 "$MNT3" > "$WORK/other-p1.full" || fail "lfs-send of the third filesystem's p1"
for target in "$MNT3" other; do
	if [ "$target" = other ]; then
		fusermount3 -u "$MNT3"; wait "$PID3"; PID3=
		"$MKFS" -f -s 256M "$IMG3" >/dev/null
		"$LFS" -f -o nocleaner,noatime "$IMG3" "$MNT3" 2>>"$WORK/daemon3.log" &
		PID3=$!
		wait_mounted "$PID3" "$MNT3" "$WORK/daemon3.log"
		"$RECV" "$MNT3" < "$WORK/other-p1.full" || fail "receiving the other p1"
	fi
	snaps "$MNT3" > "$WORK/ckpt.before"
	"$top_builddir/lfs/lfs-tune" -l "$IMG3" 2>/dev/null | grep features > "$WORK/sb.before"
	"$PY" "$WALK" "$MNT3" > "$WORK/live.before"
	"$RECV" "$MNT3" < "$WORK/s2.incr" 2>"$WORK/err" && fail "a stream for another p1 was received ($target)"
	grep -q "has no snapshot received from it" "$WORK/err" || fail "lfs-receive said: $(cat "$WORK/err")"
	snaps "$MNT3" > "$WORK/ckpt.after"
	"$top_builddir/lfs/lfs-tune" -l "$IMG3" 2>/dev/null | grep features > "$WORK/sb.after"
	"$PY" "$WALK" "$MNT3" > "$WORK/live.after"
	# no receive began: the image did not take the received feature
	cmp -s "$WORK/sb.before" "$WORK/sb.after" || fail "the refused receive changed the superblock ($target)"
	cmp -s "$WORK/ckpt.before" "$WORK/ckpt.after" || fail "the refused receive changed the checkpoints ($target)"
	cmp -s "$WORK/live.before" "$WORK/live.after" || fail "the refused receive changed the live tree ($target)"
done

# the right parent, a stream cut short: nothing received, the target as it was
snaps "$MNT2" > "$WORK/ckpt.before"
"$PY" "$WALK" "$MNT2" > "$WORK/live.before"
head -c $((incr / 2)) "$WORK/s2.incr" | "$RECV" "$MNT2" 2>"$WORK/err" && fail "a cut incremental stream was received"
grep -q "nothing received" "$WORK/err" || fail "lfs-receive said: $(cat "$WORK/err")"
snaps "$MNT2" > "$WORK/ckpt.after"
"$PY" "$WALK" "$MNT2" > "$WORK/live.after"
cmp -s "$WORK/ckpt.before" "$WORK/ckpt.after" || fail "a cut incremental stream changed the checkpoints"
cmp -s "$WORK/live.before" "$WORK/live.after" || fail "a cut incremental stream changed the live tree"

# the right parent, a crafted stream (a REF's name changed, every crc
# sealed again): refused as not fitting the parent, nothing received
"$PY" - "$WORK/s2.incr" "$WORK/bad.incr" <<'EOF'
import struct, sys, zlib
b = bytearray(open(sys.argv[1], "rb").read())
at, n, crc, done = 0, 0, 0, False
while at < len(b):
	t, l = struct.unpack_from("<H", b, at)[0], struct.unpack_from("<I", b, at + 4)[0]
	p = at + 16
	if t == 7 and not done and l > 16:  # a REF with a name: its first byte changed
		b[p + 16] ^= 0x20
		done = True
	if t == 6:
		struct.pack_into("<QQI", b, p, n, at, crc)
	struct.pack_into("<I", b, at + 12, zlib.crc32(bytes(b[at:at + 12]) + bytes(b[p:p + l])))
	crc = zlib.crc32(bytes(b[at:p + l]), crc)
	at, n = p + l, n + 1
assert done
open(sys.argv[2], "wb").write(b)
EOF
"$RECV" "$MNT2" < "$WORK/bad.incr" 2>"$WORK/err" && fail "a crafted incremental stream was received"
grep -q "not in the target's parent" "$WORK/err" || fail "lfs-receive said: $(cat "$WORK/err")"
snaps "$MNT2" > "$WORK/ckpt.after"
cmp -s "$WORK/ckpt.before" "$WORK/ckpt.after" || fail "a crafted incremental stream changed the checkpoints"

# the right parent: the received s2 is the source's
"$RECV" -v "$MNT2" < "$WORK/s2.incr" > "$WORK/recv.out" 2>&1 || fail "lfs-receive of the incremental stream: $(cat "$WORK/recv.out")"
uuid=$("$top_builddir/lfs/lfs-tune" -l "$IMG" | awk '$1 == "uuid" { print $2 }')
"$CKPT" -l "$MNT2" | grep " received " | matches "s2  from $uuid" || fail "lfs-ckpt -l shows: $("$CKPT" -l "$MNT2" | tail -3)"

# s3, sent from s2 (itself received as changes): names swapped, a directory
# nesting turned inside out, a file replaced by a directory of its name, a
# file deleted and another made at its name, a file moved out of a
# directory deleted, a new name for a file that lost the one REF'd
cd "$MNT"
mkdir -p x/in y/in n1/n2 doomed; echo x > x/in/f; echo y > y/in/f; echo out > doomed/out; echo r > replaced
cd /
"$CKPT" -s -n s2b "$MNT" >/dev/null || fail "taking s2b"
"$SEND" -p s2 s2b "$MNT" | "$RECV" "$MNT2" || fail "receiving s2b (from s2)"
cd "$MNT"
mv x tmp; mv y x; mv tmp y                      # two directories' names swapped
mv n1/n2 n2; mv n1 n2/n1                          # nesting inside out
rm replaced; mkdir replaced; echo in > replaced/f # a file replaced by a directory
rm a/tiny; echo reborn > a/tiny                   # deleted, made again
mv doomed/out kept-out; rm -r doomed              # moved out of a directory deleted
ln a/h3 new/h5; rm a/h3                           # keep/h1 d/h4 new/h5 remain
cd /
"$CKPT" -s -n s3 "$MNT" >/dev/null || fail "taking s3"
"$SEND" -p s2b s3 "$MNT" > "$WORK/s3.incr" || fail "lfs-send -p s2b s3"
"$RECV" "$MNT2" < "$WORK/s3.incr" 2>"$WORK/err" || fail "receiving s3: $(cat "$WORK/err")"

# rounds of random changes (tree_mutate.py, fixed seeds), each sent from the last
prev=s3 rounds=
for r in 1 2 3 4 5 6; do
	"$PY" "$top_srcdir/tests/integration/tree_mutate.py" "$MNT" "$r" 60 || fail "tree_mutate.py round $r"
	"$CKPT" -s -n "r$r" "$MNT" >/dev/null || fail "taking r$r"
	"$SEND" -p "$prev" "r$r" "$MNT" > "$WORK/r.incr" || fail "lfs-send -p $prev r$r"
	"$RECV" "$MNT2" < "$WORK/r.incr" 2>"$WORK/err" || fail "receiving r$r: $(cat "$WORK/err")"
	prev=r$r rounds="$rounds r$r"
done
fusermount3 -u "$MNT2"; wait "$PID2"; PID2=
fusermount3 -u "$MNT"; wait "$LFS_PID"; LFS_PID=
for s in s2 s3 $rounds; do
	walk $s "$IMG" > "$WORK/want"
	walk $s "$IMG2" > "$WORK/got"
	diff "$WORK/want" "$WORK/got" > "$WORK/diff" || { head -20 "$WORK/diff"; fail "the received $s differs from the source's"; }
done
walk p1 "$IMG" > "$WORK/want1"
walk p1 "$IMG2" > "$WORK/got1"
diff "$WORK/want1" "$WORK/got1" >/dev/null || fail "p1 on the target changed"
"$FSCK" "$IMG2" > "$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs of the target"; }

# the size follows the change: 256 scattered 4 KiB blocks (1 MiB) of a 256 MiB file
lfs_mount noatime
head -c 256M /dev/zero | tr '\0' 'a' > "$MNT/huge"
"$CKPT" -s -n h1 "$MNT" >/dev/null || fail "taking h1"
"$PY" - "$MNT/huge" <<'EOF'
import os, random, sys
fd = os.open(sys.argv[1], os.O_WRONLY)
r = random.Random(39)
for blk in r.sample(range(65536), 256):
	os.pwrite(fd, os.urandom(4096), blk * 4096)
os.fsync(fd); os.close(fd)
EOF
"$CKPT" -s -n h2 "$MNT" >/dev/null || fail "taking h2"
hsize=$("$SEND" -p h1 h2 "$MNT" | wc -c)
[ "$hsize" -lt $((2 * 1048576)) ] || fail "1 MiB of scattered overwrites sent $hsize bytes"
[ "$hsize" -ge 1048576 ] || fail "1 MiB of overwrites sent only $hsize bytes"
echo "incr.sh: s2 received alike from a $incr-byte stream (full: $full); wrong parents refused; 1 MiB scattered in 256 MiB sent $hsize bytes"
