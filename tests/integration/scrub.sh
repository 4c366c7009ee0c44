#!/bin/bash
# scrub.sh — lfs-scrub on a mounted lfs in use: blocks of three files, a
# directory block, an inode block and a block only a snapshot holds are
# overwritten in the image; the report (text and --json) names exactly
# those, by path, inode and byte range, and the exit status says damage.
# Then: a cleaning pass over the damaged segments leaves the damaged
# blocks where they are (still EIO, still reported at the same address,
# never copied as if good) and moves the rest; a scrub stopped by
# --max-segments or a signal goes on with --resume after a remount and
# reports the same damage; a clean filesystem exits 0.
. "$(dirname "$0")/lib.sh"
SCRUB="$top_builddir/cleaner/lfs-scrub"
DUMP="$top_builddir/ckpt/dumplfs"
CKPT="$top_builddir/ckpt/lfs-ckpt"
CLEANERD="$top_builddir/cleaner/lfs_cleanerd"
STATE="$WORK/scrub.state"

# the cleaner cleans only when asked (lfs-clean), and keeps no plain
# checkpoint: only the snapshot holds what is deleted
cat >"$WORK/cleaner.conf" <<'CONF'
policy greedy
min_clean_segments 0
max_clean_segments 0
protection_period 0
checkpoint_protection 0
segments_per_clean 1024
cleaning_interval 3600
CONF
mkfs_img 64M
# noatime: no read moves an inode record out of a block the test damages
mount_it() { lfs_start "cleaner_conf=$WORK/cleaner.conf,noatime"; }
mount_it

# newest ADDR-finder: the address the log names last for (INO, KIND, LBLK)
newest() {
	"$DUMP" -s -j "$IMG" 2>/dev/null | "$PY" -c '
import json, sys
ino, kind, lblk = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
best = None
for s in json.load(sys.stdin)["segments"]:
    for p in s.get("pseg_list", []):
        for b in p["blocks"]:
            if (b["ino"], b["kind"], b["lblk"]) == (ino, kind, lblk) and (best is None or p["seq"] > best[0]):
                best = (p["seq"], b["block"])
print(best[1])' "$@"
}
# inode_block INO: the block holding INO's record (the newest checkpoint)
inode_block() {
	"$DUMP" -i -j "$IMG" 2>/dev/null | "$PY" -c '
import json, sys
print([e["daddr"] for e in json.load(sys.stdin)["inode_map"]["entries"] if e["ino"] == int(sys.argv[1])][0])' "$1"
}
smash() { dd if=/dev/urandom of="$IMG" bs=4096 seek="$1" count=1 conv=notrunc status=none; }
ino() { stat -c %i "$1"; }

mkdir -p "$MNT/d/sub" "$MNT/keep"
for i in 1 2 3 4; do head -c 200000 /dev/urandom >"$MNT/d/f$i"; done
head -c 90000 /dev/urandom >"$MNT/gone"
for i in $(seq 1 40); do echo "entry $i" >"$MNT/keep/e$i"; done
"$CKPT" -s -n before "$MNT" >/dev/null || fail "lfs-ckpt -s"
gone_ino=$(ino "$MNT/gone")
# the log moves on: the blocks above lie in a segment no longer written
# (written before the delete, so that no file takes gone's number)
head -c 3M /dev/urandom >"$MNT/later"
md5sum "$MNT/d/f4" >"$WORK/f4.md5"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
# a file whose newest record is alone in its block: not with the records
# of the files damaged below (whose data the daemon could then judge only
# while it holds their inodes), nor with its directory's (whose entries
# the path walk could then read only while the daemon holds it)
head -c 40000 /dev/urandom >"$MNT/d/sub/meta2"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
chmod 600 "$MNT/d/sub/meta2"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
rm "$MNT/gone"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"

rc=0
"$SCRUB" -s "$STATE" "$MNT" >"$WORK/clean.out" 2>&1 || rc=$?
[ $rc = 0 ] || { cat "$WORK/clean.out"; fail "lfs-scrub of an intact filesystem: status $rc"; }
grep -qE '^damaged +0$' "$WORK/clean.out" || fail "an intact filesystem: $(cat "$WORK/clean.out")"
echo "ok an intact filesystem scrubs clean, status 0"

