#!/bin/bash
# snapshot.sh — snapshots on a real mount (issue 14): a snapshot's tree
# (every name, attribute, extended attribute and byte) is unchanged after
# the live filesystem is overwritten ten times its capacity with the
# cleaner running, while it is read beside the live mount as the cleaner
# moves its blocks, after a remount and after kill -9 of the daemon; the
# snapshots are listed (text and JSON) with what each alone holds; a
# filesystem held full by a snapshot frees that space when it is
# deleted, but not while it is mounted; fsck.lfs checks every kept tree;
# a snapshot mounts on its own from the unmounted image.  SNAPSHOT_TIMES scales the overwrite volume.
. "$(dirname "$0")/lib.sh"

OW="$top_builddir/tests/cleaner/overwrite"
CKPT="$top_builddir/ckpt/lfs-ckpt"
FSCK="$top_builddir/ckpt/fsck.lfs"
DUMP="$top_builddir/ckpt/dumplfs"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
times=$(soak "${SNAPSHOT_TIMES:-10}")
snap_setup

cat > "$WORK/cleaner.conf" <<CONF
min_clean_segments 10
max_clean_segments 20
protection_period 0
cleaning_interval 0.2
segments_per_clean 8
CONF


# Every entry of a tree: type, mode, owner, size, times, links, target,
# extended attributes and a hash of the content, in name order.
MANIFEST_PY='
import hashlib, os, stat, sys
def manifest(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for n in sorted(dirs + files) + ([] if d != root else ["."]):
            p = os.path.join(d, n) if n != "." else d
            st = os.lstat(p)
            line = [os.path.relpath(p, root), oct(st.st_mode), st.st_uid, st.st_gid, st.st_nlink,
                    st.st_size, st.st_mtime_ns, st.st_ctime_ns]
            if stat.S_ISLNK(st.st_mode):
                line.append(os.readlink(p))
            else:
                for a in sorted(os.listxattr(p)):
                    line.append((a, os.getxattr(p, a).hex()))
            if stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    line.append(hashlib.sha256(f.read()).hexdigest())
            out.append(repr(line))
    return "\n".join(out) + "\n"
'
manifest() {
	"$PY" -c "$MANIFEST_PY
sys.stdout.write(manifest(sys.argv[1]))" "$1"
}

# The reader of the snapshot during the overwrite, with ROOT M1 STOP PID
# STEP: one process that reads the whole tree at ROOT and compares it
# with the manifest M1, again and again until the file STOP exists, but
# not twice before the overwrite (PID) has written another STEP bytes:
# on a loaded machine it would otherwise spin over the same state of the
# cleaner while the overwrite waits for the CPU.  It prints "ok N" (N
# reads) or why it stopped.
READER_PY='
import time
root, want, stop, pid, step = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3], sys.argv[4], int(sys.argv[5])
def written():
    try:
        with open("/proc/%s/io" % pid) as f:
            return next(int(l.split()[1]) for l in f if l.startswith("wchar:"))
    except (OSError, StopIteration):
        return None
n = 0
while not os.path.exists(stop):
    w0 = written()
    try:
        got = manifest(root)
    except OSError as e:
        print("read-failed", e)
        sys.exit(1)
    if got != want:
        print("differs")
        sys.exit(1)
    n += 1
    while not os.path.exists(stop):
        w = written()
        if w is None or w0 is None or w - w0 >= step:
            break
        time.sleep(0.05)
print("ok", n)
'

mkfs_img 128M
lfs_mount_cleaner "$WORK/cleaner.conf"

