#!/bin/bash
# uring.sh — FUSE over io_uring (lfs(8), uring): with the fuse module's
# enable_uring set (its old value restored at exit), -o uring serves the
# POSIX checks, the I/O coherence checks and interrupted fsyncs with every
# request but INIT, FORGET and INTERRUPT taken from the ring, as
# lfs-requests and lfs_cleanerd --status say, notifications still
# reaching the kernel; LFS_URING=on asks for it too, in a daemon that
# detaches; no option (the default for now), -o nouring, a kernel that
# does not offer io_uring, and entries the kernel refuses
# (LFS_URING_FAULT) each serve the mount over /dev/fuse, saying so.
. "$(dirname "$0")/lib.sh"

PARAM=/sys/module/fuse/parameters/enable_uring
[ -w "$PARAM" ] || skip "this kernel's fuse has no io_uring ($PARAM)"
[ "$(cat /proc/sys/kernel/io_uring_disabled 2>/dev/null || echo 0)" = 0 ] || skip "io_uring is disabled (kernel.io_uring_disabled)"
CHECK="$top_builddir/tests/integration/posix_check"
COHERENCE="$top_builddir/tests/integration/coherence"
REQUESTS="$top_builddir/cleaner/lfs-requests"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
# the transport is this test's to choose (LFS_URING: scripts/test.sh)
unset LFS_URING
OLD=$(cat "$PARAM")
trap 'rc=$?; echo "$OLD" >"$PARAM"; set +e; (exit $rc); cleanup' EXIT INT TERM

# field KEY: the value of KEY in lfs-requests --json of the mount
field() {
	"$REQUESTS" --json "$MNT" | "$PY" -c "import json, sys; print(json.load(sys.stdin).get('$1', ''))"
}

# op_count OP: how many OP requests the daemon counted
op_count() {
	"$REQUESTS" --json "$MNT" | "$PY" -c "import json, sys; print(json.load(sys.stdin)['requests'].get('$1', 0))"
}

# transport_is NAME WHAT: lfs-requests and lfs_cleanerd --status agree
# that NAME (io_uring or /dev/fuse) serves the mount
transport_is() {
	[ "$(field transport)" = "$1" ] || fail "$2: lfs-requests says $(field transport), not $1"
	"$CLEANERD" --status "$MNT" | matches -F "requests        over $1" ||
		fail "$2: lfs_cleanerd --status does not say $1"
}

# A signal handler that fires while fsync waits for the daemon: the
# kernel sends INTERRUPT (over /dev/fuse); fsync must still succeed.
interrupted_fsyncs() {
	"$PY" - "$1" <<'EOF'
import os, signal, sys
signal.signal(signal.SIGUSR1, lambda s, f: None)
signal.siginterrupt(signal.SIGUSR1, False)
pid = os.fork()
if pid == 0:
    while True:
        os.kill(os.getppid(), signal.SIGUSR1)
fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o644)
buf = os.urandom(1 << 20)
for i in range(100):
    os.pwrite(fd, buf, 0)
    os.fsync(fd)
assert os.pread(fd, len(buf), 0) == buf
os.close(fd)
os.kill(pid, signal.SIGKILL)
os.waitpid(pid, 0)
EOF
}

echo Y >"$PARAM"
mkfs_img 1G
lfs_mount uring
wait_log "$WORK/daemon.log" "fuse: requests come over io_uring"
"$REQUESTS" --reset "$MNT" >/dev/null
mkdir "$MNT/run1"
timeout 600 "$CHECK" "$MNT/run1" >"$WORK/run1.out" || { grep -v '^ok' "$WORK/run1.out"; fail "posix_check over io_uring"; }
tail -1 "$WORK/run1.out"
for seed in 1 2; do
	"$COHERENCE" "$MNT/c$seed" "$seed" 300 >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "coherence over io_uring, seed $seed"; }
done
# whether a signal lands while FSYNC is in the daemon is the scheduler's
# choice: repeat the rounds until an INTERRUPT has come (50: a hang)
before=$(op_count INTERRUPT)
for _ in $(seq 1 50); do
	interrupted_fsyncs "$MNT/intr" || fail "fsync interrupted by signals over io_uring"
	[ "$(op_count INTERRUPT)" -gt "$before" ] && break
