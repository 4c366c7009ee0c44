#!/bin/bash
# remount.sh — read-only switching and the standard mount options:
#  - what the kernel sends a FUSE daemon at mount -o remount,ro: counted
#    with strace on the daemon's reads of /dev/fuse (no request names
#    the change), while the kernel itself refuses writes;
#  - lfs-clean --ro: the daemon writes what it buffers and a checkpoint,
#    then refuses changes (EROFS), suspends cleaning; --rw undoes it, and
#    opens the log of a -o ro mount (one a crash left too) for writing;
#  - one daemon per image: a second, read-only or not, beside a writer
#    or a read-only daemon, is refused before recovering anything;
#    fsck.lfs too; dumplfs reads with a warning; a process holding the
#    image without a mount is waited for, until it lets go;
#  - -o remount and unknown options are refused before the image is
#    opened;
#  - noatime, strictatime, relatime; sync and dirsync survive kill -9.
. "$(dirname "$0")/lib.sh"

CLEAN="$top_builddir/cleaner/lfs-clean"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
DUMPLFS="$top_builddir/ckpt/dumplfs"
FSCK="$top_builddir/ckpt/fsck.lfs"
command -v strace >/dev/null || skip "strace is missing (scripts/deps.sh installs it): the remount requests cannot be counted"
newest_seq() { "$DUMPLFS" "$IMG" 2>/dev/null | grep -A2 "newest  *yes" | sed -n "s/^ *seq  *//p"; }
# kill9: the daemon dies without unmounting
kill9() {
	kill -9 "$LFS_PID"; wait "$LFS_PID" 2>/dev/null || true; LFS_PID=
	fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT"
	flock -w 10 "$IMG" true
}

mkfs_img 64M
lfs_mount
echo before > "$MNT/a"

# 1. what the kernel tells the daemon about a remount
strace -f -qq -p "$LFS_PID" -e trace=read -e read=none -o "$WORK/strace" &
spid=$!
# until strace traces every thread of the daemon
traced() { grep -h '^TracerPid:' /proc/"$LFS_PID"/task/*/status | grep -vq "TracerPid:[[:space:]]*$spid$" && return 1 || return 0; }
until traced; do kill -0 "$spid" || fail "strace exited"; sleep 0.05; done
mount -i -o remount,ro "$MNT" || fail "mount -i -o remount,ro"
# the remount returned once the daemon had read and answered what it
# was sent: strace logged each read as it returned
kill "$spid"; wait "$spid" 2>/dev/null || true
# the opcode is the second 32-bit word of each request read from
# /dev/fuse (the daemon's other reads, /sys and /proc files its ticker
# reads every few seconds, are not requests)
fuse_fds=$(for f in /proc/"$LFS_PID"/fd/*; do if [ "$(readlink "$f")" = /dev/fuse ]; then echo "${f##*/}"; fi; done | tr '\n' ' ')
[ -n "$fuse_fds" ] || fail "the daemon holds no /dev/fuse descriptor"
ops=$("$PY" - "$WORK/strace" $fuse_fds <<'PY'
import re, sys
names = {1: "LOOKUP", 2: "FORGET", 3: "GETATTR", 17: "STATFS", 42: "BATCH_FORGET", 50: "SYNCFS"}
fds = set(sys.argv[2:])
ops, pending = [], {}
# with -f a read may be split: "PID read(FD, <unfinished ...>", then
# "PID <... read resumed>"BYTES"..., N) = M"
for line in open(sys.argv[1]):
    m = re.match(r'(\d+) +(?:read\((\d+), (.*)|<\.\.\. read resumed>(.*))', line)
    if not m:
        continue
    pid, fd, rest = m.group(1), m.group(2), m.group(3)
    if fd is None:
        fd, rest = pending.pop(pid, None), m.group(4)
    elif "<unfinished" in rest:
        pending[pid] = fd
        continue
    d = re.match(r'"((?:[^"\\]|\\.)*)"\.*, \d+\) = (\d+)', rest)
    if fd not in fds or not d:
        continue
    raw = d.group(1).encode().decode("unicode_escape").encode("latin-1")
    if len(raw) >= 8:
        op = int.from_bytes(raw[4:8], "little")
        ops.append(names.get(op, str(op)))
print(" ".join(ops) or "none")
PY
)
echo "requests the daemon read during mount -o remount,ro: $ops"
# only requests that any access makes (and SYNCFS: the kernel syncs a
# fuseblk filesystem first); FUSE has no request that says "read-only"
for op in $ops; do
	case $op in LOOKUP|FORGET|BATCH_FORGET|GETATTR|STATFS|SYNCFS|none) ;; *) fail "unexpected request $op at remount" ;; esac
