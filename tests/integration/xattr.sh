#!/bin/bash
# xattr.sh — extended attributes beyond one block (lfs(5), EXTENDED
# ATTRIBUTES).
#  1. The same script of setxattr/getxattr/listxattr/removexattr runs on
#     lfs and on kernel ext4 with ea_inode (values up to 64 KiB) on a loop
#     device: values of 0, 1, 4095..4097, 65535, 65536 and 65537 bytes,
#     names of 255 and 256 bytes, small buffers, create/replace flags, 100
#     attributes, 20 values of 64 KiB; every answer (errno or value
#     length and checksum) must be the same, also after a remount of lfs.
#  2. lfs beyond ext4: 3000 attributes on one file (ext4 stops at about
#     120); listxattr's size; setfattr/getfattr dump; the 64 KiB list
#     limit is ENOSPC; the per-inode block bound is ENOSPC.
#  3. They survive a remount, kill -9 after fsync, and the cleaner
#     moving their blocks; fsck.lfs finds nothing wrong.
#  4. An image without the feature keeps one block per inode until
#     lfs-tune -O xattr_blocks.
. "$(dirname "$0")/lib.sh"

command -v setfattr >/dev/null || skip "setfattr (package attr) is missing"
command -v mkfs.ext4 >/dev/null || skip "mkfs.ext4 (package e2fsprogs) is missing"
[ -n "$PY" ] || skip "python3 (package python3) is missing"
FSCK="$top_builddir/ckpt/fsck.lfs"

# The comparison script: one line per answer.  ctypes, so that a size
# query and a too small buffer are asked as a program asks them.
cat >"$WORK/xa.py" <<'PY'
import ctypes, errno, hashlib, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.getxattr.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.listxattr.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t]
libc.getxattr.restype = libc.listxattr.restype = ctypes.c_ssize_t
XATTR_CREATE, XATTR_REPLACE = 1, 2

def err(e):
    return errno.errorcode.get(e.errno, str(e.errno))

def val(n, seed):
    out, x = bytearray(), seed
    while len(out) < n:
        x = hashlib.sha256(x.to_bytes(8, "little")).digest()
        out += x
        x = int.from_bytes(x[:8], "little")
    return bytes(out[:n])

def sset(path, name, v, flags=0):
    try:
        os.setxattr(path, name, v, flags)
        return "ok"
    except OSError as e:
        return err(e)

def sget(path, name, size=None):
    if size is not None:  # a raw call with a buffer of `size`
        buf = ctypes.create_string_buffer(max(size, 1))
        n = libc.getxattr(path.encode(), name.encode(), buf if size else None, size)
        return str(n) if n >= 0 else errno.errorcode[ctypes.get_errno()]
    try:
        v = os.getxattr(path, name)
        return "%d %s" % (len(v), hashlib.md5(v).hexdigest()[:12])
    except OSError as e:
        return err(e)

