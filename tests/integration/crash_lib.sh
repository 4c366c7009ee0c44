# crash_lib.sh — shared by the crash-consistency suites (crash.sh,
# crash_full.sh, crash_snap.sh, crash_relink.sh, crash_discard.sh, crash_resize.sh, crash_recv.sh: crashsim's kinds of
# workload, each its own suite so that make -j runs them side by side;
# crash_kill.sh: kill -9 of the daemon on real mounts).  CRASH_SEEDS
# scales crashsim's seeds up for long runs (CI runs enough for a few
# thousand states); each suite takes its share of them as before.
# CRASH_SEEDS_ELSEWHERE=M leaves out the seeds a run with CRASH_SEEDS=M
# checks: scripts/test.sh's sanitizer pass checks the first seeds, its
# plain pass the rest (crashsim makes the same states from a seed in
# either build, and checks them the same way; the sanitizers add to it).
. "$(dirname "$0")/lib.sh"

SIM="$top_builddir/tests/crash/crashsim"
FSCK="$top_builddir/ckpt/fsck.lfs"
seeds=${CRASH_SEEDS:-10}
elsewhere=${CRASH_SEEDS_ELSEWHERE:-0}
[ "$elsewhere" -lt "$seeds" ] || fail "CRASH_SEEDS_ELSEWHERE=$elsewhere leaves none of CRASH_SEEDS=$seeds here"
total=0 views=0 runs=0
# sim K ARGS...: crashsim with ARGS for a K-th of the seeds (rounded up:
# seeds 1 to that), less those a K-th of CRASH_SEEDS_ELSEWHERE names;
# adds the states checked to total, the snapshot views read to views and
# the seeds run to runs; out is the last run's output
sim() {
	local n=$(( (seeds + $1 - 1) / $1 )) s k
	local from=$(( (elsewhere + $1 - 1) / $1 + 1 ))
	shift
	for s in $(seq "$from" "$n"); do
		out=$("$SIM" "$@" -s "$s" 2>"$WORK/sim.err") ||
			{ echo "$out"; grep -v '^lfs: ' "$WORK/sim.err" | tail -30; fail "crashsim $* seed $s"; }
		k=$(echo "$out" | tail -1 | sed -n 's/.* \([0-9]*\) crash states checked.*/\1/p')
		total=$((total + k))
		k=$(echo "$out" | sed -n 's/.* \([0-9]*\) snapshot views read.*/\1/p')
		case "$1" in -S | -V) [ "${k:-0}" -gt 0 ] || fail "crashsim $* seed $s read no snapshot" ;; esac
		views=$((views + ${k:-0}))
		runs=$((runs + 1))
	done
}