f1=$(ino "$MNT/d/f1"); f2=$(ino "$MNT/d/f2"); f3=$(ino "$MNT/d/f3"); meta=$(ino "$MNT/d/sub/meta2")
keep=$(ino "$MNT/keep")
# f1: block 0; f2: blocks 5 and 6 (one range); f3: block 48 (its last);
# the directory keep/: its first block; d/sub/meta2's inode record; and
# block 3 of the deleted file only the snapshot holds
declare -A want
smash "$(newest "$f1" DATA 0)"; want["data $f1 0 4096"]=1
smash "$(newest "$f2" DATA 5)"; smash "$(newest "$f2" DATA 6)"; want["data $f2 20480 8192"]=1
smash "$(newest "$f3" DATA 48)"; want["data $f3 196608 4096"]=1
smash "$(newest "$keep" DATA 0)"; want["directory $keep 0 4096"]=1
gone_blk=$(newest "$gone_ino" DATA 3)
smash "$gone_blk"; want["data $gone_ino 12288 4096"]=1
meta_blk=$(inode_block "$meta")
smash "$meta_blk"
# the inodes whose records that block holds (the map says which): meta2's alone
in_blk=$("$DUMP" -i -j "$IMG" 2>/dev/null | "$PY" -c '
import json, sys
print(*[e["ino"] for e in json.load(sys.stdin)["inode_map"]["entries"] if e["daddr"] == int(sys.argv[1])])' "$meta_blk")
[ "$in_blk" = "$meta" ] || fail "the block of meta2's record holds the records of $in_blk, not $meta alone"
want["inode $meta - -"]=1

rc=0
"$SCRUB" -j -s "$STATE" "$MNT" >"$WORK/scrub.json" || rc=$?
[ $rc = 1 ] || { cat "$WORK/scrub.json"; fail "lfs-scrub over damage: status $rc, not 1"; }
# what the report names, one line each: WHAT INO OFFSET LENGTH, and the paths
"$PY" - "$WORK/scrub.json" "$MNT" >"$WORK/got" <<'EOF' || fail "the JSON report: $(cat "$WORK/scrub.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["complete"] and j["damaged"] == len(j["damage"]), j
for d in j["damage"]:
    print(d["what"], d.get("ino", "-"), d.get("offset", "-"), d.get("length", "-"))
    if d["live"]:
        assert d["path"].startswith(sys.argv[2] + "/") or d["path"] == sys.argv[2], d
    else:
        assert d["held"] and "path" not in d, d
EOF
printf '%s\n' "${!want[@]}" | sort >"$WORK/want"
sort -o "$WORK/got" "$WORK/got"
diff "$WORK/want" "$WORK/got" || fail "the report does not name exactly the damaged blocks"
"$PY" - "$WORK/scrub.json" "$MNT" "$f1" "$f2" "$keep" "$gone_ino" <<'EOF' || fail "paths or flags"
import json, sys
j = json.load(open(sys.argv[1]))
mnt, f1, f2, keep, gone = sys.argv[2], *map(int, sys.argv[3:])
by = {d["ino"]: d for d in j["damage"] if "ino" in d}
assert by[f1]["path"] == mnt + "/d/f1" and by[f2]["path"] == mnt + "/d/f2", by
assert by[keep]["path"] == mnt + "/keep", by[keep]
assert by[gone]["held"] and not by[gone]["live"], by[gone]
EOF
echo "ok the report names exactly the $(wc -l <"$WORK/want") damaged ranges, by path, inode and bytes; status 1"

# text: one line per damaged range, the same ones
"$SCRUB" -s "$STATE" "$MNT" >"$WORK/scrub.txt" && fail "text report: status 0 over damage"
grep -qE "^  damaged [0-9]+ what=data ino=$f2 path=$MNT/d/f2 offset=20480 length=8192 live=yes held=no " \
	"$WORK/scrub.txt" || fail "text report: $(cat "$WORK/scrub.txt")"
[ "$(grep -c '^  damaged ' "$WORK/scrub.txt")" = "$(wc -l <"$WORK/want")" ] || fail "text and JSON differ"
echo "ok the text report names the same ranges"

# the cleaner over the damaged segments: the good blocks move, the
# damaged ones stay where they are, reported, and still fail to read
f1_blk1=$(newest "$f1" DATA 1)
f2_blk5=$(newest "$f2" DATA 5)
passes() { "$CLEANERD" --status --json "$MNT" | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["cleaner_passes"])'; }
p0=$(passes)
"$top_builddir/cleaner/lfs-clean" --now "$MNT" || fail "lfs-clean --now"
for _ in $(seq 1 600); do [ "$(passes)" -gt "$p0" ] && break; sleep 0.1; done
[ "$(passes)" -gt "$p0" ] || fail "no cleaning pass in a minute"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
[ "$(newest "$f1" DATA 1)" != "$f1_blk1" ] || fail "the cleaner moved nothing of f1 (block 1 is still at $f1_blk1)"
grep -q "fails its checksum" "$WORK/daemon.log" || fail "the daemon did not log the damaged blocks"
[ "$(newest "$f2" DATA 5)" = "$f2_blk5" ] || fail "f2's damaged block 5 was copied to $(newest "$f2" DATA 5)"
# past the kernel's page cache (its pages of f2 dropped), the daemon
# still refuses the damaged block: it was not rewritten with a new crc
"$PY" - "$MNT/d/f2" <<'EOF' || fail "f2's damaged block reads after cleaning: copied as if good"
import errno, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
try:
    os.pread(fd, 4096, 5 * 4096)
except OSError as e:
    sys.exit(0 if e.errno == errno.EIO else 1)
sys.exit(1)
EOF
dd if="$MNT/d/f2" of="$WORK/f2.head" bs=4096 count=5 status=none || fail "f2's intact blocks do not read"
md5sum -c --quiet "$WORK/f4.md5" || fail "f4 changed"
rc=0
"$SCRUB" -j -s "$STATE" "$MNT" >"$WORK/after.json" || rc=$?
[ $rc = 1 ] || fail "lfs-scrub after cleaning: status $rc"
"$PY" - "$WORK/scrub.json" "$WORK/after.json" <<'EOF' || fail "the damage moved or spread with cleaning"
import json, sys
key = lambda d: (d["what"], d.get("ino"), d.get("offset"), d.get("length"), d["address"])
before, after = (set(map(key, json.load(open(p))["damage"])) for p in sys.argv[1:])
# nothing new; every damaged block of a file where it was.  Inode
# records the pass re-wrote (their files' blocks moved) went out from
# the daemon's memory, intact: those may leave the damaged block.
assert after <= before, after - before
assert {d for d in before if d[0] != "inode"} <= after, before - after
EOF
echo "ok a cleaning pass moved the intact blocks and left the damaged ones in place, reported alike"

# paused by --max-segments, resumed after a remount: the same report
rm -f "$STATE"
rc=0
"$SCRUB" -j -n 1 -s "$STATE" "$MNT" >"$WORK/part.json" 2>"$WORK/part.err" || rc=$?
[ $((rc & 4)) = 4 ] || { cat "$WORK/part.err"; fail "-n 1: status $rc, not paused"; }
grep -q "paused at segment" "$WORK/part.err" || fail "-n 1 does not say where it paused"
grep -qE '^complete 0$' "$STATE" || fail "the state file: $(head -3 "$STATE")"
lfs_umount
mount_it
# what a whole scrub finds now (the daemon's memory is gone: no record
# of the damaged inode block is read, so no path runs through keep/)
"$SCRUB" -j -s "$WORK/full.state" "$MNT" >"$WORK/full.json" && fail "a whole scrub after the remount: status 0"
rc=0
"$SCRUB" -j --resume -s "$STATE" "$MNT" >"$WORK/resumed.json" 2>"$WORK/resumed.err" || rc=$?
[ $rc = 1 ] || { cat "$WORK/resumed.err"; fail "--resume: status $rc"; }
grep -q "resuming at segment [1-9]" "$WORK/resumed.err" || fail "--resume: $(cat "$WORK/resumed.err")"
"$PY" - "$WORK/full.json" "$WORK/resumed.json" <<'EOF' || fail "the resumed scrub's report differs"
import json, sys
key = lambda d: (d["what"], d.get("ino"), d.get("path"), d.get("offset"), d.get("length"), d["address"])
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["complete"] and sorted(map(key, a["damage"]), key=str) == sorted(map(key, b["damage"]), key=str), (a, b)
assert b["segments"] == a["segments"], (a["segments"], b["segments"])
EOF
echo "ok a scrub paused after one segment goes on after a remount (--resume) and reports the same damage"

# paused by a signal while rate-limited (the progress lines are the events)
rm -f "$STATE"
"$SCRUB" -p -r 0.05 -s "$STATE" "$MNT" >"$WORK/sig.out" 2>"$WORK/sig.err" &
spid=$!
for _ in $(seq 1 600); do grep -q "^scrub: 1/" "$WORK/sig.err" && break; sleep 0.1; done
grep -qE "^scrub: 1/[0-9]+ segments, [0-9.]+ MiB/s, [0-9]+:[0-9]{2} left, [0-9]+ suspects?$" "$WORK/sig.err" ||
	fail "no progress line: $(cat "$WORK/sig.err")"
kill -INT $spid
rc=0
wait $spid || rc=$?
[ $((rc & 4)) = 4 ] || fail "SIGINT: status $rc, not paused: $(cat "$WORK/sig.err")"
rc=0
"$SCRUB" --resume -s "$STATE" "$MNT" >"$WORK/sig2.out" 2>&1 || rc=$?
n=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["damaged"])' "$WORK/full.json")
[ $rc = 1 ] && grep -qE "^damaged +$n$" "$WORK/sig2.out" || fail "resumed after SIGINT: status $rc"
echo "ok a rate-limited scrub shows progress, pauses on SIGINT and resumes"