def slist(path, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    n = libc.listxattr(path.encode(), buf if size else None, size)
    return str(n) if n >= 0 else errno.errorcode[ctypes.get_errno()]

def compare(d, phase):
    f = os.path.join(d, "f")
    if phase == "set":
        open(f, "w").close()
        os.mkdir(os.path.join(d, "dir"))
        os.symlink("f", os.path.join(d, "link"))
    for i, n in enumerate([0, 1, 4095, 4096, 4097, 65535, 65536, 65537]):
        if phase == "set":
            print("set size", n, sset(f, "user.s%d" % n, val(n, i)))
        print("get size", n, sget(f, "user.s%d" % n))
    for n in (255, 256):
        name = "user." + "n" * (n - 5)
        if phase == "set":
            print("set name", n, sset(f, name, b"v"))
        print("get name", n, sget(f, name))
    print("size query", sget(f, "user.s4097", 0))
    print("small buffer", sget(f, "user.s4097", 4096))
    print("exact buffer", sget(f, "user.s4097", 4097))
    print("missing", sget(f, "user.none"))
    if phase == "set":
        print("create existing", sset(f, "user.s1", b"x", XATTR_CREATE))
        print("replace missing", sset(f, "user.none", b"x", XATTR_REPLACE))
        print("replace large by small", sset(f, "user.s65535", b"small", XATTR_REPLACE))
        print("replace small by large", sset(f, "user.s1", val(30000, 9), XATTR_REPLACE))
        try:
            os.removexattr(f, "user.s4096"); print("remove ok")
        except OSError as e:
            print("remove", err(e))
        try:
            os.removexattr(f, "user.s4096"); print("remove again ok")
        except OSError as e:
            print("remove again", err(e))
        print("trusted", sset(f, "trusted.t", val(5000, 3)))
        print("directory", sset(os.path.join(d, "dir"), "user.d", val(20000, 4)))
    print("get s65535", sget(f, "user.s65535"))
    print("get s1", sget(f, "user.s1"))
    print("get trusted", sget(f, "trusted.t"))
    print("get directory", sget(os.path.join(d, "dir"), "user.d"))
    names = sorted(os.listxattr(f))
    total = sum(len(x.encode()) + 1 for x in names)
    print("names", names)
    print("list size", slist(f, 0), total)
    print("list short", slist(f, total - 1))
    # 100 small attributes, 20 values of 64 KiB
    g = os.path.join(d, "many")
    h = os.path.join(d, "large")
    if phase == "set":
        open(g, "w").close()
        open(h, "w").close()
        print("100 small", set(sset(g, "user.k%03d" % i, val(8, i)) for i in range(100)))
        print("20 large", set(sset(h, "user.L%02d" % i, val(65536, 100 + i)) for i in range(20)))
    print("100 small back", all(os.getxattr(g, "user.k%03d" % i) == val(8, i) for i in range(100)))
    print("20 large back", all(os.getxattr(h, "user.L%02d" % i) == val(65536, 100 + i) for i in range(20)))
    print("listsize many", slist(g, 0))

def many(d, n):
    """lfs beyond ext4: n attributes on one file."""
    f = os.path.join(d, "thousands")
    open(f, "w").close()
    for i in range(n):
        os.setxattr(f, "user.n%05d" % i, val(10 + i % 50, i), XATTR_CREATE)
    fd = os.open(f, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)

def many_check(d, n):
    f = os.path.join(d, "thousands")
    names = os.listxattr(f)
    assert len(names) == n, (len(names), n)
    assert int(slist(f, 0)) == sum(len(x) + 1 for x in names)
    for i in range(n):
        assert os.getxattr(f, "user.n%05d" % i) == val(10 + i % 50, i), i
    print("ok", n, "attributes", slist(f, 0), "bytes of names")

def limits(d):
    f = os.path.join(d, "limits")
    open(f, "w").close()
    # names of 200 bytes: the 327th would take listxattr past 64 KiB
    i = 0
    while True:
        r = sset(f, "user." + "x" * 185 + "%010d" % i, b"")
        if r != "ok":
            break
        i += 1
    print("list limit", i, r, slist(f, 0))
    g = os.path.join(d, "bound")
    open(g, "w").close()
    i = 0
    while True:
        r = sset(g, "user.big%d" % i, val(65536, i))
        if r != "ok":
            break
        i += 1
    print("block bound", i, r)

getattr(sys.modules[__name__], sys.argv[1])(*[int(a) if a.isdigit() else a for a in sys.argv[2:]])
PY

# 1. ext4 with ea_inode, then lfs, the same script
ext4_mount 128M -b 4096 -I 256 -O ea_inode
"$PY" "$WORK/xa.py" compare "$EXT4_MNT" set >"$WORK/ext4.out"
"$PY" "$WORK/xa.py" compare "$EXT4_MNT" get >"$WORK/ext4.get"
# what ext4 allows per file, for the report
: >"$EXT4_MNT/cap"
ext4_cap=$("$PY" -c 'import errno, os, sys
i = 0
try:
    while True:
        os.setxattr(sys.argv[1], "user.n%05d" % i, b"0123456789"); i += 1
except OSError as e:
    print(i, "(then %s)" % errno.errorcode[e.errno])' "$EXT4_MNT/cap")
umount "$EXT4_MNT"

mkfs_img 256M
lfs_mount
"$PY" "$WORK/xa.py" compare "$MNT" set >"$WORK/lfs.out"
diff -u "$WORK/ext4.out" "$WORK/lfs.out" || fail "lfs answers differ from ext4's (- ext4, + lfs)"
lfs_umount
lfs_mount
"$PY" "$WORK/xa.py" compare "$MNT" get >"$WORK/lfs.get"
diff -u "$WORK/ext4.get" "$WORK/lfs.get" || fail "after a remount lfs differs from ext4 (- ext4, + lfs)"
# by value, so that two filesystems agreeing on nothing would still fail
has() { grep -qxF -- "$1" "$WORK/lfs.out" || fail "expected the line: $1"; }
has "set size 65536 ok"
has "set size 65537 E2BIG"
has "set name 255 ok"
has "set name 256 ERANGE"
has "small buffer ERANGE"
has "exact buffer 4097"
has "create existing EEXIST"
has "replace missing ENODATA"
has "remove again ENODATA"
has "20 large {'ok'}"
has "20 large back True"
ncompared=$(wc -l <"$WORK/lfs.out")

# 2. beyond ext4, with setfattr/getfattr too
N=3000
"$PY" "$WORK/xa.py" many "$MNT" $N
"$PY" "$WORK/xa.py" many_check "$MNT" $N >"$WORK/many.out" || fail "attributes lost"
setfattr -n user.tool -v 0x$(head -c 40000 /dev/urandom | od -An -tx1 -v | tr -d ' \n') "$MNT/f"
getfattr --absolute-names -d -m - -e hex "$MNT/f" "$MNT/thousands" "$MNT/large" "$MNT/dir" >"$WORK/dump1"
[ "$(grep -cE "^user\.n[0-9]{5}=" "$WORK/dump1")" = $N ] || fail "getfattr does not list $N attributes"
"$PY" "$WORK/xa.py" limits "$MNT" >"$WORK/limits.out"
grep -qxF "list limit 326 ENOSPC 65526" "$WORK/limits.out" || { cat "$WORK/limits.out"; fail "64 KiB list limit"; }
grep -qxF "block bound 31 ENOSPC" "$WORK/limits.out" || { cat "$WORK/limits.out"; fail "per-inode block bound"; }
lfs_umount
"$FSCK" -n "$IMG" >"$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs after the attributes"; }
lfs_mount
getfattr --absolute-names -d -m - -e hex "$MNT/f" "$MNT/thousands" "$MNT/large" "$MNT/dir" >"$WORK/dump2"
cmp -s "$WORK/dump1" "$WORK/dump2" || fail "getfattr differs after a remount"

# 3. kill -9 after fsync: what was synced is there
"$PY" - "$MNT" <<'PY'
import os, sys
d = sys.argv[1]
f = os.path.join(d, "crash")
fd = os.open(f, os.O_CREAT | os.O_RDWR, 0o644)
for i in range(400):
    os.setxattr(f, "user.c%03d" % i, bytes([i % 256]) * (i * 97 % 3000 if i % 40 else 20000 + i))
os.setxattr(os.path.join(d, "thousands"), "user.n00007", b"changed")
os.removexattr(os.path.join(d, "large"), "user.L05")
os.fsync(fd)
PY
kill -9 "$LFS_PID"
wait "$LFS_PID" 2>/dev/null || true
LFS_PID=
fusermount3 -u "$MNT" 2>/dev/null || umount -l "$MNT" 2>/dev/null || true
lfs_mount
"$PY" - "$MNT" <<'PY' || fail "attributes fsynced before kill -9 are wrong after the remount"
import os, sys
d = sys.argv[1]
f = os.path.join(d, "crash")
for i in range(400):
    assert os.getxattr(f, "user.c%03d" % i) == bytes([i % 256]) * (i * 97 % 3000 if i % 40 else 20000 + i), i
assert os.getxattr(os.path.join(d, "thousands"), "user.n00007") == b"changed"
assert "user.L05" not in os.listxattr(os.path.join(d, "large"))
PY
lfs_umount
"$FSCK" -n "$IMG" >"$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs after kill -9"; }

