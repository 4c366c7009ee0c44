#!/bin/bash
# labels.sh — hostile labels and names.  59-lfs.rules makes udev import,
# as root, every KEY=VALUE line of lfs-probe -o udev, so a label with a
# newline could set any udev property (SYSTEMD_WANTS=...).  mkfs.lfs -L
# and lfs-tune -L refuse control characters and bytes that are not
# UTF-8; a crafted image's label (checksums re-sealed) still mounts, and
# every output shows it escaped: lfs-probe's udev lines are exactly its
# seven keys, the full line is one line, lfs-tune -l and the daemon's
# log hold no control byte, and every escape decodes back to the bytes.
# So do lfs_cleanerd --status and lfs-ckpt -l with what the daemon says:
# the image's path, a snapshot's name.
. "$(dirname "$0")/lib.sh"
PROBE="$top_builddir/lfs/lfs-probe"
TUNE="$top_builddir/lfs/lfs-tune"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
CKPT="$top_builddir/ckpt/lfs-ckpt"

# no_controls FILE WHAT: FILE holds lines of printable UTF-8 only
no_controls() {
	"$PY" - "$1" <<'PY' || fail "$2: a control byte or bytes that are not UTF-8 in: $(od -c "$1" | head -20)"
import sys, unicodedata
data = open(sys.argv[1], 'rb').read()
text = data.decode('utf-8')  # raises on bytes that are not UTF-8
sys.exit(1 if any(unicodedata.category(c) == 'Cc' and c != '\n' for c in text) else 0)
PY
}

# unescape STRING: the bytes that a \xNN escape stands for, in hex
unescape_hex() {
	"$PY" -c 'import re,sys; s=sys.argv[1].encode(); print(re.sub(rb"\\x([0-9a-f]{2})", lambda m: bytes([int(m.group(1), 16)]), s).hex())' "$1"
}

# set_label HEX: write the label bytes into both superblock copies and
# re-seal their crcs, as an attacker with the device would
set_label() {
	"$PY" - "$IMG" "$1" <<'PY'
import os, struct, sys, zlib
path, label = sys.argv[1], bytes.fromhex(sys.argv[2])
size = os.path.getsize(path)
with open(path, 'r+b') as f:
    for at in (0, size - 4096):
        f.seek(at)
        sb = bytearray(f.read(256))
        sb[104:168] = label.ljust(64, b'\0')
        struct.pack_into('<I', sb, 252, zlib.crc32(bytes(sb[:252])))
        f.seek(at)
        f.write(sb)
PY
}

# ---- the tools that set a label refuse what udev or a terminal would act on
mkfs_img 64M
sum_before=$(md5sum <"$IMG")
refused=(
	$'x\nSYSTEMD_WANTS=evil.service'
	$'\e]0;owned\a\e[2J'
	$'tab\there'
	$'del\x7f'
	$'c1 \xc2\x9b31m'
	$'latin1 \xe9t\xe9'
	"$(printf 'a%.0s' {1..65})"
)
for l in "${refused[@]}"; do
	rc=0; "$MKFS" -q -s 64M -L "$l" "$WORK/other" 2>"$WORK/err" || rc=$?
	[ $rc = 2 ] || fail "mkfs.lfs -L $(printf %q "$l"): status $rc"
	[ ! -e "$WORK/other" ] || fail "mkfs.lfs -L $(printf %q "$l") made an image"
	grep -q "mkfs.lfs: label '.*' \(holds\|longer\)" "$WORK/err" || { cat "$WORK/err"; fail "mkfs.lfs: message"; }
	no_controls "$WORK/err" "mkfs.lfs's refusal"
	rc=0; "$TUNE" -L "$l" "$IMG" >"$WORK/out" 2>"$WORK/err" || rc=$?
	[ $rc = 2 ] || fail "lfs-tune -L $(printf %q "$l"): status $rc"
	grep -q "lfs-tune: label '.*' \(holds\|longer\)" "$WORK/err" || { cat "$WORK/err"; fail "lfs-tune: message"; }
	no_controls "$WORK/err" "lfs-tune's refusal"
