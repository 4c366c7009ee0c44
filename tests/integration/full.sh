#!/bin/bash
# full.sh — a full filesystem tells the truth: filled with many small
# files, with one stream and with parallel writers, write() fails with
# ENOSPC (never a silent loss: every file holds exactly the bytes its
# writer was told were written), deleting works on the full filesystem
# and again right after kill -9 of the daemon, space comes back, writing
# resumes, fsck.lfs finds nothing; an idle cleaner on a full filesystem
# stops writing.  With the kernel's writeback cache (the default) and,
# for the stream, again without it (-o writethrough).
. "$(dirname "$0")/lib.sh"

FSCK="$top_builddir/ckpt/fsck.lfs"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
command -v strace >/dev/null || skip "strace (package strace) is missing"
SIZE=64M

# mount with the cleaner (lib.sh's lfs_mount runs without one), keeping
# no checkpoint: after_fill measures what rm -rf gives back in df, which
# kept checkpoints would hold for their hour (keep_full.sh fills with
# them kept)
mount_with_cleaner() {
	echo "checkpoint_protection 0" > "$WORK/cleaner.conf"
	"$LFS" -f -o "cleaner_conf=$WORK/cleaner.conf${MOPT:+,$MOPT}" "$IMG" "$MNT" 2>>"$WORK/daemon.log" &
	LFS_PID=$!
	for _ in $(seq 1 100); do mountpoint -q "$MNT" && return 0; sleep 0.1; done
	cat "$WORK/daemon.log"
	fail "mount did not appear"
}

kill9() {
	kill -9 "$LFS_PID"
	wait "$LFS_PID" 2>/dev/null || true
	LFS_PID=
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
}

avail_kib() { df -k --output=avail "$MNT" | tail -1 | tr -d ' '; }

check_fsck() {
	"$FSCK" "$IMG" >"$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "$1: fsck.lfs found problems"; }
}

# every writer's file holds exactly what it was told it wrote
check_stream() { # file, bytes reported, source
	local got
	got=$(stat -c %s "$1")
	[ "$got" = "$2" ] || fail "$1: size $got, but write() accepted $2 bytes"
	cmp -n "$2" "$1" "$3" >/dev/null || fail "$1: content differs from what was written"
}

# dd until ENOSPC; prints the bytes dd says it wrote; fails unless dd
# stopped on ENOSPC at write(), and only there: ENOSPC at close would
# mean data write() had accepted was dropped
fill_stream() { # source, destination
	local out
	out=$(dd if="$1" of="$2" bs=1M 2>&1) && fail "$2: dd did not hit the end of the filesystem"
	echo "$out" | matches "error writing.*No space left on device" || { echo "$out"; fail "$2: dd failed otherwise"; }
	echo "$out" | matches "closing" && { echo "$out"; fail "$2: an error at close, after write() had succeeded"; }
	echo "$out" | sed -n 's/^\([0-9]*\) bytes.*/\1/p'
}

