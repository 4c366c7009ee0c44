#!/bin/bash
# test.sh — the whole test suite, as CI runs it (as root, on a fresh
# Debian 12 machine): install dependencies; make distcheck, whose build
# of the release tarball runs every unit suite and integration test on
# real FUSE mounts (the plain pass: one run of the suites proves both
# that they pass and that the tarball carries all they need); beside it,
# all of it again built with AddressSanitizer and UndefinedBehaviorSanitizer; a
# minute of structure-aware fuzzing of the mount path (libFuzzer); the
# Debian package.  A skipped suite (no root, no /dev/fuse, a missing
# tool) is a failure: a skip is not a pass.  LFS_ALLOW_SKIP=1 says skips
# are expected here.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/deps.sh"
(cd "$top" && autoreconf -fi >/dev/null 2>&1)

# check_log FILE DIR: the suites' summary from make's output FILE, and
# the skip rule; exits on a skip unless allowed
check_log() {
	grep -E '^# (TOTAL|PASS|SKIP|FAIL|ERROR)' "$1" | tr '\n' ' '; echo
	if grep -q '^SKIP: ' "$1"; then
		grep '^SKIP: ' "$1"
		if [ "${LFS_ALLOW_SKIP:-0}" != 1 ]; then
			echo "test.sh: FAILED in $2: suites were skipped (LFS_ALLOW_SKIP=1 to allow it)"
			exit 1
		fi
	fi
}

# suite_times FILE: each suite's wall time and CPU time (tests/timed.sh
# appends them to LFS_TEST_TIMES), slowest first, and their sums
suite_times() {
	[ -s "$1" ] || return 0
	sort -rn "$1" | awk '{ s += $1; c += $3; printf "  %7.1f s  %-40s CPU %6.1f s\n", $1, $2, $3 }
		END { printf "  %7.1f s  %-40s CPU %6.1f s\n", s, "the suites together", c }'
}

# stage NAME: the wall time of the stage before it, and NAME's start
t0=$SECONDS
stage_start=$SECONDS
stage() {
	[ -z "${stage_name:-}" ] || printf '== %s took %d s\n' "$stage_name" $((SECONDS - stage_start))
	stage_name=$1
	stage_start=$SECONDS
	[ -z "$1" ] || echo "== $1"
}

run_suite() { # build dir, configure args...
	local dir=$1
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$dir" && "$top/configure" -q "$@" && make -j"$(nproc)" >/dev/null &&
	 if ! LFS_TEST_TIMES="$dir/times" make -j"$(nproc)" check >check.out 2>&1; then
		 tail -50 check.out
		 [ ! -f test-suite.log ] || cat test-suite.log
		 echo "test.sh: FAILED in $dir"
		 exit 1
	 fi
	 check_log check.out "$dir"
	 suite_times "$dir/times")
}