done
grep -qF "label 'c1 \xc2\x9b31m' holds a control character" <("$TUNE" -L $'c1 \xc2\x9b31m' "$IMG" 2>&1 || true) ||
	fail "lfs-tune: the refused label is not shown escaped"
[ "$(md5sum <"$IMG")" = "$sum_before" ] || fail "a refused lfs-tune -L changed the image"
# printable UTF-8, quotes, '=', '\' and '/' are labels
for l in 'données' 'a "b" c=d\e/f' '日本語 ディスク'; do
	"$TUNE" -L "$l" "$IMG" >/dev/null || fail "lfs-tune -L $l: refused"
	[ "$("$PROBE" -o device -t "LABEL=$l" "$IMG")" = "$IMG" ] || fail "-t LABEL=$l"
done
"$MKFS" -q -s 64M -L 'données "x" =\' "$WORK/other" || fail "mkfs.lfs -L with UTF-8, quotes, = and \\"
rm -f "$WORK/other"
echo "ok mkfs.lfs -L and lfs-tune -L refuse control characters and bytes that are not UTF-8, take the rest"

# ---- crafted images: labels no tool would set, checksums re-sealed
crafted=(
	"$(printf 'x\nSYSTEMD_WANTS=evil.service' | xxd -p)"
	"$(printf 'q"uote\\back=slash\r\nID_FS_TYPE=ext4\nID_FS_LABEL=' | xxd -p | tr -d '\n')"
	"$(printf '\e]0;owned\a\e[2J\e[31mred' | xxd -p)"
	"$(printf "\xc2\x9b31m\xff\xfe\xe6\x97 \x7f'" | xxd -p)"
	"$(printf '\n%.0s' {1..64} | xxd -p | tr -d '\n')"
)
keys='ID_FS_LABEL ID_FS_LABEL_ENC ID_FS_TYPE ID_FS_USAGE ID_FS_UUID ID_FS_UUID_ENC ID_FS_VERSION'
n=0
for hex in "${crafted[@]}"; do
	n=$((n + 1))
	rm -f "$IMG"; mkfs_img 64M
	set_label "$hex"
	# udev: its seven keys, once each, ID_FS_TYPE=lfs, the label's
	# escape decodes back to its bytes
	"$PROBE" -o udev "$IMG" >"$WORK/udev" || fail "label $n: lfs-probe -o udev: status $?"
	no_controls "$WORK/udev" "label $n: lfs-probe -o udev"
	got=$(sed 's/=.*//' "$WORK/udev" | sort | tr '\n' ' ')
	[ "$got" = "$keys " ] || { cat -A "$WORK/udev"; fail "label $n: udev keys are '$got'"; }
	grep -qx 'ID_FS_TYPE=lfs' "$WORK/udev" || fail "label $n: ID_FS_TYPE"
	enc=$(sed -n 's/^ID_FS_LABEL_ENC=//p' "$WORK/udev")
	[ "$(unescape_hex "$enc")" = "$(tr -d '\n' <<<"$hex")" ] || fail "label $n: ID_FS_LABEL_ENC=$enc"
	sed -n 's/^ID_FS_LABEL=//p' "$WORK/udev" | matches -vq '[ /"'"'"'\\]' ||
		fail "label $n: ID_FS_LABEL has a space, '/', a quote or '\\'"
	# the full format: one line, the label between its quotes decodes back
	"$PROBE" "$IMG" >"$WORK/full" || fail "label $n: lfs-probe: status $?"
	no_controls "$WORK/full" "label $n: lfs-probe"
	[ "$(wc -l <"$WORK/full")" = 1 ] || { cat -A "$WORK/full"; fail "label $n: lfs-probe printed more than a line"; }
	shown=$(sed -n 's/^[^ ]*: LABEL="\([^"]*\)" UUID="[^"]*" TYPE="lfs" VERSION="1"$/\1/p' "$WORK/full")
	[ "$(unescape_hex "$shown")" = "$(tr -d '\n' <<<"$hex")" ] || { cat -A "$WORK/full"; fail "label $n: full line"; }
	# lfs-tune -l
	"$TUNE" -l "$IMG" >"$WORK/tune" || fail "label $n: lfs-tune -l: status $?"
	no_controls "$WORK/tune" "label $n: lfs-tune -l"
	grep -q "^  label  .*(shown escaped" "$WORK/tune" || { cat "$WORK/tune"; fail "label $n: lfs-tune -l"; }
	# the mount takes the image, and its log shows the label escaped
	: >"$WORK/daemon.log"
	lfs_mount
	echo data >"$MNT/f"
	lfs_umount
	no_controls "$WORK/daemon.log" "label $n: the daemon's log"
	grep -q "the label '.*' has bytes lfs-tune -L would refuse" "$WORK/daemon.log" ||
		{ cat "$WORK/daemon.log"; fail "label $n: the log does not say"; }
	"$top_builddir/ckpt/fsck.lfs" -n "$IMG" >"$WORK/fsck" 2>&1 || { cat "$WORK/fsck"; fail "label $n: fsck.lfs"; }
	no_controls "$WORK/fsck" "label $n: fsck.lfs"
	"$top_builddir/ckpt/dumplfs" "$IMG" >"$WORK/dump" 2>&1 || fail "label $n: dumplfs"
	no_controls "$WORK/dump" "label $n: dumplfs"
