#!/bin/bash
# cleaner_idle.sh — an idle cleaner costs the same on a large filesystem as
# on a small one: it takes the count of clean segments from the daemon's
# statistics, and fetches the usage table (65,536 entries here, 64
# requests; a million at 1 TiB) only when it chooses victims.  Its control
# requests are traced (strace) over six passes and told apart by op.
. "$(dirname "$0")/lib.sh"

command -v strace >/dev/null || skip "strace (package strace) is missing"
truncate -s 64G "$IMG"
mkfs_img 64G
cat > "$WORK/idle.conf" <<'CONF'
cleaning_interval 0.2
CONF
lfs_mount_cleaner "$WORK/idle.conf"
cpid=
for _ in $(seq 50); do
	cpid=$(pgrep -f "lfs_cleanerd -f -c $WORK/idle.conf $MNT" | head -1 || true)
	[ -n "$cpid" ] && break
	sleep 0.1
done
[ -n "$cpid" ] || fail "the cleaner is not running"
strace -f -xx -s 8 -e trace=sendmsg -o "$WORK/trace" -p "$cpid" 2>/dev/null &
spid=$!
ops() { ctl_ops "$WORK/trace"; }
# until the trace holds six passes (each begins with CLEANER_STATE, 10)
until [ "$(ops | grep -cx 10)" -ge 6 ]; do
	kill -0 "$spid" 2>/dev/null || fail "strace exited"
	sleep 0.1
done
kill -INT "$spid"
wait "$spid" || true
# from its first pass on (its start-up may read the table once): no
# USAGE (2), however many passes; each pass its state and statistics
after=$(ops | sed -n '/^10$/,$p')
passes=$(grep -cx 10 <<<"$after")
usage=$(grep -cx 2 <<<"$after" || true)
echo "idle cleaner: $passes passes of 0.2 s traced on 65,536 segments: $(wc -l <<<"$after") control requests, $usage of them USAGE"
[ "$usage" = 0 ] || fail "an idle cleaner read the usage table ($usage requests) in $passes passes"
"$top_builddir/cleaner/lfs_cleanerd" --status --json "$MNT" | matches '"cleaner_state":"idle"' ||
	fail "the cleaner is not idle"
lfs_umount
