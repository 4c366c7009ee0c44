#!/bin/bash
# dumplfs_tables.sh — dumplfs judges the entries of the inode map and of
# the usage table by the library's verdicts, those the mount refuses an
# entry by (lfs_imap_entry_check, lfs_sut_entry_check), not by its own:
# an entry with flags no lfs writes is named, and the exit status is 1.
. "$(dirname "$0")/lib.sh"

DUMPLFS="$top_builddir/ckpt/dumplfs"

mkfs_img 64M
"$DUMPLFS" -i -u "$IMG" >/dev/null 2>"$WORK/err" || { cat "$WORK/err"; fail "dumplfs -i -u on a new image"; }
# the new image's table blocks, one of each (as dumplfs -s names them)
read -r bs sut imap < <("$DUMPLFS" -s -j "$IMG" | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
blocks = [b for s in d["segments"] for p in s.get("pseg_list", []) for b in p.get("blocks", [])]
sut = [b["block"] for b in blocks if b["kind"] == "SUT"]
imap = [b["block"] for b in blocks if b["kind"] == "IMAP"]
assert len(sut) == 1 and len(imap) == 1, (sut, imap)
print(d["superblock"]["block_size"], sut[0], imap[0])')
# poke OFFSET BYTE: one byte of the image (entries are little-endian)
poke() { printf "\\x$2" | dd of="$IMG" bs=1 seek="$1" conv=notrunc status=none; }
# judged WHAT OPTION: dumplfs OPTION fails and names the verdict WHAT
judged() {
	local rc=0
	"$DUMPLFS" "$2" "$IMG" >/dev/null 2>"$WORK/err" || rc=$?
	[ $rc = 1 ] || { cat "$WORK/err"; fail "dumplfs $2: status $rc, not 1, over $1"; }
	grep -q "$1" "$WORK/err" || { cat "$WORK/err"; fail "dumplfs $2: '$1' not said"; }
	echo "ok dumplfs $2: $(grep "$1" "$WORK/err")"
}

# segment 1's usage entry: flags (bytes 4-7) 0x40
poke $((sut * bs + 16 + 4)) 40
judged "usage table: segment 1: unknown flags" -u
# inode 100's map entry, free: flags (bytes 14-15) 0x100
poke $((sut * bs + 16 + 4)) 00
poke $((imap * bs + 100 * 16 + 15)) 01
judged "inode map: inode 100: unknown flags" -i
