#!/bin/bash
# crash_kill.sh — kill -9 of the daemon during workloads on real mounts.
#  1. One writer fsyncing files; remount; every file whose fsync returned
#     is there, intact, and fsck.lfs finds nothing wrong.
#  2. The same with four writers fsyncing at once and checkpoints asked
#     for meanwhile (syncfs): the fsyncs share flushes and write the log
#     with the daemon's lock released, and checkpoints wait for the disk
#     between their steps, so the crash lands in those windows too.
#  3. Large files overwritten at random with the cleaner busy: their
#     fsyncs write relink records, which roll forward.
# The kill comes after a random number of fsyncs have returned (never
# after a time: on a loaded machine a time may pass with none).
. "$(dirname "$0")/crash_lib.sh"

# the kill comes after 1 to KILL_AFTER fsyncs per writer (at least 5 of
# the four writers: one of them then has a file fsynced before the last)
KILL_AFTER=${CRASH_KILL_AFTER:-100}

# wait_fsyncs N PATTERN FILES...: until the workload's logs FILES hold N
# lines matching PATTERN together (fsyncs that returned); fails if the
# daemon or every workload process (the PIDS in workload) ended first
wait_fsyncs() {
	local want=$1 pat=$2 p alive
	shift 2
	until [ "$(cat "$@" | grep -c "$pat")" -ge "$want" ]; do
		kill -0 "$LFS_PID" 2>/dev/null || { tail -20 "$WORK/daemon.log"; fail "the daemon ended before the kill"; }
		alive=
		for p in $workload; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ -n "$alive" ] || fail "the workload ended before $want fsyncs"
		sleep 0.02
	done
}

# every file LIST names (path md5) is there with that content; counts in n
check_synced() {
	local f sum
	while read -r f sum; do
		[ -f "$f" ] || fail "round $round: fsynced $f is missing after kill -9"
		[ "$(md5sum < "$f" | cut -d' ' -f1)" = "$sum" ] || fail "round $round: $f has wrong content"
		n=$((n + 1))
	done < "$1"
}

# kill_daemon PIDS...: kill -9 of the daemon, then wait for PIDS (the
# workload, which fails once the mount is gone) and take the dead mount
# away
kill_daemon() {
	kill -9 "$LFS_PID"
	wait "$LFS_PID" 2>/dev/null || true
	LFS_PID=
	local p
	for p in "$@"; do wait "$p" 2>/dev/null || true; done
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
}

mkfs_img 256M
for round in 1 2 3; do
	lfs_mount
	: > "$WORK/synced"
	(
		i=0
		while :; do
			f="$MNT/r$round-$i"
			head -c $(( (RANDOM % 64 + 1) * 1024 )) /dev/urandom > "$WORK/src" || exit 0
			dd if="$WORK/src" of="$f" bs=64k conv=fsync status=none 2>/dev/null || exit 0
			echo "$f $(md5sum < "$WORK/src" | cut -d' ' -f1)" >> "$WORK/synced"
			i=$((i + 1))
		done
	) &
	workload=$!
	wait_fsyncs $(( RANDOM % KILL_AFTER + 1 )) . "$WORK/synced"
	kill_daemon "$workload"
	# the last line may name a file whose fsync did not complete
	sed -i '$d' "$WORK/synced"
	lfs_mount
	n=0
	check_synced "$WORK/synced"
	lfs_umount
	"$FSCK" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after kill -9 round $round"; }
	echo "kill -9 round $round: $n fsynced files intact; $(tail -1 "$WORK/fsck.out")"
done

# one writer of files r<round>-w<w>-<i>, each fsynced, listed once synced
writer() {
	local round=$1 w=$2 i=0 f
	while :; do
		f="$MNT/r$round-w$w-$i"
		head -c $(( (RANDOM % 64 + 1) * 1024 )) /dev/urandom > "$WORK/src.$w" || exit 0
		dd if="$WORK/src.$w" of="$f" bs=64k conv=fsync status=none 2>/dev/null || exit 0
		echo "$f $(md5sum < "$WORK/src.$w" | cut -d' ' -f1)" >> "$WORK/synced.$w"
		i=$((i + 1))
	done
}
for round in 4 5 6; do
	lfs_mount
	pids=
	for w in 1 2 3 4; do
		: > "$WORK/synced.$w"
		writer "$round" "$w" &
		pids="$pids $!"
	done
	( while sync -f "$MNT" 2>/dev/null; do sleep 0.0$(( RANDOM % 10 )); done ) &
	pids="$pids $!"
	workload=$pids
	wait_fsyncs $(( RANDOM % (4 * KILL_AFTER) + 5 )) . "$WORK"/synced.[1-4]
	kill_daemon $pids
	lfs_mount
	n=0
	for w in 1 2 3 4; do
		sed -i '$d' "$WORK/synced.$w"
		check_synced "$WORK/synced.$w"
	done
	[ "$n" -gt 0 ] || fail "round $round: no file was fsynced before the kill"
	lfs_umount
	"$FSCK" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after kill -9 round $round"; }
	echo "kill -9 round $round, 4 writers and syncfs: $n fsynced files intact; $(tail -1 "$WORK/fsck.out")"
done

# Large files overwritten at random by three processes, each write most
# often fsynced, on a real mount with the cleaner busy, and kill -9:
# their fsyncs write relink records (lfs(5)); after the remount every
# block of every file is a whole version, never older than its last
# fsynced one (tests/crash/overwrites.py).
OVERWRITES="$top_srcdir/tests/crash/overwrites.py"
rm -f "$IMG"
mkfs_img 64M
cat > "$WORK/busy.conf" <<CONF
min_clean_segments 20
max_clean_segments 40
protection_period 0
cleaning_interval 0.1
segments_per_clean 8
CONF
relinked=0
for round in 7 8; do
	: >"$WORK/daemon.log"
	lfs_mount_cleaner "$WORK/busy.conf"
	pids=
	for w in 1 2 3; do
		"$PY" "$OVERWRITES" init "$MNT/big$w" 1536
		: >"$WORK/ow.$w"
		"$PY" "$OVERWRITES" write "$MNT/big$w" "$WORK/ow.$w" "$round$w" &
		pids="$pids $!"
	done
	workload=$pids
	# every writer under way, then the kill
	for w in 1 2 3; do wait_fsyncs 1 '^d' "$WORK/ow.$w"; done
	wait_fsyncs $(( RANDOM % KILL_AFTER + 3 )) '^d' "$WORK"/ow.[1-3]
	kill_daemon $pids
	lfs_mount verbose # the recovery line with its counts
	r=$(sed -n 's/.*, \([0-9]*\) relink records;.*/\1/p' "$WORK/daemon.log" | tail -1)
	relinked=$((relinked + ${r:-0}))
	for w in 1 2 3; do
		"$PY" "$OVERWRITES" check "$MNT/big$w" "$WORK/ow.$w" || fail "round $round: big$w after kill -9"
	done
	lfs_umount
	"$FSCK" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after kill -9 round $round"; }
	echo "kill -9 round $round, 3 writers overwriting large files: $r relink records rolled forward; $(tail -1 "$WORK/fsck.out")"
done
[ "$relinked" -gt 0 ] || fail "no relink record was rolled forward after the kills"