after_fill() { # name, KiB df may still show: delete everything on the full fs, after a crash too
	local name=$1 left=$2 victim
	sync "$MNT"   # fsync: the crash below finds the filesystem full
	kill9
	lfs_mount "$MOPT"
	[ "$(avail_kib)" -lt "$left" ] || fail "$name: $(avail_kib) KiB available after filling"
	echo "$name: $(avail_kib) KiB available when full"
	victim=$(find "$MNT" -type f -print -quit)
	: > "$victim" || fail "$name: truncating $victim on the full filesystem"
	rm -rf "${MNT:?}"/* || fail "$name: rm -rf on the full filesystem failed"
	[ -z "$(ls -A "$MNT")" ] || fail "$name: files left after rm -rf"
	# unsynced, the deletes may come back after a crash: delete again
	kill9
	lfs_mount "$MOPT"
	rm -rf "${MNT:?}"/* || fail "$name: rm -rf right after kill -9"
	local avail
	avail=$(avail_kib)
	[ "$avail" -gt $((total_kib * 9 / 10)) ] || fail "$name: only $avail of $total_kib KiB available after rm -rf"
	head -c 8M "$WORK/src" > "$MNT/again" || fail "$name: writing after rm -rf"
	cmp "$MNT/again" <(head -c 8M "$WORK/src") || fail "$name: data written after rm -rf"
	lfs_umount
	check_fsck "$name"
	echo "$name: ok (truncate and rm -rf on the full filesystem and after kill -9; $avail KiB available again)"
}

head -c 96M /dev/urandom > "$WORK/src"

# ---- one stream, with the writeback cache and without
MOPT=
for MOPT in writethrough ""; do
	rm -f "$IMG"
	mkfs_img $SIZE
	lfs_mount "$MOPT"
	total_kib=$(avail_kib)
	bytes=$(fill_stream "$WORK/src" "$MNT/stream")
	check_stream "$MNT/stream" "$bytes" "$WORK/src"
	[ "$bytes" -gt $((total_kib * 1024 * 95 / 100)) ] ||
		fail "stream${MOPT:+ ($MOPT)}: ENOSPC after $bytes bytes, but df said $total_kib KiB were available"
	echo "stream${MOPT:+ ($MOPT)}: ENOSPC at write() after $bytes bytes of $((total_kib * 1024)) available ($((bytes * 100 / (total_kib * 1024)))%)"
	lfs_umount
	lfs_mount "$MOPT"
	check_stream "$MNT/stream" "$bytes" "$WORK/src"
	after_fill "stream${MOPT:+ ($MOPT)}" 4096
done

# ---- fallocate is a promise: what it gave can be written on a full filesystem
rm -f "$IMG"
mkfs_img $SIZE
lfs_mount "$MOPT"
before=$(avail_kib)
fallocate -l 16M "$MNT/pre" || fail "fallocate 16 MiB"
blocks=$(stat -c %b "$MNT/pre")
[ "$blocks" -ge $((16 * 2048)) ] || fail "fallocate: st_blocks $blocks right after it, not 16 MiB"
[ $((before - $(avail_kib))) -ge 16384 ] || fail "fallocate: df went from $before to $(avail_kib) KiB only"
touch "$MNT/keep"
fallocate -n -l 4M "$MNT/keep" || fail "fallocate --keep-size"
[ "$(stat -c %s "$MNT/keep")" = 0 ] && [ "$(stat -c %b "$MNT/keep")" -ge 8192 ] ||
	fail "fallocate --keep-size: size $(stat -c %s "$MNT/keep"), blocks $(stat -c %b "$MNT/keep")"
bytes=$(fill_stream "$WORK/src" "$MNT/fill")
dd if="$WORK/src" of="$MNT/pre" bs=1M count=16 conv=notrunc,fsync status=none ||
	fail "fallocate: writing the allocated range on a full filesystem"
dd if="$WORK/src" of="$MNT/keep" bs=64k count=64 conv=fsync status=none ||
	fail "fallocate --keep-size: writing the allocated range on a full filesystem"
cmp -n 16777216 "$MNT/pre" "$WORK/src" || fail "fallocate: data written into the allocated range"
kill9
lfs_mount "$MOPT"
[ "$(stat -c %b "$MNT/pre")" -ge $((16 * 2048)) ] || fail "fallocate: allocation lost in a crash"
cmp -n 16777216 "$MNT/pre" "$WORK/src" || fail "fallocate: fsynced data lost in a crash"
rm "$MNT/fill" "$MNT/keep"
: > "$MNT/pre"
[ "$(avail_kib)" -gt $((total_kib * 9 / 10)) ] || fail "fallocate: space not given back ($(avail_kib) KiB)"
lfs_umount
check_fsck fallocate
echo "fallocate: 16 MiB allocated at once (st_blocks, df), written on a full filesystem after $bytes bytes filled it, kept across kill -9, given back by truncate"

# ---- parallel writers
rm -f "$IMG"
mkfs_img $SIZE
lfs_mount "$MOPT"
pids=()
for i in 1 2 3 4; do
	( fill_stream "$WORK/src" "$MNT/p$i" > "$WORK/p$i.bytes" ) &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "parallel writer failed"; done
sum=0
for i in 1 2 3 4; do
	b=$(cat "$WORK/p$i.bytes")
	check_stream "$MNT/p$i" "$b" "$WORK/src"
	sum=$((sum + b))
done
[ "$sum" -gt $((total_kib * 1024 * 90 / 100)) ] || fail "parallel: ENOSPC after $sum bytes in all"
echo "parallel: 4 writers got ENOSPC at write() after $sum bytes in all"
after_fill parallel 4096

# ---- many small files, with the cleaner running
rm -f "$IMG"
mkfs_img $SIZE
mount_with_cleaner
# file n holds the first (n * 7919) % 6000 bytes of src, 400 to a
# directory; one process makes them all (a head and a mkdir per file
# took 90 of the suite's 130 s, in fork and exec)
n=$("$PY" - "$MNT" "$WORK/src" <<'PY'
import os, sys
mnt, src = sys.argv[1], open(sys.argv[2], "rb").read(6000)
n = 0
while True:
    d = f"{mnt}/d{n // 400}"
    try:
        if n % 400 == 0:
            os.mkdir(d)
        with open(f"{d}/f{n}", "wb") as f:
            f.write(src[:(n * 7919) % 6000])
    except OSError:
        break
    n += 1
print(n)
PY
)
[ "$n" -gt 1000 ] || fail "small files: only $n files fit"
# the last file may hold part of what was asked; every earlier one is whole
for i in 0 1 2 $((n / 2)) $((n - 1)); do
	cmp "$MNT/d$((i / 400))/f$i" <(head -c $(( (i * 7919) % 6000 )) "$WORK/src") ||
		fail "small files: f$i differs"
done
echo "small files: $n files before ENOSPC"
# idle on a full filesystem: the cleaner stops, the daemon writes nothing.
# Counted in the cleaner's wake-ups (lib.sh's wake_until), never in
# seconds: once QUIET wake-ups in a row made no pass (each only its state and
# STATS), what the fill left is compacted; a checkpoint then writes what
# that left, and over QUIET more wake-ups nothing at all may be written.
QUIET=5
sync -f "$MNT"   # what the kernel still holds dirty from the fill
cpid=$("$CLEANERD" --status --json "$MNT" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["cleaner_pid"])')
[ "$cpid" -gt 0 ] || fail "small files: no cleaner runs"
trace_cleaner "$cpid"
written_ckpts() {
	"$CLEANERD" --status --json "$MNT" |
		"$PY" -c 'import json,sys; s=json.load(sys.stdin); print(s["bytes_written"], s["checkpoints"], s["cleaner_passes"])'
}
quiet=$(printf "%${QUIET}s" | tr ' ' q)
wake_until '[ "${w: -$QUIET}" = "$quiet" ]'
"$top_builddir/ckpt/lfs-ckpt" -c "$MNT" >/dev/null || fail "small files: lfs-ckpt -c"
read -r w0 c0 p0 < <(written_ckpts)
from=$(wakeups)
from=${#from}
wake_until "[ \${#w} -ge $((from + QUIET + 1)) ]"
read -r w1 c1 p1 < <(written_ckpts)
untrace_cleaner
after=$(wakeups)
after=${after:$((from + 1))}
echo "idle full filesystem, ${#after} of the cleaner's wake-ups ($after): $((w1 - w0)) bytes written, $((c1 - c0)) checkpoints, $((p1 - p0)) cleaner passes"
if [ "$w1" != "$w0" ] || [ "$c1" != "$c0" ] || [ "$p1" != "$p0" ] || [ "${after//q/}" ]; then
	"$CLEANERD" --status "$MNT" || true
	tail -20 "$WORK/daemon.log"
	fail "idle full filesystem: the cleaner or the daemon still wrote"
fi
# records of small files pack imperfectly into blocks (one 3 KiB record
# fills a block); the usage table counts each record's share of a block
# (RECORD_CHARGE, lfs(5)), so df shows the filesystem full too
after_fill "small files" $((total_kib / 50))
echo "full.sh: all passed"
