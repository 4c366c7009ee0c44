#!/usr/bin/env python3
"""disksim.py — replay device traces (bench/iotrace.c) through a model of a
7,200 rpm hard disk and of a flash SSD, and summarize the traces.

What the bench measures on this VM is FUSE round trips on a virtio disk with
no seek penalty.  This models what the same requests would cost on a disk
whose arm moves (and on flash), so the layouts can be compared the way the
Sprite LFS paper compared them.  The model is the same for every target: one
parameter set (HDD, FLASH below), no per-target tuning.

  disksim.py phases TRACE PHASES IMAGE_BYTES SPEC...
      SPEC = NAME:COUNT:UNIT[:USERBYTES]  (UNIT files or bytes)
      prints CSV lines  metric,value,unit,better  for bench/run
  disksim.py selftest      the model's validation (also run by make check)

Between the daemon and the disk sits the host's page cache of the block
device (neither daemon uses O_DIRECT); class PageCache models it, and the
disk models see its requests.  The statistics are given at both levels:
t_* the daemon's calls as traced, d_* the disk's requests.

Modeled time is closed-loop device time: requests are issued back to back in
trace order (the host's own CPU and FUSE time are not counted: this is the
device's share, a lower bound on the time a real run on that device would
take).  A phase is a window of wall-clock time [begin, end] marked by
bench/run; requests outside any window still move the head and age the FTL,
but are not charged.

HDD model (parameters in HDD; sources in bench/README.md):
  * seek time over a distance of x (fraction of the full stroke), the shape
    of Ruemmler & Wilkes (1994): t = a + b*sqrt(x) for short seeks (x < xb),
    t = c + e*x for long ones; a, b, c, e follow from the datasheet's
    single-track and full-stroke times with the curve and its slope
    continuous at xb (xb is Ruemmler & Wilkes' HP 97560 boundary,
    383 of 1962 cylinders).  The traced image is mapped onto the full stroke
    (the file system fills the disk, as in the paper's runs).
  * rotational latency from the platter's position: byte x passes under
    the head when (time / revolution) mod 1 = (x mod track) / track (track =
    media rate x one revolution), so a random request waits half a
    revolution on average, a short skip forward only for the gap, and a
    write that comes after the platter moved on (a synchronous append after
    a flush) for nearly a whole revolution.  A request that continues the
    last access while the mechanism is still busy streams on; a sequential
    read streams on even after a pause (the drive's read-ahead).  Within a
    track (|distance| < track) there is no seek.
  * transfer at a constant media rate (no zones).
  * a write-back cache of CACHE bytes: a write costs the host only the
    interface transfer while there is room; the mechanism drains the cache
    in arrival order; a flush (fsync/fdatasync) waits until it is empty.
    Reads wait for the mechanism (they queue behind cached writes).
Flash model (FLASH): a page-mapped FTL over erase blocks with spare area;
greedy garbage collection (fewest valid pages) when free blocks run out; the
device starts with every logical page mapped (the images are zero-filled
end to end before use), so overwrites in place force copying while a log
that overwrites whole erase blocks frees them for nothing.  Time: a page
program or read per page, spread over PARALLEL independent units; GC copies
and erases are charged to the write that triggered them.
"""
import math
import random
import struct
import sys
from collections import deque

REC = struct.Struct("<QQQIB3x")  # bench/iotrace.c's record

# Hitachi Deskstar 7K320 OEM specification (single track, full stroke,
# rotation) and Deskstar 7K500 specification (sustained media rate: the mean
# of the outer zone's 64.8 and the inner zone's 31.0 MB/s); cache 8 MB (7K320
# 8 MB models), SATA 3 Gb/s interface.  See bench/README.md.
HDD = {
    "rpm": 7200,
    "t_single_ms": 1.0,     # single-track seek (read, typical)
    "t_full_ms": 20.0,      # full-stroke seek (read, typical)
    "xb": 383 / 1962,       # short/long seek boundary (Ruemmler & Wilkes, HP 97560)
    "media_Bps": 47.9e6,    # sustained media transfer rate
    "host_Bps": 300e6,      # interface (buffer to host) rate
    "cache_bytes": 8 << 20,
}

