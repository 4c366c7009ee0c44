#!/bin/bash
# supervise.sh — the daemon supervises its cleaner (lfs/daemon/supervise.c):
# --status names the real cleaner and its state; a second cleaner is
# refused; SIGHUP reloads its file; a killed cleaner is restarted, after
# 1 s and then after 2 s when it dies again at once; lfs-clean suspends,
# resumes, makes a pass now (which cleans), stops and starts it;
# -o nocleaner waits for lfs-clean --start; the cleaner ends with the
# mount, killed if it is stuck; an umount right after the mount is
# neither busy nor hung; a daemon run by root runs only the cleaner
# installed with it or named by LFS_CLEANERD, never one planted beside a
# copy of its program or on PATH.
. "$(dirname "$0")/lib.sh"

command -v strace >/dev/null || skip "strace (package strace) is missing"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
CLEAN="$top_builddir/cleaner/lfs-clean"
FSCK="$top_builddir/ckpt/fsck.lfs"

# field NAME: one field of --status --json
field() {
	"$CLEANERD" --status --json "$MNT" >"$WORK/status.json" || fail "lfs_cleanerd --status --json"
	sed -n "s/.*\"$1\":\"\{0,1\}\([^\",]*\).*/\1/p" "$WORK/status.json"
}
# wait_state STATE: until --status says STATE (a minute is only the
# bound on a hang)
wait_state() {
	local i
	for i in $(seq 1200); do
		[ "$(field cleaner_state)" = "$1" ] && return 0
		sleep 0.05
	done
	"$CLEANERD" --status "$MNT"
	fail "the cleaner is not $1 after a minute"
}
# cleaners: how many lfs_cleanerd processes serve $MNT
cleaners() { pgrep -f "lfs_cleanerd .*$MNT\$" | wc -l; }

# no checkpoint kept: the pass asked for below needs the dead space of
# deleted files, which kept checkpoints would hold
cat > "$WORK/cleaner.conf" <<CONF
protection_period 0
checkpoint_protection 0
cleaning_interval 1
CONF
mkfs_img 64M
"$LFS" -f -o "cleaner_conf=$WORK/cleaner.conf" "$IMG" "$MNT" 2>>"$WORK/daemon.log" &
LFS_PID=$!
wait_mounted "$LFS_PID" "$MNT" "$WORK/daemon.log"

wait_state idle
pid=$(field cleaner_pid)
[ "$(ps -o ppid= -p "$pid" | tr -d ' ')" = "$LFS_PID" ] || fail "cleaner pid $pid is not the daemon's child"
"$CLEANERD" --status "$MNT" | matches "^  cleaner         running (pid $pid), idle" ||
	{ "$CLEANERD" --status "$MNT"; fail "--status text"; }
echo "ok --status: cleaner running (pid $pid), idle"

# one cleaner per filesystem, whether it detaches or not
for opt in "" -f; do
	rc=0; timeout 10 "$CLEANERD" $opt "$MNT" 2>"$WORK/err" || rc=$?
	[ $rc = 1 ] || fail "a second lfs_cleanerd $opt: status $rc"
	grep -q "already has a cleaner (pid $pid)" "$WORK/err" || { cat "$WORK/err"; fail "second cleaner: message"; }
done
[ "$(cleaners)" = 1 ] || fail "$(cleaners) cleaners on $MNT"
[ "$(field cleaner_pid)" = "$pid" ] || fail "the registered cleaner changed"
echo "ok a second cleaner is refused, with and without -f"

# LFS_CTL_SOCKET is believed only of the parent: set by hand, refused
for name in xx lfs-ctl:0123456789abcdef0123456789abcdef; do
	rc=0; LFS_CTL_SOCKET=$name timeout 10 "$CLEANERD" -f "$MNT" 2>"$WORK/err" || rc=$?
	[ $rc = 1 ] || fail "LFS_CTL_SOCKET=$name: status $rc"
	grep -q "LFS_CTL_SOCKET=xx: not the name of an lfs control socket\|cannot reach the lfs daemon that started this cleaner" \
		"$WORK/err" || { cat "$WORK/err"; fail "LFS_CTL_SOCKET=$name: message"; }