done
grep -q " ro," <(grep " $MNT " /proc/mounts) || fail "the kernel did not mark the mount read-only"
if touch "$MNT/k" 2>/dev/null; then fail "the kernel let a write through a ro remount"; fi
mount -i -o remount,rw "$MNT" || fail "mount -i -o remount,rw"
echo "ok remount: the kernel flips its flag and refuses writes; no request tells the daemon ($ops)"

# 2. lfs-clean --ro / --rw
echo buffered > "$MNT/b"
s0=$(newest_seq)
"$CLEAN" --ro "$MNT" || fail "lfs-clean --ro"
[ "$(newest_seq)" -gt "$s0" ] || fail "no checkpoint at the switch to read-only"
if touch "$MNT/c" 2>"$WORK/err"; then fail "a create after lfs-clean --ro"; fi
grep -q "Read-only file system" "$WORK/err" || fail "create after --ro: $(cat "$WORK/err")"
if mkdir "$MNT/d" 2>/dev/null; then fail "mkdir after --ro"; fi
[ "$(cat "$MNT/b")" = buffered ] || fail "read after --ro"
"$CLEANERD" --status --json "$MNT" | matches '"readonly":true' || fail "--status does not say read-only"
"$CLEAN" --rw "$MNT" || fail "lfs-clean --rw"
echo again > "$MNT/c" || fail "write after --rw"
echo "ok lfs-clean --ro: buffered data and a checkpoint on disk (seq $s0 -> $(newest_seq)), EROFS; --rw: writable"

# 3. one daemon per image
second() { # what, options: a second daemon must be refused untouched
	mkdir -p "$WORK/mnt2"
	rc=0; timeout 20 "$LFS" -f -o "$2" "$IMG" "$WORK/mnt2" 2>"$WORK/err" || rc=$?
	[ $rc != 0 ] || { fusermount3 -u "$WORK/mnt2"; fail "$1: a second daemon mounted"; }
	! mountpoint -q "$WORK/mnt2" || fail "$1: mounted"
	grep -q "already mounted at $MNT" "$WORK/err" || { cat "$WORK/err"; fail "$1: message"; }
	! grep -q "recovery" "$WORK/err" || fail "$1: the second daemon ran recovery"
}
second "ro beside a writer" ro,nocleaner
second "rw beside a writer" nocleaner
lfs_umount
lfs_mount ro
second "ro beside a read-only daemon" ro,nocleaner
second "rw beside a read-only daemon" nocleaner
if "$FSCK" "$IMG" >"$WORK/out" 2>&1; then fail "fsck.lfs ran on an image a read-only daemon holds"; fi
"$DUMPLFS" "$IMG" >/dev/null 2>"$WORK/err" || fail "dumplfs on an image a read-only daemon holds"
grep -q "warning: .* is mounted at $MNT" "$WORK/err" || fail "dumplfs: no warning"
lfs_umount
echo "ok one daemon per image, read-only or not; fsck refused, dumplfs warns"

# a -o ro mount of an image a crash left (roll-forward in memory only)
# opens its log for writing at --rw, as a read-write mount would have
lfs_mount
echo logged | dd of="$MNT/logged" conv=fsync status=none
kill9
lfs_mount ro
[ "$(cat "$MNT/logged")" = logged ] || fail "-o ro after a crash: the fsynced file is not read"
"$CLEANERD" --status --json "$MNT" | matches '"readonly":true' || fail "-o ro: --status does not say read-only"
"$CLEAN" --rw "$MNT" || fail "lfs-clean --rw on a -o ro mount"
mount -i -o remount,rw "$MNT" || fail "mount -i -o remount,rw of a -o ro mount"
echo new >"$MNT/new" || fail "a write after --rw on a -o ro mount"
[ "$(cat "$MNT/logged")" = logged ] || fail "the fsynced file changed at --rw"
lfs_umount
"$FSCK" "$IMG" >/dev/null || fail "fsck after a -o ro mount of a crashed image went read-write"
lfs_mount ro
[ "$(cat "$MNT/logged") $(cat "$MNT/new")" = "logged new" ] || fail "files lost after --rw on a -o ro mount"
lfs_umount
echo "ok a -o ro mount of a crashed image goes read-write with lfs-clean --rw: recovered, written, fsck clean"

