#!/bin/bash
# crash.sh — crash consistency.
#  1. crashsim: every flush point of recorded workloads, and torn variants,
#     mounted through the real code, fsck'd, fsynced files checked
#     (CRASH_SEEDS seeds; CI runs enough for a few thousand states); and
#     the same from a full filesystem (crashsim -F), where every state must
#     also let every file be deleted; and both with snapshots made and
#     deleted (crashsim -S): a snapshot made is whole in every later state
#     until its deletion, one not made or deleted is absent, and on a full
#     filesystem every snapshot can be deleted after the crash; and large
#     files overwritten after their fsyncs (crashsim -R), whose relink
#     records roll forward and are written by the recovering mount.
#  2. kill -9 of the daemon at random moments during a workload on a real
#     mount; remount; every file whose fsync returned is there, intact,
#     and fsck.lfs finds nothing wrong.
#  3. The same with four writers fsyncing at once and checkpoints asked
#     for meanwhile (syncfs): the fsyncs share flushes and write the log
#     with the daemon's lock released, and checkpoints wait for the disk
#     between their steps, so the crash lands in those windows too.
. "$(dirname "$0")/lib.sh"

SIM="$top_builddir/tests/crash/crashsim"
FSCK="$top_builddir/ckpt/fsck.lfs"
seeds=${CRASH_SEEDS:-10}
# sim NSEEDS ARGS...: crashsim with ARGS for seeds 1..NSEEDS; adds the
# states checked to total and the snapshot views read to views; out is
# the last run's output
sim() {
	local n=$1 s k
	shift
	for s in $(seq 1 "$n"); do
		out=$("$SIM" "$@" -s "$s" 2>"$WORK/sim.err") ||
			{ echo "$out"; grep -v '^lfs: ' "$WORK/sim.err" | tail -30; fail "crashsim $* seed $s"; }
		k=$(echo "$out" | tail -1 | sed -n 's/.* \([0-9]*\) crash states checked.*/\1/p')
		total=$((total + k))
		k=$(echo "$out" | sed -n 's/.* \([0-9]*\) snapshot views read.*/\1/p')
		[ "$1" != -S ] || [ "${k:-0}" -gt 0 ] || fail "crashsim $* seed $s read no snapshot"
		views=$((views + ${k:-0}))
	done
}
total=0 views=0
sim "$seeds" -n 1500 -t 4
echo "crashsim: $total crash states checked over $seeds seeds, all consistent with every fsynced file"
# near full: the workload starts at ENOSPC and deletes its way on; every
# state must also let every file be deleted
total=0
sim $(( (seeds + 2) / 3 )) -F -n 1500 -t 3
echo "crashsim -F: $total crash states of a full filesystem checked, all consistent, all files deletable"
# snapshots made and deleted during the workload
total=0 views=0
sim $(( (seeds + 1) / 2 )) -S -n 1500 -t 3
sim $(( (seeds + 9) / 10 )) -F -S -n 500 -t 2
echo "crashsim -S: $total crash states with snapshots checked, $views snapshot trees read back, all whole or absent as they must be"
# large files overwritten after their fsyncs: relink records, chained,
# between plain flushes and checkpoints (crashsim -R fails a run that
# wrote or rolled forward none)
total=0
sim $(( (seeds + 2) / 3 )) -R -n 300 -t 2
echo "crashsim -R: $total crash states after fsynced overwrites of large files checked, each file as it was at or after its last fsync"

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
	writer=$!
	sleep "$(( RANDOM % 3 + 1 )).$(( RANDOM % 10 ))"
	kill_daemon "$writer"
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
	sleep "$(( RANDOM % 3 + 1 )).$(( RANDOM % 10 ))"
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
		python3 "$OVERWRITES" init "$MNT/big$w" 1536
		: >"$WORK/ow.$w"
		python3 "$OVERWRITES" write "$MNT/big$w" "$WORK/ow.$w" "$round$w" &
		pids="$pids $!"
	done
	sleep "$(( RANDOM % 2 + 1 )).$(( RANDOM % 10 ))"
	kill_daemon $pids
	lfs_mount
	r=$(sed -n 's/.*, \([0-9]*\) relink records;.*/\1/p' "$WORK/daemon.log" | tail -1)
	relinked=$((relinked + ${r:-0}))
	for w in 1 2 3; do
		python3 "$OVERWRITES" check "$MNT/big$w" "$WORK/ow.$w" || fail "round $round: big$w after kill -9"
	done
	lfs_umount
	"$FSCK" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after kill -9 round $round"; }
	echo "kill -9 round $round, 3 writers overwriting large files: $r relink records rolled forward; $(tail -1 "$WORK/fsck.out")"
done
[ "$relinked" -gt 0 ] || fail "no relink record was rolled forward after the kills"

