#!/bin/bash
# crash_full.sh — crashsim -F: the workload starts at ENOSPC and deletes
# its way on; every crash state must be consistent with every fsynced
# file and also let every file be deleted.
. "$(dirname "$0")/crash_lib.sh"

sim 3 -F -n 1500 -t 3
echo "crashsim -F: $total crash states of a full filesystem checked, all consistent, all files deletable"
