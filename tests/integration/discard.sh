#!/bin/bash
# discard.sh — space given back to the host (lfs(8), DISCARD): fill an
# image to 80% with 256 KiB files, delete three of every four (every
# segment keeps a quarter live), let the cleaner run, then fstrim(8):
# the image's allocation on the host (du) falls by at least half of
# what was deleted; the files left read back, fsck.lfs is clean.  The
# same with -o discard (the segments go back as checkpoints free them,
# the last ones at unmount), and FITRIM from a user other than root is
# refused (EPERM, as ext4 asks CAP_SYS_ADMIN).  Checkpoints are not kept
# here (checkpoint_protection 0): what is deleted is what goes back.
. "$(dirname "$0")/lib.sh"

FSCK="$top_builddir/ckpt/fsck.lfs"
CLEAN="$top_builddir/cleaner/lfs-clean"
command -v fstrim >/dev/null || skip "fstrim (util-linux) is missing"
cat > "$WORK/cleaner.conf" <<CONF
min_clean_segments 75
max_clean_segments 95
protection_period 0
checkpoint_protection 0
cleaning_interval 0.1
segments_per_clean 16
CONF

alloc() { du -k --block-size=1 "$IMG" | cut -f1; }
status() { "$LFS_CLEANERD" --status --json "$MNT" | "$PY" -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }

# fill NAME-PREFIX: 80% of what df offers, in 256 KiB files of random
# bytes, fsynced; their sums in $WORK/sums
fill() {
	local blocks bsize n
	read -r blocks bsize < <(stat -f -c '%b %S' "$MNT")
	n=$((blocks * bsize * 80 / 100 / 262144))
	NFILES=$n
	for i in $(seq 1 "$n"); do
		head -c 262144 /dev/urandom > "$MNT/f$i"
	done
	sync -f "$MNT"
	(cd "$MNT" && sha256sum f*) > "$WORK/sums"
}

# delete three of every four files; DELETED: their bytes
delete() {
	DELETED=0
	for i in $(seq 1 "$NFILES"); do
		if [ $((i % 4)) != 0 ]; then
			rm "$MNT/f$i"
			DELETED=$((DELETED + 262144))
		fi
	done
	awk '{ if (substr($2, 2) % 4 == 0) print }' "$WORK/sums" > "$WORK/kept"
	sync -f "$MNT"
}

# until the cleaner has cleaned what it can: the dirty segments hold no
# more than the live data and a few segments of slack
wait_cleaned() {
	local segs live clean tries=0
	segs=$(status segments)
	while :; do
		live=$(status live_bytes)
		clean=$(status clean)
		[ $((segs - clean)) -le $((live / 1048576 + 8)) ] && break
		[ $((tries += 1)) -lt 300 ] || fail "$1: the cleaner left $((segs - clean)) dirty segments for $((live >> 20)) MiB live"
		"$CLEAN" -n "$MNT" >/dev/null 2>&1 || true
		sleep 0.2
	done
	echo "$1: $((segs - clean)) segments dirty for $((live >> 20)) MiB live after cleaning"
}

check_left() {
	(cd "$MNT" && sha256sum -c --quiet "$WORK/kept") || fail "$1: the files left do not read back"
	[ "$(ls "$MNT" | wc -l)" = "$(wc -l < "$WORK/kept")" ] || fail "$1: files missing or left over"
}

fsck_clean() {
	"$FSCK" "$IMG" > "$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "$1: fsck.lfs"; }
}

