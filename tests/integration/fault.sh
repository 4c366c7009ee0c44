#!/bin/bash
# fault.sh — failing hardware on a real mount, injected with the fault=
# mount option or LFS_FAULT (lfs(8)):
#  1. the Nth fdatasync fails during an fsync workload: that fsync returns
#     EIO, and so does every later one; creating files and directories
#     fails with EIO; files from before read back intact; the daemon logs
#     the failure once and exits non-zero; a remount finds every file
#     whose fsync returned, and fsck finds nothing wrong;
#  2. the same with the Nth pwrite torn (half written), through LFS_FAULT;
#  3. after a crash, a read error anywhere in the mount (roll-forward
#     included) fails it with a message and leaves the image as it was;
#     the mount without the fault finds every fsynced file.
. "$(dirname "$0")/lib.sh"

FSCK="$top_builddir/ckpt/fsck.lfs"

# write_synced FILE BYTES: a file of random bytes, fsynced; its md5 goes
# to $WORK/synced only if dd (and so the fsync) succeeded
write_synced() {
	head -c "$2" /dev/urandom > "$WORK/src"
	dd if="$WORK/src" of="$1" bs=64k conv=fsync status=none 2>>"$WORK/dd.err" || return 1
	echo "$1 $(md5sum < "$WORK/src" | cut -d' ' -f1)" >> "$WORK/synced"
}

check_synced() { # label
	local n=0 f sum
	while read -r f sum; do
		[ -f "$f" ] || fail "$1: fsynced $f is missing"
		[ "$(md5sum < "$f" | cut -d' ' -f1)" = "$sum" ] || fail "$1: $f has wrong content"
		n=$((n + 1))
	done < "$WORK/synced"
	echo "$1: $n fsynced files intact"
}

# fail_during_fsyncs LABEL: on a mount armed to fail, fsync files until
# one fsync fails, then check the failed state
fail_during_fsyncs() {
	local label=$1 i failed_at=
	: > "$WORK/daemon.log"
	for i in $(seq 0 49); do
		write_synced "$MNT/$label-$i" $(( (i % 7 + 1) * 9000 )) || { failed_at=$i; break; }
	done
	[ -n "$failed_at" ] || fail "$label: no fsync failed"
	grep -q "Input/output error" "$WORK/dd.err" || { cat "$WORK/dd.err"; fail "$label: the fsync did not fail with EIO"; }
	# every later write fails: an fsync of a file from before ...
	head -c 5000 /dev/urandom > "$WORK/src"
	if dd if="$WORK/src" of="$MNT/before-0" bs=64k conv=fsync,notrunc status=none 2>/dev/null; then
		fail "$label: an fsync after the failure succeeded"
	fi
	# ... creating a file or a directory
	touch "$MNT/after" 2>"$WORK/err" && fail "$label: a file was created after the failure"
	grep -q "Input/output error" "$WORK/err" || { cat "$WORK/err"; fail "$label: create did not fail with EIO"; }
	mkdir "$MNT/afterdir" 2>"$WORK/err" && fail "$label: a directory was made after the failure"
	grep -q "Input/output error" "$WORK/err" || { cat "$WORK/err"; fail "$label: mkdir did not fail with EIO"; }
	# reads go on: the files from before were not read in this mount, so
	# the kernel has to ask the daemon (before-0 was overwritten in cache)
	local f sum n=0
	while read -r f sum; do
		case $f in */before-0) continue ;; */before-*) ;; *) continue ;; esac
		[ "$(md5sum < "$f" | cut -d' ' -f1)" = "$sum" ] || fail "$label: $f reads wrong after the failure"
		n=$((n + 1))
	done < "$WORK/synced"
	[ $n -gt 0 ] || fail "$label: nothing read back"
	local logged
	logged=$(grep -c "the filesystem has failed" "$WORK/daemon.log" || true)
	[ "$logged" = 1 ] || { cat "$WORK/daemon.log"; fail "$label: the failure was logged $logged times, not once"; }
	lfs_umount 1 # the daemon of a failed filesystem exits 1: no final checkpoint
	echo "$label: fsync $failed_at failed with EIO; later fsync, create and mkdir failed with EIO; $n files read back; logged once: $(grep "the filesystem has failed" "$WORK/daemon.log" | sed 's/^lfs: //' | cut -c1-80)..."
}

mkfs_img 64M
lfs_mount
: > "$WORK/synced"
for i in 0 1 2 3 4; do
	write_synced "$MNT/before-$i" $(( (i + 1) * 37000 )) || fail "writing before-$i"
done
lfs_umount

# 1. fdatasync, through the mount option (the mount itself syncs twice)
lfs_mount "fault=fdatasync:6:EIO,ckpt_interval=0"
fail_during_fsyncs sync
# (before-0 keeps its old content: the rewrite was refused)
lfs_mount
check_synced "fdatasync:6:EIO remounted"
lfs_umount
"$FSCK" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after the failed fdatasync"; }

# 2. a torn pwrite, through the environment
export LFS_FAULT=pwrite:8:short
lfs_mount "ckpt_interval=0"
unset LFS_FAULT
fail_during_fsyncs torn
lfs_mount
check_synced "pwrite:8:short remounted"
lfs_umount
"$FSCK" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after the torn pwrite"; }

# 3. a crash leaves a log to roll forward; then the Nth read of the
#    mount fails, for N = 1, 2, ... until a mount gets through
lfs_mount "ckpt_interval=0"
for i in 0 1 2 3 4 5; do
	write_synced "$MNT/crash-$i" $(( (i + 1) * 50000 )) || fail "writing crash-$i"
done
kill -9 "$LFS_PID"
wait "$LFS_PID" 2>/dev/null || true
LFS_PID=
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
cp --sparse=always "$IMG" "$WORK/crashed"
# mounted: in the mount table (mountpoint(1) would stat the root, and
# that read may be the one armed to fail)
mounted() { grep -q " $MNT fuse" /proc/self/mounts; }
refused=0 in_rollforward=0
for n in $(seq 1 200); do
	rc=0
	timeout 60 "$LFS" -f -o "nocleaner,fault=pread:$n:EIO" "$IMG" "$MNT" 2>"$WORK/err" &
	pid=$!
	while ! mounted && kill -0 "$pid" 2>/dev/null; do
		sleep 0.1
	done
	if mounted; then
		# the fault is still armed for the reads to come: start afresh
		LFS_PID=$pid
		lfs_umount
		# a failed read of block 0 is survived with the backup
		# superblock: go on with the image as it was
		grep -q "backup superblock" "$WORK/err" || break
		cp --sparse=always "$WORK/crashed" "$IMG"
		continue
	fi
	wait "$pid" || rc=$?
	[ $rc = 1 ] || { cat "$WORK/err"; fail "pread:$n:EIO: the failed mount exited with $rc"; }
	grep -q "cannot mount" "$WORK/err" || { cat "$WORK/err"; fail "pread:$n:EIO: no message"; }
	cmp -s "$IMG" "$WORK/crashed" || fail "pread:$n:EIO: the failed mount changed the image"
	grep -q "roll-forward" "$WORK/err" && in_rollforward=$((in_rollforward + 1))
	refused=$((refused + 1))
done
[ $refused -lt 200 ] || fail "no mount got through 200 read faults"
[ $in_rollforward -gt 0 ] || fail "no read fault landed in roll-forward"
echo "crash: $refused mounts refused with the image unchanged ($in_rollforward in roll-forward), the next got through"
lfs_mount
check_synced "after the refused mounts"
lfs_umount
"$FSCK" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after the read faults"; }
echo "$(tail -1 "$WORK/fsck.out")"