done
# the owner sets a label again
"$TUNE" -L mine "$IMG" >/dev/null || fail "lfs-tune -L on a crafted label"
grep -qx ID_FS_LABEL=mine <("$PROBE" -o udev "$IMG") || fail "lfs-tune -L did not replace the crafted label"
echo "ok $n crafted labels: udev gets its seven keys, every output escapes the label, the image mounts"

# ---- what the daemon says: a snapshot's name, its image's path
rm -f "$IMG"; mkfs_img 64M "-L plain"
"$TUNE" -O snapshots "$IMG" >/dev/null
mkdir -p "$WORK/mnt2"
# refused_snapshot WHAT: the mount of a snapshot that is not there fails,
# the name it was given shown escaped
refused_snapshot() {
	local rc=0
	timeout 20 "$LFS" -f -o ro,snapshot=$'no\e[2Jsuch' "$IMG" "$WORK/mnt2" 2>"$WORK/err" || rc=$?
	mountpoint -q "$WORK/mnt2" && { fusermount3 -u "$WORK/mnt2"; fail "$1: a snapshot that does not exist was mounted"; }
	[ $rc != 0 ] && [ $rc != 124 ] || fail "$1: the mount of a snapshot that does not exist: status $rc"
	grep -qF "snapshot or kept checkpoint 'no\x1b[2Jsuch'" "$WORK/err" || { cat -A "$WORK/err"; fail "$1: the name"; }
	no_controls "$WORK/err" "$1: the refused snapshot's messages"
}
lfs_mount
"$CKPT" -s -n $'c1\xc2\x9b31m\xff' "$MNT" >/dev/null || fail "lfs-ckpt -s -n with C1 and 0xff"
"$CKPT" -l "$MNT" >"$WORK/list" || fail "lfs-ckpt -l: status $?"
no_controls "$WORK/list" "lfs-ckpt -l"
grep -qF 'c1\xc2\x9b31m\xff' "$WORK/list" || { cat -A "$WORK/list"; fail "lfs-ckpt -l: the snapshot's name"; }
refused_snapshot "mounted image"
lfs_umount
refused_snapshot "unmounted image"
plain_img=$IMG
IMG="$WORK/"$'im\nage\e[2J'
mv "$plain_img" "$IMG"
lfs_mount
"$CLEANERD" --status "$MNT" >"$WORK/status" || fail "lfs_cleanerd --status: status $?"
no_controls "$WORK/status" "lfs_cleanerd --status"
grep -qF 'im\x0aage\x1b[2J' "$WORK/status" || { cat -A "$WORK/status"; fail "--status: the image's path"; }
lfs_umount
echo "ok lfs-ckpt -l, lfs_cleanerd --status and refused snapshot mounts show names and paths escaped"
