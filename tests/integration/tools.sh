#!/bin/bash
# tools.sh — lfs-ckpt and dumplfs on a real mount: a forced checkpoint
# raises the sequence number, both tools read the image of a mounted
# filesystem, the JSON parses, the checkpoint left by unmount is clean,
# and random bytes or a truncated image give an error, never a crash.
. "$(dirname "$0")/lib.sh"

DUMPLFS="$top_builddir/ckpt/dumplfs"
CKPT="$top_builddir/ckpt/lfs-ckpt"

# newest_seq IMAGE: the sequence number of the newest valid checkpoint
newest_seq() {
	"$DUMPLFS" -j "$1" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print([c for c in d["checkpoints"] if c["newest"]][0]["seq"])'
}

# expect_error NAME: dumplfs must fail on $IMG with a message, not crash
expect_error() {
	local rc=0
	timeout 60 "$DUMPLFS" "$@" "$IMG" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ $rc -ne 0 ] || fail "dumplfs $*: exit status 0 on $NAME"
	[ $rc -ne 124 ] || fail "dumplfs $*: hung on $NAME"
	[ $rc -lt 128 ] || fail "dumplfs $*: crashed on $NAME (status $rc)"
	[ -s "$WORK/err" ] || fail "dumplfs $*: no message on $NAME"
	echo "ok $NAME, dumplfs${*:+ $*}: $(head -1 "$WORK/err")"
}

mkfs_img 64M
lfs_mount
mkdir "$MNT/dir"
echo hello > "$MNT/dir/small"
dd if=/dev/urandom of="$MNT/big" bs=64K count=40 status=none
ln -s dir/small "$MNT/link"

s1=$("$CKPT" -c "$MNT") || fail "lfs-ckpt -c"
echo more > "$MNT/dir/more"
s2=$("$CKPT" -c "$MNT") || fail "lfs-ckpt -c (2)"
[[ "$s1" =~ ^[0-9]+$ && "$s2" =~ ^[0-9]+$ ]] || fail "lfs-ckpt -c printed '$s1' / '$s2'"
[ "$s2" -gt "$s1" ] || fail "checkpoint sequence did not grow: $s1 then $s2"
echo "ok lfs-ckpt -c: sequence $s1 then $s2"

"$CKPT" -l "$MNT" >"$WORK/list" || { cat "$WORK/list"; fail "lfs-ckpt -l on the mountpoint"; }
cat "$WORK/list"
grep -q "^image $IMG, mounted at" "$WORK/list" || fail "lfs-ckpt -l does not name the image"
grep -Eq "^\* [01] +[0-9]+ +$s2 " "$WORK/list" || fail "lfs-ckpt -l does not mark checkpoint $s2 as newest"
[ "$(grep -c ' valid$' "$WORK/list")" = 2 ] || fail "both regions should be valid"
"$CKPT" "$IMG" >/dev/null || fail "lfs-ckpt on the image file"
echo "ok lfs-ckpt -l"

# the image of a mounted filesystem
"$DUMPLFS" "$IMG" >"$WORK/dump" || { cat "$WORK/dump"; fail "dumplfs on a mounted image"; }
grep -q "^superblock:" "$WORK/dump" || fail "dumplfs: no superblock"
grep -q "^  seg 0 " "$WORK/dump" || fail "dumplfs: no segment summary"
"$DUMPLFS" -j -s -i -u "$IMG" >"$WORK/dump.json" || fail "dumplfs -j -s -i -u on a mounted image"
"$PY" -m json.tool "$WORK/dump.json" >/dev/null || fail "dumplfs -j: not JSON"
"$PY" - "$WORK/dump.json" "$s2" <<'PY' || fail "dumplfs -j: content"
import json, sys
d = json.load(open(sys.argv[1]))
newest = [c for c in d["checkpoints"] if c["newest"]]
assert len(newest) == 1 and newest[0]["valid"] and newest[0]["seq"] >= int(sys.argv[2]), newest
assert d["superblock"]["magic"] == 0x3153464c
inos = {e["ino"] for e in d["inode_map"]["entries"]}
assert 1 in inos and len(inos) >= 5, inos    # root, dir, small, big, link
assert d["inode_map"]["in_use"] == len(inos)
assert len(d["usage_table"]["entries"]) == d["superblock"]["nsegs"]
blocks = [b for s in d["segments"] for p in s["pseg_list"] if not p["stale"] for b in p.get("blocks", [])]
assert blocks and all(b["crc"] == "ok" for b in blocks), [b for b in blocks if b["crc"] != "ok"][:3]
kinds = {b["kind"] for b in blocks}
assert {"DATA", "INODE", "IMAP", "SUT"} <= kinds, kinds
PY
echo "ok dumplfs on a mounted image, JSON valid"
lfs_umount

