# lib.sh — shared by the integration tests: make an image, mount it with
# the real daemon, always unmount (trap), skip (77) without FUSE or root.
set -euo pipefail

: "${top_builddir:=$(cd "$(dirname "$0")/../.." && pwd)}"
LFS="$top_builddir/lfs/lfs"
MKFS="$top_builddir/lfs/mkfs.lfs"
# the daemons the tests start run the cleaner built beside them, which
# they would not look for on their own (lfs(8), ENVIRONMENT)
export LFS_CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
# PY: python3 itself, not a version manager's shim that PATH may name
# first (pyenv's costs a fifth of a CPU-second at every start)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || PY=
export PY # scripts the suites write and run (falloc_ext4.sh's cmp.sh) use it too

skip() { echo "SKIP: $*"; exit 77; }
# fail MESSAGE: the test fails; the daemon's last words go with it, since a
# CI log keeps only the test's output
fail() {
	echo "FAIL: $*"
	if [ -s "${WORK:-}/daemon.log" ]; then
		echo "-- the last lines of the daemon's log:"
		tail -n 15 "$WORK/daemon.log"
	fi
	exit 1
}

# cmd | matches PATTERN...: grep -q that reads its input to the end first.
# Under pipefail, a bare "| grep -q" fails whenever grep exits at the first
# match while the writer still has output: the writer dies of SIGPIPE.
matches() { local in; in=$(cat); grep -q "$@" <<<"$in"; }

# soak FULL: how much of a suite's soak (operations, overwrite volume,
# seeds) this run does: FULL, or LFS_SOAK_PERCENT percent of it, at least
# 1.  scripts/test.sh's sanitizer pass runs a part: the plain pass checks
# every state, and the sanitizers check the first ones again, where each
# costs them three times as much.
soak() {
	local n=$(($1 * ${LFS_SOAK_PERCENT:-100} / 100))
	echo $((n < 1 ? 1 : n))
}

[ -e /dev/fuse ] || skip "/dev/fuse is missing"
[ "$(id -u)" = 0 ] || skip "needs root for FUSE mounts"
command -v fusermount3 >/dev/null || skip "fusermount3 (package fuse3) is missing"

WORK=$(mktemp -d /tmp/lfs-it.XXXXXX)
IMG="$WORK/img"
MNT="$WORK/mnt"
mkdir -p "$MNT"
LFS_PID=

# lfs_mount [extra -o options]: start the daemon in the foreground, in the
# background, so its PID is ours to wait for at unmount.
lfs_mount() {
	lfs_start "nocleaner${1:+,$1}"
}

# lfs_mount_cleaner CONF: the same, with a cleaner configured by CONF.
lfs_mount_cleaner() {
	lfs_start "cleaner_conf=$1"
}

lfs_start() {
	"$LFS" -f -o "$1" "$IMG" "$MNT" 2>>"$WORK/daemon.log" &
	LFS_PID=$!
	wait_mounted "$LFS_PID" "$MNT" "$WORK/daemon.log"
}

# wait_mounted PID DIR LOG: until the daemon PID has mounted DIR; fails,
# showing LOG, if it exits first or takes a minute (a hang).
wait_mounted() {
	for _ in $(seq 1 600); do
		mountpoint -q "$2" && return 0
		kill -0 "$1" 2>/dev/null || { cat "$3"; fail "lfs exited during the mount of $2"; }
		sleep 0.1
	done
	fail "the mount of $2 did not appear"
}

# wait_log FILE TEXT: until the daemon's log FILE has a line with TEXT;
# fails if the daemon exits first or a minute passes (a hang).  What the
# daemon logs after INIT (the transport) comes after the mount appears.
wait_log() {
	for _ in $(seq 1 600); do
		grep -qF -- "$2" "$1" && return 0
		[ -z "$LFS_PID" ] || kill -0 "$LFS_PID" 2>/dev/null || break
		sleep 0.1
	done
	grep -qF -- "$2" "$1" || fail "no line in $1 says: $2"
}

# lfs_umount [STATUS]: unmount and wait until the daemon has written its
# final checkpoint and exited; its exit status must be STATUS (default 0).
lfs_umount() {
	[ -n "$LFS_PID" ] || return 0
	fusermount3 -u "$MNT" 2>/dev/null || umount "$MNT" 2>/dev/null || umount -l "$MNT"
	local rc=0
	wait "$LFS_PID" || rc=$?
	LFS_PID=
	[ $rc = "${1:-0}" ] || { cat "$WORK/daemon.log"; fail "lfs exited with status $rc"; }
	# a daemon started by a test itself (daemonized) holds the image lock
	# until its last checkpoint is written
	flock -w 60 "$IMG" true || fail "image still locked a minute after unmount"
}

