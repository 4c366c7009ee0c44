#!/bin/bash
# falloc_ext4.sh — what fallocate(2) leaves, side by side with kernel ext4
# (unwritten extents there, unwritten blocks in lfs): the same st_blocks
# after a grant, a write into the range, a KEEP_SIZE grant past the end
# and a punch; the range reads as zeros; and df's used space moves by
# the range at the grant, not again at the writes.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/cmp.py" <<'PY'
import os, sys
d = sys.argv[1]
mib = 1 << 20
f = os.open(d + "/f", os.O_RDWR | os.O_CREAT, 0o644)
def used():
    st = os.statvfs(d)
    return (st.f_blocks - st.f_bfree) * st.f_frsize // 1024
out = []
u0 = used()
os.posix_fallocate(f, 0, 8 * mib)
os.fsync(f)
u1 = used()
# whole MiB allocated: lfs counts its few block-map nodes in st_blocks too
def mib_of(f):
    return os.fstat(f).st_blocks * 512 // mib
out.append("granted: size %d, %d MiB allocated" % (os.fstat(f).st_size, mib_of(f)))
out.append("used grew by the range: %s" % (8 * 1024 <= u1 - u0 <= 8 * 1024 + 256))
z = os.pread(f, 8 * mib, 0)
out.append("reads zeros: %s" % (z == bytes(8 * mib)))
os.pwrite(f, b"x" * 65536, 3 * mib)
os.fsync(f)
u2 = used()
out.append("written: %d MiB allocated" % mib_of(f))
out.append("the write took no more: %s" % (u2 - u1 <= 64))
out.append("around it zeros: %s" % (os.pread(f, 4096, 3 * mib - 4096) == bytes(4096)))
print("\n".join(out))
PY
# the modes python has no call for: util-linux's fallocate(1)
cat >"$WORK/cmp.sh" <<'SH'
set -e
d=$1
"$PY" "$(dirname "$0")/cmp.py" "$d"
fallocate -n -o $((8 << 20)) -l $((2 << 20)) "$d/f"
sync "$d/f"
echo "keep-size past the end: size $(stat -c %s "$d/f"), $(($(stat -c %b "$d/f") / 2048)) MiB allocated"
fallocate -p -o $((1 << 20)) -l $((1 << 20)) "$d/f"
fallocate -p -o $((9 << 20)) -l $((1 << 20)) "$d/f"
sync "$d/f"
echo "punched: size $(stat -c %s "$d/f"), $(($(stat -c %b "$d/f") / 2048)) MiB allocated"
cmp -n $((8 << 20)) "$d/f" <(head -c $((3 << 20)) /dev/zero; head -c 65536 /dev/zero | tr '\0' x; head -c $(((5 << 20) - 65536)) /dev/zero) && echo "content as written"
SH

ext4_mount 256M -b 4096
bash "$WORK/cmp.sh" "$EXT4_MNT" >"$WORK/ext4.out" 2>&1 || fail "ext4: $(cat "$WORK/ext4.out")"
mkfs_img 256M -f
lfs_mount
bash "$WORK/cmp.sh" "$MNT" >"$WORK/lfs.out" 2>&1 || fail "lfs: $(cat "$WORK/lfs.out")"
lfs_umount
cat "$WORK/ext4.out"
diff -u "$WORK/ext4.out" "$WORK/lfs.out" || fail "lfs differs from ext4"
echo "ok: fallocate leaves what ext4 leaves"
