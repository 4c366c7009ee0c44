#!/bin/bash
# resize_shrink.sh — lfs-resize grows and shrinks, unmounted and mounted
# (through the daemon), as nilfs-resize does: the data verified by
# checksum and fsck.lfs clean after each; the image file cut or extended
# to the new size; a resize to the size it has exits 0; a shrink the
# data would not fit is refused before anything changes, its message
# naming the sizes; a shrink while a writer runs loses no write; a shrink
# with a snapshot whose blocks lie in the tail keeps the snapshot whole;
# a cleaner running follows each resize without a restart.
. "$(dirname "$0")/lib.sh"

RESIZE="$top_builddir/lfs/lfs-resize"
FSCK="$top_builddir/ckpt/fsck.lfs"
CKPT="$top_builddir/ckpt/lfs-ckpt"
sums() { (cd "$1" && find . -type f | sort | xargs -r md5sum); }
fsck_clean() {
	"$FSCK" "$IMG" >"$WORK/fsck" 2>&1 || { cat "$WORK/fsck"; fail "fsck after $1"; }
	[ "$(wc -l < "$WORK/fsck")" = 1 ] || { cat "$WORK/fsck"; fail "fsck after $1 says more than its summary"; }
}
size_is() { [ "$(stat -c %s "$IMG")" = $(($1 << 20)) ] || fail "$2: image is $(stat -c %s "$IMG") bytes, not $1 MiB"; }
# df's size of the mount, in MiB
df_mib() { echo $(( $(stat -f -c '%b * %S' "$MNT") >> 20 )); }

# moved N: the blocks lfs-resize's message says it moved, at least N
moved() {
	local m
	m=$(sed -n 's/.*, \([0-9]*\) blocks moved.*/\1/p' "$WORK/out")
	[ "${m:-0}" -ge "$1" ] || { cat "$WORK/out"; fail "only ${m:-0} blocks moved, not $1 or more"; }
}

# --- unmounted: shrink 256M -> 96M, 50 MiB of data in segments 100-150,
# past the new end: the log filled to there, the older files deleted
mkfs_img 256M
lfs_mount
mkdir -p "$MNT/d"
for i in $(seq 150); do head -c 1M /dev/urandom > "$MNT/d/f$i"; done
for i in $(seq 100); do rm "$MNT/d/f$i"; done
sums "$MNT" > "$WORK/sums"
lfs_umount
before=$(md5sum < "$IMG")
"$RESIZE" -n "$IMG" 96M | matches "would shrink" || fail "lfs-resize -n 96M"
[ "$before" = "$(md5sum < "$IMG")" ] || fail "lfs-resize -n changed the image"
"$RESIZE" "$IMG" 96M >"$WORK/out" || { cat "$WORK/out"; fail "lfs-resize 96M (unmounted): status $?"; }
matches "shrunk from 256 to 96 MiB" <"$WORK/out" || { cat "$WORK/out"; fail "lfs-resize 96M said"; }
size_is 96 "shrinking unmounted"
moved $((40 << 8))
fsck_clean "shrinking unmounted"
lfs_mount
sums "$MNT" | diff - "$WORK/sums" || fail "data changed by the unmounted shrink"
[ "$(df_mib)" -lt 96 ] || fail "df says $(df_mib) MiB after shrinking to 96M"
lfs_umount
echo "ok unmounted shrink 256M -> 96M: data intact, fsck clean, image cut ($(cat "$WORK/out"))"

# --- the size it has: exit 0, unmounted and mounted
"$RESIZE" "$IMG" 96M >"$WORK/out" || fail "lfs-resize to the size it has (unmounted): status $?"
matches "nothing to do" <"$WORK/out" || fail "lfs-resize to the size it has said: $(cat "$WORK/out")"
lfs_mount
"$RESIZE" "$MNT" 96M >"$WORK/out" || fail "lfs-resize to the size it has (mounted): status $?"
matches "nothing to do" <"$WORK/out" || fail "lfs-resize to the size it has (mounted) said: $(cat "$WORK/out")"
echo "ok a resize to the size it has exits 0, unmounted and mounted"

