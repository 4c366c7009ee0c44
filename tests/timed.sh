#!/bin/bash
# timed.sh CMD [ARGS...] — the test driver's LOG_COMPILER: run a suite and
# end its log with its wall time ("# wall time: S s"); with LFS_TEST_TIMES
# set, also append "S SUITE" to that file (scripts/test.sh lists them).
# The suite's exit status is passed on (77 and 99 included).
start=$(date +%s%N)
"$@"
rc=$?
ms=$((($(date +%s%N) - start) / 1000000))
secs=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
echo "# wall time: $secs s"
suite=${*: -1}
[ -z "${LFS_TEST_TIMES:-}" ] || echo "$secs tests/${suite##*tests/}" >>"$LFS_TEST_TIMES"
exit $rc
