#!/bin/bash
# cli.sh — what every program answers alike (lfs/tools/tool.h): -h/--help print
# the usage on stdout with status 0, -V/--version the version, a bad
# option the usage on stderr with a non-zero status; every failure gives
# a message.  mkfs.lfs states the minimum size, removes an image it
# created when it fails, and has -q, -n and -U; fsck.lfs says nothing
# alarming about a healthy image after a crash and names the path of a
# damaged file.
. "$(dirname "$0")/lib.sh"

FSCK="$top_builddir/ckpt/fsck.lfs"
DUMPLFS="$top_builddir/ckpt/dumplfs"
# PROGRAMS is the list of every installed program (tool path, name)
PROGRAMS="lfs/mkfs.lfs ckpt/fsck.lfs ckpt/dumplfs ckpt/lfs-ckpt cleaner/lfs_cleanerd"
for extra in lfs/lfs-tune lfs/lfs-resize cleaner/lfs-clean lfs/lfs-probe lfs/daemon/mount.fuse.lfs; do
	[ -x "$top_builddir/$extra" ] && PROGRAMS="$PROGRAMS $extra"
done

for p in $PROGRAMS; do
	prog="$top_builddir/$p"
	name=$(basename "$p")
	for h in -h --help; do
		out=$("$prog" $h 2>&1) || fail "$name $h: status $?"
		[[ "$out" == usage:* ]] || fail "$name $h does not start with usage: '$out'"
	done
	for v in -V --version; do
		out=$("$prog" $v) || fail "$name $v: status $?"
		[[ "$out" =~ ^$name\ [0-9]+\.[0-9]+\.[0-9]+ ]] || fail "$name $v printed '$out'"
	done
	rc=0; "$prog" --no-such-option >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ $rc != 0 ] || fail "$name accepts --no-such-option"
	[ ! -s "$WORK/out" ] || fail "$name --no-such-option wrote to stdout"
	grep -q "usage:" "$WORK/err" || fail "$name --no-such-option: no usage on stderr"
	# lfs-probe without operands scans every device, as blkid does
	if [ "$name" != lfs-probe ]; then
		rc=0; "$prog" >/dev/null 2>"$WORK/err" || rc=$?
		[ $rc != 0 ] && grep -q "usage:" "$WORK/err" || fail "$name without operands: status $rc, no usage"
	fi
	echo "ok $name: -h --help -V --version, bad option (status $rc)"
done
# the daemon, whose options libfuse parses
"$LFS" --help | matches "^usage: lfs" || fail "lfs --help"
"$LFS" -V | grep -Eq "^lfs [0-9]+\.[0-9]+" || fail "lfs -V"

# a failure is never silent: a directory that is no lfs mount
for cmd in "$top_builddir/cleaner/lfs_cleanerd /tmp" "$top_builddir/cleaner/lfs_cleanerd --status /tmp" \
	   "$top_builddir/ckpt/lfs-ckpt -c /tmp" "$FSCK /tmp" "$DUMPLFS /nonexistent"; do
	rc=0; $cmd >/dev/null 2>"$WORK/err" || rc=$?
	[ $rc != 0 ] || fail "$cmd: status 0"
	[ -s "$WORK/err" ] || fail "$cmd: status $rc and no message"
	echo "ok $cmd: status $rc, '$(head -1 "$WORK/err")'"
done