# --- mounted: refused when the data would not fit, nothing changed
rc=0; "$RESIZE" "$MNT" 40M 2>"$WORK/err" || rc=$?
[ $rc = 1 ] || fail "shrinking below the data: status $rc"
grep -q "the data would not fit: .* MiB in use .* need at least [0-9]* bytes" "$WORK/err" ||
	{ cat "$WORK/err"; fail "the refusal does not name the sizes"; }
size_is 96 "a refused shrink"
sums "$MNT" | diff - "$WORK/sums" || fail "data changed by a refused shrink"
echo "ok a shrink the data would not fit is refused: $(cat "$WORK/err")"

# --- mounted: grow by the image path, then shrink by the mount point
"$RESIZE" "$IMG" 200M >"$WORK/out" || { cat "$WORK/out"; fail "lfs-resize 200M (mounted): status $?"; }
size_is 200 "growing mounted"
[ "$(df_mib)" -gt 150 ] || fail "df says $(df_mib) MiB after growing to 200M"
# the log goes on through 100 segments, past the old end: every tenth
# file kept, some of them in the tail
for i in $(seq 100); do head -c 1M /dev/urandom > "$MNT/g$i" || fail "writing into the grown room"; done
sync -f "$MNT"
for i in $(seq 100); do [ $((i % 10)) = 0 ] || rm "$MNT/g$i"; done
sums "$MNT" > "$WORK/sums"
"$RESIZE" "$MNT" 100M >"$WORK/out" || { cat "$WORK/out"; fail "lfs-resize 100M (mounted): status $?"; }
matches "shrunk from 200 to 100 MiB" <"$WORK/out" || { cat "$WORK/out"; fail "lfs-resize 100M said"; }
size_is 100 "shrinking mounted"
moved $((5 << 8))
[ "$(df_mib)" -lt 100 ] || fail "df says $(df_mib) MiB after shrinking to 100M"
sums "$MNT" | diff - "$WORK/sums" || fail "data changed by the mounted shrink"
lfs_umount
fsck_clean "growing and shrinking mounted"
lfs_mount
sums "$MNT" | diff - "$WORK/sums" || fail "data after a remount"
echo "ok mounted grow 96M -> 200M and shrink -> 100M: data intact, fsck clean"

# --- mounted: shrink while a writer runs; every write it finished is there
rm -f "$MNT"/g*
sync -f "$MNT"
"$RESIZE" "$IMG" 200M >/dev/null || fail "growing again"
# again data past the new end, for the shrink to move while the writer writes
for i in $(seq 100); do head -c 1M /dev/urandom > "$MNT/h$i" || fail "writing before the shrink"; done
sync -f "$MNT"
for i in $(seq 100); do [ $((i % 10)) = 0 ] || rm "$MNT/h$i"; done
sums "$MNT" > "$WORK/sums"
(
	set +e
	for i in $(seq 200); do
		head -c 64K /dev/urandom > "$MNT/w.tmp" || exit 1
		mv "$MNT/w.tmp" "$MNT/d/w$i" || exit 1
		md5sum < "$MNT/d/w$i" > "$WORK/w$i.sum" || exit 1
	done
) & writer=$!
"$RESIZE" "$MNT" 120M >"$WORK/out" || { cat "$WORK/out"; kill $writer; fail "shrinking under writes: status $?"; }
wait $writer || fail "the writer failed during the shrink"
for i in $(seq 200); do
	md5sum < "$MNT/d/w$i" | cmp -s - "$WORK/w$i.sum" || fail "write $i lost or changed by the shrink"
done
size_is 120 "shrinking under writes"
moved 256
sums "$MNT" | grep -v ' ./d/w[0-9]*$' | diff - "$WORK/sums" || fail "data changed by the shrink under writes"
lfs_umount
fsck_clean "shrinking under writes"
echo "ok shrink 200M -> 120M while a writer wrote 200 files: none lost, fsck clean ($(cat "$WORK/out"))"

