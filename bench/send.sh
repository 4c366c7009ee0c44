#!/bin/bash
# bench/send.sh — issue 39 point 5, side by side in one run: lfs-send of a
# full snapshot against `tar -c` of the same tree on the live mount (both
# piped through cat to /dev/null: GNU tar reads no file data when its
# archive is /dev/null itself), an incremental send of 1 MiB of scattered
# 4 KiB overwrites, and a 256 MiB file read from the snapshot mounted
# beside the live one against the same file read from the live mount.
# Before every timed step the live daemon is started again (its own
# caches emptied) and the kernel's caches are dropped, the same way for
# every step.  The mount is noatime, so that reading the tree (tar) is no
# change the incremental stream would carry.
#
#   bench/send.sh [-r ROUNDS] [-s FS_SIZE] [-t TREE_MIB] BUILD_DIR [BUILD_DIR...]
#
# as root; ROUNDS 3, FS_SIZE 2G, TREE_MIB 1024.  With several build
# directories (a base and a change, say), each one's daemon and lfs-send
# are measured in every round, in turn, on the same image (the first
# build makes it).  Prints each measure's median over the rounds and the
# ratios; the image lives in a mktemp -d directory under $TMPDIR
# (default /tmp), removed at the end.
set -eu
ROUNDS=3 SIZE=2G TREE=1024
while getopts r:s:t: c; do
	case $c in
	r) ROUNDS=$OPTARG ;;
	s) SIZE=$OPTARG ;;
	t) TREE=$OPTARG ;;
	*) exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: bench/send.sh [-r ROUNDS] [-s FS_SIZE] [-t TREE_MIB] BUILD_DIR..." >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "bench/send.sh: must run as root (mounts, drop_caches)" >&2; exit 2; }
BUILDS=()
for b in "$@"; do BUILDS+=("$(cd "$b" && pwd)"); done
W=$(mktemp -d "${TMPDIR:-/tmp}/lfs-send-bench.XXXXXX")
IMG=$W/img MNT=$W/mnt SNAP=$W/snap
mkdir -p "$MNT" "$SNAP"
PID= SPID=
stop() {
	local m=$1 p=$2
	[ -n "$p" ] || return 0
	fusermount3 -u "$m" 2>/dev/null || umount -l "$m"
	wait "$p" || true
}
trap 'set +e; stop "$SNAP" "$SPID"; stop "$MNT" "$PID"; rm -rf "$W"' EXIT INT TERM
wait_mounted() {
	for _ in $(seq 1 600); do
		mountpoint -q "$1" && return 0
		sleep 0.1
	done
	echo "bench/send.sh: $1 did not mount" >&2
	exit 1
}
# cold BUILD: the live mount served by BUILD's daemon, started afresh,
# with the kernel's caches dropped
cold() {
	stop "$MNT" "$PID"
	PID=
	sync
	echo 3 >/proc/sys/vm/drop_caches
	"$1/lfs/lfs" -f -o nocleaner,noatime "$IMG" "$MNT" 2>>"$W/daemon.log" &
	PID=$!
	wait_mounted "$MNT"
}
# secs CMD: run CMD (a shell string), print its wall time in seconds
secs() {
	local t0 t1
	t0=$(date +%s%N)
	bash -c "$1"
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}
# record NAME SECONDS; median NAME
record() { echo "$2" >>"$W/t.$1"; }
median() { sort -g "$W/t.$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
list() { tr '\n' ' ' <"$W/t.$1"; }

B0=${BUILDS[0]}
"$B0/lfs/mkfs.lfs" -f -s "$SIZE" "$IMG" >/dev/null
cold "$B0"
# the tree: a quarter in 4,096 files of 64 KiB, the rest in 16 MiB files
# and the 256 MiB file the reads compare
mkdir -p "$MNT/small" "$MNT/big"
head -c 65536 /dev/urandom >"$W/seed"
for i in $(seq 0 63); do
	mkdir "$MNT/small/$i"
	for j in $(seq 0 63); do cp "$W/seed" "$MNT/small/$i/$j"; done
done
dd if=/dev/urandom of="$MNT/big/256m" bs=1M count=256 status=none
n=$(((TREE * 3 / 4 - 256) / 16))
for i in $(seq 1 "$n"); do dd if=/dev/urandom of="$MNT/big/$i" bs=1M count=16 status=none; done
"$B0/ckpt/lfs-ckpt" -s -n s1 "$MNT" >/dev/null
# 1 MiB of scattered overwrites: 256 blocks of 4 KiB over the big files
for i in $(seq 1 256); do
	dd if=/dev/urandom of="$MNT/big/$((i % n + 1))" bs=4096 count=1 seek=$(((i * 7919) % 4096)) conv=notrunc \
		status=none
done
"$B0/ckpt/lfs-ckpt" -s -n s2 "$MNT" >/dev/null
mib=$(du -sb "$MNT" | awk '{ printf "%.1f", $1 / 1048576 }')
echo "tree: $mib MiB in $(find "$MNT" | wc -l) names, file system $SIZE, $ROUNDS rounds, builds: ${BUILDS[*]}"

for ((r = 1; r <= ROUNDS; r++)); do
	cold "$B0"
	record tar "$(secs "tar -cf - -C '$MNT' . | cat >/dev/null")"
	cold "$B0"
	record live "$(secs "cat '$MNT/big/256m' >/dev/null")"
	for k in "${!BUILDS[@]}"; do
		B=${BUILDS[$k]}
		cold "$B"
		record "send$k" "$(secs "'$B/lfs/lfs-send' s1 '$MNT' | cat >/dev/null")"
		cold "$B"
		record "incr$k" "$(secs "'$B/lfs/lfs-send' -p s1 s2 '$MNT' >'$W/incr$k'")"
		cold "$B"
		"$B/lfs/lfs" -f -o snapshot=s1 "$IMG" "$SNAP" 2>>"$W/snap.log" &
		SPID=$!
		wait_mounted "$SNAP"
		record "snap$k" "$(secs "cat '$SNAP/big/256m' >/dev/null")"
		stop "$SNAP" "$SPID"
		SPID=
	done
done

t_tar=$(median tar) t_live=$(median live)
echo "tar -c: median $t_tar s ($(list tar)), $(awk -v m="$mib" -v s="$t_tar" 'BEGIN { printf "%.1f", m / s }') MiB/s"
echo "live read of 256 MiB: median $t_live s ($(list live)), $(awk -v s="$t_live" 'BEGIN { printf "%.1f", 256 / s }') MiB/s"
for k in "${!BUILDS[@]}"; do
	t_send=$(median "send$k") t_incr=$(median "incr$k") t_snap=$(median "snap$k")
	echo "${BUILDS[$k]}:"
	echo "  full send: median $t_send s ($(list "send$k")), $(awk -v m="$mib" -v s="$t_send" 'BEGIN { printf "%.1f", m / s }') MiB/s, $(awk -v a="$t_send" -v b="$t_tar" 'BEGIN { printf "%.2f", b / a }')x tar's speed"
	echo "  incremental send (1 MiB changed): median $t_incr s ($(list "incr$k")), stream $(stat -c %s "$W/incr$k") bytes"
	echo "  snapshot read of 256 MiB: median $t_snap s ($(list "snap$k")), $(awk -v s="$t_snap" 'BEGIN { printf "%.1f", 256 / s }') MiB/s, $(awk -v a="$t_snap" -v b="$t_live" 'BEGIN { printf "%.2f", b / a }')x the live read's speed"
done