# 4. cleaning: the XATTR blocks of "cl" are written between files that
# are then deleted, so their segments are the emptiest; a cleaner told to
# keep every segment clean (greedy, no protection) moves them
lfs_mount
"$PY" - "$MNT" <<'PY'
import os, sys
d = sys.argv[1]
f = os.path.join(d, "cl")
open(f, "w").close()
for r in range(20):
    with open(os.path.join(d, "fill%d" % r), "wb") as g:
        g.write(os.urandom(2 << 20)); os.fsync(g.fileno())
    for i in range(50):
        os.setxattr(f, "user.r%02d_%02d" % (r, i), bytes([r]) * (20000 if i == 0 else 40 + i))
    fd = os.open(f, os.O_RDONLY); os.fsync(fd); os.close(fd)
for r in range(20):
    os.unlink(os.path.join(d, "fill%d" % r))
PY
ino=$(stat -c %i "$MNT/cl")
getfattr --absolute-names -d -m - -e hex "$MNT/cl" >"$WORK/cl1"
getfattr --absolute-names -d -m - -e hex "$MNT/f" "$MNT/thousands" "$MNT/large" "$MNT/dir" >"$WORK/dump3"
lfs_umount
# where the XATTR blocks of "cl" are in the log now
xattr_at() { "$top_builddir/ckpt/dumplfs" -s "$IMG" | awk -v ino="ino=$ino" '$3 == "kind=XATTR" && $4 == ino { print $2 }' | sort -u; }
xattr_at >"$WORK/at1"
cat >"$WORK/cleaner.conf" <<CONF
policy greedy
min_clean_segments 100
max_clean_segments 100
protection_period 0
cleaning_interval 0.1
CONF
lfs_mount_cleaner "$WORK/cleaner.conf"
# until the cleaner has done what it would: its target reached (idle),
# or a pass that gained nothing (five minutes are only the bound on a
# hang); whether it emptied the segments of cl is checked below
for _ in $(seq 3000); do
	"$top_builddir/cleaner/lfs_cleanerd" --status --json "$MNT" | matches '"cleaner_state":"idle"' && break
	grep -q "not cleaning: the last pass gained no segment" "$WORK/daemon.log" && break
	sleep 0.1