# mkfs.lfs: the minimum size, and nothing left behind
rc=0; "$MKFS" -s 1M "$WORK/small.img" 2>"$WORK/err" || rc=$?
[ $rc = 1 ] || fail "mkfs.lfs -s 1M: status $rc"
grep -Eq "needs at least [0-9]+ bytes" "$WORK/err" || { cat "$WORK/err"; fail "mkfs.lfs: no minimum size"; }
[ ! -e "$WORK/small.img" ] || fail "mkfs.lfs left the image it created behind"
min=$(grep -Eo "at least [0-9]+" "$WORK/err" | grep -Eo "[0-9]+")
"$MKFS" -q -s "$min" "$WORK/small.img" >"$WORK/out" || fail "mkfs.lfs at the minimum it stated ($min)"
[ ! -s "$WORK/out" ] || fail "mkfs.lfs -q printed: $(cat "$WORK/out")"
"$FSCK" "$WORK/small.img" >/dev/null || fail "fsck of the smallest image"
rm "$WORK/small.img"
if "$MKFS" -q -s $((min - 4096)) "$WORK/small.img" 2>/dev/null; then fail "mkfs.lfs below the minimum"; fi
[ ! -e "$WORK/small.img" ] || fail "mkfs.lfs left the image it created behind"
echo "ok mkfs.lfs: minimum $min bytes stated and exact, nothing left behind, -q quiet"
# -n: says, writes nothing
"$MKFS" -n -s 64M "$WORK/dry.img" | matches "would make" || fail "mkfs.lfs -n output"
[ ! -e "$WORK/dry.img" ] || fail "mkfs.lfs -n created the image"
head -c 1M /dev/zero > "$WORK/zero.img"
truncate -s 64M "$WORK/zero.img"
sum=$(md5sum < "$WORK/zero.img")
"$MKFS" -n "$WORK/zero.img" >/dev/null || fail "mkfs.lfs -n on an existing file"
[ "$sum" = "$(md5sum < "$WORK/zero.img")" ] || fail "mkfs.lfs -n wrote to the image"
echo "ok mkfs.lfs -n writes nothing"
# -U
uuid=0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0
"$MKFS" -q -U "$uuid" "$WORK/zero.img" || fail "mkfs.lfs -U"
"$DUMPLFS" "$WORK/zero.img" | matches "uuid  *$uuid" || fail "mkfs.lfs -U: uuid not in the superblock"
if "$MKFS" -q -f -U not-a-uuid "$WORK/zero.img" 2>/dev/null; then fail "mkfs.lfs -U not-a-uuid accepted"; fi
echo "ok mkfs.lfs -U"

# fsck.lfs: a healthy image after a crash needs roll-forward, which is
# not a problem to shout about
mkfs_img 64M
lfs_mount
mkdir -p "$MNT/dir/sub"
echo small > "$MNT/dir/other"
# fsync writes a partial segment, no checkpoint: the next open rolls forward
head -c 300000 /dev/urandom | dd of="$MNT/dir/sub/victim" bs=64k conv=fsync status=none
ino=$(stat -c %i "$MNT/dir/sub/victim")
kill -9 "$LFS_PID"; wait "$LFS_PID" 2>/dev/null || true; LFS_PID=
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
"$FSCK" "$IMG" >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "fsck after kill -9"; }
[ "$(wc -l < "$WORK/out")" = 1 ] || { cat "$WORK/out"; fail "fsck of a healthy image said more than its summary"; }
grep -q ": 0 problems" "$WORK/out" || fail "fsck summary: $(cat "$WORK/out")"
"$FSCK" -v "$IMG" >"$WORK/out" 2>&1 || fail "fsck -v after kill -9"
grep -q "recovery: rolled forward" "$WORK/out" || fail "fsck -v does not say what recovery did"
echo "ok fsck.lfs after kill -9: $(cat "$WORK/out")"
# a damaged data block of /dir/sub/victim, behind a checkpoint (in the
# log after it, roll-forward would stop before the file): fsck names it
lfs_mount
lfs_umount
addr=$("$DUMPLFS" -j -s "$IMG" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
ino = int(sys.argv[1])
print([b["block"] for s in d["segments"] for p in s["pseg_list"] if not p["stale"]
       for b in p.get("blocks", []) if b["kind"] == "DATA" and b["ino"] == ino][0])' "$ino")
dd if=/dev/urandom of="$IMG" bs=4096 seek="$addr" count=1 conv=notrunc status=none
rc=0; "$FSCK" "$IMG" >"$WORK/out" 2>&1 || rc=$?
[ $rc = 4 ] || { cat "$WORK/out"; fail "fsck of a damaged file: status $rc"; }
grep -q "inode $ino (/dir/sub/victim)" "$WORK/out" || { cat "$WORK/out"; fail "fsck does not name /dir/sub/victim"; }
echo "ok fsck.lfs names the damaged file: $(grep -m1 victim "$WORK/out")"
