#!/bin/bash
# timed.sh CMD [ARGS...] — the test driver's LOG_COMPILER: run a suite and
# end its log with its wall time and the CPU time of the processes it
# waited for ("# wall time: S s, CPU C s"; a daemon it left to itself is
# not counted); with LFS_TEST_TIMES set, also append "S SUITE C" to that
# file (scripts/test.sh lists them).  The suite's exit status is passed
# on (77 and 99 included).
start=$(date +%s%N)
"$@"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
secs=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
# the builtin's second line: user and system time of the children waited for
cpu_file=$(mktemp)
times >"$cpu_file"
cpu=$(tail -1 "$cpu_file" | awk '{ for (i = 1; i <= 2; i++) { split($i, a, "m"); sub("s", "", a[2]); t += a[1] * 60 + a[2] } printf "%.1f", t }')
rm -f "$cpu_file"
echo "# wall time: $secs s, CPU $cpu s"
suite=${*: -1}
[ -z "${LFS_TEST_TIMES:-}" ] || echo "$secs tests/${suite##*tests/} $cpu" >>"$LFS_TEST_TIMES"
exit $rc