# ---- fstrim
mkfs_img 256M
lfs_start "cleaner_conf=$WORK/cleaner.conf"
fill
before=$(alloc)
delete
wait_cleaned fstrim
mid=$(alloc)
out=$(fstrim -v "$MNT") || fail "fstrim: $out"
after=$(alloc)
trimmed=$(sed -n 's/.*(\([0-9]*\) bytes) trimmed.*/\1/p' <<<"$out")
echo "fstrim: $NFILES files, $((DELETED >> 20)) MiB deleted; image allocated $((before >> 20)) MiB, after cleaning $((mid >> 20)) MiB, after fstrim $((after >> 20)) MiB; fstrim said: $out"
[ -n "$trimmed" ] && [ "$trimmed" -gt 0 ] || fail "fstrim reported nothing trimmed: $out"
[ $((before - after)) -ge $((DELETED / 2)) ] ||
	fail "fstrim: the image's allocation fell by $(((before - after) >> 20)) MiB, less than half of the $((DELETED >> 20)) MiB deleted"
grep -q "discard: fstrim gave" "$WORK/daemon.log" || fail "no discard line in the daemon's log"
check_left fstrim
# a user other than root is refused, as ext4 refuses one without CAP_SYS_ADMIN
chmod 755 "$WORK"
if err=$(setpriv --reuid=nobody --regid=nogroup --clear-groups fstrim "$MNT" 2>&1); then
	fail "fstrim by nobody was accepted: $err"
fi
matches "not permitted" <<<"$err" || fail "fstrim by nobody: $err (want EPERM)"
lfs_umount
fsck_clean fstrim

# ---- -o discard: no fstrim; what the cleaner freed goes back by itself
rm -f "$IMG"
mkfs_img 256M
lfs_start "discard,cleaner_conf=$WORK/cleaner.conf"
fill
before=$(alloc)
delete
wait_cleaned "-o discard"
lfs_umount
after=$(alloc)
echo "-o discard: $NFILES files, $((DELETED >> 20)) MiB deleted; image allocated $((before >> 20)) MiB, after unmount $((after >> 20)) MiB"
[ $((before - after)) -ge $((DELETED / 2)) ] ||
	fail "-o discard: the image's allocation fell by $(((before - after) >> 20)) MiB, less than half of the $((DELETED >> 20)) MiB deleted"
grep -q "discard: .* segments .* given back to the storage since mount" "$WORK/daemon.log" ||
	fail "no discard summary in the daemon's log"
fsck_clean "-o discard"
lfs_start "nocleaner"
check_left "-o discard"
lfs_umount

# ---- a block device: BLKDISCARD on a loop device over the image, which
# the loop driver turns into holes in its file
command -v losetup >/dev/null || skip "losetup (util-linux) is missing"
rm -f "$IMG"
truncate -s 128M "$WORK/back"
LOOP=$(losetup -f --show "$WORK/back") || skip "no loop device"
trap 'rc=$?; cd /; [ -z "$LFS_PID" ] || { fusermount3 -u "$MNT" 2>/dev/null; wait "$LFS_PID"; LFS_PID=; }; losetup -d "$LOOP"; set +e; (exit $rc); cleanup' EXIT INT TERM
IMG=$LOOP
mkfs_img 128M
lfs_start "nocleaner"
head -c 4194304 /dev/urandom > "$WORK/keep"
cp "$WORK/keep" "$MNT/keep"
head -c 62914560 /dev/urandom > "$MNT/del"
sync -f "$MNT"
before=$(du -k --block-size=1 "$WORK/back" | cut -f1)
rm "$MNT/del"
out=$(fstrim -v "$MNT") || fail "fstrim on $LOOP: $out"
after=$(du -k --block-size=1 "$WORK/back" | cut -f1)
echo "BLKDISCARD on $LOOP: 60 MiB deleted; its file allocated $((before >> 20)) MiB, after fstrim $((after >> 20)) MiB"
[ $((before - after)) -ge $((30 << 20)) ] || fail "BLKDISCARD: the loop device's file fell by $(((before - after) >> 20)) MiB only"
lfs_umount
fsck_clean "loop device"
lfs_start "nocleaner"
cmp "$WORK/keep" "$MNT/keep" || fail "loop device: the file left does not read back"
lfs_umount
exit 0
