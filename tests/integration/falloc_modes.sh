#!/bin/bash
# falloc_modes.sh — which fallocate(2) modes reach the daemon on this
# kernel (lfs(8), BUGS): zero-range and punch-hole do and work; collapse
# and insert range are refused with EOPNOTSUPP by the kernel's FUSE
# client before any request is sent.  Counted with libfuse's -o debug
# log; when a kernel starts passing collapse or insert on, this fails so
# that lfs learns to do them.
. "$(dirname "$0")/lib.sh"

command -v fallocate >/dev/null || skip "fallocate (package util-linux) is missing"
mkfs_img 64M
lfs_mount debug
head -c 64K /dev/urandom >"$WORK/data"
cp "$WORK/data" "$MNT/f"
sync -d "$MNT/f"
before=$(grep -ac "opcode: FALLOCATE" "$WORK/daemon.log" || true)
fallocate -z -o 4096 -l 4096 "$MNT/f" || fail "zero range"
fallocate -p -o 8192 -l 4096 "$MNT/f" || fail "punch hole"
for mode in -c -i; do
	if fallocate "$mode" -o 4096 -l 4096 "$MNT/f" 2>"$WORK/err"; then
		fail "fallocate $mode succeeded: the kernel passes it on now; lfs(8) BUGS is out of date"
	fi
	grep -q "Operation not supported" "$WORK/err" || { cat "$WORK/err"; fail "fallocate $mode: not EOPNOTSUPP"; }
done
after=$(grep -ac "opcode: FALLOCATE" "$WORK/daemon.log" || true)
[ $((after - before)) = 2 ] ||
	fail "$((after - before)) FALLOCATE requests reached the daemon, not 2 (zero and punch): the kernel passes more modes on now"
# what reached the daemon was done
head -c 4096 /dev/zero | dd of="$WORK/data" bs=4096 seek=1 conv=notrunc status=none
head -c 4096 /dev/zero | dd of="$WORK/data" bs=4096 seek=2 conv=notrunc status=none
cmp "$WORK/data" "$MNT/f" || fail "zero range or punch hole gave other content"
lfs_umount
echo "falloc_modes: zero range and punch hole reach the daemon; collapse and insert are refused by the kernel"
