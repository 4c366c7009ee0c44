#!/bin/bash
# crash_snap.sh — crashsim -S: snapshots made and deleted during the
# workload: a snapshot made is whole in every later state until its
# deletion, one not made or deleted is absent; and on a full filesystem
# (-F -S) every snapshot can be deleted after the crash.  With checkpoints
# kept for an hour too (-F -S -P), the oldest give way to the writes on
# the full filesystem, and the states around that (forgotten in memory,
# committed by the next checkpoint) must mount whole as well.
. "$(dirname "$0")/crash_lib.sh"

sim 2 -S -n 1500 -t 3
sim 10 -F -S -n 500 -t 2
sim 5 -F -S -P -n 300 -t 2
echo "crashsim -S: $total crash states with snapshots checked, $views snapshot trees read back, all whole or absent as they must be"
