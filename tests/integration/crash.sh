#!/bin/bash
# crash.sh — crash consistency: crashsim (tests/crash/crashsim.c) at every
# flush point of recorded workloads, and torn variants, mounted through
# the real code, fsck'd, fsynced files checked (CRASH_SEEDS seeds).  The
# other kinds of workload are their own suites, run beside this one:
# crash_full.sh (from a full filesystem), crash_snap.sh (snapshots),
# crash_relink.sh (overwrites of large files), crash_kill.sh (kill -9 of
# the daemon on real mounts).
. "$(dirname "$0")/crash_lib.sh"

sim 1 -n 1500 -t 4
echo "crashsim: $total crash states checked over $runs seeds, all consistent with every fsynced file"
