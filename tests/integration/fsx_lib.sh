# fsx_lib.sh — shared by fsx.sh and fsx_busy.sh, the randomized
# exerciser (tests/fsx/lfs_fsx.c) against a model directory on the host
# filesystem, with fixed seeds: two suites, so that make -j runs them
# side by side.  FSX_OPS scales every run up for long runs.
. "$(dirname "$0")/lib.sh"

FSX="$top_builddir/tests/fsx/lfs_fsx"
ops=$(soak "${FSX_OPS:-20000}")
# fsx_dirs MIB: the images and the model on a tmpfs with MIB MiB free
# (mem_dir): the fsyncs of both sides (one operation in twenty, and
# every remount) waited for the host's disk; the model only if it takes
# user xattrs (tmpfs since Linux 6.6), else lfs_fsx would leave out the
# xattr operations
fsx_dirs() {
	mem_dir "$1"
	IMG="$MEM/img"
	MODEL="$MEM/model"
	: >"$MEM/probe"
	"$PY" -c 'import os, sys; os.setxattr(sys.argv[1], "user.probe", b"x")' "$MEM/probe" 2>/dev/null ||
		MODEL="$WORK/model"
}
# fsx_run WHAT ARGS...: lfs_fsx with ARGS in a fresh directory against a
# fresh model
fsx_run() {
	local what=$1
	shift
	rm -rf "$MNT/t" "$MODEL"
	mkdir "$MNT/t" "$MODEL"
	"$FSX" "$@" "$MNT/t" "$MODEL" >"$WORK/fsx.out" ||
		{ tail -40 "$WORK/fsx.out"; fail "lfs_fsx $what"; }
	grep "model does not support" "$WORK/fsx.out" || true
	tail -1 "$WORK/fsx.out" | cut -c1-80
}
# fsck_after WHAT: fsck.lfs of the unmounted image finds nothing wrong
fsck_after() {
	"$top_builddir/ckpt/fsck.lfs" "$IMG" >"$WORK/fsck.out" || { cat "$WORK/fsck.out"; fail "fsck after fsx $1"; }
}
# log_sum RE: the numbers the daemon logged where RE's \(...\) is, summed
log_sum() {
	sed -n "s/$1/\1/p" "$WORK/daemon.log" | awk '{ s += $1 } END { print s + 0 }'
}
