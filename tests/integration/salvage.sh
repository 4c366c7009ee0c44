#!/bin/bash
# salvage.sh — fsck.lfs --salvage copies the files out of an image that
# no longer mounts: both checkpoint regions zeroed, the newest segment
# overwritten, the image truncated, random blocks destroyed.  What it
# copies is compared with what was written, attribute by attribute
# (type, mode, owner, size, mtime, content, link target, hard links); a
# file it does not report incomplete must be exact.
. "$(dirname "$0")/lib.sh"
FSCK="$top_builddir/ckpt/fsck.lfs"
DUMP="$top_builddir/ckpt/dumplfs"

# manifest DIR: one line per path below DIR, sorted; hard links share
# the name of their first path
manifest() {
	"$PY" - "$1" <<'EOF'
import hashlib, os, stat, sys
top = sys.argv[1]
first = {}
out = []
for d, dirs, files in os.walk(top):
    dirs.sort()
    for n in sorted(dirs + files):
        p = os.path.join(d, n)
        rel = os.path.relpath(p, top)
        if rel == "lost+found" or rel.startswith("lost+found/"):
            continue
        st = os.lstat(p)
        kind = stat.S_IFMT(st.st_mode)
        what = "-"
        if stat.S_ISREG(kind):
            key = (st.st_dev, st.st_ino)
            what = "link to " + first[key] if key in first else hashlib.md5(open(p, "rb").read()).hexdigest()
            first.setdefault(key, rel)
        elif stat.S_ISLNK(kind):
            what = os.readlink(p)
        mtime = st.st_mtime_ns if not stat.S_ISDIR(kind) else 0
        out.append(f"{rel} {kind:o} {stat.S_IMODE(st.st_mode):o} {st.st_uid}:{st.st_gid} "
                   f"{st.st_size if not stat.S_ISDIR(kind) else 0} {mtime} {what}")
print("\n".join(out))
EOF
}

mkfs_img 64M
lfs_mount
t="$MNT/tree"
mkdir -p "$t/a/b/c" "$t/empty"
for i in $(seq 1 30); do head -c $((i * 3001)) /dev/urandom >"$t/a/f$i"; done
"$top_builddir/ckpt/lfs-ckpt" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
manifest "$t" >"$WORK/want.ckpt" # what a truncated log still holds
head -c 200 /dev/urandom >"$t/a/b/small"
head -c 5M /dev/urandom >"$t/a/b/c/big"
truncate -s 20M "$t/sparse"
dd if=/dev/urandom of="$t/sparse" bs=4096 seek=3000 count=2 conv=notrunc status=none
head -c 300000 /dev/urandom >"$t/shrunk"
truncate -s 10000 "$t/shrunk"
ln -s a/b/small "$t/link"
ln "$t/a/f3" "$t/hard"
mkfifo "$t/fifo"
chown 1234:5678 "$t/a/f7"
chmod 4750 "$t/a/f8"
touch -d "2001-02-03 04:05:06.789" "$t/a/f9"
manifest "$t" >"$WORK/want"
lfs_umount
cp "$IMG" "$WORK/clean.img"

# salvage IMAGE NAME: fsck.lfs --salvage into $WORK/NAME; its status
salvage() {
	rm -rf "$WORK/$2"
	mkdir "$WORK/$2"
	local rc=0
	"$FSCK" --salvage "$WORK/$2" "$1" >"$WORK/$2.out" 2>&1 || rc=$?
	return $rc
}

# 1. both checkpoint regions zeroed: nothing is lost
read -r c0 c1 bs <<<"$("$DUMP" -j "$IMG" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print(d["checkpoints"][0]["addr"], d["checkpoints"][1]["addr"], d["superblock"]["block_size"])')"
for a in $c0 $c1; do dd if=/dev/zero of="$IMG" bs="$bs" seek="$a" count=1 conv=notrunc status=none; done
"$FSCK" "$IMG" >/dev/null 2>&1 && fail "fsck.lfs passes an image without checkpoint regions"
salvage "$IMG" s1 || { cat "$WORK/s1.out"; fail "salvage with both regions zeroed: status $?"; }
manifest "$WORK/s1/tree" >"$WORK/got1"
diff "$WORK/want" "$WORK/got1" || fail "salvage with both regions zeroed differs"
echo "ok both checkpoint regions zeroed: every file, link and attribute salvaged ($(wc -l <"$WORK/want") paths)"

# exact NAME [WANT]: every path salvaged into $WORK/NAME that the report
# does not name is as WANT (default: as last written) lists it; prints
# how many paths are exact
exact() {
	local want=${2:-$WORK/want}
	manifest "$WORK/$1/tree" >"$WORK/got.$1"
	local bad=0 path rest w
	while read -r path rest; do
		grep -q "salvage: /tree/$path (inode" "$WORK/$1.out" && continue
		w=$(grep "^$path " "$want" || true)
		[ -z "$w" ] || [ "$w" = "$path $rest" ] || { echo "differs, not reported: $path" >&2; bad=$((bad + 1)); }
	done <"$WORK/got.$1"
	[ $bad = 0 ] || { cat "$WORK/$1.out" >&2; fail "$1: $bad paths salvaged wrong without a word"; }
	comm -12 <(sort "$want") <(sort "$WORK/got.$1") | wc -l
}

# 2. the image truncated in the middle of its log
cp "$WORK/clean.img" "$IMG"
read -r head seg0 sblocks <<<"$("$DUMP" -j "$IMG" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
r = max((r for r in d["checkpoints"] if r["valid"]), key=lambda r: r["seq"])
print(r["head_seg"], d["superblock"]["seg0"], d["superblock"]["seg_blocks"])')"
truncate -s $(((seg0 + (head - 2) * sblocks) * bs)) "$IMG"
rc=0; salvage "$IMG" s2 || rc=$?
[ $rc = 4 ] || { cat "$WORK/s2.out"; fail "salvage of a truncated image: status $rc, not 4"; }
grep -q "holds .* of the filesystem's .* segments" "$WORK/s2.out" || { cat "$WORK/s2.out"; fail "no word of the truncation"; }
same=$(exact s2 "$WORK/want.ckpt")
[ "$same" = "$(wc -l <"$WORK/want.ckpt")" ] || fail "truncated: $same paths of the checkpoint's $(wc -l <"$WORK/want.ckpt") salvaged"
echo "ok the image truncated to segment $((head - 2)) of its log: the $same paths of the checkpoint before salvaged exactly"

# 3. random blocks destroyed
cp "$WORK/clean.img" "$IMG"
nblocks=$(($(stat -c %s "$IMG") / bs))
for b in $(shuf -i 300-$((nblocks - 2)) -n 40 --random-source=<(yes)); do
	head -c "$bs" /dev/urandom | dd of="$IMG" bs="$bs" seek="$b" conv=notrunc status=none
done
rc=0; salvage "$IMG" s3 || rc=$?
[ $rc = 0 ] || [ $rc = 4 ] || { cat "$WORK/s3.out"; fail "salvage with random blocks destroyed: status $rc"; }
same=$(exact s3)
[ "$same" -ge $(($(wc -l <"$WORK/want") / 2)) ] || fail "only $same paths salvaged exactly"
echo "ok 40 random blocks destroyed: $same of $(wc -l <"$WORK/want") paths salvaged exactly, the rest reported (status $rc)"

# 4. a DIR that is not empty is refused
rc=0; "$FSCK" --salvage "$WORK/s3" "$IMG" >/dev/null 2>&1 || rc=$?
[ $rc = 8 ] || fail "salvage into a directory that is not empty: status $rc"
echo "ok salvage refuses a directory that is not empty"