# after unmount: the newest checkpoint is clean
"$DUMPLFS" -j "$IMG" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
c = [c for c in d["checkpoints"] if c["newest"]][0]
sys.exit(0 if c["valid"] and c["clean"] else 1)' || fail "newest checkpoint not clean after unmount"
"$DUMPLFS" "$IMG" | grep -A4 "^ *newest  *yes" | matches "^ *clean  *yes" ||
	fail "dumplfs text does not show the newest checkpoint as clean"
[ "$(newest_seq "$IMG")" -gt "$s2" ] || fail "unmount wrote no checkpoint after $s2"
"$DUMPLFS" -s -i -u "$IMG" >/dev/null || fail "dumplfs -s -i -u after unmount"
echo "ok clean checkpoint after unmount (seq $(newest_seq "$IMG"))"

# one region torn: reported, the other one still used
cp "$IMG" "$WORK/good"
dd if=/dev/urandom of="$IMG" bs=4096 seek=1 count=1 conv=notrunc status=none
"$DUMPLFS" "$IMG" >"$WORK/dump" || fail "dumplfs with one region torn"
grep -Eq "status +(crc mismatch|bad magic)" "$WORK/dump" || fail "torn region not reported"
"$CKPT" "$IMG" | matches '^\*' || fail "lfs-ckpt: no newest region with one torn"
echo "ok one torn region"
# both regions torn: exit 1, but still a dump
dd if=/dev/urandom of="$IMG" bs=4096 seek=1 count=2 conv=notrunc status=none
NAME="both regions torn" expect_error -j
"$PY" -m json.tool "$WORK/out" >/dev/null || fail "dumplfs -j with both regions torn: not JSON"
NAME="both regions torn" expect_error -i
rc=0; "$CKPT" "$IMG" >/dev/null 2>&1 || rc=$?
[ $rc = 1 ] || fail "lfs-ckpt with both regions torn: status $rc"

# not lfs at all, and truncated
head -c 16M /dev/urandom > "$IMG"
NAME="random bytes" expect_error
NAME="random bytes" expect_error -j -s -i -u
grep -q "not an lfs image" "$WORK/err" || fail "random bytes: message"
cp "$WORK/good" "$IMG"
truncate -s 20M "$IMG"
NAME="truncated image" expect_error -s
grep -q "truncated" "$WORK/err" || fail "truncated image: message"
: > "$IMG"
NAME="empty file" expect_error
# random bytes over the log, with the superblock and checkpoints intact
cp "$WORK/good" "$IMG"
dd if=/dev/urandom of="$IMG" bs=1M seek=1 count=8 conv=notrunc status=none
rc=0; timeout 60 "$DUMPLFS" -s -i -u "$IMG" >/dev/null 2>&1 || rc=$?
[ $rc -lt 2 ] || fail "dumplfs on a scribbled log: status $rc"
echo "ok scribbled log: status $rc"
rc=0; "$CKPT" -c "$IMG" 2>/dev/null || rc=$?
[ $rc = 2 ] || fail "lfs-ckpt -c on an image file: status $rc"
