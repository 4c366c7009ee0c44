#!/bin/bash
# requests.sh — the daemon counts the FUSE requests it reads, by opcode
# (fuse_io.c), and lfs-requests shows them: a create + 1 KiB write +
# fsync + close is exactly one CREATE, one WRITE, one FSYNC, and no more
# than a handful of requests; ten creates are ten CREATEs; --reset starts
# from zero, and a reading costs the next one exactly its own IOCTL (no
# OPENDIR, RELEASEDIR: the daemon declines directory opens); --json is
# one JSON object, with the time the daemon took for each opcode (its
# fsync some, and within what its caller waited); a directory that is no
# lfs mount point is refused;
# ten listings of an unchanged directory cost no OPENDIR or RELEASEDIR
# and at most one reading of it, and a change shows in the next listing;
# every opcode the kernel sends is shown by its name (STATX too).
# Names outlive attributes (-o entry_timeout, cache_timeout): with
# attributes given for no time, a name stat-ed before (a negative
# lookup) is created, stat-ed and unlinked with no LOOKUP of it again,
# as fio's filecreate does after laying out its names; a staged tree's
# name is never cached; cache_timeout alone still sets both; times out
# of 0-86400 s are refused.
. "$(dirname "$0")/lib.sh"

REQ="$top_builddir/cleaner/lfs-requests"
[ -n "$PY" ] || skip "python3 is missing"
mkfs_img 128M
lfs_mount

"$REQ" "$MNT" >"$WORK/text" || fail "lfs-requests failed"
grep -q '^INIT  *1  ' "$WORK/text" || { cat "$WORK/text"; fail "no INIT counted at mount"; }
ls "$MNT" >/dev/null # the first OPENDIR, answered ENOSYS
# a birth time asks for FUSE_STATX (52), newer than Debian 12's headers:
# named all the same, as every opcode the kernel sends
echo x >"$MNT/born" && stat -c %W "$MNT/born" >/dev/null
"$REQ" "$MNT" >"$WORK/text" || fail "lfs-requests failed"
grep -q '^STATX  *1  ' "$WORK/text" || { cat "$WORK/text"; fail "no STATX counted for stat -c %W"; }
! grep -q '^OP[0-9]' "$WORK/text" || { cat "$WORK/text"; fail "an opcode without its name"; }
rm "$MNT/born"
if "$REQ" "$WORK" 2>"$WORK/err"; then fail "lfs-requests accepted a directory that is no mount"; fi
grep -q "not the mount point of an lfs" "$WORK/err" || { cat "$WORK/err"; fail "the refusal does not say why"; }

cat >"$WORK/count.py" <<'PY'
import json, os, subprocess, sys, time
tool, mnt, what = sys.argv[1], sys.argv[2], sys.argv[3]

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def reading(first=False):
    out = subprocess.run([tool, "--json", "--reset", mnt], check=True, capture_output=True, text=True).stdout
    r = json.loads(out)
    if r["mountpoint"] != mnt or r["total"] != sum(r["requests"].values()) or r["seconds"] < 0:
        fail("inconsistent reading: " + out)
    req = r["requests"]
    # the time of each opcode counted: a sum and a longest, the longest
    # no shorter than the mean
    for k in ("service_ms", "max_ms"):
        if set(r[k]) != set(req) or min(r[k].values(), default=0) < 0:
            fail("%s does not match the counts: %s" % (k, out))
    for op, n in req.items():
        if r["max_ms"][op] * n + 0.002 * n < r["service_ms"][op]:
            fail("%s: longest %.3f ms below the mean of %d (%.3f ms in all)" % (op, r["max_ms"][op], n, r["service_ms"][op]))
    global times
    times = r
    if first:
        return req
    # the previous reading's own request, exactly: its open of the
    # mount point reaches the daemon no more (ENOSYS to the first OPENDIR)
    if req.get("IOCTL") != 1 or "OPENDIR" in req or "RELEASEDIR" in req:
        fail("one reading counted as %s" % out)
    del req["IOCTL"]
    return req

def forgets_only(req):
    # attributes given for no time: a reading's own walk to the mount
    # point asks for the root's
    quiet = ("FORGET", "BATCH_FORGET") + (("GETATTR",) if what != "create" else ())
    return {k: v for k, v in req.items() if k not in quiet}

reading(first=True)
if forgets_only(reading()):
    fail("requests counted with nothing done between two readings")