# a state file of another filesystem is refused
sed -i 's/^uuid .*/uuid 00000000-0000-0000-0000-000000000000/' "$STATE"
"$SCRUB" --resume -s "$STATE" "$MNT" >/dev/null 2>"$WORK/foreign.err" && fail "a foreign state file was taken"
grep -q "not a scrub state of filesystem" "$WORK/foreign.err" || fail "foreign state: $(cat "$WORK/foreign.err")"
lfs_umount
echo "ok a state file of another filesystem is refused"

# scrub_interval: the cleaner scrubs on its own while it has nothing to
# clean, logs what it finds, and scrubs again once the interval is over
cat >"$WORK/sched.conf" <<CONF
min_clean_segments 0
max_clean_segments 0
protection_period 0
checkpoint_protection 0
cleaning_interval 0.1
segments_per_clean 2
scrub_interval 1
scrub_state $WORK/sched.state
CONF
from=$(($(wc -l <"$WORK/daemon.log") + 1))
lfs_start "cleaner_conf=$WORK/sched.conf,noatime"
completes() { tail -n +"$from" "$WORK/daemon.log" | grep -c "lfs_cleanerd: scrub: complete" || true; }
for _ in $(seq 1 600); do [ "$(completes)" -ge 2 ] && break; sleep 0.1; done
[ "$(completes)" -ge 2 ] || fail "the cleaner did not scrub twice with scrub_interval 1"
tail -n +"$from" "$WORK/daemon.log" >"$WORK/sched.log"
grep -q "scrub: block $f2_blk5 is damaged: bytes 20480-24575 of inode $f2\$" "$WORK/sched.log" ||
	fail "the scheduled scrub did not log f2's damaged block: $(grep scrub: "$WORK/sched.log")"
