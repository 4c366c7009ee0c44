#!/bin/bash
# cleaner_idle.sh — an idle cleaner costs the same on a large filesystem as
# on a small one: it takes the count of clean segments from the daemon's
# statistics, and fetches the usage table (65,536 entries here, 64
# requests; a million at 1 TiB) only when it chooses victims.  Its control
# requests are counted with strace over several of its passes.
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
sleep 0.5 # its start-up reads the table once
strace -f -e trace=sendmsg -o "$WORK/trace" -p "$cpid" 2>/dev/null &
spid=$!
sleep 2
kill -INT "$spid"
wait "$spid" || true
n=$(grep -c 'sendmsg(' "$WORK/trace" || true)
echo "idle cleaner: $n control requests in 2 s of 0.2 s passes on 65,536 segments"
# each pass: its state and the statistics; a pass that read the table
# would add 64
[ "$n" -ge 4 ] || fail "strace saw $n requests: the cleaner was not traced"
[ "$n" -lt 64 ] || fail "an idle cleaner sent $n control requests in 2 s: it reads the usage table every pass"
"$top_builddir/cleaner/lfs_cleanerd" --status --json "$MNT" | matches '"cleaner_state":"idle"' ||
	fail "the cleaner is not idle"
lfs_umount