# Flash: page and block geometry and NAND timings from Agrawal et al.,
# "Design Tradeoffs for SSD Performance", USENIX ATC 2008, Table 2 (Samsung
# 4 GB SLC package); spare area and parallelism are this model's choices.
FLASH = {
    "page": 4096,
    "pages_per_block": 64,
    "t_read_us": 25.0,      # page read to register
    "t_prog_us": 200.0,     # page program from register
    "t_erase_us": 1500.0,   # block erase
    "t_xfer_us": 100.0,     # 4 KiB over the package's serial bus
    "spare": 0.07,          # over-provisioning (our choice: 7%)
    "parallel": 8,          # independent packages (our choice)
}


class Hdd:
    def __init__(self, span_bytes, p=HDD):
        self.p = p
        self.span = max(1, span_bytes)
        self.rev = 60.0 / p["rpm"]
        a, full, xb = p["t_single_ms"] / 1e3, p["t_full_ms"] / 1e3, p["xb"]
        # a + b*sqrt(x) up to xb, then c + e*x, value and slope continuous
        # at xb, and c + e = full:  b*sqrt(xb) + b*(1-xb)/(2*sqrt(xb)) = full - a
        self.a = a
        self.b = (full - a) * 2 * math.sqrt(xb) / (1 + xb)
        self.e = self.b / (2 * math.sqrt(xb))
        self.c = full - self.e
        self.xb = xb
        # bytes that pass under the head in one revolution
        self.track = p["media_Bps"] * self.rev
        self.now = 0.0        # host clock (s)
        self.mech = 0.0       # when the mechanism has finished its queue
        self.head = None      # byte offset after the last media access
        self.last_read = False
        self.cache = deque()  # (media completion time, bytes) of cached writes
        self.cached = 0

    def seek(self, x):
        if x <= 0:
            return 0.0
        if x < self.xb:
            return self.a + self.b * math.sqrt(x)
        return self.c + self.e * min(x, 1.0)

    def mean_seek(self):
        """mean seek time between two uniformly random positions (distance
        density 2(1-x)), numerically"""
        n = 20000
        return sum(self.seek((i + 0.5) / n) * 2 * (1 - (i + 0.5) / n) for i in range(n)) / n

    def _media(self, off, length, t):
        """duration of a media access that the mechanism starts at time t"""
        streaming = t <= self.mech   # the mechanism went straight on from its last access
        if off == self.head and (streaming or self.last_read):
            # sequential: the platter is there (or, for reads, the drive's
            # read-ahead has kept reading into its buffer)
            pos = 0.0
        else:
            gap = off - self.head if self.head is not None else self.span // 3
            sk = 0.0 if abs(gap) < self.track else self.seek(abs(gap) / self.span)
            # rotational position: byte x of the disk passes under the head
            # when (time / rev) mod 1 == (x mod track) / track, consistently
            # with the transfer rate, so a short skip forward waits only for
            # the gap, and a write that comes back after the platter moved
            # on (a synchronous append after a flush) waits for it to come
            # round again
            want = (off % self.track) / self.track
            at = ((t + sk) / self.rev) % 1.0
            pos = sk + ((want - at) % 1.0) * self.rev
        self.head = off + length
        return pos + length / self.p["media_Bps"]

    def _retire(self):
        while self.cache and self.cache[0][0] <= self.now:
            self.cached -= self.cache.popleft()[1]

    def read(self, off, length):
        start = max(self.now, self.mech)
        d = self._media(off, length, start)
        self.last_read = True
        self.mech = self.now = start + d + length / self.p["host_Bps"]
        self._retire()

    def write(self, off, length):
        if length > self.p["cache_bytes"]:   # larger than the cache: write-through
            self.now += length / self.p["host_Bps"]
            start = max(self.now, self.mech)
            self.mech = self.now = start + self._media(off, length, start)
            self.last_read = False
            self._retire()
            return
        self._retire()
        while self.cached + length > self.p["cache_bytes"]:
            done, b = self.cache.popleft()
            self.now = max(self.now, done)
            self.cached -= b
        self.now += length / self.p["host_Bps"]
        start = max(self.now, self.mech)
        self.mech = start + self._media(off, length, start)
        self.last_read = False
        self.cache.append((self.mech, length))
        self.cached += length

    def flush(self):
        self.now = max(self.now, self.mech)
        self.cache.clear()
        self.cached = 0

    def idle(self):
        """finish everything queued; returns the clock"""
        self.flush()
        return self.now


