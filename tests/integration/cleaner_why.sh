#!/bin/bash
# cleaner_why.sh — a cleaner that does not clean says why (lfs_cleanerd
# --status, text and JSON): on a filesystem filled to ENOSPC with data
# that has no dead space, it is "waiting" (nothing to gain) or "idle" on
# a full filesystem, each with a reason that names deleting as the way
# out; once the data is deleted, it has none.  When kept checkpoints
# (checkpoint_protection) hold the space of a file deleted since, the
# reason names them and what they hold, and letting them go, not only
# deleting files.
. "$(dirname "$0")/lib.sh"

CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
# no checkpoint kept: the reason must go once the data is deleted,
# which kept checkpoints would hold for their hour
cat >"$WORK/cleaner.conf" <<'CONF'
protection_period 0
checkpoint_protection 0
cleaning_interval 0.2
CONF
mkfs_img 64M
lfs_mount_cleaner "$WORK/cleaner.conf"
dd if=/dev/urandom of="$MNT/fill" bs=1M status=none 2>"$WORK/dd.err" && fail "64 MiB took more than it holds"
matches "No space left" <"$WORK/dd.err" || fail "dd: $(cat "$WORK/dd.err")"
sync

# why: the cleaner's state and reason, "STATE|REASON"
why() {
	"$CLEANERD" --status --json "$MNT" | "$PY" -c "import json, sys; j = json.load(sys.stdin); print(j['cleaner_state'] + '|' + j['cleaner_why'])"
}
# until_why PATTERN: polls (the cleaner's wake-ups, 0.2 s apart) until
# the state matches; a minute without is a hang
until_why() {
	for _ in $(seq 1 600); do
		w=$(why) || fail "lfs_cleanerd --status --json"
		grep -qE "$1" <<<"$w" && return 0
		sleep 0.1
	done
	fail "the cleaner's state stayed '$w', not /$1/"
}
until_why '^(waiting|idle)\|.*delete'
echo "full: $w"
"$CLEANERD" --status "$MNT" | matches -E "^  cleaner +running \(pid [0-9]+\), (waiting|idle): .*delete" ||
	fail "--status: $("$CLEANERD" --status "$MNT" | grep cleaner)"
rm "$MNT/fill"
sync
until_why '^(idle|cleaning)\|$'
echo "after the delete: $w"
lfs_umount
echo "ok: the cleaner says why it does not clean"

# kept checkpoints hold what a deleted file took: the reason says so
rm -f "$IMG"
sed -i 's/^checkpoint_protection 0$/checkpoint_protection 3600/' "$WORK/cleaner.conf"
mkfs_img 64M
lfs_mount_cleaner "$WORK/cleaner.conf"
head -c 15M /dev/urandom > "$MNT/old"
sync -f "$MNT"
dd if=/dev/urandom of="$MNT/fill" bs=1M status=none 2>"$WORK/dd.err" && fail "64 MiB took more than it holds"
rm "$MNT/old"
sync -f "$MNT"
until_why '^idle\|.*kept checkpoints? \(checkpoint_protection 3600 s\) hold 1[45]\.[0-9] MiB of it: let them go'
echo "full, kept checkpoints holding a deleted file: $w"
"$CLEANERD" --status "$MNT" | matches -E "^  cleaner +running \(pid [0-9]+\), idle: .*kept checkpoints? .*hold" ||
	fail "--status: $("$CLEANERD" --status "$MNT" | grep cleaner)"
lfs_umount
echo "ok: on a full filesystem the cleaner names the kept checkpoints that hold the space"
