#!/bin/bash
# bench/send.sh — issue 39 point 5, side by side in one run: lfs-send of a
# full snapshot against `tar -c` of the same tree on the live mount (both
# piped through cat to /dev/null: GNU tar reads no file data when its
# archive is /dev/null itself), an incremental send of 1 MiB of scattered
# overwrites, and a 256 MiB file read from the snapshot mounted beside the
# live one against the same file read from the live mount.  Before every
# timed step the live daemon is remounted (its own caches emptied) and the
# kernel's caches are dropped, the same way for every step.
#
#   bench/send.sh BUILD_DIR [FS_SIZE [TREE_MIB]]    (as root; FS_SIZE 2G, TREE_MIB 1024)
#
# Prints one line per measure and the ratios; the image lives in a mktemp
# -d directory under $TMPDIR (default /tmp), removed at the end.
set -eu
B=$(cd "${1:?usage: bench/send.sh BUILD_DIR [FS_SIZE [TREE_MIB]]}" && pwd)
SIZE=${2:-2G}
TREE=${3:-1024}
[ "$(id -u)" = 0 ] || { echo "bench/send.sh: must run as root (mounts, drop_caches)" >&2; exit 2; }
LFS=$B/lfs/lfs MKFS=$B/lfs/mkfs.lfs CKPT=$B/ckpt/lfs-ckpt SEND=$B/lfs/lfs-send
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
mount_live() {
	"$LFS" -f -o nocleaner "$IMG" "$MNT" 2>>"$W/daemon.log" &
	PID=$!
	wait_mounted "$MNT"
}
cold() {
	stop "$MNT" "$PID"
	PID=
	sync
	echo 3 >/proc/sys/vm/drop_caches
	mount_live
}
# secs CMD...: run CMD (a shell string), print its wall time in seconds
secs() {
	local t0 t1
	t0=$(date +%s%N)
	bash -c "$1"
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'
}
mibs() { awk -v m="$1" -v s="$2" 'BEGIN { printf "%.1f", m / s }'; }

"$MKFS" -f -s "$SIZE" "$IMG" >/dev/null
mount_live
# the tree: a quarter in 4,096 files of 64 KiB, the rest in 16 MiB files,
# one of them the 256 MiB file the read compares
mkdir -p "$MNT/small" "$MNT/big"
head -c 65536 /dev/urandom >"$W/seed"
for i in $(seq 0 63); do
	mkdir "$MNT/small/$i"
	for j in $(seq 0 63); do cp "$W/seed" "$MNT/small/$i/$j"; done
done
dd if=/dev/urandom of="$MNT/big/256m" bs=1M count=256 status=none
n=$(((TREE * 3 / 4 - 256) / 16))
for i in $(seq 1 "$n"); do dd if=/dev/urandom of="$MNT/big/$i" bs=1M count=16 status=none; done
"$CKPT" -s -n s1 "$MNT" >/dev/null
bytes=$(du -sb "$MNT" | cut -f1)
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')
echo "tree: $mib MiB in $(find "$MNT" | wc -l) names, file system $SIZE"

cold
t_send=$(secs "'$SEND' s1 '$MNT' | cat >/dev/null")
cold
t_tar=$(secs "tar -cf - -C '$MNT' . | cat >/dev/null")
echo "full send: $t_send s ($(mibs "$mib" "$t_send") MiB/s); tar -c: $t_tar s ($(mibs "$mib" "$t_tar") MiB/s); send/tar speed $(awk -v a="$t_send" -v b="$t_tar" 'BEGIN { printf "%.2f", b / a }')x"

# 1 MiB of scattered overwrites: 256 blocks of 4 KiB over the big files
for i in $(seq 1 256); do
	f=$((i % n + 1))
	dd if=/dev/urandom of="$MNT/big/$f" bs=4096 count=1 seek=$(((i * 7919) % 4096)) conv=notrunc status=none
done
"$CKPT" -s -n s2 "$MNT" >/dev/null
cold
t_incr=$(secs "'$SEND' -p s1 s2 '$MNT' >'$W/incr'")
echo "incremental send (1 MiB changed): $t_incr s, stream $(stat -c %s "$W/incr") bytes"

cold
"$LFS" -f -o snapshot=s1 "$IMG" "$SNAP" 2>>"$W/snap.log" &
SPID=$!
wait_mounted "$SNAP"
t_snap=$(secs "cat '$SNAP/big/256m' >/dev/null")
stop "$SNAP" "$SPID"
SPID=
cold
t_live=$(secs "cat '$MNT/big/256m' >/dev/null")
echo "read 256 MiB: snapshot mount $t_snap s ($(mibs 256 "$t_snap") MiB/s); live $t_live s ($(mibs 256 "$t_live") MiB/s); snapshot/live speed $(awk -v a="$t_snap" -v b="$t_live" 'BEGIN { printf "%.2f", b / a }')x"