class Flash:
    def __init__(self, span_bytes, p=FLASH):
        self.p = p
        self.pg = p["page"]
        ppb = self.ppb = p["pages_per_block"]
        self.nlpn = (span_bytes + self.pg - 1) // self.pg
        nlog_blocks = (self.nlpn + ppb - 1) // ppb
        self.nblocks = nlog_blocks + max(4, int(math.ceil(nlog_blocks * p["spare"])))
        # every logical page mapped, in order (the image was written end to end)
        self.l2p = list(range(self.nlpn))
        self.p2l = list(range(self.nlpn)) + [-1] * (self.nblocks * ppb - self.nlpn)
        self.valid = [0] * self.nblocks
        for lpn in range(self.nlpn):
            self.valid[lpn // ppb] += 1
        # blocks by valid count (for greedy GC); the active block is kept out
        self.buckets = [set() for _ in range(ppb + 1)]
        for b in range(nlog_blocks):
            self.buckets[self.valid[b]].add(b)
        self.free = deque(range(nlog_blocks, self.nblocks))
        self.active = self.free.popleft()
        self.wp = 0
        self.now = 0.0
        self.host_pages = 0
        self.gc_pages = 0
        self.erases = 0

    def _set_valid(self, b, v):
        if b != self.active:
            self.buckets[self.valid[b]].discard(b)
            self.buckets[v].add(b)
        self.valid[b] = v

    def _program(self, lpn):
        """place lpn at the write point; returns False when a new block is needed"""
        old = self.l2p[lpn]
        if old >= 0:
            self.p2l[old] = -1
            ob = old // self.ppb
            self._set_valid(ob, self.valid[ob] - 1)
        ppn = self.active * self.ppb + self.wp
        self.p2l[ppn] = lpn
        self.l2p[lpn] = ppn
        self.valid[self.active] += 1
        self.wp += 1
        if self.wp == self.ppb:
            self.buckets[self.valid[self.active]].add(self.active)
            self.active = self.free.popleft()
            self.wp = 0

    def _gc(self):
        """greedy: erase the block with the fewest valid pages, copying them"""
        copies = erases = 0
        while len(self.free) < 2:
            for v in range(self.ppb + 1):
                if self.buckets[v]:
                    victim = self.buckets[v].pop()
                    break
            else:
                raise RuntimeError("flash model: no victim")
            base = victim * self.ppb
            for ppn in range(base, base + self.ppb):
                lpn = self.p2l[ppn]
                if lpn >= 0:
                    self.p2l[ppn] = -1
                    self.l2p[lpn] = -1
                    self.valid[victim] -= 1
                    self._program(lpn)
                    copies += 1
            self.valid[victim] = 0
            self.free.append(victim)
            erases += 1
        return copies, erases

    def _pages(self, off, length):
        first, last = off // self.pg, (off + length - 1) // self.pg
        return first, min(last, self.nlpn - 1)

    def read(self, off, length):
        first, last = self._pages(off, length)
        n = max(0, last - first + 1)
        p = self.p
        self.now += math.ceil(n / p["parallel"]) * (p["t_read_us"] + p["t_xfer_us"]) / 1e6

    def write(self, off, length):
        p = self.p
        first, last = self._pages(off, length)
        if last < first:
            return
        # a partial first or last page is read back before it is rewritten
        n = last - first + 1
        partial = min(n, (off % self.pg != 0) + ((off + length) % self.pg != 0))
        copies = erases = 0
        for lpn in range(first, last + 1):
            self._program(lpn)
            c, e = self._gc()
            copies += c
            erases += e
        self.host_pages += n
        self.gc_pages += copies
        self.erases += erases
        t = math.ceil(n / p["parallel"]) * (p["t_xfer_us"] + p["t_prog_us"])
        t += partial * (p["t_read_us"] + p["t_xfer_us"])
        t += (copies * (p["t_read_us"] + p["t_prog_us"]) + erases * p["t_erase_us"]) / p["parallel"]
        self.now += t / 1e6

    def flush(self):
        pass

    def idle(self):
        return self.now


def load_trace(path):
    with open(path, "rb") as f:
        data = f.read()
    n = len(data) // REC.size
    recs = [REC.unpack_from(data, i * REC.size) for i in range(n)]
    recs.sort(key=lambda r: r[0])
    return recs


def load_phases(path):
    """lines 'NAME begin|end NS' -> {NAME: (begin, end)}; lines 'DROP - NS'
    (bench/run's drop_caches) -> a list of times"""
    ph, drops = {}, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) != 3:
                continue
            name, what, ns = parts
            if name == "DROP":
                drops.append(int(ns))
                continue
            b, e = ph.get(name, (None, None))
            if what == "begin":
                b = int(ns)
            elif what == "end":
                e = int(ns)
            ph[name] = (b, e)
    return {k: v for k, v in ph.items() if v[0] is not None and v[1] is not None}, sorted(drops)