# 1. a tree of every kind of entry, some 12 MiB
mkdir -p "$MNT/src/a/b" "$MNT/empty"
for i in $(seq 1 40); do head -c $((i * 7919)) /dev/urandom > "$MNT/src/f$i"; done
head -c 8M /dev/urandom > "$MNT/src/a/big"
dd if=/dev/urandom of="$MNT/src/a/sparse" bs=4k count=3 seek=1000 status=none
echo small > "$MNT/src/a/b/inline"
ln -s ../f1 "$MNT/src/a/link"
ln "$MNT/src/f2" "$MNT/src/a/b/hard"
mkfifo "$MNT/src/fifo"
"$PY" -c "import os; os.setxattr('$MNT/src/f3', 'user.note', b'kept'); os.setxattr('$MNT/src/a', 'user.big', os.urandom(3000))"
chmod 640 "$MNT/src/f4"; chown 1234:5678 "$MNT/src/f5"
# and files of a third of the capacity overwritten at random, so that the
# segments the snapshot reads from are part dead: the cleaner must move
# what it holds among what it frees
read -r blocks bsize < <(stat -f -c '%b %S' "$MNT")
cap=$((blocks * bsize))
fbytes=$((256 * 1024))
nfiles=$((cap / 3 / fbytes))
mkdir "$MNT/ow" "$WORK/model"
"$OW" -s 1 -F -y 0 "$MNT/ow" "$WORK/model" "$nfiles" "$fbytes" "$cap" >/dev/null || fail "the first overwrite"
manifest "$MNT" > "$WORK/m1"

s1=$("$CKPT" -s -n s1 "$MNT") || fail "lfs-ckpt -s"
[[ "$s1" =~ ^[0-9]+$ ]] || fail "lfs-ckpt -s printed '$s1', not a number"
"$CKPT" -s -n s1 "$MNT" 2>"$WORK/err" && fail "a second snapshot called s1 was made"
matches "another snapshot has that name" <"$WORK/err" || fail "the refused name was not explained: $(cat "$WORK/err")"
"$CKPT" -l "$MNT" | matches -E "^  $s1 +[0-9T:.-]+Z +snapshot +[0-9]+ +s1$" || fail "lfs-ckpt -l does not list s1"
"$CKPT" -j "$MNT" | "$PY" -c "
import json, sys
j = json.load(sys.stdin)
c = [c for c in j['checkpoints'] if c['seq'] == $s1]
assert c and c[0]['snapshot'] and c[0]['name'] == 's1', j['checkpoints']
" || fail "lfs-ckpt -j does not list s1"

# 2. read beside the live mount: the same tree, and read-only
snap_mount s1
manifest "$SNAP" > "$WORK/m_snap"
diff "$WORK/m_snap" "$WORK/m1" | head -6 || true
cmp -s "$WORK/m_snap" "$WORK/m1" || fail "the snapshot's tree differs from the tree it was taken of"
touch "$SNAP/new" 2>/dev/null && fail "a file was made in a snapshot"
echo x 2>/dev/null >>"$SNAP/src/f1" && fail "a snapshot's file was written"
snap_umount

# NILFS's habits: cp=N mounts checkpoint N; a view asked for rw is
# refused, by lfs and by the mount helper (mount(8) always passes rw or
# ro to it, so there a view needs ro, as NILFS's cp= does)
"$LFS" -f -o "cp=$s1" "$IMG" "$SNAP" 2>>"$WORK/snap.log" &
SNAP_PID=$!
wait_mounted "$SNAP_PID" "$SNAP" "$WORK/snap.log"
manifest "$SNAP" > "$WORK/m_snap"
cmp -s "$WORK/m_snap" "$WORK/m1" || fail "-o cp=$s1 does not show snapshot s1's tree"
snap_umount
for o in snapshot=s1,rw "cp=$s1,rw" rw,cp=s1 cp=0; do
	"$LFS" -f -o "$o" "$IMG" "$SNAP" 2>"$WORK/err" && fail "lfs -o $o mounted"
	mountpoint -q "$SNAP" && fail "lfs -o $o left a mount"
	matches -E "read-only|not a checkpoint number" <"$WORK/err" || fail "lfs -o $o: $(cat "$WORK/err")"
	echo "ok lfs -o $o refused: $(cat "$WORK/err")"
done
sed -e "s|^LFS=.*|LFS='$LFS'|" "$top_builddir/lfs/daemon/mount.fuse.lfs" >"$WORK/helper"
chmod +x "$WORK/helper"
"$WORK/helper" "$IMG" "$SNAP" -f -v -o rw,snapshot=s1 >"$WORK/err" 2>&1 && fail "the helper passed rw,snapshot=s1"
matches "read-only" <"$WORK/err" || fail "the helper: $(cat "$WORK/err")"
"$WORK/helper" "$IMG" "$SNAP" -f -v -o "ro,cp=$s1" >"$WORK/out" 2>&1 || fail "the helper refused ro,cp=$s1: $(cat "$WORK/out")"
matches -- "-o cp=$s1,ro" <"$WORK/out" || fail "the helper ran: $(cat "$WORK/out")"
snap_mount s1