grep -q "scrub: block $gone_blk is damaged: bytes 12288-16383 of inode $gone_ino, as a snapshot or kept checkpoint holds it" \
	"$WORK/sched.log" || fail "the scheduled scrub did not log the snapshot's damaged block"
grep -q "scrub: complete, .* damage found" "$WORK/sched.log" || fail "no summary line"
# the state file says a scrub ended, between the end of one and the
# start of the next (a second after it, scrub_interval 1)
for _ in $(seq 1 600); do grep -qE '^complete 1$' "$WORK/sched.state" && break; sleep 0.1; done
grep -qE '^complete 1$' "$WORK/sched.state" || fail "the cleaner's scrub state: $(head -12 "$WORK/sched.state")"
lfs_umount
grep -m 20 "lfs_cleanerd: scrub:" "$WORK/sched.log"
echo "ok scrub_interval: the cleaner scrubs on its own, logs the damage, and scrubs again"

# a summary overwritten whole: the blocks it described cannot be checked
# by anyone; the segment's live bytes past the verified summaries say so
rm -f "$IMG"
mkfs_img 64M
lfs_mount
head -c 100000 /dev/urandom >"$MNT/s1"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
head -c 100000 /dev/urandom >"$MNT/s2"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
head -c 3M /dev/urandom >"$MNT/later"
"$CKPT" -c "$MNT" >/dev/null || fail "lfs-ckpt -c"
"$SCRUB" -s "$WORK/sum.state" "$MNT" >"$WORK/sum0.out" || fail "an intact filesystem: $(cat "$WORK/sum0.out")"
sum=$("$DUMP" -s -j "$IMG" 2>/dev/null | "$PY" -c '
import json, sys
ino = int(sys.argv[1])
for s in json.load(sys.stdin)["segments"]:
    for p in s.get("pseg_list", []):
        if any(b["ino"] == ino and b["kind"] == "DATA" for b in p["blocks"]):
            print(p["pseg"]); sys.exit()' "$(ino "$MNT/s2")")
smash "$sum"
rc=0
"$SCRUB" -j -s "$WORK/sum.state" "$MNT" >"$WORK/sum.json" || rc=$?
[ $rc = 1 ] || fail "a damaged summary: status $rc"
"$PY" - "$WORK/sum.json" "$sum" <<'PY' || fail "a damaged summary: $(cat "$WORK/sum.json")"
import json, sys
d = json.load(open(sys.argv[1]))["damage"]
assert len(d) == 1 and d[0]["what"] == "summary" and d[0]["address"] == int(sys.argv[2]), d
assert d[0]["live_bytes_lost"] >= 100000 - 4096, d
PY
lfs_umount
echo "ok a damaged summary is reported, with the live bytes it hides"
