#!/bin/bash
# cache_bound.sh — a mount whose kernel cache lfs cannot keep room for
# writes through (lfs(8), "Writes and a full filesystem"): with the
# kernel's bound on the mount's dirty pages raised past an eighth of the
# filesystem (max_ratio=100), the daemon says so at mount and a write()
# reaches it before it returns; -o writeback keeps the cache anyway, as
# does a root mount whose bound lfs sets itself.
. "$(dirname "$0")/lib.sh"

# WRITE requests the daemon logged (-o debug) between a 4 KiB write()
# to a new file and its close()
writes_before_close() {
	"$PY" - "$MNT/$1" "$WORK/daemon.log" <<'PY'
import os, sys
def count():
    with open(sys.argv[2], 'rb') as f:
        return f.read().count(b'opcode: WRITE')
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
before = count()
os.write(fd, b'x' * 4096)
print(count() - before)
os.close(fd)
PY
}
through="writes to $MNT go through to the daemon"
# 128 MiB: the bound a root mount sets is at least 2 MiB, which fits a
# sixteenth of a filesystem offering 40 MiB or more (64 MiB offers 39.7)
mkfs_img 128M

# the daemon says how it writes before it serves: the grep follows a
# request
lfs_mount debug,max_ratio=100
n=$(writes_before_close f1)
grep -qF "$through" "$WORK/daemon.log" || fail "max_ratio=100 on 128 MiB: the daemon did not say that writes go through"
[ "$n" -ge 1 ] || fail "max_ratio=100 on 128 MiB: write() returned before the daemon saw a WRITE ($n)"
echo "ok max_ratio=100: writes go through ($n WRITE before close)"
lfs_umount

: >"$WORK/daemon.log"
lfs_mount debug,max_ratio=100,writeback
stat "$MNT" >/dev/null
grep -qF "$through" "$WORK/daemon.log" && fail "-o writeback: the daemon wrote through all the same"
lfs_umount

: >"$WORK/daemon.log"
lfs_mount
stat "$MNT/f1" >/dev/null
grep -qF "$through" "$WORK/daemon.log" && fail "a root mount with the bound lfs sets wrote through"
[ "$(cat "$MNT/f1")" = "$(head -c 4096 /dev/zero | tr '\0' x)" ] || fail "f1 does not read back"
lfs_umount
echo "ok: the writeback cache only where lfs keeps room for what it holds"
