#!/bin/bash
# receive.sh — lfs-receive MNT (issue 39): a stream received into a
# mounted lfs becomes a snapshot of the same name there, in one
# checkpoint.  Mounted with -o snapshot= it walks as the source's
# snapshot does, attribute by attribute (tree_walk.py); lfs-ckpt -l
# names the source's uuid and checkpoint.  A truncated stream, a
# lfs-receive killed mid-stream and a target daemon killed mid-receive
# leave no snapshot and the live tree as it was (walked before and
# after), and nothing of the staged tree held: df and df -i back where
# they were (the daemon lets the tree go and the kernel forgets it; after
# a crash the next mount frees it); fsck.lfs finds the target clean.  A
# stream is cut at several places: in its first record, in its tree, in
# its last record.
. "$(dirname "$0")/lib.sh"

send_setup
FSCK="$top_builddir/ckpt/fsck.lfs"
TUNE="$top_builddir/lfs/lfs-tune"
SNAP2="$WORK/snap2"
mkdir -p "$SNAP2"
SPID2=
RPID=
# stop_all: the receiver, then every daemon and mount of the test, the
# shell out of them first (a lazy unmount of a mount holding the
# shell's working directory never ends, nor does the wait for its
# daemon); a mount whose daemon was killed is taken away too
stop_all() {
	cd /
	exec 3>&-
	if [ -n "$RPID" ]; then
		kill -9 "$RPID" 2>/dev/null
		wait "$RPID" 2>/dev/null
	fi
	local m mp pid
	for m in "$SNAP:$SNAP_PID" "$SNAP2:$SPID2" "$MNT2:$PID2"; do
		mp=${m%%:*} pid=${m#*:}
		if [ -n "$pid" ]; then
			fusermount3 -u "$mp" 2>/dev/null || umount -l "$mp"
			wait "$pid"
		elif mountpoint -q "$mp"; then
			umount -l "$mp"
		fi
	done
}
trap 'rc=$?; set +e; stop_all; (exit $rc); cleanup' EXIT INT TERM

start2() {
	"$LFS" -f -o nocleaner,noatime "$IMG2" "$MNT2" 2>>"$WORK/daemon2.log" &
	PID2=$!
	wait_mounted "$PID2" "$MNT2" "$WORK/daemon2.log"
}
mkfs_img 256M
"$MKFS" -s 256M "$IMG2" >/dev/null
lfs_mount noatime
start2

cd "$MNT"
mkdir -p d/sub empty
printf 'tiny' > d/tiny
head -c 300000 /dev/urandom > d/big
truncate -s 10M d/sparse
head -c 4096 /dev/urandom | dd of=d/sparse bs=4096 seek=1000 conv=notrunc status=none
ln d/big d/hard; ln -s ../big d/sub/rel; mkfifo d/fifo
echo x > d/owned; chown 1234:5678 d/owned
setfattr -n user.a -v hello d/tiny
touch -d '2001-02-03 04:05:06.123456789' d/tiny
cd /
seq=$("$CKPT" -s -n s1 "$MNT") || fail "taking the snapshot"
uuid=$("$TUNE" -l "$IMG" | awk '$1 == "uuid" { print $2 }')
[ -n "$uuid" ] || fail "no uuid from lfs-tune -l"
snap_mount s1
"$PY" "$WALK" "$SNAP" > "$WORK/want"
snap_umount
"$SEND" s1 "$MNT" > "$WORK/s1.stream" || fail "lfs-send failed"
size=$(stat -c %s "$WORK/s1.stream")

# the target's live tree, which no receive may change, and its space:
# free blocks and inodes after a checkpoint
mkdir "$MNT2/mine"; echo keep > "$MNT2/mine/f"
"$PY" "$WALK" "$MNT2" > "$WORK/live0"
space() { "$CKPT" -c "$MNT2" >/dev/null && stat -f -c '%f blocks, %d inodes free' "$MNT2"; }
space0=$(space)
# unchanged WHAT: no snapshot s1 on the target, its live tree as it was,
# and its space back where it was once the daemon has let the staged tree
# go (after the receiver's end; a minute without: a leak)
unchanged() {
	! "$CKPT" -l "$MNT2" | grep -q " s1" || fail "$1: a snapshot s1 is on the target"
	"$PY" "$WALK" "$MNT2" > "$WORK/live1"
	diff "$WORK/live0" "$WORK/live1" > "$WORK/diff" || { head "$WORK/diff"; fail "$1: the live tree changed"; }
	local now
	for _ in $(seq 1 600); do
		now=$(space)
		[ "$now" != "$space0" ] || return 0
		sleep 0.1
	done
	fail "$1: the target has $now, not $space0 as before: the staged tree holds space"
}
# wait_staged PID: lfs-receive PID is building its tree (its cwd is the staged directory)
wait_staged() {
	for _ in $(seq 1 600); do
		readlink "/proc/$1/cwd" 2>/dev/null | grep -q 'lfs-staged' && return 0
		kill -0 "$1" 2>/dev/null || fail "lfs-receive ended before it staged"
		sleep 0.1
	done
	fail "lfs-receive never reached its staged tree"
}

# 1. a truncated stream: empty, in its BEGIN record, in its tree (a
# quarter, half and three quarters in), in its END record
for cut in 0 100 $((size / 4)) $((size / 2)) $((size * 3 / 4)) $((size - 1)); do
	head -c "$cut" "$WORK/s1.stream" | "$RECV" "$MNT2" 2>"$WORK/err" && fail "a stream cut at $cut was received"
	grep -q "nothing received" "$WORK/err" || fail "cut at $cut: lfs-receive said: $(cat "$WORK/err")"
	unchanged "a stream cut at $cut of $size bytes"
done

# half_fed: an lfs-receive (RPID) fed half the stream through a fifo
# (fd 3 open), building its staged tree
half_fed() {
	[ -p "$WORK/fifo" ] || mkfifo "$WORK/fifo"
	"$RECV" "$MNT2" < "$WORK/fifo" 2>/dev/null &
	RPID=$!
	exec 3>"$WORK/fifo"
	head -c $((size / 2)) "$WORK/s1.stream" >&3
	wait_staged "$RPID"
}

# 2. lfs-receive killed mid-stream: a fifo fed half the stream, then kill -9
half_fed
kill -9 "$RPID"; wait "$RPID" 2>/dev/null || true; RPID=
exec 3>&-
unchanged "a killed lfs-receive"

# 3. the target's daemon killed mid-receive, after a checkpoint wrote the staged tree
half_fed
"$CKPT" -c "$MNT2" >/dev/null || fail "a checkpoint of the target"
kill -9 "$PID2"; wait "$PID2" 2>/dev/null || true; PID2=
exec 3>&-
kill -9 "$RPID" 2>/dev/null || true; wait "$RPID" 2>/dev/null || true; RPID=
umount -l "$MNT2"
start2
grep -q "freed staged tree" "$WORK/daemon2.log" || fail "the mount did not free the staged tree: $(tail -3 "$WORK/daemon2.log")"
unchanged "a crash of the target"

# 4. the whole stream, through a pipe; then the target's daemon killed
# soon after the commit: the snapshot is there whole, and the staged
# tree the live tree let go is gone (rolled forward, or an orphan the
# mount frees)
cat "$WORK/s1.stream" | "$RECV" -v "$MNT2" > "$WORK/recv.out" || fail "lfs-receive failed: $(cat "$WORK/recv.out")"
: > "$WORK/daemon2.log"
kill -9 "$PID2"; wait "$PID2" 2>/dev/null || true; PID2=
umount -l "$MNT2"
start2
inodes=$(space | sed 's/.*, //')
[ "$inodes" = "${space0#*, }" ] || fail "after the commit and a crash the target has $inodes, not ${space0#*, } as before"
"$CKPT" -l "$MNT2" | grep " received " | matches "s1  from $uuid checkpoint $seq" ||
	fail "lfs-ckpt -l shows: $("$CKPT" -l "$MNT2" | tail -3)"
"$CKPT" -l -j "$MNT2" | matches "\"source_uuid\": *\"$uuid\"" || fail "lfs-ckpt -l -j: no source_uuid"
"$PY" "$WALK" "$MNT2" > "$WORK/live1"
diff "$WORK/live0" "$WORK/live1" >/dev/null || fail "the receive changed the live tree"
"$LFS" -f -o snapshot=s1 "$IMG2" "$SNAP2" 2>>"$WORK/snap2.log" &
SPID2=$!
wait_mounted "$SPID2" "$SNAP2" "$WORK/snap2.log"
"$PY" "$WALK" "$SNAP2" > "$WORK/got"
fusermount3 -u "$SNAP2"; wait "$SPID2"; SPID2=
diff "$WORK/want" "$WORK/got" > "$WORK/diff" || { head -20 "$WORK/diff"; fail "the received snapshot differs from the source's"; }
cat "$WORK/s1.stream" | "$RECV" "$MNT2" 2>"$WORK/err" && fail "a second s1 was received"

fusermount3 -u "$MNT2"; wait "$PID2"; PID2=
"$FSCK" "$IMG2" > "$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs of the target"; }
echo "receive.sh: $(wc -l < "$WORK/want") names received as snapshot s1 alike; streams cut at 6 places, a killed receiver and a crashed target left nothing, df back at $space0"
