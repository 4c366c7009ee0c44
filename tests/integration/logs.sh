#!/bin/bash
# logs.sh — the log an administrator reads (lfs(8), DESCRIPTION):
#  - with -o log=FILE the mount's standard error stays empty, after a
#    crash too (no recovery report there); a mount that fails still says
#    why on it;
#  - every line of the file, the cleaner's included, has a time and a pid
#    and names its filesystem, so that two mounts sharing the file are
#    told apart;
#  - one line at mount (where, how, how long, clean or recovered) and one
#    at unmount, there when umount returns;
#  - the recovery line is one short sentence; the counts only with
#    -o verbose.
. "$(dirname "$0")/lib.sh"

LOG="$WORK/lfs.log"
IMG2="$WORK/img2"
MNT2="$WORK/mnt2"
mkdir -p "$MNT2"
mkfs_img 64M
"$MKFS" -s 64M "$IMG2" >/dev/null
# daemons detach: their pids come from their mount lines
daemon_pid() { sed -n "s/^.* lfs\[\([0-9]*\)\]: $(sed 's/[][\/.*^$]/\\&/g' <<<"$1"): mounted at .*/\1/p" "$LOG" | tail -1; }
mount_bg() { # IMAGE DIR [options]: a detached daemon, as mount(8) starts it
	"$LFS" -o "log=$LOG${3:+,$3}" "$1" "$2" 2>"$WORK/err" || { cat "$WORK/err"; fail "lfs $1 $2"; }
	[ ! -s "$WORK/err" ] || fail "mount of $1 with log=: standard error: $(cat "$WORK/err")"
}
unmount_all() {
	for d in "$MNT" "$MNT2"; do
		if mountpoint -q "$d"; then umount "$d" || fail "umount $d"; fi
	done
	flock -w 60 "$IMG" true && flock -w 60 "$IMG2" true || fail "an image still locked a minute after unmount"
}
trap 'rc=$?; for d in "$MNT" "$MNT2"; do mountpoint -q "$d" && umount -l "$d"; done; set +e; (exit $rc); cleanup' EXIT INT TERM

# 1. two mounts sharing the log, one of them killed after an fsync
mount_bg "$IMG" "$MNT"
mount_bg "$IMG2" "$MNT2"
echo logged | dd of="$MNT/f" conv=fsync status=none
pid=$(daemon_pid "$IMG")
[ -n "$pid" ] || { cat "$LOG"; fail "no mount line for $IMG"; }
kill -9 "$pid"
umount -l "$MNT"
flock -w 60 "$IMG" true || fail "the killed daemon's image stays locked"
# the cleaner must have said something for its lines to be checked
for _ in $(seq 600); do grep -q "lfs_cleanerd\[[0-9]*\]: $MNT2: cleaning" "$LOG" && break; sleep 0.1; done

# 2. the mount after the crash: nothing on standard error
mount_bg "$IMG" "$MNT"
[ "$(cat "$MNT/f")" = logged ] || fail "the fsynced file was not recovered"
grep -q ": $IMG: mounted at $MNT (read-write, -o log=$LOG) in [0-9]* ms; the last mount did not end cleanly: recovered$" "$LOG" ||
	{ cat "$LOG"; fail "no mount line saying $IMG was recovered"; }
rec=$(grep ": $IMG: recovery: " "$LOG") || { cat "$LOG"; fail "no recovery line for $IMG"; }
[ "$(wc -l <<<"$rec")" = 1 ] || fail "recovery took more than one line: $rec"
grep -q "psegs\|magic\|relink" <<<"$rec" && fail "the recovery line is full of internals: $rec"
[ ${#rec} -lt 200 ] || fail "the recovery line is long (${#rec} characters): $rec"
grep -q ": $IMG2: mounted at $MNT2 (read-write, -o log=$LOG) in [0-9]* ms; the last unmount was clean$" "$LOG" ||
	{ cat "$LOG"; fail "no mount line for $IMG2"; }
echo "ok after a crash: standard error empty, $(grep -c "" "$LOG") lines in the log; $rec"

# 3. the unmount lines are there when umount returns
umount "$MNT" || fail "umount $MNT"
grep -q ": $IMG: unmounted from $MNT after [0-9.]* s, clean$" "$LOG" ||
	{ cat "$LOG"; fail "no unmount line for $MNT when umount returned"; }
umount "$MNT2" || fail "umount $MNT2"
grep -q ": $IMG2: unmounted from $MNT2 after [0-9.]* s, clean$" "$LOG" ||
	{ cat "$LOG"; fail "no unmount line for $MNT2 when umount returned"; }
unmount_all
# every line: time, program[pid], and which filesystem
bad=$(grep -Ev "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} (lfs|lfs_cleanerd)\[[0-9]+\]: ($IMG|$IMG2|$MNT|$MNT2): " "$LOG" || true)
[ -z "$bad" ] || fail "log lines without time, pid or filesystem: $bad"
grep -q "lfs_cleanerd\[[0-9]*\]: $MNT2: " "$LOG" || fail "no cleaner line for $MNT2"
echo "ok every line has time, pid and filesystem; mount and unmount lines for both"

# 4. -o verbose: the counts; a failed mount says why on standard error
mount_bg "$IMG" "$MNT"
echo more | dd of="$MNT/g" conv=fsync status=none
pid=$(daemon_pid "$IMG")
kill -9 "$pid"
umount -l "$MNT"
flock -w 60 "$IMG" true || fail "the killed daemon's image stays locked"
mount_bg "$IMG" "$MNT" verbose
grep -q ": $IMG: recovery: rolled forward [0-9]* groups (.* psegs, .*log ends: " "$LOG" ||
	{ cat "$LOG"; fail "-o verbose: no detailed recovery line"; }
unmount_all
rc=0; "$LFS" -o "log=$LOG,snapshot=nosuch" "$IMG" "$MNT" 2>"$WORK/err" || rc=$?
[ $rc = 1 ] || fail "a mount of a missing snapshot: status $rc"
grep -q "no snapshot or kept checkpoint 'nosuch'" "$WORK/err" || fail "a failed mount: standard error: $(cat "$WORK/err")"
echo "ok -o verbose logs the counts; a failed mount says why on standard error: $(head -1 "$WORK/err")"
"$top_builddir/ckpt/fsck.lfs" "$IMG" >/dev/null || fail "fsck $IMG"
