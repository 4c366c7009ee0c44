# crash_lib.sh — shared by the crash-consistency suites (crash.sh,
# crash_full.sh, crash_snap.sh, crash_relink.sh, crash_discard.sh, crash_resize.sh: crashsim's kinds of
# workload, each its own suite so that make -j runs them side by side;
# crash_kill.sh: kill -9 of the daemon on real mounts).  CRASH_SEEDS
# scales crashsim's seeds up for long runs (CI runs enough for a few
# thousand states); each suite takes its share of them as before.
. "$(dirname "$0")/lib.sh"

SIM="$top_builddir/tests/crash/crashsim"
FSCK="$top_builddir/ckpt/fsck.lfs"
seeds=${CRASH_SEEDS:-10}
total=0 views=0
# sim NSEEDS ARGS...: crashsim with ARGS for seeds 1..NSEEDS; adds the
# states checked to total and the snapshot views read to views; out is
# the last run's output
sim() {
	local n=$1 s k
	shift
	for s in $(seq 1 "$n"); do
		out=$("$SIM" "$@" -s "$s" 2>"$WORK/sim.err") ||
			{ echo "$out"; grep -v '^lfs: ' "$WORK/sim.err" | tail -30; fail "crashsim $* seed $s"; }
		k=$(echo "$out" | tail -1 | sed -n 's/.* \([0-9]*\) crash states checked.*/\1/p')
		total=$((total + k))
		k=$(echo "$out" | sed -n 's/.* \([0-9]*\) snapshot views read.*/\1/p')
		[ "$1" != -S ] || [ "${k:-0}" -gt 0 ] || fail "crashsim $* seed $s read no snapshot"
		views=$((views + ${k:-0}))
	done
}
