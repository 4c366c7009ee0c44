#!/usr/bin/env python3
"""requests.py -- FUSE requests per operation, counted the same way for
lfs and fuse2fs: every request is one successful read of /dev/fuse by the
daemon, so strace(1) attached to the daemon counts them.  For lfs the
daemon's own count (lfs-requests --json) is read too, as a check of both.

    bench/requests.py [--ops N] [--lfs-build DIR] [--targets lfs,fuse2fs-ext2] [--kv]

Root only (mounts, loop devices); needs strace, fuse2fs, mkfs.ext2.  Each
workload runs once per target on a fresh 256 MiB image; prints a Markdown
table, or with --kv one line of KEY=requests-per-operation for the first
target (bench/run's `requests` workload reads it).  The strace attach
slows the daemon, so no rate is measured here.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def fuse_fd(pid):
    for fd in os.listdir("/proc/%d/fd" % pid):
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) == "/dev/fuse":
                return int(fd)
        except OSError:
            pass
    raise RuntimeError("the daemon %d has no /dev/fuse open" % pid)


class Counter:
    """strace -f on the daemon, counting successful reads of its /dev/fuse fd"""

    def __init__(self, pid, work):
        self.pid, self.fd = pid, fuse_fd(pid)
        self.out = os.path.join(work, "strace.out")
        self.err = open(os.path.join(work, "strace.err"), "w+")
        self.p = subprocess.Popen(["strace", "-f", "-qq", "-s", "0", "-e", "trace=read,readv,splice",
                                   "-o", self.out, "-p", str(pid)], stderr=self.err)
        time.sleep(1.0)  # attached to every thread (strace prints nothing with -qq)

    def stop(self):
        time.sleep(0.3)
        self.p.send_signal(signal.SIGINT)
        self.p.wait()
        # a call another thread interrupts is printed in two lines:
        # "TID read(FD, <unfinished ...>" and "TID <... read resumed>...) = N"
        n, pending = 0, {}
        call = re.compile(r"^(\d+)\s+(?:read|readv|splice)\((\d+),")
        resumed = re.compile(r"^(\d+)\s+<\.\.\. (?:read|readv|splice) resumed>")
        result = re.compile(r"\)\s+=\s+(-?\d+)")
        for line in open(self.out):
            m = call.match(line)
            if m:
                tid, fd = m.group(1), int(m.group(2))
                if line.rstrip().endswith("<unfinished ...>"):
                    pending[tid] = fd
                    continue
            else:
                m = resumed.match(line)
                if not m or m.group(1) not in pending:
                    continue
                tid, fd = m.group(1), pending.pop(m.group(1))
            r = result.search(line)
            if fd == self.fd and r and int(r.group(1)) > 0:
                n += 1
        return n


def drop():
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("2")


def workloads(mnt, n):
    d = os.path.join(mnt, "w")
    os.makedirs(d, exist_ok=True)
    buf = os.urandom(1024)
    big = os.path.join(mnt, "big")
    state = {}

    def create(i):
        fd = os.open("%s/f%d" % (d, i), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        os.write(fd, buf)
        os.fsync(fd)
        os.close(fd)

    def overwrite_setup():
        with open(big, "wb") as f:
            f.write(b"\0" * (1 << 20))
        os.sync()
        state["fd"] = os.open(big, os.O_WRONLY)

    def overwrite(i):
        os.pwrite(state["fd"], b"x" * 4096, (i % 16) * 4096)

    def overwrite_end():
        os.fsync(state["fd"])
        os.close(state["fd"])

    def stat(i):
        os.stat("%s/f%d" % (d, i % 10))

    def ls(i):
        for e in os.listdir(d)[:10]:
            os.lstat(os.path.join(d, e))

    def unlink(i):
        os.unlink("%s/f%d" % (d, i))

    return [
        ("create + 1 KiB write + fsync + close", None, create, None),
        ("4 KiB overwrite of 16 pages, fsync at the end", overwrite_setup, overwrite, overwrite_end),
        ("stat of 10 recently used files", None, stat, None),
        ("ls -l of a directory (10 entries stat'ed)", None, ls, None),
        ("unlink", None, unlink, None),
    ]


# --kv keys, in the order of workloads()
KEYS = ["create_fsync", "overwrite", "stat", "ls", "unlink"]


def mount_target(target, work, lfs_build):
    img = os.path.join(work, "img")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    with open(img, "wb") as f:
        f.truncate(256 << 20)
    if target == "lfs":
        sh(os.path.join(lfs_build, "lfs/mkfs.lfs"), img)
        cmd = [os.path.join(lfs_build, "lfs/lfs"), "-f", "-o", "nocleaner", img, mnt]
    else:
        sh("mkfs.ext2", "-q", "-F", img)
        cmd = ["fuse2fs", img, mnt, "-f"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(200):
        if os.path.ismount(mnt):
            break
        time.sleep(0.05)
    else:
        p.kill()
        raise RuntimeError("%s did not mount" % target)
    # one open of an existing file first: lfs answers the first OPEN with
    # ENOSYS, after which opens cost nothing (a long-lived mount's state)
    with open(os.path.join(mnt, "warm"), "w") as f:
        f.write("x")
    with open(os.path.join(mnt, "warm")) as f:
        f.read()
    os.listdir(mnt)
    return p, mnt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--lfs-build", default=os.environ.get("LFS_BUILD", "build"))
    ap.add_argument("--targets", default="lfs,fuse2fs-ext2")
    ap.add_argument("--kv", action="store_true")
    a = ap.parse_args()
    rows = {}
    targets = a.targets.split(",")
    for t in targets:
        work = tempfile.mkdtemp(prefix="lfs-req.")
        p, mnt = mount_target(t, work, a.lfs_build)
        try:
            for name, setup, op, end in workloads(mnt, a.ops):
                if setup:
                    setup()
                os.sync()
                drop()
                c = Counter(p.pid, work)
                if t == "lfs":
                    sh(os.path.join(a.lfs_build, "cleaner/lfs-requests"), "--reset", mnt)
                for i in range(a.ops):
                    op(i)
                if end:
                    end()
                own = None
                if t == "lfs":
                    r = json.loads(sh(os.path.join(a.lfs_build, "cleaner/lfs-requests"), "--json", mnt).stdout)
                    own = r["total"] - 1  # the --reset reading's IOCTL
                n = c.stop()
                if own is not None:
                    n -= 2  # the two readings' IOCTLs, seen by strace
                rows.setdefault(name, {})[t] = (n / a.ops, None if own is None else own / a.ops)
        finally:
            subprocess.run(["fusermount3", "-u", mnt], capture_output=True)
            subprocess.run(["umount", mnt], capture_output=True)
            p.wait()
            sh("rm", "-rf", work)
    if a.kv:
        t = targets[0]
        out = []
        for key, name in zip(KEYS, rows):  # rows keeps the workloads' order
            n, own = rows[name].get(t, (None, None))
            out.append("%s=%.4f" % (key, n))
            if own is not None:
                out.append("own_%s=%.4f" % (key, own))
        print(" ".join(out))
        return 0
    print("| operation | " + " | ".join(targets) + " |")
    print("|---|" + "---|" * len(targets))
    for name, r in rows.items():
        cells = []
        for t in targets:
            n, own = r.get(t, (None, None))
            cells.append("-" if n is None else "%.2f" % n + ("" if own is None else " (own count %.2f)" % own))
        print("| %s | %s |" % (name, " | ".join(cells)))


if __name__ == "__main__":
    sys.exit(main())