class PageCache:
    """The host's page cache of the block device, between the daemon and the
    disk.  Both daemons open the device without O_DIRECT, so what a disk
    would see is not their pwrite()s but the kernel's writeback of dirty
    pages: a rewrite of a dirty page costs the disk nothing, and the pages
    go out sorted by offset (the block layer's elevator) and merged into
    requests of up to MAX_REQ bytes when the daemon flushes (fsync/
    fdatasync; sync_file_range for its range) and when the phase ends (the
    unmount and `blockdev --flushbufs` that end every write phase).  Reads
    of pages not cached go to the disk, merged into one request per run of
    missing pages; no read-ahead is modeled (the disk model's own: a read
    that starts where the last one ended pays no positioning).  Background
    writeback (after 30 s dirty) is not modeled: phases are shorter.
    The cache is emptied where bench/run dropped caches."""
    PAGE = 4096
    MAX_REQ = 1 << 20

    def __init__(self, span, dev):
        self.n = (span + self.PAGE - 1) // self.PAGE
        self.state = bytearray(self.n)  # 0 absent, 1 clean, 2 dirty
        self.dirty = set()
        self.dev = dev  # callable(op, off, len)

    def _range(self, off, length):
        return off // self.PAGE, min((off + length - 1) // self.PAGE, self.n - 1)

    def _emit(self, op, pages):
        """one request per run of consecutive pages (sorted), at most MAX_REQ"""
        run = None
        for pg in pages:
            if run and pg == run[1] + 1 and (pg - run[0] + 1) * self.PAGE <= self.MAX_REQ:
                run[1] = pg
                continue
            if run:
                self.dev(op, run[0] * self.PAGE, (run[1] - run[0] + 1) * self.PAGE)
            run = [pg, pg]
        if run:
            self.dev(op, run[0] * self.PAGE, (run[1] - run[0] + 1) * self.PAGE)

    def _read_missing(self, pages):
        miss = [pg for pg in pages if not self.state[pg]]
        for pg in miss:
            self.state[pg] = 1
        self._emit("R", miss)

    def read(self, off, length):
        a, b = self._range(off, length)
        self._read_missing(range(a, b + 1))

    def write(self, off, length):
        a, b = self._range(off, length)
        # a partly written page that is not cached is read first
        edge = [pg for pg, part in ((a, off % self.PAGE), (b, (off + length) % self.PAGE)) if part]
        if edge:
            self._read_missing(sorted(set(edge)))
        for pg in range(a, b + 1):
            self.state[pg] = 2
            self.dirty.add(pg)

    def writeback(self, lo=0, hi=None):
        pages = sorted(pg for pg in self.dirty if lo <= pg and (hi is None or pg <= hi))
        for pg in pages:
            self.state[pg] = 1
            self.dirty.discard(pg)
        self._emit("W", pages)

    def flush(self):
        self.writeback()
        self.dev("F", 0, 0)

    def sync_range(self, off, length):
        if length == 0:
            self.writeback(off // self.PAGE)
        else:
            a, b = self._range(off, length)
            self.writeback(a, b)

    def drop(self):
        self.writeback()
        self.state = bytearray(self.n)


def _new_stats():
    z = {}
    for lvl in ("t", "d"):   # t: the daemon's calls (the trace); d: the disk's requests
        for k in ("reads", "rbytes", "writes", "wbytes", "seqw", "flushes"):
            z[lvl + k] = 0
    z.update(hdd_s=0.0, flash_s=0.0, gc_pages=0, host_pages=0)
    return z


def replay(recs, phases, drops, span):
    """one pass through the whole trace: daemon calls -> page cache -> disk
    requests -> both device models; per phase window: statistics at both
    levels and modeled seconds"""
    hdd, fl = Hdd(span), Flash(span)
    wins = sorted(phases.items(), key=lambda kv: kv[1][0])
    out = {name: _new_stats() for name, _ in wins}
    cur = {"o": None}
    last = {"t": None, "d": None}   # end of the previous write, per level

    def count(lvl, op, off, length):
        o = cur["o"]
        if op == "W":
            if o:
                o[lvl + "writes"] += 1
                o[lvl + "wbytes"] += length
                if last[lvl] == off:
                    o[lvl + "seqw"] += 1
            last[lvl] = off + length
        elif op == "R":
            if o:
                o[lvl + "reads"] += 1
                o[lvl + "rbytes"] += length
        elif o:
            o[lvl + "flushes"] += 1

    def dev(op, off, length):
        count("d", op, off, length)
        if op == "R":
            hdd.read(off, length)
            fl.read(off, length)
        elif op == "W":
            hdd.write(off, length)
            fl.write(off, length)
        else:
            hdd.flush()
            fl.flush()

    pc = PageCache(span, dev)
    state = {"name": None, "h0": 0.0, "f0": 0.0, "g0": 0, "p0": 0}

    def open_win(name):
        state.update(name=name, h0=hdd.idle(), f0=fl.idle(), g0=fl.gc_pages, p0=fl.host_pages)
        cur["o"] = out[name]

    def close_win():
        pc.writeback()     # the unmount / flushbufs that ends the phase
        o = out[state["name"]]
        o["hdd_s"] = hdd.idle() - state["h0"]
        o["flash_s"] = fl.idle() - state["f0"]
        o["gc_pages"] = fl.gc_pages - state["g0"]
        o["host_pages"] = fl.host_pages - state["p0"]
        state["name"] = None
        cur["o"] = None

    # events in time order: trace records, window opens/closes, cache drops
    ev = [(t, 1, r) for r in recs for t in (r[0],)]
    ev += [(b, 0, ("open", name)) for name, (b, e) in wins]
    ev += [(e, 2, ("close", name)) for name, (b, e) in wins]
    ev += [(d, 0, ("drop", None)) for d in drops]
    ev.sort(key=lambda x: (x[0], x[1]))
    for _t, kind, r in ev:
        if kind != 1:
            what, name = r
            if what == "open":
                if state["name"]:
                    close_win()
                open_win(name)
            elif what == "close":
                if state["name"] == name:
                    close_win()
            else:
                pc.drop()
            continue
        _t, off, length, _pid, op = r
        op = chr(op)
        count("t", op, off, length)
        if op == "R":
            pc.read(off, length)
        elif op == "W":
            pc.write(off, length)
        elif op == "S":
            pc.sync_range(off, length)
            dev("F", 0, 0)
        else:
            pc.flush()
    if state["name"]:
        close_win()
    return out


def cmd_phases(argv):
    if len(argv) < 4:
        sys.exit("usage: disksim.py phases TRACE PHASES IMAGE_BYTES NAME:COUNT:UNIT[:USERBYTES]...")
    trace, phf, span = argv[0], argv[1], int(argv[2])
    recs = load_trace(trace)
    phases, drops = load_phases(phf)
    res = replay(recs, phases, drops, span)
    for spec in argv[3:]:
        parts = spec.split(":")
        name, count, unit = parts[0], float(parts[1]), parts[2]
        user = float(parts[3]) if len(parts) > 3 else 0.0
        if name not in res:
            continue
        o = res[name]
        lines = []
        # t = the daemon's calls as traced, d = the disk's requests after the page cache
        for lvl in ("t", "d"):
            w, r = o[lvl + "writes"], o[lvl + "reads"]
            lines += [
                (lvl + "_req_w", w, "requests", "lower"),
                (lvl + "_req_r", r, "requests", "lower"),
                (lvl + "_wkib", o[lvl + "wbytes"] / w / 1024 if w else 0, "KiB", "higher"),
                (lvl + "_rkib", o[lvl + "rbytes"] / r / 1024 if r else 0, "KiB", "higher"),
                (lvl + "_seqw", 100.0 * o[lvl + "seqw"] / w if w else 0, "%", "higher"),
                (lvl + "_flushes", o[lvl + "flushes"], "flushes", "lower"),
            ]
            if user > 0:
                lines.append((lvl + "_bpb", o[lvl + "wbytes"] / user, "B/B", "lower"))
        lines += [("hdd_s", o["hdd_s"], "s", "lower"), ("flash_s", o["flash_s"], "s", "lower")]
        if o["host_pages"]:
            lines.append(("flash_wa", (o["host_pages"] + o["gc_pages"]) / o["host_pages"], "B/B", "lower"))
        for dev in ("hdd", "flash"):
            s = o[dev + "_s"]
            if s > 0:
                if unit == "files":
                    lines.append((dev + "_rate", count / s, "files/s", "higher"))
                else:
                    lines.append((dev + "_rate", count / 1048576 / s, "MiB/s", "higher"))
        for k, v, u, b in lines:
            print(f"{name}.{k},{v:.6g},{u},{b}")


# ------------------------------------------------------------------ validation
def selftest():
    """The model's sanity checks (make check runs this): each compares the
    model with what its parameters say a disk must do, so a broken seek
    curve, cache or FTL fails here."""
    fails = []

    def check(name, got, want, tol):
        ok = abs(got - want) <= tol * abs(want)
        print(f"{'ok  ' if ok else 'FAIL'} {name}: model {got:.4g}, expected {want:.4g} (±{tol * 100:.0f}%)")
        if not ok:
            fails.append(name)

    span = 512 << 20
    h = Hdd(span)
    check("seek over one track ≈ single-track time (ms)", h.seek(1e-6) * 1e3, HDD["t_single_ms"], 0.05)
    check("full-stroke seek (ms)", h.seek(1.0) * 1e3, HDD["t_full_ms"], 0.001)
    check("seek curve continuous at the boundary (ms)", h.seek(h.xb - 1e-9) * 1e3, h.seek(h.xb) * 1e3, 0.001)

    # sequential 1 MiB writes with a flush at the end: the media rate
    h = Hdd(span)
    for i in range(256):
        h.write(i << 20, 1 << 20)
    t = h.idle()
    check("sequential 1 MiB writes (MB/s) ≈ media rate", 256 * (1 << 20) / t / 1e6, HDD["media_Bps"] / 1e6, 0.02)

    # random 4 KiB reads: 1 / (mean seek + half a rotation)
    h = Hdd(span)
    rng = random.Random(1)
    n = 4000
    for _ in range(n):
        h.read(rng.randrange(span // 4096) * 4096, 4096)
    iops = n / h.idle()
    want = 1 / (h.mean_seek() + 30.0 / HDD["rpm"])
    check("random 4 KiB reads (IOPS) ≈ 1/(mean seek + half rotation)", iops, want, 0.05)

    # the write cache: small random writes followed by one flush cost no
    # less than the same positioning done synchronously (the cache hides
    # latency from the host, not work from the mechanism)
    h1, h2 = Hdd(span), Hdd(span)
    rng = random.Random(2)
    offs = [rng.randrange(span // 4096) * 4096 for _ in range(500)]
    for o in offs:
        h1.write(o, 4096)
        h2.write(o, 4096)
        h2.flush()
    check("cached random writes + one flush ≈ the same written synchronously (s)", h1.idle(), h2.idle(), 0.05)

    # synchronous appends: each 4 KiB write is flushed before the next is
    # sent, so the platter has moved on: about one write per revolution
    h = Hdd(span)
    for i in range(1000):
        h.write(i * 4096, 4096)
        h.flush()
    check("4 KiB sequential writes, each flushed (writes/s) ≈ revolutions/s", 1000 / h.idle(), HDD["rpm"] / 60, 0.05)

    # flash: sequential whole-device overwrites erase whole blocks: FTL
    # write amplification 1; random 4 KiB overwrites must copy
    span = 64 << 20
    f = Flash(span)
    for rnd in range(2):
        for i in range(span >> 20):
            f.write(i << 20, 1 << 20)
    wa_seq = (f.host_pages + f.gc_pages) / f.host_pages
    check("flash: sequential overwrites, FTL write amplification", wa_seq, 1.0, 0.01)
    f = Flash(span)
    rng = random.Random(3)
    for _ in range(3 * (span // 4096)):
        f.write(rng.randrange(span // 4096) * 4096, 4096)
    wa_rand = (f.host_pages + f.gc_pages) / f.host_pages
    ok = wa_rand > 2.0
    print(f"{'ok  ' if ok else 'FAIL'} flash: random 4 KiB overwrites at {FLASH['spare'] * 100:.0f}% spare, "
          f"FTL write amplification {wa_rand:.2f} (expected > 2)")
    if not ok:
        fails.append("flash random")
    # a 4 KiB page read at qd1: t_read + t_xfer
    f = Flash(span)
    f.read(0, 4096)
    check("flash: one 4 KiB read (µs)", f.now * 1e6, FLASH["t_read_us"] + FLASH["t_xfer_us"], 0.001)

    h = Hdd(512 << 20)
    print(f"model: mean seek {h.mean_seek() * 1e3:.2f} ms, half rotation {30e3 / HDD['rpm']:.2f} ms, "
          f"media {HDD['media_Bps'] / 1e6:.1f} MB/s")
    return 1 if fails else 0


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "phases":
        cmd_phases(sys.argv[2:])
    elif len(sys.argv) >= 2 and sys.argv[1] == "selftest":
        sys.exit(selftest())
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