done
[ "$(field cleaner_pid)" = "$pid" ] || fail "the registered cleaner changed"
echo "ok LFS_CTL_SOCKET set by hand: refused"

# SIGHUP: the file is read again (a setting the daemon sees: how long
# plain checkpoints are kept); a broken file keeps the settings in use
cp "$WORK/cleaner.conf" "$WORK/cleaner.conf.orig"
echo "checkpoint_protection 300" >> "$WORK/cleaner.conf"
kill -HUP "$pid"
for _ in $(seq 1200); do [ "$(field protection_period_s)" = 300 ] && break; sleep 0.05; done
[ "$(field protection_period_s)" = 300 ] || { cat "$WORK/daemon.log"; fail "SIGHUP: the new setting is not in use"; }
grep -q "lfs_cleanerd: configuration reloaded" "$WORK/daemon.log" || fail "SIGHUP: not logged"
echo "bogus_keyword 1" > "$WORK/cleaner.conf"
kill -HUP "$pid"
for _ in $(seq 1200); do grep -q "reload: .*unknown keyword 'bogus_keyword' (keeping the old settings)" "$WORK/daemon.log" && break; sleep 0.05; done
grep -q "reload: .*unknown keyword 'bogus_keyword' (keeping the old settings)" "$WORK/daemon.log" ||
	{ cat "$WORK/daemon.log"; fail "SIGHUP with a broken file: not logged"; }
[ "$(field protection_period_s)" = 300 ] || fail "SIGHUP with a broken file: the settings changed"
[ "$(field cleaner_pid)" = "$pid" ] || fail "SIGHUP: the cleaner changed"
mv "$WORK/cleaner.conf.orig" "$WORK/cleaner.conf"
kill -HUP "$pid"
for _ in $(seq 1200); do [ "$(field protection_period_s)" = 0 ] && break; sleep 0.05; done
[ "$(field protection_period_s)" = 0 ] || fail "SIGHUP: the first settings are not back"
echo "ok SIGHUP: the configuration is read again; a broken one is refused and the settings kept"

# killed: restarted after 1 s; killed again at once: after 2 s
restarted_after() { # old pid -> seconds until the daemon started another
	local t0 t1 new=
	t0=$(date +%s.%N)
	kill -9 "$1"
	for _ in $(seq 1000); do
		new=$(pgrep -P "$LFS_PID" -x lfs_cleanerd || true)
		[ -n "$new" ] && [ "$new" != "$1" ] && break
		sleep 0.01
	done
	t1=$(date +%s.%N)
	[ -n "$new" ] && [ "$new" != "$1" ] || fail "the cleaner was not restarted within 10 s"
	# registered: the pid --status names
	for _ in $(seq 1200); do [ "$(field cleaner_pid)" = "$new" ] && break; sleep 0.05; done
	[ "$(field cleaner_pid)" = "$new" ] || fail "restarted cleaner $new did not register"
	echo "$new $("$PY" -c "print(f'{$t1 - $t0:.2f}')")"
}
kill -0 "$pid"
read -r pid2 d1 < <(restarted_after "$pid")
grep -q "lfs_cleanerd (pid $pid) was killed by signal 9" "$WORK/daemon.log" || fail "the death was not logged"
read -r pid3 d2 < <(restarted_after "$pid2")
# the delays the daemon chose, from its log; and it kept them: a busy
# machine can only make the time seen here longer, never shorter
[ "$(sed -n 's/.*lfs_cleanerd (pid [0-9]*) .*; starting another in \([0-9]*\) s$/\1/p' "$WORK/daemon.log" |
	tr '\n' ' ')" = "1 2 " ] || { cat "$WORK/daemon.log"; fail "restart delays not 1 s then 2 s (backoff)"; }