done
echo 2 >/proc/sys/vm/drop_caches
transport_is io_uring "-o uring"
json=$("$REQUESTS" --json "$MNT")
"$PY" - "$json" "$before" <<'EOF' || fail "not every request came over io_uring: $json"
import json, sys
j = json.loads(sys.argv[1])
ops = j["requests"]
dev_only = sum(ops.get(k, 0) for k in ("FORGET", "BATCH_FORGET", "INTERRUPT", "INIT"))
print(f"over io_uring: {j['over_uring']} of {j['total']} requests; FORGET {ops.get('FORGET', 0)}, "
      f"BATCH_FORGET {ops.get('BATCH_FORGET', 0)}, INTERRUPT {ops.get('INTERRUPT', 0)}, "
      f"notifications {j['notifications']}")
assert j["over_uring"] >= 10000, "posix_check alone makes tens of thousands"
assert j["over_uring"] >= j["total"] - dev_only, "a request that has a ring came over /dev/fuse"
assert j["over_uring"] <= j["total"] - dev_only + 5, "a /dev/fuse-only request was counted as the ring's"
assert ops.get("FORGET", 0) + ops.get("BATCH_FORGET", 0) > 0, "no FORGET reached the daemon"
assert ops.get("INTERRUPT", 0) > int(sys.argv[2]), "no INTERRUPT reached the daemon"
assert j["notifications"] > 0, "no notification was sent"
EOF
# the data written over the ring is there after a remount over /dev/fuse
sum1=$(cd "$MNT" && find run1 c1 c2 intr -type f -print0 | sort -z | xargs -0 cat | md5sum)
lfs_umount
lfs_mount nouring
transport_is /dev/fuse "-o nouring"
[ "$(field over_uring)" = 0 ] || fail "-o nouring: requests came over io_uring"
sum2=$(cd "$MNT" && find run1 c1 c2 intr -type f -print0 | sort -z | xargs -0 cat | md5sum)
[ "$sum1" = "$sum2" ] || fail "the files written over io_uring read back otherwise over /dev/fuse"
lfs_umount

# a daemon that detaches (no -f) starts its ring's threads after the fork
LFS_URING=on "$LFS" -o nocleaner,log="$WORK/bg.log" "$IMG" "$MNT" || fail "LFS_URING=on lfs without -f"
echo data >"$MNT/bg" && [ "$(cat "$MNT/bg")" = data ] || fail "write over io_uring from a detached daemon"
transport_is io_uring "a detached daemon, LFS_URING=on"
umount "$MNT"
flock -w 60 "$IMG" true || fail "image still locked a minute after unmount"
grep -qF "fuse: requests come over io_uring" "$WORK/bg.log" || fail "the detached daemon did not say io_uring"

# the kernel refuses the entries: the mount goes on over /dev/fuse
export LFS_URING_FAULT=register
lfs_mount uring
unset LFS_URING_FAULT
wait_log "$WORK/daemon.log" "io_uring entries refused"
mkdir "$MNT/run2"
timeout 600 "$CHECK" "$MNT/run2" >"$WORK/run2.out" || { grep -v '^ok' "$WORK/run2.out"; fail "posix_check after the fallback"; }
transport_is /dev/fuse "entries refused"
[ "$(field over_uring)" = 0 ] || fail "entries refused: requests came over io_uring"
lfs_umount

# no option: /dev/fuse (lfs(8), BUGS), even with enable_uring set
lfs_mount
transport_is /dev/fuse "no -o uring"
lfs_umount

# LFS_URING=off is -o nouring where no option is given; a bad value is refused
LFS_URING=off "$LFS" -o nocleaner,log="$WORK/env.log" "$IMG" "$MNT" || fail "LFS_URING=off"
transport_is /dev/fuse "LFS_URING=off"
umount "$MNT"
flock -w 60 "$IMG" true || fail "image still locked a minute after unmount"
if LFS_URING=maybe "$LFS" -o nocleaner "$IMG" "$MNT" 2>"$WORK/err"; then
	umount "$MNT"
	fail "LFS_URING=maybe was taken"
fi
grep -qF "LFS_URING=maybe: on or off" "$WORK/err" || fail "LFS_URING=maybe: $(cat "$WORK/err")"

# enable_uring off: the default is /dev/fuse; -o uring says why not
echo N >"$PARAM"
lfs_mount uring
wait_log "$WORK/daemon.log" "the kernel does not offer io_uring"
echo data >"$MNT/f" && [ "$(cat "$MNT/f")" = data ] || fail "write over /dev/fuse"
transport_is /dev/fuse "enable_uring=N"
lfs_umount
echo "ok: io_uring served the POSIX and coherence checks; /dev/fuse where it must"
