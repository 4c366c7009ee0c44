#!/bin/bash
# fuzz_cov.sh [-n MUTATIONS] [SRCDIR] — how much of each decoder the
# fuzz target reaches: builds tests/fuzz/fuzz_replay (the target without
# libFuzzer) with clang's source-based coverage, replays the seed corpus
# and the regression inputs with MUTATIONS fixed-seed mutations of each
# (default 20, as make check), and reports line and function coverage of
# the files that decode what an image holds, then of the entry points of
# the snapshot tables, the roll-forward records and the snapshot view.
#
# SRCDIR (default: this tree) is the source tree to measure, so that an
# older commit's harness can be measured by the same script
# (git archive COMMIT | tar -x -C DIR).  Needs clang, llvm-profdata and
# llvm-cov (Debian's clang and llvm packages).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
mut=20
if [ "${1:-}" = -n ]; then
	mut=$2
	shift 2
fi
top=$(cd "${1:-$here}" && pwd)
for t in clang llvm-profdata llvm-cov; do
	command -v $t >/dev/null || { echo "fuzz_cov.sh: $t is missing (apt-get install clang llvm)"; exit 2; }
done
out=${FUZZ_BUILD:-$here/build-fuzz}/cov
mkdir -p "$out"
srcs=$(python3 "$here/scripts/layers.py" --sources "$top" | sed "s|^|$top/|")
[ -n "$srcs" ] || { echo "fuzz_cov.sh: no liblfs_a_SOURCES in $top/Makefile.am"; exit 2; }
clang -std=c11 -D_GNU_SOURCE -DPACKAGE_VERSION='"fuzz"' -g -O0 -fprofile-instr-generate -fcoverage-mapping \
	$(python3 "$top/scripts/layers.py" --cflags "$top") -I"$top/tests/lib" $srcs "$top/tests/lib/imgedit.c" "$top/ckpt/tools/salvage.c" \
	"$top/tests/fuzz/fuzz_mount.c" "$top/tests/fuzz/fuzz_replay.c" -lz -lpthread -o "$out/fuzz_replay"
rm -f "$out"/*.profraw
(cd "$top" && LLVM_PROFILE_FILE="$out/replay.profraw" top_srcdir="$top" "$out/fuzz_replay" -n "$mut" 2>&1 |
	grep '^fuzz_replay:')
llvm-profdata merge -sparse "$out/replay.profraw" -o "$out/replay.profdata"
decoders="lfs/table/ptable.c lfs/table/held.c lfs/table/hist.c lfs/table/retain.c lfs/fs/snapshot.c lfs/inode/repl.c ckpt/rf_repl.c
	lfs/inode/relink.c lfs/inode/xattr.c ckpt/recover.c ckpt/ckpt.c"
files=()
for f in $decoders; do files+=("$top/$f"); done
echo "== per file (functions run, lines run)"
llvm-cov report "$out/fuzz_replay" -instr-profile="$out/replay.profdata" "${files[@]}" |
	sed "s|$top/||" | awk 'NR > 2 && !/^-/ { printf "%-16s functions %5s of %-4s lines %5s of %s\n", $1, $5 - $6, $5, $8 - $9, $8 }'
# the entry points that decode the newest structures, and the view
entries="lfs_ptable_load load_page_addrs lfs_held_load lfs_hist_load lfs_retain_load lfs_snapshot_list
	lfs_rf_lists_load check_lists lfs_rf_lists_account lfs_relink_put lfs_relink_patch_node load_slots
	lfs_xattr_get lfs_ckpt_view_imap lfs_ckpt_load_view lfs_view_open lfs_view_open_remote lfs_retain_read"
echo "== entry points (lines run)"
for fn in $entries; do
	llvm-cov report "$out/fuzz_replay" -instr-profile="$out/replay.profdata" -show-functions \
		"${files[@]}" "$top/lfs/fs/mount.c" 2>/dev/null |
		awk -v fn="$fn" '$1 == fn || $1 ~ ":" fn "$" { printf "%-24s lines %5s of %s\n", fn, $5 - $6, $5; found = 1 }
			END { if (!found) printf "%-24s not in the build\n", fn }' | head -1
done