"$PY" -c "import sys; sys.exit(0 if 0.9 <= $d1 and 1.9 <= $d2 else 1)" ||
	fail "restarted after $d1 s then $d2 s, sooner than the 1 s then 2 s the daemon chose"
[ "$(field cleaner_restarts)" = 2 ] || fail "restarts: $(field cleaner_restarts)"
"$CLEANERD" --status "$MNT" | matches "restarted 2 times; the last one was killed by signal 9" ||
	{ "$CLEANERD" --status "$MNT"; fail "--status does not tell the restarts"; }
[ "$(cleaners)" = 1 ] || fail "$(cleaners) cleaners after the restarts"
echo "ok killed cleaner restarted after $d1 s, killed again at once: after $d2 s (backoff)"

# suspend, resume, a pass now
"$CLEAN" --suspend "$MNT" || fail "lfs-clean --suspend"
wait_state suspended
if "$CLEAN" --now "$MNT" 2>"$WORK/err"; then fail "lfs-clean --now while suspended"; fi
grep -q "suspended" "$WORK/err" || fail "lfs-clean --now while suspended: message"
"$CLEAN" -r "$MNT" || fail "lfs-clean -r"
wait_state idle
echo "ok lfs-clean --suspend, --resume"
# dead space the thresholds would leave alone (most segments are clean)
for i in 1 2 3 4 5 6; do head -c 3M /dev/urandom > "$MNT/f$i"; done
sync -f "$MNT"
rm "$MNT"/f[1-5]
"$top_builddir/ckpt/lfs-ckpt" -c "$MNT" >/dev/null
# three of the cleaner's wake-ups, each leaving the dead space alone
trace_cleaner "$(field cleaner_pid)"
wake_until '[ ${#w} -ge 3 ]'
untrace_cleaner
[ -z "${w//q/}" ] || fail "the cleaner made a pass without being asked (its wake-ups: $w)"
[ "$(field segments_cleaned)" = 0 ] || fail "the cleaner cleaned without being asked"
"$CLEAN" "$MNT" || fail "lfs-clean (a pass now)"
for _ in $(seq 1200); do [ "$(field segments_cleaned)" != 0 ] && break; sleep 0.05; done
[ "$(field segments_cleaned)" != 0 ] || { "$CLEANERD" --status "$MNT"; fail "lfs-clean: the pass cleaned nothing"; }
echo "ok lfs-clean: a pass now cleaned $(field segments_cleaned) segments"

# stop: gone and not restarted; start: back
"$CLEAN" --stop "$MNT" || fail "lfs-clean --stop"
wait_state stopped
# stopped is the supervisor's "not enabled", in which it starts none
# (lfs/daemon/supervise.c): once the cleaner it stopped has exited, none comes
for _ in $(seq 1200); do [ "$(cleaners)" = 0 ] && break; sleep 0.05; done
[ "$(cleaners)" = 0 ] || fail "a cleaner runs after --stop"
[ "$(field cleaner_state)" = stopped ] || fail "restarted after --stop"
"$CLEAN" --start "$MNT" || fail "lfs-clean --start"
wait_state idle
echo "ok lfs-clean --stop, --start"
cpid=$(field cleaner_pid)
lfs_umount
! kill -0 "$cpid" 2>/dev/null || fail "the cleaner outlived the unmount"
"$FSCK" "$IMG" >/dev/null || fail "fsck"

# a cleaner that does not end on SIGTERM (here: stopped) is killed 10 s
# after it, so the unmount ends (before, it waited forever)
lfs_start "cleaner_conf=$WORK/cleaner.conf"
wait_state idle
cpid=$(field cleaner_pid)
kill -STOP "$cpid"
t0=$(date +%s)
# without the daemon's kill the unmount would wait for ever: end it so
( sleep 40; kill -KILL "$cpid" 2>/dev/null ) &
dog=$!
lfs_umount
took=$(( $(date +%s) - t0 ))
kill "$dog" 2>/dev/null || true
wait "$dog" 2>/dev/null || true
! kill -0 "$cpid" 2>/dev/null || fail "the stopped cleaner outlived the unmount"
# that it killed the cleaner after its grace, its log says
grep -q "lfs_cleanerd (pid $cpid) did not stop within 10 s of SIGTERM; killing it" "$WORK/daemon.log" ||
	{ cat "$WORK/daemon.log"; fail "the kill was not logged"; }
