#!/bin/bash
# test.sh — the whole test suite, as CI runs it (as root, on a fresh
# Debian 12 machine): install dependencies, build, run the unit suites and
# the integration tests on real FUSE mounts, then all of it again built
# with AddressSanitizer and UndefinedBehaviorSanitizer, a minute of
# structure-aware fuzzing of the mount path (libFuzzer), then distcheck.
# A skipped suite (no root, no /dev/fuse, a missing tool) is a failure:
# a skip is not a pass.  LFS_ALLOW_SKIP=1 says skips are expected here.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
(cd "$top" && autoreconf -fi >/dev/null 2>&1)

run_suite() { # build dir, configure args...
	local dir=$1
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$dir" && "$top/configure" -q "$@" && make -j"$(nproc)" >/dev/null &&
	 if ! make -j"$(nproc)" check >check.out 2>&1; then
		 tail -50 check.out
		 [ ! -f test-suite.log ] || cat test-suite.log
		 echo "test.sh: FAILED in $dir"
		 exit 1
	 fi
	 grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR)' test-suite.log | tr '\n' ' '; echo
	 if grep -q '^SKIP: ' check.out; then
		 grep '^SKIP: ' check.out
		 if [ "${LFS_ALLOW_SKIP:-0}" != 1 ]; then
			 echo "test.sh: FAILED in $dir: suites were skipped (LFS_ALLOW_SKIP=1 to allow it)"
			 exit 1
		 fi
	 fi)
}

echo "== build and test"
run_suite "$top/build-test"
echo "== again under AddressSanitizer + UndefinedBehaviorSanitizer"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	run_suite "$top/build-san" --enable-sanitizers
echo "== fuzz the mount path for ${FUZZ_SECONDS:-60} s (libFuzzer, ASan + UBSan)"
FUZZ_BUILD="$top/build-fuzz" "$top/scripts/fuzz.sh" "${FUZZ_SECONDS:-60}" || { echo "test.sh: FAILED in fuzzing"; exit 1; }
echo "== the Debian package: build, lintian, install, mount, purge"
"$top/scripts/deb.sh" || { echo "test.sh: FAILED in the Debian package"; exit 1; }
echo "== distcheck"
(cd "$top/build-test" && make -j"$(nproc)" distcheck >/dev/null 2>&1) || { echo "distcheck failed"; exit 1; }
echo "test.sh: all passed"
