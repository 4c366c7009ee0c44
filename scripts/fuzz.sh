#!/bin/bash
# fuzz.sh [-m] [SECONDS] — fuzz the mount path, then the send stream's
# decoder (tests/fuzz/fuzz_stream.c, a quarter of the time), with libFuzzer (Debian's
# clang and libclang-rt-14-dev) under ASan and UBSan for SECONDS (default
# 60): tests/fuzz/fuzz_mount.c edits decoded fields of an image and
# re-seals its checksums, so the inputs reach the decoders behind them.
#
# Seeds come from tests/fuzz/corpus and tests/fuzz/regress (read only);
# what the run finds goes to $FUZZ_BUILD/corpus, kept between runs.  At
# the end it reports executions and coverage.  Exit 1 on a finding: the
# crashing input is saved and named; copy it into tests/fuzz/regress so
# that make check replays it (fuzz_replay) from then on.
#
# -m: merge what earlier runs found into tests/fuzz/corpus (only inputs
# that add coverage), instead of fuzzing.  -b: only build the fuzzer;
# -B: fuzz with the one -b built, without building it again
# (scripts/test.sh builds it beside the test passes).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
merge=0 build=1 run=1
case "${1:-}" in
-m) merge=1; shift ;;
-b) run=0; shift ;;
-B) build=0; shift ;;
esac
secs=${1:-60}
command -v clang >/dev/null || { echo "fuzz.sh: clang is missing (apt-get install clang libclang-rt-14-dev)"; exit 2; }
out=${FUZZ_BUILD:-$top/build-fuzz}
mkdir -p "$out/corpus"
if [ $build = 1 ]; then
	# the core library's sources, as Makefile.am lists them (liblfs_a_SOURCES)
	srcs=$(python3 "$top/scripts/layers.py" --sources "$top" | sed "s|^|$top/|")
	[ -n "$srcs" ] || { echo "fuzz.sh: no liblfs_a_SOURCES in $top/Makefile.am"; exit 2; }
	clang -std=c11 -D_GNU_SOURCE -DPACKAGE_VERSION='"fuzz"' -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=undefined $(python3 "$top/scripts/layers.py" --cflags "$top") -I"$top/tests/lib" \
		$srcs "$top/tests/lib/imgedit.c" "$top/ckpt/tools/salvage.c" "$top/tests/fuzz/fuzz_mount.c" -lz -lpthread -o "$out/fuzz_mount"
	# the send stream's decoder (lfs/format/stream.c) and lfs-receive's
	# checks of an incremental stream (lfs/tools/recv_incr.c), a target of its own
	clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-I"$top/lfs" -I"$top/lfs/format" -I"$top/lfs/base" -I"$top/lfs/tools" "$top/lfs/format/stream.c" \
		"$top/lfs/format/format.c" "$top/lfs/base/text.c" "$top/lfs/base/u64map.c" "$top/lfs/base/fault.c" \
		"$top/lfs/tools/recv_incr.c" "$top/tests/fuzz/fuzz_stream.c" -lz -lpthread -o "$out/fuzz_stream"
fi
[ $run = 1 ] || exit 0
cd "$out"
if [ $merge = 1 ]; then
	./fuzz_mount -merge=1 "$top/tests/fuzz/corpus" "$out/corpus" 2>&1 | grep -v '^lfs: '
	exit
fi
log=$out/fuzz.log
seeds=("$top/tests/fuzz/corpus")
[ -z "$(ls "$top/tests/fuzz/regress")" ] || seeds+=("$top/tests/fuzz/regress")
# lfs logs every rejected structure; keep the fuzzer's own lines.  The
# malloc limit catches allocations sized by the image (a 2 MiB one).
if ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
   ./fuzz_mount -max_total_time="$secs" -timeout=20 -max_len=400 -malloc_limit_mb=128 -print_final_stats=1 \
	-artifact_prefix="$out/" "$out/corpus" "${seeds[@]}" 2>&1 | grep -v '^lfs: ' > "$log"; then
	status=0
else
	status=1
fi
# then the stream decoder, for a quarter of the time (at least 10 s)
mkdir -p "$out/stream-corpus"
if [ $status = 0 ] && ! ./fuzz_stream -max_total_time=$(( secs / 4 > 10 ? secs / 4 : 10 )) -timeout=20 -max_len=8192 \
	-malloc_limit_mb=128 -artifact_prefix="$out/stream-" "$out/stream-corpus" "$top/tests/fuzz/stream" \
	> "$out/fuzz_stream.log" 2>&1; then
	status=1
	log=$out/fuzz_stream.log
fi
grep -E '^#[0-9]+.*(INITED|DONE)' "$log" | tail -2 || true
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' "$log" | tail -1 || true)
echo "fuzz.sh: ${execs:-?} executions (limit ${secs} s); coverage at the end: ${cov:-?} (edges, features, inputs)"
if [ $status != 0 ]; then
	grep -E -A30 'ERROR: |runtime error|SUMMARY' "$log" | grep -v -e 'in fuzzer::' -e 'libc' | head -60 || true
	grep -E 'Test unit written|artifact_prefix' "$log" || true
	echo "fuzz.sh: FINDING (full log: $log); keep the crash-* input as a regression: copy it into tests/fuzz/regress"
	exit 1
fi