# 3. the live tree changes; overwrite ten times the capacity with the
# cleaner running, the snapshot read again and again meanwhile
rm -rf "$MNT/src/a"
echo changed > "$MNT/src/f6"
written=$((cap * times))
"$OW" -s 2 -y 0 "$MNT/ow" "$WORK/model" "$nfiles" "$fbytes" "$written" >/dev/null &
ow=$!
# at most a read per 32nd of the capacity overwritten (twice that
# written, with the model): more often than a read takes on a quiet
# machine
"$PY" -c "$MANIFEST_PY
$READER_PY" "$SNAP" "$WORK/m1" "$WORK/stop" "$ow" $((cap / 16)) >"$WORK/reader" &
reader=$!
wait "$ow" || fail "overwriting ten times the capacity"
sync
touch "$WORK/stop"
wait "$reader" || true
read -r state n < "$WORK/reader"
[ "$state" = ok ] || fail "reading the snapshot while the live tree was overwritten: $state"
[ "$n" -ge 2 ] || fail "the snapshot was read only $n times during the overwrite"
"$CLEANERD" --status --json "$MNT" > "$WORK/status.json"
cleaned=$("$PY" -c "import json; print(json.load(open('$WORK/status.json'))['segments_cleaned'])")
[ "$cleaned" -gt 0 ] || fail "the cleaner cleaned nothing during the overwrite"
manifest "$SNAP" | diff -q - "$WORK/m1" >/dev/null || fail "the snapshot changed after the overwrite"
echo "overwrote $((written >> 20)) MiB ($times x $((cap >> 20)) MiB), the snapshot read $n times meanwhile; $cleaned segments cleaned"
snap_umount

# 4. the cleaner moved blocks only the snapshot reads (HELD copies)
lfs_umount
held=$("$DUMP" -s "$IMG" | grep -c "kind=HELD" || true)
[ "$held" -gt 0 ] || fail "no block was copied for the snapshot: the cleaner never moved what it holds"
"$FSCK" "$IMG" > "$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck.lfs after the overwrite"; }
echo "$held HELD copies in the log; fsck clean"

# 5. after a remount, and after kill -9 of the daemon
lfs_mount_cleaner "$WORK/cleaner.conf"
manifest "$MNT" > "$WORK/m_live"
snap_mount s1
manifest "$SNAP" | diff -q - "$WORK/m1" >/dev/null || fail "the snapshot changed across a remount"
# mounted, it is neither deleted nor let go (issue 35): EBUSY, naming the
# mount, as NILFS refuses; it still reads as it did
for verb in "-d s1" "-u $s1"; do
	rc=0
	"$CKPT" $verb "$MNT" 2>"$WORK/err" || rc=$?
	[ $rc = 1 ] && grep -qF "is mounted at $SNAP (" "$WORK/err" ||
		{ cat "$WORK/err"; fail "lfs-ckpt $verb of the mounted snapshot: status $rc, no mount named"; }
	echo "ok lfs-ckpt $verb refused: $(cat "$WORK/err")"