# a process that holds the image without a mount (a daemon finishing its
# unmount): the mount waits for it to let go, and goes on as soon as it
# does, woken by the close (inotify), well before its minute is up
mkfifo "$WORK/release"
flock "$IMG" sh -c ": >'$WORK/held'; read _ <'$WORK/release'" &
holder=$!
until [ -e "$WORK/held" ]; do kill -0 "$holder" || fail "the holder did not take the image"; sleep 0.05; done
"$LFS" -f -o nocleaner "$IMG" "$MNT" 2>>"$WORK/daemon.log" &
LFS_PID=$!
until grep -q "held by another lfs process that is not mounted" "$WORK/daemon.log"; do
	kill -0 "$LFS_PID" || { cat "$WORK/daemon.log"; fail "lfs exited beside the holder"; }
	! mountpoint -q "$MNT" || fail "mounted while another process held the image"
	sleep 0.05
done
! mountpoint -q "$MNT" || fail "mounted while another process held the image"
echo >"$WORK/release"
wait "$holder"
wait_mounted "$LFS_PID" "$MNT" "$WORK/daemon.log"
lfs_umount
echo "ok a mount waits for an unmounted holder of the image, and goes on when it lets go (within its minute)"

# 4. refused before the image is opened
for o in remount remount,ro no_such_option relatime,bogus; do
	rc=0; "$LFS" -f -o "$o" "$IMG" "$MNT" >"$WORK/out" 2>&1 || rc=$?
	[ $rc = 2 ] || { cat "$WORK/out"; fail "-o $o: status $rc"; }
	! mountpoint -q "$MNT" || fail "-o $o mounted"
	! grep -q "recovery\|mounted at" "$WORK/out" || fail "-o $o: the image was opened"
	echo "ok -o $o refused: $(head -1 "$WORK/out")"
done

# 5. atime (cache_timeout=0: stat asks the daemon; a remount between
# the reads empties the page cache, so both reads reach the daemon)
atime() { stat -c %X "$MNT/a"; }
for mode in noatime strictatime relatime; do
	lfs_mount "$mode,cache_timeout=0"
	touch -a -d "2020-01-01" "$MNT/a"
	t0=$(atime)
	cat "$MNT/a" >/dev/null
	t1=$(atime)
	lfs_umount
	# until the clock's second is past t1, so that an atime moved by the
	# next read shows (%X is in whole seconds)
	while [ "$(date +%s)" -le "$t1" ]; do sleep 0.05; done
	lfs_mount "$mode,cache_timeout=0"
	cat "$MNT/a" >/dev/null
	t2=$(atime)
	lfs_umount
	case $mode in
	noatime) [ "$t1" = "$t0" ] && [ "$t2" = "$t0" ] || fail "noatime: atime $t0 -> $t1 -> $t2" ;;
	strictatime) [ "$t1" != "$t0" ] && [ "$t2" != "$t1" ] || fail "strictatime: atime $t0 -> $t1 -> $t2" ;;
	relatime) [ "$t1" != "$t0" ] && [ "$t2" = "$t1" ] || fail "relatime: atime $t0 -> $t1 -> $t2" ;;
	esac
	echo "ok -o $mode: atime $t0 -> $t1 -> $t2"
done

# 6. dirsync: a create is on disk when it returns; sync: data too
lfs_mount dirsync
mkdir "$MNT/dirsync.d"
: > "$MNT/dirsync.d/f"
kill9
lfs_mount
[ -f "$MNT/dirsync.d/f" ] || fail "dirsync: a create did not survive kill -9"
lfs_umount
lfs_mount sync
echo synced > "$MNT/sync.f"
kill9
lfs_mount
[ "$(cat "$MNT/sync.f" 2>/dev/null)" = synced ] || fail "sync: a write did not survive kill -9"
lfs_umount
"$FSCK" "$IMG" >/dev/null || fail "fsck after the kills"
echo "ok dirsync and sync: changes survive kill -9 right after the call"
