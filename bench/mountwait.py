#!/usr/bin/env python3
"""mountwait.py MNT TIMEOUT_S PIDFILE — the poller of bench/run's timed mounts.

Started, and loaded, before the daemon it times: it prints "ready", then
stats MNT every 0.5 ms until MNT is a mount point (its st_dev differs from
its parent's: the kernel answers that stat only once the FUSE daemon has
answered INIT and the root's GETATTR), and prints the wall-clock time of
that moment in microseconds (CLOCK_REALTIME, as bash's EPOCHREALTIME).
It gives up, printing 0, after TIMEOUT_S or once the daemon whose pid
bench/run writes to PIDFILE has exited.

Why not `mountpoint -q` in a shell loop: each poll starts a process (two,
with `sleep`), from disk right after drop_caches, which added about 45 ms
and most of the spread to a 30 ms mount after a crash.
"""
import os
import sys
import time


def main():
    mnt, timeout, pidfile = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    parent = os.stat(os.path.dirname(os.path.abspath(mnt))).st_dev
    print("ready", flush=True)
    end = time.monotonic() + timeout
    pid = None
    while time.monotonic() < end:
        try:
            if os.stat(mnt).st_dev != parent:
                print(time.time_ns() // 1000, flush=True)
                return 0
        except OSError:
            pass
        if pid is None:
            try:
                with open(pidfile) as f:
                    pid = int(f.read().strip() or 0) or None
            except (OSError, ValueError):
                pid = None
        if pid is not None:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            except PermissionError:
                pass
        time.sleep(0.0005)
    print(0, flush=True)
    return 1


if __name__ == "__main__":
    sys.exit(main())
