#!/bin/bash
# crash_recv.sh — crashsim -V: trees received as snapshots (lfs_recv_begin,
# the tree made in the staged directory, then the commit or the abort)
# among the workload's operations, a power cut at every flush and torn
# between them: every state shows a received snapshot whole (each file
# read back) or not at all, as its commit had returned or not begun;
# mounted read-write, no staged tree is left, the snapshots read the
# same, and fsck after that mount finds the space accounted.  On a full
# filesystem (-F -V) receives run out of room and are given up, and
# every snapshot and file can be deleted after the crash.
. "$(dirname "$0")/crash_lib.sh"

sim 2 -V -n 1000 -t 3
sim 5 -F -V -n 500 -t 2
echo "crashsim -V: $total crash states with receives checked, $views received snapshot trees read back, all whole or absent, no staged tree left"
