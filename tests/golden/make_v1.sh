#!/bin/bash
# make_v1.sh BUILDDIR OUTDIR — how tests/golden/v1.img.xz and v1.manifest
# were made (run once, as root, by the build of format version 1; the test
# never runs it: a golden image is what an old mkfs wrote, kept as is).
#
# A host directory is filled with what exercises the format: an inline
# file, a one-block file, one past the 12 direct pointers, a sparse file,
# an empty file, nested directories, a directory of 40 entries, symlinks
# (short, nested, dangling), a hard link, a set-user-ID mode, user xattrs
# (short, empty, 1000 bytes); the manifest is taken from that directory;
# then mkfs.lfs makes an 8 MiB image, a mount receives the tree by cp -a,
# and the unmount's checkpoint closes it.
set -euo pipefail
B=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d /tmp/lfs-golden.XXXXXX)
trap 'mountpoint -q "$W/mnt" && fusermount3 -u "$W/mnt"; rm -rf "$W"' EXIT
mkdir -p "$W/src" "$W/mnt"
cd "$W/src"
printf 'hello, lfs\n' > small.txt
python3 -c "import sys; sys.stdout.buffer.write(b'0123456789abcdef' * 256)" > one_block.bin
python3 -c "
import sys
sys.stdout.buffer.write(b''.join(b'block %06d line %03d of the golden image\n' % (i // 100, i % 100)
                                 for i in range(4700)))" > indirect.bin
: > empty
mkdir -p dir/sub/deeper
printf 'nested\n' > dir/sub/deeper/file
seq 1 20000 > dir/numbers.txt
truncate -s 1M dir/sparse.bin
printf 'tail' | dd of=dir/sparse.bin bs=1 seek=900000 conv=notrunc status=none
for i in $(seq 1 40); do printf 'entry %d\n' "$i" > "dir/many_$i"; done
ln -s small.txt link_to_small
ln -s dir/sub/deeper/file link_deep
ln -s /nonexistent/target dangling
ln one_block.bin hardlink.bin
chmod 600 dir/numbers.txt
chmod 4755 one_block.bin
python3 -c "
import os
os.setxattr('small.txt', 'user.comment', b'golden image')
os.setxattr('dir', 'user.empty', b'')
os.setxattr('dir/sub/deeper/file', 'user.big', b'x' * 1000)"
find . -exec touch -h -d '2024-01-02 03:04:05' {} +
python3 "$here/manifest.py" "$W/src" > "$OUT/v1.manifest"
"$B/lfs/mkfs.lfs" -q -s 8M -S 256K -L golden-v1 -U 6c667331-676f-6c64-656e-000000000001 "$W/v1.img"
"$B/lfs/lfs" -f -o nocleaner "$W/v1.img" "$W/mnt" 2>"$W/daemon.log" &
pid=$!
for _ in $(seq 1 100); do mountpoint -q "$W/mnt" && break; sleep 0.1; done
cp -a "$W/src/." "$W/mnt/"
python3 "$here/manifest.py" "$W/mnt" | diff -u "$OUT/v1.manifest" -
fusermount3 -u "$W/mnt"
wait "$pid"
"$B/ckpt/fsck.lfs" "$W/v1.img"
xz -9 -c "$W/v1.img" > "$OUT/v1.img.xz"
