#!/usr/bin/env python3
"""overwrites.py — random fsynced overwrites of one file, and the check
after a crash (tests/integration/crash.sh).

  overwrites.py init FILE NBLOCKS     write version 0 of every block, fsync
  overwrites.py write FILE LOG SEED   overwrite 4 KiB blocks at random (nine
                                      in ten past the first 2 MiB + 48 KiB,
                                      the block map's first tree), most
                                      followed by fsync, until an error
  overwrites.py check FILE LOG        exit 1 unless every block is whole and
                                      no older than its last fsynced write

Block b at version s holds (b, s) repeated.  LOG gets "i B S" before each
write and "d" after each fsync returned; a write is durable once an fsync
after it returned.
"""
import os
import random
import struct
import sys

BS = 4096


def block(b, s):
    return struct.pack('<QQ', b, s) * (BS // 16)


def init(path, n):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    for b in range(n):
        os.pwrite(fd, block(b, 0), b * BS)
    os.fsync(fd)
    os.close(fd)


def write(path, logpath, seed):
    fd = os.open(path, os.O_WRONLY)
    n = os.fstat(fd).st_size // BS
    rnd = random.Random(seed)
    with open(logpath, 'a', buffering=1) as log:
        s = 0
        try:
            while True:
                s += 1
                b = rnd.randrange(524, n) if rnd.random() < 0.9 else rnd.randrange(n)
                log.write(f'i {b} {s}\n')
                os.pwrite(fd, block(b, s), b * BS)
                if rnd.random() < 0.7:
                    os.fsync(fd)
                    log.write('d\n')
        except OSError:
            pass  # the daemon was killed


def check(path, logpath):
    entries = [line.split() for line in open(logpath)]
    last_sync = max((i for i, e in enumerate(entries) if e[0] == 'd'), default=-1)
    durable, written = {}, {}
    for i, e in enumerate(entries):
        if e[0] != 'i':
            continue
        b, s = int(e[1]), int(e[2])
        written.setdefault(b, set()).add(s)
        if i < last_sync:
            durable[b] = s
    fd = os.open(path, os.O_RDONLY)
    n = os.fstat(fd).st_size // BS
    bad = 0
    for b in range(n):
        data = os.pread(fd, BS, b * BS)
        gb, gs = struct.unpack_from('<QQ', data)
        if gb != b or data != block(gb, gs):
            print(f'{path}: block {b} is not a whole version of itself')
            bad += 1
        elif gs < durable.get(b, 0) or (gs and gs not in written.get(b, ())):
            print(f'{path}: block {b} holds version {gs}, its last fsynced one is {durable.get(b, 0)}')
            bad += 1
    print(f'{path}: {n} blocks, {sum(1 for e in entries if e[0] == "d")} fsyncs, {bad} bad')
    return 1 if bad else 0


if __name__ == '__main__':
    cmd = sys.argv[1] if len(sys.argv) > 1 else ''
    if cmd == 'init' and len(sys.argv) == 4:
        init(sys.argv[2], int(sys.argv[3]))
    elif cmd == 'write' and len(sys.argv) == 5:
        write(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif cmd == 'check' and len(sys.argv) == 4:
        sys.exit(check(sys.argv[2], sys.argv[3]))
    else:
        sys.exit(__doc__)