done
getfattr --absolute-names -d -m - -e hex "$MNT/cl" >"$WORK/cl2"
cmp -s "$WORK/cl1" "$WORK/cl2" || fail "the attributes of cl changed while the cleaner ran"
lfs_umount
"$FSCK" -n "$IMG" >"$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs after cleaning"; }
lfs_mount
getfattr --absolute-names -d -m - -e hex "$MNT/f" "$MNT/thousands" "$MNT/large" "$MNT/dir" >"$WORK/dump4"
lfs_umount
grep -v 'user.n00007=\|user.L05=' "$WORK/dump2" >"$WORK/dump2.f"
grep -v 'user.n00007=\|user.L05=' "$WORK/dump4" >"$WORK/dump4.f"
cmp -s "$WORK/dump2.f" "$WORK/dump4.f" || fail "attributes changed by cleaning"
cmp -s "$WORK/dump3" "$WORK/dump4" || fail "attributes differ after the remount that followed cleaning"
# the segments that held them were emptied: their blocks were moved
geo() { "$top_builddir/ckpt/dumplfs" "$IMG" | awk -v k="$1" '$1 == k && !n++ { print $2 }'; }
seg0=$(geo seg0)
segb=$(geo seg_blocks)
awk -v s0="$seg0" -v sb="$segb" '{ print int(($1 - s0) / sb) }' "$WORK/at1" | sort -u >"$WORK/segs1"
"$top_builddir/ckpt/dumplfs" -u "$IMG" | awk '$1 == "seg" && $3 == "live_bytes=0" { print $2 }' | sort -u >"$WORK/empty"
n1=$(wc -l <"$WORK/segs1")
emptied=$(comm -12 "$WORK/segs1" "$WORK/empty" | wc -l)
[ "$emptied" -gt 0 ] || fail "none of the $n1 segments holding the XATTR blocks of cl was emptied by the cleaner"
# 5. an image from before the feature (its bit cleared in both
# superblocks, as mkfs.lfs wrote them until now; record_charge,
# snapshots, relink and unwritten too, which came later and change nothing for the
# empty image's root record): one block per inode,
# E2BIG beyond it; lfs-tune -O xattr_blocks turns it on, and the old
# attributes stay readable beside new large ones
rm -f "$IMG"
mkfs_img 64M
"$PY" - "$IMG" <<'PY'
import struct, sys, zlib
with open(sys.argv[1], "r+b") as f:
    sb = bytearray(f.read(256))
    bs = struct.unpack_from("<I", sb, 16)[0]
    backup = struct.unpack_from("<Q", sb, 168)[0]
    struct.pack_into("<I", sb, 12, struct.unpack_from("<I", sb, 12)[0] & ~62)
    struct.pack_into("<I", sb, 252, zlib.crc32(bytes(sb[:252])))
    for at in (0, backup * bs):
        f.seek(at); f.write(sb)