# mem_dir MIB: a directory on a tmpfs (/dev/shm) with MIB MiB free, else
# $WORK/mem, in $MEM: for what a test keeps only while it runs (an image,
# a model tree) and whose flushes to the host's disk it does not test
# (each fsync there waits for the disk, and for every other writer of it)
MEM=
mem_dir() {
	local avail
	avail=$(df -m --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ') || avail=0
	if [ -w /dev/shm ] && [ "${avail:-0}" -ge "$1" ]; then
		MEM=$(mktemp -d /dev/shm/lfs-it.XXXXXX)
	else
		MEM="$WORK/mem"
		mkdir -p "$MEM"
	fi
}

cleanup() {
	local rc=$?
	if [ -n "$LFS_PID" ]; then
		fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
		wait "$LFS_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK" ${MEM:+"$MEM"}
	exit $rc
}
trap cleanup EXIT INT TERM

# ext4_mount SIZE [mkfs.ext4 options]: kernel ext4 on a loop device at
# $EXT4_MNT, the reference the side-by-side tests compare lfs with; the
# trap unmounts it.
ext4_mount() {
	EXT4_IMG="$WORK/ext4.img"
	EXT4_MNT="$WORK/ext4"
	mkdir -p "$EXT4_MNT"
	truncate -s "$1" "$EXT4_IMG"
	mkfs.ext4 -q -F "${@:2}" "$EXT4_IMG"
	mount -o loop "$EXT4_IMG" "$EXT4_MNT"
	trap 'rc=$?; cd /; umount "$EXT4_MNT" 2>/dev/null || true; set +e; (exit $rc); cleanup' EXIT INT TERM
}

# A second mount point, $SNAP, for a snapshot (-o snapshot=NAME) beside
# the live mount or on its own: snap_setup once, then snap_mount NAME and
# snap_umount.  Its daemon is stopped first when the script ends.
snap_setup() {
	SNAP="$WORK/snap"
	mkdir -p "$SNAP"
	SNAP_PID=
	# errexit is off here, or "(exit $rc)" would end the trap before
	# cleanup unmounts the filesystem
	trap 'rc=$?; set +e; if [ -n "$SNAP_PID" ]; then fusermount3 -u "$SNAP" 2>/dev/null || umount -l "$SNAP"; wait "$SNAP_PID"; fi; (exit $rc); cleanup' EXIT INT TERM
}
snap_mount() {
	"$LFS" -f -o "snapshot=$1" "$IMG" "$SNAP" 2>>"$WORK/snap.log" &
	SNAP_PID=$!
	wait_mounted "$SNAP_PID" "$SNAP" "$WORK/snap.log"
}
snap_umount() {
	fusermount3 -u "$SNAP"
	wait "$SNAP_PID" || fail "the snapshot's daemon exited with status $?"
	SNAP_PID=
}

# send_setup: the tools of send.sh and receive.sh (CKPT, SEND, RECV,
# WALK: tree_walk.py), snap_setup, and a second image IMG2 for MNT2 (PID2
# its daemon, once started)
send_setup() {
	command -v setfattr >/dev/null || skip "setfattr (package attr) is missing"
	[ -n "$PY" ] || skip "python3 (package python3) is missing"
	CKPT="$top_builddir/ckpt/lfs-ckpt"
	SEND="$top_builddir/lfs/lfs-send"
	RECV="$top_builddir/lfs/lfs-receive"
	WALK="$top_srcdir/tests/integration/tree_walk.py"
	snap_setup
	IMG2="$WORK/img2"
	MNT2="$WORK/mnt2"
	mkdir -p "$MNT2"
	PID2=
}

mkfs_img() { "$MKFS" -s "${1:-256M}" ${2:-} "$IMG" >/dev/null; }

# ctl_ops TRACE: the control requests in TRACE (strace -xx -s 8 -e
# trace=sendmsg of a cleaner), one op number a line, in order (the
# request's bytes 6-7: lfs/format/ctl_proto.h; 10 CLEANER_STATE begins each of
# the cleaner's wake-ups, 7 STATS follows it)
ctl_ops() {
	[ -e "$1" ] || return 0 # strace has not begun it yet
	sed -n 's/.*iov_base="\\x31\\x43\\x54\\x4c\\x[0-9a-f]*\\x[0-9a-f]*\\x\([0-9a-f]*\)\\x\([0-9a-f]*\).*/\2\1/p' \
		"$1" | while read -r op; do echo $((16#$op)); done
}

# Counting a cleaner's wake-ups, not seconds: trace_cleaner PID traces its
# control requests (strace) until untrace_cleaner; wakeups prints one
# letter a wake-up since, "q" (quiet: its state and STATS only) or "p"
# (more: a pass), the one under way left out; wake_until COND wakes it
# (SIGUSR1 cuts its sleep short, as lfs-clean's requests do, and asks
# nothing of it) until the shell test COND holds of $w, the wake-ups so
# far.  A minute without a wake-up is a hang.
trace_cleaner() {
	rm -f "$WORK/trace"
	CLEANER_PID=$1
	strace -f -xx -s 8 -e trace=sendmsg -o "$WORK/trace" -p "$1" 2>/dev/null &
	TRACER=$!
}
untrace_cleaner() {
	kill -INT "$TRACER" 2>/dev/null || true
	wait "$TRACER" || true
	TRACER=
}
wakeups() {
	ctl_ops "$WORK/trace" | awk '$1 == 10 { if (n++) printf "%s", (k == 1 ? "q" : "p"); k = 0; next } { k++ } END { print "" }'
}
wake_until() {
	local seen=-1 stuck=0
	while w=$(wakeups); ! eval "$1"; do
		kill -0 "$TRACER" 2>/dev/null || fail "the strace of the cleaner exited"
		if [ ${#w} = "$seen" ]; then stuck=$((stuck + 1)); else seen=${#w} stuck=0; fi
		[ $stuck -lt 600 ] || fail "the cleaner did not wake for a minute"
		kill -USR1 "$CLEANER_PID"
		sleep 0.1
	done
}
