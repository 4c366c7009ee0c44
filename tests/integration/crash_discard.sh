#!/bin/bash
# crash_discard.sh — crashsim -D: a filesystem mounted with -o discard
# whose workload also runs FITRIM now and then; each discard is in
# flight like a write until the next flush, so the states hold discards
# landed, not landed and cut short: every state mounts, checks clean and
# holds every fsynced file (a segment is given back only once the
# checkpoint that freed it is durable).  With snapshots too (-D -S):
# what a snapshot holds is never given back.
. "$(dirname "$0")/crash_lib.sh"

sim 2 -D -n 1500 -t 4
sim 5 -D -S -n 1500 -t 3
echo "crashsim -D: $total crash states with discards checked, all consistent with every fsynced file"
