#!/bin/bash
# mount_basic.sh — ordinary work on a real mount: copy a tree in, diff it,
# unmount, remount, diff again; build a small C program in it; a full
# filesystem answers ENOSPC and keeps every earlier file; the kernel lets
# 64 background requests out to the daemon.
. "$(dirname "$0")/lib.sh"
command -v git >/dev/null || skip "git (package git) is missing"

# a snapshot: the source tree may change while the test runs
SRC="$WORK/src"
mkdir "$SRC"
cp -a "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/lfs" \
      "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}/tests" "$SRC/"

mkfs_img 256M
lfs_mount
# the kernel lets 64 of writeback's WRITEs out at once, not 12 (fuse_ops.c):
# seen in the FUSE control filesystem, mounted here if it was not
CTL=/sys/fs/fuse/connections
ctl_mounted=
if ! mountpoint -q "$CTL"; then
	mount -t fusectl fusectl "$CTL" || fail "cannot mount the FUSE control filesystem on $CTL"
	ctl_mounted=1
fi
d=$(mountpoint -d "$MNT")
conn="$CTL/$(( (${d%:*} << 20) | ${d#*:} ))"
[ "$(cat "$conn/max_background" 2>/dev/null)" = 64 ] && [ "$(cat "$conn/congestion_threshold")" = 48 ] ||
	fail "background requests of $MNT: $(cat "$conn/max_background" "$conn/congestion_threshold" 2>&1 | tr '\n' ' ')"
[ -z "$ctl_mounted" ] || umount "$CTL"
cp -a "$SRC/lfs" "$SRC/tests" "$MNT/"
dd if=/dev/urandom of="$WORK/big" bs=1M count=24 status=none
cp "$WORK/big" "$MNT/big"
diff -r "$SRC/lfs" "$MNT/lfs" || fail "tree differs after copy"
cmp "$WORK/big" "$MNT/big" || fail "big file differs"
# build something inside the filesystem
mkdir "$MNT/build"
printf '#include <stdio.h>\nint main(void){puts("built in lfs");return 0;}\n' > "$MNT/build/hello.c"
cc -o "$MNT/build/hello" "$MNT/build/hello.c"
[ "$("$MNT/build/hello")" = "built in lfs" ] || fail "program built in lfs does not run"
# unpack a source tarball (lfs's own) and build a program from it there
tar -C "${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}" -czf "$WORK/src.tar.gz" lfs ckpt
mkdir "$MNT/tarbuild"
tar -C "$MNT/tarbuild" -xzf "$WORK/src.tar.gz" || fail "untar into lfs"
mkdir "$WORK/untarred"
tar -C "$WORK/untarred" -xzf "$WORK/src.tar.gz"
diff -r "$WORK/untarred" "$MNT/tarbuild" || fail "unpacked tree differs"
(cd "$MNT/tarbuild" &&
 inc=$(for d in $(find lfs ckpt -type d); do printf ' -I%s' "$d"; done) &&
 for f in $(find lfs ckpt -name '*.c'); do
	# the library's files: not the daemon's, nor the programs' (lfs-receive's recv_*.c)
	case $f in lfs/daemon/* | lfs/tools/lfs_*.c | lfs/tools/recv_*.c | lfs/tools/mkfs.c | ckpt/tools/*) continue ;; esac
	cc -std=c11 -D_GNU_SOURCE -DPACKAGE_VERSION='"test"' $inc -c "$f" -o "${f%.c}.o" || exit 1
 done &&
 cc -std=c11 -D_GNU_SOURCE -DPACKAGE_VERSION='"test"' $inc -pthread -o mkfs.lfs lfs/tools/mkfs.c $(find lfs ckpt -name '*.o') \
	$(pkg-config --cflags --libs blkid) -lz) ||
	fail "building mkfs.lfs from the unpacked sources in lfs"
"$MNT/tarbuild/mkfs.lfs" -s 16M "$WORK/built.img" >/dev/null || fail "mkfs.lfs built in lfs does not run"
"$top_builddir/ckpt/fsck.lfs" "$WORK/built.img" >/dev/null || fail "image from the mkfs.lfs built in lfs fails fsck"
cp "$MNT/tarbuild/mkfs.lfs" "$WORK/mkfs.built"
(cd "$MNT/build" && git init -q && git add hello.c && git -c user.email=t@t -c user.name=t commit -qm one &&
 echo '/* two */' >> hello.c && git -c user.email=t@t -c user.name=t commit -qam two &&
 git fsck --no-progress --strict >/dev/null 2>&1) || fail "git in lfs"
lfs_umount

lfs_mount
diff -r "$SRC/lfs" "$MNT/lfs" || fail "tree differs after remount"
diff -r "$SRC/tests" "$MNT/tests" || fail "tests tree differs after remount"
cmp "$WORK/big" "$MNT/big" || fail "big file differs after remount"
[ "$("$MNT/build/hello")" = "built in lfs" ] || fail "program lost after remount"
(cd "$MNT/build" && git fsck --no-progress --strict >/dev/null 2>&1 && [ "$(git log --oneline | wc -l)" = 2 ]) ||
	fail "git repository damaged after remount"
cmp "$WORK/mkfs.built" "$MNT/tarbuild/mkfs.lfs" || fail "mkfs.lfs built in lfs differs after remount"
df -k "$MNT" | tail -1
lfs_umount

# A full filesystem: ENOSPC, and everything written before is intact.
mkfs_img 48M -f
lfs_mount
i=0
while :; do
	if ! dd if="$WORK/big" of="$MNT/f$i" bs=1M count=4 conv=fsync status=none 2>"$WORK/dd.err"; then
		grep -q "No space left" "$WORK/dd.err" || { cat "$WORK/dd.err"; fail "expected ENOSPC"; }
		break
	fi
	i=$((i + 1))
	[ $i -lt 100 ] || fail "48 MiB filesystem took 400 MiB"
done
[ $i -ge 4 ] || fail "only $i files fit in 48 MiB"
for j in $(seq 0 $((i - 1))); do
	cmp -n 4194304 "$WORK/big" "$MNT/f$j" || fail "f$j damaged after ENOSPC"
done
rm -f "$MNT/f$i" "$MNT/f0" "$MNT/f1"
dd if="$WORK/big" of="$MNT/again" bs=1M count=4 conv=fsync status=none || fail "no space after deleting"
rm -f "$MNT"/f* "$MNT/again"
# Deleted and renamed-over files give their space back, however they
# were opened (created, opened without O_CREAT, open while unlinked):
# a leak fills 48 MiB within a few rounds.
for r in $(seq 1 20); do
	dd if="$WORK/big" of="$MNT/a" bs=1M count=8 conv=fsync status=none || fail "round $r: write a"
	cat "$MNT/a" >/dev/null
	dd if="$WORK/big" of="$MNT/b" bs=1M count=8 conv=fsync status=none || fail "round $r: write b"
	mv "$MNT/b" "$MNT/a"
	exec 3<"$MNT/a"
	rm "$MNT/a"
	cmp -n 8388608 "$WORK/big" /dev/fd/3 || fail "round $r: unlinked open file damaged"
	exec 3<&-
done
for j in $(seq 2 $((i - 1))); do
	dd if="$WORK/big" of="$MNT/f$j" bs=1M count=4 conv=fsync status=none || fail "rewrite f$j"
done
lfs_umount
lfs_mount
for j in $(seq 2 $((i - 1))); do
	cmp -n 4194304 "$WORK/big" "$MNT/f$j" || fail "f$j damaged after remount"
done
lfs_umount
echo "mount_basic: ok ($i files of 4 MiB fit in 48 MiB)"