"$FSCK" "$IMG" >/dev/null || fail "fsck after the stuck cleaner"
echo "ok a cleaner stuck at unmount is killed after 10 s (the unmount took $took s)"

# a stop in the middle of a throttled pass (10 s a segment here) ends it
# at once: the unmount does not wait out the pass, nor the daemon kill
# the cleaner after its 10 s of grace (which its log would say)
cat > "$WORK/slow.conf" <<CONF
min_clean_segments 60
max_clean_segments 61
protection_period 0
cleaning_interval 0.1
max_io_rate 0.1
CONF
kills=$(grep -c "did not stop within" "$WORK/daemon.log" || true)
lfs_start "cleaner_conf=$WORK/slow.conf"
# registered (the empty filesystem gives it nothing to clean yet): its
# trace then sees the pass it makes once the files below are written
wait_state idle
cpid=$(field cleaner_pid)
[ "$cpid" != 0 ] || fail "no cleaner registered: $(field cleaner_state)"
trace_cleaner "$cpid"
# segments half dead: victims for its pass
for f in 0 1 2; do dd if=/dev/urandom of="$MNT/s$f" bs=1M count=8 status=none; done
for f in 0 1 2; do dd if=/dev/urandom of="$MNT/s$f" bs=1M count=4 conv=notrunc status=none; done
"$top_builddir/ckpt/lfs-ckpt" -c "$MNT" >/dev/null
# the pass is under way once it has asked for the usage table (op 2)
wake_until 'ctl_ops "$WORK/trace" | grep -qx 2'
untrace_cleaner
t0=$(date +%s.%N)
lfs_umount
took=$("$PY" -c "import time; print(f'{time.time() - $t0:.1f}')")
[ "$(grep -c "did not stop within" "$WORK/daemon.log")" = "$kills" ] ||
	fail "the cleaner in a throttled pass had to be killed"
"$FSCK" "$IMG" >/dev/null || fail "fsck after the throttled pass"
echo "ok a stop during a throttled pass ends it: the unmount took $took s"

# -o nocleaner: none until asked
lfs_mount
[ "$(field cleaner_state)" = stopped ] || fail "-o nocleaner: $(field cleaner_state)"
[ "$(cleaners)" = 0 ] || fail "-o nocleaner started a cleaner"
"$CLEAN" --start "$MNT" || fail "lfs-clean --start on -o nocleaner"
wait_state idle
lfs_umount
echo "ok -o nocleaner: stopped until lfs-clean --start"

# an umount at once after the mount: the cleaner the daemon starts then
# must not hold the mount point (it is told the control socket, and does
# not open the directory to ask), else umount fails with "target is busy"
# (before: 7 of 100 such cycles did, on an idle machine), and must end on
# the daemon's SIGTERM however early it comes
unmount_now() {
	if [ "$(id -u)" = 0 ]; then umount "$MNT"; else fusermount3 -u "$MNT"; fi
}
cycles=50
for i in $(seq $cycles); do
	"$LFS" -o "cleaner_conf=$WORK/cleaner.conf,log=$WORK/cycles.log" "$IMG" "$MNT" 2>>"$WORK/daemon.log" ||
		{ cat "$WORK/daemon.log"; fail "mount $i"; }
	# every tenth cycle waits until its cleaner has reached the
	# filesystem (its line in the log), so that some are unmounted with a
	# cleaner at work; under the sanitizers, at once is before it starts
	if [ $((i % 10)) = 1 ]; then
		for _ in $(seq 600); do
			[ "$(grep -c "lfs_cleanerd.*: cleaning $MNT" "$WORK/cycles.log" || true)" -ge $((i / 10 + 1)) ] && break
			sleep 0.1
		done
	fi
	# the umount waits for the daemon's final checkpoint, and the
	# daemon for its cleaner: a SIGTERM the cleaner lost (sent between
	# the fork and the exec that start it) made it wait for ever
	unmount_now 2>"$WORK/err" &
	up=$!
	for _ in $(seq 300); do kill -0 $up 2>/dev/null || break; sleep 0.1; done
	if kill -0 $up 2>/dev/null; then
		pkill -KILL -f "lfs_cleanerd -f .*$MNT\$" || true
		wait $up
		fail "umount right after mount $i of $cycles: not done after 30 s"
	fi
	if ! wait $up; then
		cat "$WORK/err"
		umount -l "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT"
		flock -w 60 "$IMG" true
		fail "umount right after mount $i of $cycles"
	fi
	flock -w 60 "$IMG" true || fail "image still locked a minute after unmount $i"
