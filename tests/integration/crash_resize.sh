#!/bin/bash
# crash_resize.sh — crashsim -Z: the filesystem shrunk below its log head
# in the middle of the workload, as lfs-resize asks a daemon to (the
# tail's live blocks moved out, then the new size committed), and grown
# back later: every crash state, torn ones included, mounts with the old
# size or the new one, fsck clean, with every file fsynced before it
# whole; a run that moved nothing or whose states all have one size fails.
# With snapshots made and deleted meanwhile (-S: each whole or absent in
# every state), and with checkpoints kept for an hour (-P: what they hold
# in the tail moved too, the oldest giving way when writes need it).
. "$(dirname "$0")/crash_lib.sh"

sim 2 -Z -n 1500 -t 2
sim 5 -Z -S -n 1500 -t 1
sim 10 -Z -P -n 800 -t 1
echo "crashsim -Z: $total crash states around a shrink and a grow checked, each the old size or the new, none lost; $views snapshot trees read back"
