#!/bin/bash
# seek.sh — lseek(2)'s SEEK_DATA and SEEK_HOLE side by side with kernel
# ext4 (4 KiB blocks) over a set of layouts: a sparse file with a hole
# at its end, fallocate's unwritten blocks with writes into them,
# written, unwritten, punched and kept-size ranges mixed, an empty file,
# a small one (inline in lfs), a file larger than its last block, and
# writes not yet fsynced; every answer from every block boundary (and
# odd offsets, and past the end: ENXIO) must be ext4's, before and after
# a remount.  SEEK_SET, SEEK_CUR and SEEK_END go on working.
. "$(dirname "$0")/lib.sh"

cat >"$WORK/seek.py" <<'PY'
import errno, os, sys
d, what = sys.argv[1], sys.argv[2]
K = 4096
MiB = 1 << 20
def make(name, ops, sync=True):
    f = os.open(d + "/" + name, os.O_RDWR | os.O_CREAT, 0o644)
    for op in ops:
        if op[0] == "w":
            os.pwrite(f, b"\x5a" * op[2], op[1])
        elif op[0] == "t":
            os.ftruncate(f, op[1])
        elif op[0] == "a":
            os.posix_fallocate(f, op[1], op[2])
        elif op[0] == "k":   # FALLOC_FL_KEEP_SIZE, by fallocate(1)
            os.system("fallocate -n -o %d -l %d %s/%s" % (op[1], op[2], d, name))
        elif op[0] == "p":
            os.system("fallocate -p -o %d -l %d %s/%s" % (op[1], op[2], d, name))
    if sync:
        os.fsync(f)
    return f
LAYOUTS = {
    "sparse": [("w", 0, K), ("w", 40 * K, 2 * K), ("w", MiB + 5, 1), ("t", 2 * MiB)],
    "unwritten": [("a", 0, MiB), ("w", 256 * K, K), ("w", 700 * K + 9, 5000)],
    "mixed": [("w", 0, 64 * K), ("a", 64 * K, 448 * K), ("p", 16 * K, 16 * K), ("w", 300 * K, 10 * K),
              ("k", 512 * K, 512 * K), ("w", 3 * MiB, K)],
    "empty": [],
    "small": [("w", 0, 100)],
    "tail": [("w", 0, 10000), ("t", 8 * K + 1)],
    "endhole": [("w", 0, K), ("t", MiB)],
}
def probe(f):
    size = os.fstat(f).st_size
    offs = sorted(set(list(range(0, size + 3 * K, K)) + [1, K - 1, K + 1, size - 1, size, size + 1, 5 * MiB]))
    out = []
    for o in offs:
        if o < 0:
            continue
        r = []
        for wh in (os.SEEK_DATA, os.SEEK_HOLE):
            try:
                r.append(str(os.lseek(f, o, wh)))
            except OSError as e:
                r.append(errno.errorcode[e.errno])
        out.append("%d %s %s" % (o, r[0], r[1]))
    return out
for name, ops in LAYOUTS.items():
    f = make(name, ops) if what == "make" else os.open(d + "/" + name, os.O_RDONLY)
    lines = probe(f)
    print("%s: size %d, %d offsets" % (name, os.fstat(f).st_size, len(lines)))
    print("\n".join("  " + l for l in lines))
    os.close(f)
# written on this descriptor, not yet fsynced: data at once
if what == "make":
    f = make("unsynced", [("a", 0, 256 * K)], sync=False)
    os.pwrite(f, b"u" * K, 100 * K)
    print("unsynced: data %d, hole %d" % (os.lseek(f, 0, os.SEEK_DATA), os.lseek(f, 100 * K, os.SEEK_HOLE)))
    os.close(f)
# the others, which the kernel answers
f = os.open(d + "/sparse", os.O_RDONLY)
print("set %d cur %d end %d" % (os.lseek(f, 123, os.SEEK_SET), os.lseek(f, 7, os.SEEK_CUR), os.lseek(f, -10, os.SEEK_END)))
os.close(f)
PY

command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4"
ext4_mount 64M -b 4096 -O ^inline_data
"$PY" "$WORK/seek.py" "$EXT4_MNT" make >"$WORK/ext4.out" 2>&1 || fail "ext4: $(tail -5 "$WORK/ext4.out")"
umount "$EXT4_MNT"
mount -o loop "$EXT4_IMG" "$EXT4_MNT"
"$PY" "$WORK/seek.py" "$EXT4_MNT" probe >"$WORK/ext4.again" 2>&1 || fail "ext4: $(tail -5 "$WORK/ext4.again")"
mkfs_img 64M -f
lfs_mount
"$PY" "$WORK/seek.py" "$MNT" make >"$WORK/lfs.out" 2>&1 || fail "lfs: $(tail -5 "$WORK/lfs.out")"
lfs_umount
lfs_mount
"$PY" "$WORK/seek.py" "$MNT" probe >"$WORK/lfs.again" 2>&1 || fail "lfs: $(tail -5 "$WORK/lfs.again")"
lfs_umount
grep -v '^  ' "$WORK/ext4.out"
diff -u "$WORK/ext4.out" "$WORK/lfs.out" || fail "SEEK_DATA/SEEK_HOLE differ from ext4's"
diff -u "$WORK/ext4.again" "$WORK/lfs.again" || fail "after a remount, SEEK_DATA/SEEK_HOLE differ from ext4's"
n=$(grep -c '^  ' "$WORK/lfs.out")
grep -q ENXIO "$WORK/lfs.out" || fail "no offset answered ENXIO"
echo "ok: $n offsets in $(grep -c ': size' "$WORK/lfs.out") layouts answered as ext4 answers them, before and after a remount"