d = os.path.join(mnt, what)
os.mkdir(d)
os.stat(d)
reading()
if what == "create":
    fd = os.open(os.path.join(d, "f"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    os.write(fd, b"x" * 1024)
    t0 = time.monotonic()
    os.fsync(fd)
    client_ms = (time.monotonic() - t0) * 1000
    os.close(fd)
    req = reading()
    # the daemon's time for the FSYNC (read to reply, the disk's flush
    # within it) is some, and within what the caller waited: no bound
    # on speed, an order that holds on any machine under any load.  The
    # request is read after the caller's fsync began and answered before
    # it returned, both timed by CLOCK_MONOTONIC (time.monotonic on
    # Linux); the daemon's two readings are cut to whole microseconds,
    # which adds less than 1 us, and its figure is printed in exact
    # thousandths of a ms: the slack of 2 us covers that with room
    if not 0 < times["max_ms"]["FSYNC"] <= client_ms + 0.002:
        fail("FSYNC timed %.3f ms by the daemon, %.3f ms by its caller" % (times["max_ms"]["FSYNC"], client_ms))
    print("create+write+fsync+close:", json.dumps(req, sort_keys=True))
    for op in ("CREATE", "WRITE", "FSYNC"):
        if req.get(op) != 1:
            fail("%s counted %s times" % (op, req.get(op)))
    if req.get("LOOKUP", 0) < 1:
        fail("the new name was created without a LOOKUP: %s" % req)
    extra = set(req) - {"CREATE", "WRITE", "FSYNC", "LOOKUP", "GETATTR", "GETXATTR", "SETATTR",
                        "RELEASE", "FLUSH", "FORGET", "BATCH_FORGET"}
    if extra or sum(req.values()) > 10:
        fail("implausible requests for one create: %s" % req)
    for i in range(10):
        os.close(os.open(os.path.join(d, "g%d" % i), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    req = reading()
    if req.get("CREATE") != 10 or req.get("LOOKUP", 0) < 10:
        fail("ten creates counted as %s" % req)
    for i in range(10):
        os.unlink(os.path.join(d, "g%d" % i))
    req = reading()
    if req.get("UNLINK") != 10 or req.get("CREATE"):
        fail("ten unlinks counted as %s" % req)
    # directories are read without OPENDIR and RELEASEDIR, and an
    # unchanged one from the kernel's cache; a change is seen at once
    for i in range(10):
        if os.listdir(d) != ["f"]:
            fail("listing %s" % os.listdir(d))
    req = reading()
    if "OPENDIR" in req or "RELEASEDIR" in req or req.get("READDIR", 0) > 2:
        fail("ten listings of an unchanged directory counted as %s" % req)
    open(os.path.join(d, "n"), "w").close()
    if sorted(os.listdir(d)) != ["f", "n"]:
        fail("a new name missing from the listing: %s" % os.listdir(d))
    os.unlink(os.path.join(d, "n"))
    if os.listdir(d) != ["f"]:
        fail("a removed name still listed: %s" % os.listdir(d))
if what == "names":
    n = 20
    for i in range(n):
        try:
            os.stat(os.path.join(d, "n%d" % i))
            fail("n%d exists before it is made" % i)
        except FileNotFoundError:
            pass
    req = reading()
    if req.get("LOOKUP") != n:
        fail("%d stats of missing names counted as %s" % (n, req))
    for i in range(n):
        os.close(os.open(os.path.join(d, "n%d" % i), os.O_CREAT | os.O_WRONLY, 0o644))
    req = reading()
    # the kernel asks for the directory's attributes again after each
    # change (it has no time left): GETATTR; the names it remembers
    print("%d creates of names looked up before:" % n, json.dumps(req, sort_keys=True))
    if req.get("CREATE") != n or req.get("LOOKUP"):
        fail("%d creates of names looked up before counted as %s" % (n, req))
    for i in range(n):
        os.stat(os.path.join(d, "n%d" % i))
    req = reading()
    if req.get("LOOKUP") or req.get("GETATTR", 0) < n:
        fail("%d stats of new names, attributes given for no time, counted as %s" % (n, req))
    for i in range(n):
        os.unlink(os.path.join(d, "n%d" % i))
    req = reading()
    if req.get("UNLINK") != n or req.get("LOOKUP"):
        fail("%d unlinks counted as %s" % (n, req))
if what in ("names", "short"):
    # the name of a tree being received is looked up every time, and so
    # is every name when cache_timeout alone is given (0: no cache)
    staged = os.path.join(mnt, ".lfs-staged.1.1")
    names = [staged, staged] + ([os.path.join(d, "m"), os.path.join(d, "m")] if what == "short" else [])
    for p in names:
        if os.path.exists(p):
            fail(p + " exists")
    req = reading()
    # (with no cache, the walk looks up the directory's name too)
    if req.get("LOOKUP", 0) < len(names) or what == "names" and req["LOOKUP"] != len(names):
        fail("%d lookups of names not to be cached counted as %s" % (len(names), req))
PY
"$PY" "$WORK/count.py" "$REQ" "$MNT" create
lfs_umount
lfs_mount cache_timeout=0,entry_timeout=600
"$PY" "$WORK/count.py" "$REQ" "$MNT" names
lfs_umount
lfs_mount cache_timeout=0
"$PY" "$WORK/count.py" "$REQ" "$MNT" short
lfs_umount
for bad in entry_timeout=-1 cache_timeout=86401 entry_timeout=nonsense; do
	if "$LFS" -f -o "nocleaner,$bad" "$IMG" "$MNT" 2>"$WORK/err"; then
		fail "lfs mounted with -o $bad"
	fi
	mountpoint -q "$MNT" && fail "-o $bad left a mount"
	grep -qE "0 to 86400 seconds|unknown option|invalid" "$WORK/err" || { cat "$WORK/err"; fail "-o $bad refused without saying why"; }
done
echo "ok requests counted by opcode"
