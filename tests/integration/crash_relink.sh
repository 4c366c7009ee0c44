#!/bin/bash
# crash_relink.sh — crashsim -R: large files overwritten after their
# fsyncs: relink records, chained, between plain flushes and checkpoints
# (crashsim -R fails a run that wrote or rolled forward none); every
# state holds each file as it was at or after its last fsync.
. "$(dirname "$0")/crash_lib.sh"

sim 3 -R -n 300 -t 2
echo "crashsim -R: $total crash states after fsynced overwrites of large files checked, each file as it was at or after its last fsync"
