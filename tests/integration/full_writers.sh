#!/bin/bash
# full_writers.sh — under the kernel's writeback cache a writer is told
# ENOSPC at write(2), whichever file it writes next, before the space
# for what the kernel already accepted is spent (issue 42): a writer
# that opened many files first writes each once (256 KiB, fsync) until
# write(2) says ENOSPC, and no fsync(2) or close(2) may fail; it then
# goes on writing after ENOSPC, and still none may.  Meanwhile a read
# past the end, or an lseek to it, of a handle opened read-only is never
# told ENOSPC, and another process's overwrites are taken.  After a
# remount every file holds what its writer was told it wrote.
. "$(dirname "$0")/lib.sh"

mkfs_img 128M
: > "$WORK/cleaner.conf"
lfs_mount_cleaner "$WORK/cleaner.conf"

cat > "$WORK/writer.py" <<'EOF'
import os, sys
d, phase, state = sys.argv[1], sys.argv[2], sys.argv[3]
FILES, SIZE, CHUNK = 520, 262144, 65536

def data(i, off):
    return bytes([(i * 7 + off // CHUNK) % 251]) * CHUNK

def read_past_end(path):
    # the reads and seeks that ask the kernel's GETATTR with a handle
    fd = os.open(path, os.O_RDONLY)
    try:
        end = os.lseek(fd, 0, os.SEEK_END)
        os.pread(fd, 4096, end)
        os.pread(fd, 8192, max(end - 4096, 0))
    except OSError as e:
        print(f"FAIL: a read of {path} (opened read-only) was told {e}"); sys.exit(1)
    finally:
        os.close(fd)

def write_file(fd, i):
    for off in range(0, SIZE, CHUNK):
        os.pwrite(fd, data(i, off), off)

def fill(names, persist):
    # open every file first, then write each once; with persist, go on
    # writing after ENOSPC until 16 files in a row are refused
    fds = [(i, os.open(f"{d}/f{i}", os.O_RDWR | os.O_CREAT, 0o644)) for i in names]
    stored, refused, first = [], 0, None
    for i, fd in fds:
        try:
            write_file(fd, i)
        except OSError as e:
            if e.errno != 28:
                raise
            refused += 1
            first = i if first is None else first
            read_past_end(f"{d}/f{i}")
            if not persist or refused >= 16:
                break
            continue
        refused = 0
        try:
            os.fsync(fd)
        except OSError as e:
            print(f"FAIL: fsync of f{i} failed ({e}) after its write(2) calls succeeded: accepted data lost")
            sys.exit(1)
        stored.append(i)
    else:
        print(f"FAIL: {len(fds)} files of 256 KiB fit (more than the capacity?)"); sys.exit(1)
    for i, fd in fds:
        try:
            os.close(fd)
        except OSError as e:
            print(f"FAIL: close of f{i} failed ({e}): accepted data lost"); sys.exit(1)
    print(f"{phase}: first ENOSPC at write(2) of f{first}; {len(stored)} files stored")
    with open(f"{state}/stored", "a") as f:
        f.write(" ".join(map(str, stored)) + " ")
    with open(f"{state}/next", "w") as f:
        f.write(str(first))

if phase == "fill":
    fill(range(FILES), False)
elif phase == "persist":
    fill(range(int(open(f"{state}/next").read()), FILES), True)
elif phase == "overwrite":
    # another process overwrites 4 KiB in each of the first files
    for i in range(0, 64):
        fd = os.open(f"{d}/f{i}", os.O_RDWR)
        try:
            os.pwrite(fd, data(i, 0)[:4096], 0)
            os.fsync(fd)
        except OSError as e:
            print(f"FAIL: an overwrite of 4 KiB of f{i} was refused: {e}"); sys.exit(1)
        os.close(fd)
        read_past_end(f"{d}/f{i}")
else:
    stored = set(map(int, open(f"{state}/stored").read().split()))
    for i in range(FILES):
        if i not in stored:
            continue
        got = open(f"{d}/f{i}", "rb").read()
        want = b"".join(data(i, off) for off in range(0, SIZE, CHUNK))
        if got != want:
            print(f"FAIL: f{i} holds {len(got)} bytes, not the 256 KiB its writer was told were stored"); sys.exit(1)
    print(f"{len(stored)} files hold what was written")
EOF
mkdir "$MNT/d"
python3 "$WORK/writer.py" "$MNT/d" fill "$WORK" || fail "the writer that opened its files first (above)"
python3 "$WORK/writer.py" "$MNT/d" overwrite "$WORK" || fail "overwrites on the full filesystem"
python3 "$WORK/writer.py" "$MNT/d" persist "$WORK" || fail "the writer going on after ENOSPC (above)"
lfs_umount
lfs_mount
python3 "$WORK/writer.py" "$MNT/d" check "$WORK" || fail "data lost across a remount"
lfs_umount
"$top_builddir/ckpt/fsck.lfs" "$IMG" >"$WORK/fsck.out" 2>&1 || { cat "$WORK/fsck.out"; fail "fsck.lfs found problems"; }
echo "ok"
