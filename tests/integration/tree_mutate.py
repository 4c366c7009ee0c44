#!/usr/bin/python3
# tree_mutate.py DIR SEED N — N random changes to the tree under DIR, the
# kinds an incremental send must carry (incr.sh): files made, written at
# random offsets, truncated, holes punched; names renamed across
# directories (directories too, never into themselves), removed, linked;
# directories made and removed whole; modes, owners, times and xattrs
# changed; symlinks and FIFOs made.  The same SEED, the same changes.
import ctypes, os, random, shutil, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
PUNCH = 3 # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
top, rnd, n = sys.argv[1], random.Random(int(sys.argv[2])), int(sys.argv[3])
def names():
	out = []
	for d, dirs, files in os.walk(top):
		for x in dirs + files:
			out.append(os.path.relpath(os.path.join(d, x), top))
	return sorted(out)
def dirs():
	return ["."] + [p for p in names() if os.path.isdir(os.path.join(top, p)) and not os.path.islink(os.path.join(top, p))]
def files():
	return [p for p in names() if os.path.isfile(os.path.join(top, p)) and not os.path.islink(os.path.join(top, p))]
def new_name():
	return os.path.normpath(os.path.join(rnd.choice(dirs()), "n%d" % rnd.randrange(1000)))
def P(p):
	return os.path.join(top, p)
def op():
	k = rnd.randrange(16)
	fs, al = files(), names()
	if k == 0 or not fs:
		p = new_name()
		if not os.path.lexists(P(p)):
			with open(P(p), "wb") as f:
				f.write(os.urandom(rnd.choice([0, 5, 3000, 9000, 70000])))
	elif k == 1:
		fd = os.open(P(rnd.choice(fs)), os.O_WRONLY)
		os.pwrite(fd, os.urandom(rnd.randrange(1, 9000)), rnd.randrange(0, 200000))
		os.close(fd)
	elif k == 2:
		os.truncate(P(rnd.choice(fs)), rnd.randrange(0, 100000))
	elif k == 3:
		fd = os.open(P(rnd.choice(fs)), os.O_WRONLY)
		libc.fallocate(fd, PUNCH, rnd.randrange(0, 50) * 4096, rnd.randrange(1, 8) * 4096)
		os.close(fd)
	elif k in (4, 5) and al:
		src = rnd.choice(al)
		dst = new_name()
		if os.path.isdir(P(src)) and (dst + "/").startswith(src.rstrip("/") + "/"):
			return
		if not os.path.lexists(P(dst)):
			os.rename(P(src), P(dst))
	elif k == 6 and al:
		p = rnd.choice(al)
		if os.path.isdir(P(p)) and not os.path.islink(P(p)):
			shutil.rmtree(P(p))
		else:
			os.unlink(P(p))
	elif k == 7:
		dst = new_name()
		if not os.path.lexists(P(dst)):
			os.link(P(rnd.choice(fs)), P(dst))
	elif k == 8:
		d = new_name()
		if not os.path.lexists(P(d)):
			os.makedirs(P(d))
	elif k == 9 and al:
		p = P(rnd.choice(al))
		if not os.path.islink(p):
			os.chmod(p, rnd.choice([0o600, 0o644, 0o755, 0o4755, 0o700]))
	elif k == 10 and al:
		os.chown(P(rnd.choice(al)), rnd.randrange(3), rnd.randrange(3), follow_symlinks=False)
	elif k == 11 and al:
		t = rnd.randrange(10 ** 9, 2 * 10 ** 9) * 10 ** 9 + rnd.randrange(10 ** 9)
		os.utime(P(rnd.choice(al)), ns=(t, t + 5), follow_symlinks=False)
	elif k == 12 and fs:
		os.setxattr(P(rnd.choice(fs)), "user.k%d" % rnd.randrange(3), os.urandom(rnd.randrange(1, 50)))
	elif k == 13 and fs:
		p = P(rnd.choice(fs))
		x = os.listxattr(p)
		if x:
			os.removexattr(p, rnd.choice(x))
	elif k == 14:
		d = new_name()
		if not os.path.lexists(P(d)):
			os.symlink("t%d" % rnd.randrange(9), P(d))
	elif k == 15:
		d = new_name()
		if not os.path.lexists(P(d)):
			os.mkfifo(P(d))
for _ in range(n):
	op()