# The plain pass and the sanitizer pass run side by side, each with make
# -j(CPUs): most suites spend their time waiting (on FUSE round trips,
# fsync, a daemon's start or exit), so four at once keep the CPUs busier
# than two.  The suites cannot meet: each works in its own mktemp -d
# (image, mount point, sockets), takes its ports from the kernel, and one
# that needs the machine's rpcbind (nfs_export.sh) holds a lock for it.
distcheck_pass() {
	rm -rf "$top/build-test"
	mkdir -p "$top/build-test"
	(cd "$top/build-test" && "$top/configure" -q &&
	 if ! CRASH_SEEDS_ELSEWHERE=${SAN_CRASH_SEEDS:-3} FUZZ_MUTATIONS_ELSEWHERE=10 LFS_TEST_TIMES="$top/build-test/times" \
		 make -j"$(nproc)" distcheck >distcheck.out 2>&1; then
		 tail -60 distcheck.out
		 find . -path '*_build*' -name test-suite.log -exec cat {} +
		 echo "test.sh: FAILED in make distcheck"
		 exit 1
	 fi
	 check_log distcheck.out "make distcheck"
	 suite_times "$top/build-test/times")
}
# The crash suites: crashsim makes the same states from a seed in either
# build and checks them alike, so each state is checked once: the
# sanitizer pass checks the first SAN_CRASH_SEEDS (3) of the 10 seeds,
# under the sanitizers, and the plain pass the rest
# (CRASH_SEEDS_ELSEWHERE); so with fuzz_replay's mutations of each input
# (the first 10 of 20 here).  The soaks (fsx's operations, the volume
# the cleaner and snapshot suites overwrite, coherence's steps) run
# whole in the plain pass, and their first SAN_SOAK_PERCENT (30) percent
# under the sanitizers, where each step costs about three times as
# much (lib.sh's soak); every other suite runs whole in both
san_pass() {
	CRASH_SEEDS=${SAN_CRASH_SEEDS:-3} FUZZ_MUTATIONS=10 LFS_SOAK_PERCENT=${SAN_SOAK_PERCENT:-30} ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		run_suite "$top/build-san" --enable-sanitizers
}
# timed NAME CMD...: CMD, then how long it took; CMD runs as a job of
# its own, so that set -e holds in it (a "||" would switch it off there)
timed() {
	local t=$SECONDS rc=0
	"${@:2}" &
	wait $! || rc=$?
	echo "== $1 took $((SECONDS - t)) s"
	return $rc
}
# Everything that needs nothing from another runs at once: the two passes,
# and the builds of the fuzzer and of the Debian package.  The fuzzer runs
# its minute when the first pass is done (one CPU is freer from then on);
# the package is installed, mounted and purged once both are done, since
# install.sh and mount_flags.sh lay their own helpers over /usr/sbin.
stage "side by side: make distcheck (the tarball builds, every suite passes in its build, it installs and uninstalls), every suite again under AddressSanitizer + UndefinedBehaviorSanitizer, the fuzzer's build and the Debian package's (build, lintian); then ${FUZZ_SECONDS:-60} s of fuzzing (libFuzzer, ASan + UBSan) once a pass is done"
logs=$top/build-logs
rm -rf "$logs" "$top/build-deb"
mkdir -p "$logs"
timed "the plain pass" distcheck_pass >"$logs/plain.out" 2>&1 &
plain_pid=$!
timed "the sanitizer pass" san_pass >"$logs/san.out" 2>&1 &
san_pid=$!
FUZZ_BUILD="$top/build-fuzz" timed "the fuzzer's build" "$top/scripts/fuzz.sh" -b >"$logs/fuzz.out" 2>&1 &
fuzz_pid=$!
timed "the package's build and lintian" "$top/scripts/deb.sh" -b "$top/build-deb" >"$logs/deb.out" 2>&1 &
deb_pid=$!
plain_rc=0 san_rc=0 fuzz_rc=0 deb_rc=0 first=
rc=0
wait -n -p first $plain_pid $san_pid || rc=$?
if [ "$first" = $plain_pid ]; then plain_rc=$rc; else san_rc=$rc; fi
wait $fuzz_pid || fuzz_rc=$?
if [ $fuzz_rc = 0 ]; then
	FUZZ_BUILD="$top/build-fuzz" timed "fuzzing" "$top/scripts/fuzz.sh" -B "${FUZZ_SECONDS:-60}" >>"$logs/fuzz.out" 2>&1 &
	fuzz_pid=$!
fi
if [ "$first" = $plain_pid ]; then
	wait $san_pid || san_rc=$?
else
	wait $plain_pid || plain_rc=$?
fi
[ $fuzz_rc != 0 ] || wait $fuzz_pid || fuzz_rc=$?
wait $deb_pid || deb_rc=$?
for part in "the plain pass (make distcheck):plain" "the sanitizer pass:san" "fuzzing the mount path:fuzz" "the Debian package:deb"; do
	echo "== ${part%:*}"
	cat "$logs/${part##*:}.out"
done
[ $plain_rc = 0 ] && [ $san_rc = 0 ] && [ $fuzz_rc = 0 ] && [ $deb_rc = 0 ] ||
	{ echo "test.sh: FAILED (plain pass: $plain_rc, sanitizer pass: $san_rc, fuzzing: $fuzz_rc, the package's build: $deb_rc)"; exit 1; }
stage "the Debian package: install, mount, purge"
"$top/scripts/deb.sh" -i "$top/build-deb" || { echo "test.sh: FAILED in the Debian package"; exit 1; }
stage ""
echo "test.sh: all passed in $((SECONDS - t0)) s"