done
started=$(grep -c "lfs_cleanerd.*: cleaning $MNT" "$WORK/cycles.log" || true)
[ "$started" -ge $((cycles / 10)) ] ||
	{ cat "$WORK/cycles.log"; fail "only $started cleaners reached the filesystem in $cycles mounts, not the $((cycles / 10)) waited for"; }
"$FSCK" "$IMG" >/dev/null || fail "fsck after the cycles"
echo "ok umount right after the mount, $cycles times: never busy (the cleaner reached the filesystem in $started)"

# The cleaner a daemon run by root starts runs as root: only the one
# installed with it, or the one LFS_CLEANERD names (as lib.sh does for
# the build tree), never one planted beside a copy of its program or
# on PATH.  A relative LFS_CLEANERD is refused before anything mounts.
P="$WORK/plant"
mkdir -p "$P/bin" "$P/cleaner" "$P/path"
cp "$LFS" "$P/bin/lfs"
for d in cleaner path; do
	printf '#!/bin/sh\ntouch "%s/ran-%s"\nexit 3\n' "$P" "$d" >"$P/$d/lfs_cleanerd"
	chmod 755 "$P/$d/lfs_cleanerd"
done
rc=0
LFS_CLEANERD=lfs_cleanerd "$LFS" -f "$IMG" "$MNT" 2>"$WORK/err" || rc=$?
[ $rc = 2 ] || fail "a relative LFS_CLEANERD: status $rc"
grep -q "LFS_CLEANERD=lfs_cleanerd: not an absolute path" "$WORK/err" || { cat "$WORK/err"; fail "relative LFS_CLEANERD: no reason"; }
mountpoint -q "$MNT" && fail "mounted with a relative LFS_CLEANERD"
env -u LFS_CLEANERD PATH="$P/path:$PATH" "$P/bin/lfs" -f -o "cleaner_conf=$WORK/cleaner.conf" "$IMG" "$MNT" \
	2>"$WORK/plant.log" &
LFS_PID=$!
wait_mounted "$LFS_PID" "$MNT" "$WORK/plant.log"
# the event: the supervisor has started a cleaner and seen it end, or
# the installed one has reached the filesystem
for _ in $(seq 200); do
	grep -q "lfs_cleanerd (pid [0-9]*) exited\|cleaning $MNT" "$WORK/plant.log" && break
	sleep 0.05
done
grep -q "lfs_cleanerd (pid [0-9]*) exited\|cleaning $MNT" "$WORK/plant.log" ||
	{ cat "$WORK/plant.log"; fail "the daemon started no cleaner in 10 s"; }
lfs_umount
for d in cleaner path; do
	[ ! -e "$P/ran-$d" ] || { cat "$WORK/plant.log"; fail "the root daemon ran the lfs_cleanerd planted in $P/$d"; }
done
echo "ok a root daemon runs neither a cleaner beside its program nor one on PATH; a relative LFS_CLEANERD is refused"
