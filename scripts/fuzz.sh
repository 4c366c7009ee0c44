#!/bin/bash
# fuzz.sh [SECONDS] — fuzz the mount path with libFuzzer (clang, Debian's
# clang and libclang-rt-14-dev) under ASan and UBSan for SECONDS (default
# 60), growing the corpus kept in tests/fuzz/corpus.  Exit 1 on a finding.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-60}
command -v clang >/dev/null || { echo "fuzz.sh: clang is missing (apt-get install clang libclang-rt-14-dev)"; exit 2; }
out=${FUZZ_BUILD:-$top/build-fuzz}
mkdir -p "$out" "$top/tests/fuzz/corpus"
srcs=$(ls "$top"/lfs/*.c "$top"/ckpt/ckpt.c "$top"/ckpt/recover.c "$top"/ckpt/fsck_core.c |
       grep -v -e fuse_main.c -e mkfs.c -e ctl_server.c)
clang -std=c11 -D_GNU_SOURCE -DPACKAGE_VERSION='"fuzz"' -g -O1 -fsanitize=fuzzer,address,undefined \
	-fno-sanitize-recover=undefined -I"$top/lfs" -I"$top/ckpt" \
	$srcs "$top/tests/fuzz/fuzz_mount.c" -lz -lpthread -o "$out/fuzz_mount"
cd "$out"
# lfs logs every rejected image; keep the fuzzer's own output readable
./fuzz_mount -max_total_time="$secs" -timeout=10 -max_len=4096 -print_final_stats=1 \
	"$top/tests/fuzz/corpus" 2> >(grep -v '^lfs: ' >&2)