done
"$CKPT" -l "$MNT" | matches -E "^  $s1 +[0-9T:.-]+Z +snapshot +[0-9]+ +s1$" || fail "s1 changed by the refusals"
manifest "$SNAP" | diff -q - "$WORK/m1" >/dev/null || fail "the mounted snapshot reads otherwise after the refusals"
snap_umount
# and once unmounted (its daemon gone), deleted at once
s3=$("$CKPT" -s -n s3 "$MNT") || fail "lfs-ckpt -s -n s3"
snap_mount "$s3"
"$CKPT" -d s3 "$MNT" 2>/dev/null && fail "the mounted s3 was deleted"
snap_umount
"$CKPT" -d s3 "$MNT" || fail "deleting s3 just after its unmount"
echo "ok a mounted snapshot is not deleted; unmounted, it is"
s2=$("$CKPT" -s -n s2 "$MNT")
manifest "$MNT" > "$WORK/m2"
echo more > "$MNT/after-s2"
kill -9 "$LFS_PID"
wait "$LFS_PID" 2>/dev/null || true
LFS_PID=
umount -l "$MNT" 2>/dev/null || fusermount3 -u "$MNT" 2>/dev/null || true
flock -w 60 "$IMG" true
# until here checkpoints were kept for the default hour besides the
# snapshots; from here on only the snapshots hold space, since 6 and 7
# count what they alone hold (the period 0 lets the kept ones go at the
# next checkpoint)
{ cat "$WORK/cleaner.conf"; echo "checkpoint_protection 0"; } > "$WORK/cleaner0.conf"
lfs_mount_cleaner "$WORK/cleaner0.conf"
for _ in $(seq 1200); do
	"$CKPT" -l "$MNT" | matches "protection period 0 s" && break
	sleep 0.05
done
"$CKPT" -l "$MNT" | matches "protection period 0 s" || fail "the cleaner did not set the period 0"
for s in s1 s2; do
	snap_mount "$s"
	want="$WORK/m1"; [ "$s" = s2 ] && want="$WORK/m2"
	manifest "$SNAP" | diff -q - "$want" >/dev/null || fail "snapshot $s changed across kill -9"
	snap_umount
done

# 6. held full by a snapshot: deleting it frees the space
i=0
while dd if=/dev/urandom of="$MNT/fill$i" bs=1M count=4 status=none 2>/dev/null && sync "$MNT/fill$i"; do
	i=$((i + 1))
	[ "$i" -lt 200 ] || fail "128 MiB never filled up"
done
sync
matches -E "full: [0-9]+ MiB of it are held for 2 kept checkpoints or snapshots" <"$WORK/daemon.log" ||
	fail "the full filesystem did not say snapshots hold its space"
"$CLEANERD" --status --json "$MNT" | "$PY" -c "
import json, sys
s = json.load(sys.stdin)
assert s['snapshots'] == 2 and s['held_bytes'] > 0, s" || fail "lfs_cleanerd --status does not count the snapshots"
rm -rf "$MNT"/fill* "$MNT/src" "$MNT/ow"
sync
own=$("$CKPT" -j "$MNT" | "$PY" -c "
import json, sys
print(sum(c['own_bytes'] for c in json.load(sys.stdin)['checkpoints'] if c['name'] == 's1'))")
[ "$own" -gt $((cap / 4)) ] || fail "s1 alone holds only $own bytes"
avail0=$(stat -f -c '%a' "$MNT")
"$CKPT" -d s1 "$MNT" || fail "deleting s1"
"$CKPT" -l "$MNT" | matches -E " s1$" && fail "s1 is still listed after its deletion"
# until the space comes back (a minute is only the bound on a hang)
for _ in $(seq 600); do
	avail1=$(stat -f -c '%a' "$MNT")
	[ $(((avail1 - avail0) * bsize)) -lt $((own / 2)) ] || break
	sleep 0.1
done
[ $(((avail1 - avail0) * bsize)) -ge $((own / 2)) ] ||
	fail "deleting s1 (holding $own bytes) freed only $(((avail1 - avail0) * bsize)) bytes"
echo "s1 alone held $((own >> 20)) MiB; deleting it freed $((((avail1 - avail0) * bsize) >> 20)) MiB"

# 7. on its own, from the unmounted image; fsck checks the kept tree
lfs_umount
"$FSCK" "$IMG" > "$WORK/fsck" || { cat "$WORK/fsck"; fail "fsck.lfs at the end"; }
"$DUMP" -k -j "$IMG" | "$PY" -c "
import json, sys
k = json.load(sys.stdin)['snapshots']
assert [c['name'] for c in k['kept']] == ['s2'] and k['kept'][0]['snapshot'], k['kept']
assert k['held'] and all(h['from'] <= $s2 < h['until'] for h in k['held']), 'held entries not for s2'
" || fail "dumplfs -k does not show s2 and what it holds"
snap_mount s2
manifest "$SNAP" | diff -q - "$WORK/m2" >/dev/null || fail "snapshot s2 mounted on its own differs"
snap_umount
echo "PASS"