PY
"$top_builddir/lfs/lfs-tune" -l "$IMG" | matches -E "incompat 0$" || fail "the feature bit was not cleared"
lfs_mount
: >"$MNT/old"
setfattr -n user.old -v "0x$(head -c 3000 /dev/zero | od -An -tx1 -v | tr -d ' \n')" "$MNT/old"
"$PY" -c 'import errno, os, sys
try:
    os.setxattr(sys.argv[1], "user.big", b"x" * 5000); print("ok")
except OSError as e:
    print(errno.errorcode[e.errno])' "$MNT/old" >"$WORK/old.out"
lfs_umount
grep -qxF E2BIG "$WORK/old.out" || fail "without the feature a 5000-byte value gave $(cat "$WORK/old.out"), not E2BIG"
"$top_builddir/lfs/lfs-tune" -l -O xattr_blocks "$IMG" | matches "(xattr blocks)" || fail "lfs-tune -O xattr_blocks"
lfs_mount
setfattr -n user.big -v "0x$(head -c 60000 /dev/zero | tr '\0' 'y' | od -An -tx1 -v | tr -d ' \n')" "$MNT/old"
lfs_umount
lfs_mount
[ "$(getfattr --only-values -n user.old "$MNT/old" | wc -c)" = 3000 ] || fail "the old attribute after the upgrade"
[ "$(getfattr --only-values -n user.big "$MNT/old" | tr -d y | wc -c)" = 0 ] &&
	[ "$(getfattr --only-values -n user.big "$MNT/old" | wc -c)" = 60000 ] || fail "a 60000-byte value after the upgrade"
lfs_umount
"$FSCK" -n "$IMG" >"$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs after the upgrade"; }

echo "xattr: $ncompared answers the same as ext4 (ea_inode; also after remount); ext4 took $ext4_cap small" \
	"attributes on one file, lfs took $(cut -d' ' -f2- "$WORK/many.out"); $(cat "$WORK/limits.out" | tr '\n' ';')" \
	"kept through remount, kill -9 and cleaning (the cleaner emptied $emptied of the $n1" \
	"segments holding one file's XATTR blocks); an image without the feature keeps one block" \
	"(E2BIG at 5000 bytes) and after lfs-tune -O xattr_blocks holds 60000; fsck clean"