# --- a snapshot whose blocks lie in the tail
rm -f "$IMG"
mkfs_img 128M
lfs_mount
# the log moves on past 40 segments, then 60 files fill it to about
# segment 100, past the new end (the tail from segment 94); the snapshot
# keeps the newest 30 files, deleted from the live tree
for i in $(seq 40); do head -c 1M /dev/urandom > "$MNT/x$i"; done
sync -f "$MNT"
rm "$MNT"/x*
for i in $(seq 60); do head -c 1M /dev/urandom > "$MNT/s$i"; done
sums "$MNT" > "$WORK/snapsums"
"$CKPT" -s -n keep "$MNT" >/dev/null || fail "making a snapshot"
for i in $(seq 31 60); do rm "$MNT/s$i"; done
sums "$MNT" > "$WORK/sums"
# refused below what the files and the snapshot's hold together need,
# the snapshot's share named
rc=0; "$RESIZE" "$MNT" 64M 2>"$WORK/err" || rc=$?
[ $rc = 1 ] && grep -qE "in use \((29|30|31) MiB of it held for snapshots" "$WORK/err" ||
	{ cat "$WORK/err"; fail "a shrink below the snapshot's blocks: status $rc, its share not named"; }
"$RESIZE" "$MNT" 100M >"$WORK/out" || { cat "$WORK/out"; fail "shrinking with a snapshot: status $?"; }
size_is 100 "shrinking with a snapshot"
moved $((2 << 8))
sums "$MNT" | diff - "$WORK/sums" || fail "live data after shrinking with a snapshot"
snap_setup
snap_mount keep
sums "$SNAP" | diff - "$WORK/snapsums" || fail "the snapshot after the shrink (mounted beside)"
snap_umount
lfs_umount
fsck_clean "shrinking with a snapshot"
# the blocks only the snapshot reads were copied out of the tail
held=$("$top_builddir/ckpt/dumplfs" -s "$IMG" | grep -c "kind=HELD" || true)
[ "$held" -gt 0 ] || fail "no block only the snapshot reads was moved (no HELD copy in the log)"
snap_mount keep
sums "$SNAP" | diff - "$WORK/snapsums" || fail "the snapshot after the shrink (mounted alone)"
snap_umount
echo "ok shrink 128M -> 100M with a snapshot holding 30 MiB deleted since, part of it in the tail ($held HELD copies): snapshot and live data intact ($(cat "$WORK/out"))"

# --- with a cleaner: it follows the resizes (the segments it reads and
# cleans), without being restarted
rm -f "$IMG"
mkfs_img 64M
printf 'protection_period 0\ncheckpoint_protection 0\ncleaning_interval 0.2\n' > "$WORK/cleaner.conf"
lfs_mount_cleaner "$WORK/cleaner.conf"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
cleaner_pid() { "$CLEANERD" --status "$MNT" | sed -n 's/^  cleaner *running (pid \([0-9]*\)).*/\1/p'; }
# until_log TEXT: polls the daemon's log (the cleaner's wake-ups are
# 0.2 s apart) until TEXT is there; a minute without is a hang
until_log() {
	for _ in $(seq 1 600); do
		grep -qF "$1" "$WORK/daemon.log" && return 0
		sleep 0.1
	done
	fail "the log never said '$1'"
}
until_log "lfs_cleanerd: cleaning"
pid=$(cleaner_pid)
[ -n "$pid" ] || fail "no cleaner running"
"$RESIZE" "$MNT" 128M >/dev/null || fail "growing with a cleaner"
until_log "the filesystem was resized: 126 segments, 62 before"
"$RESIZE" "$MNT" 96M >/dev/null || fail "shrinking with a cleaner"
until_log "the filesystem was resized: 94 segments, 126 before"
[ "$(cleaner_pid)" = "$pid" ] || fail "the cleaner was restarted (pid $pid, now $(cleaner_pid))"
lfs_umount
fsck_clean "resizing with a cleaner"
echo "ok the cleaner (pid $pid) follows a grow 64M -> 128M and a shrink -> 96M"
