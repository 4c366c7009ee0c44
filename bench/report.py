#!/usr/bin/env python3
"""report.py — turn a bench/run CSV into bench/RESULTS.md and PNG bar charts.

  report.py --csv results/run-ID.csv --env results/run-ID.env \
            --out RESULTS.md --plots results/

The CSV is self-describing (round,target,workload,metric,value,unit,better,
status,note), so a workload added to bench/run later shows up here without
changes: it gets a section with its metrics in the order they first appear.
Only the prose in WORKLOAD_TEXT below is per workload.
"""
import argparse
import csv
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import OrderedDict, defaultdict

TARGET_ORDER = ["lfs", "fuse2fs-ext2", "fuse2fs-ext4", "ext4-kernel", "raw"]
REF_FUSE = "fuse2fs-ext4"
REF_RAW = "raw"

TARGET_TEXT = {
    "lfs": "this repository's lfs daemon (FUSE, libfuse3) on the loop device",
    "fuse2fs-ext2": "ext2 (mkfs.ext2) served by fuse2fs (FUSE, libfuse2)",
    "fuse2fs-ext4": "ext4 (mkfs.ext4) served by fuse2fs; this fuse2fs does not write the journal "
                    "(it logs \"Writing to the journal is not supported\"), so its ext4 is ext2-like "
                    "on the write path",
    "ext4-kernel": "ext4 mounted by the kernel (default options: data=ordered, relatime) — the reference",
    "raw": "the same fio jobs directly on the loop device, no file system — the limit of this "
           "stack. Its buffered phases go through the block device's page cache (as the FUSE "
           "daemons' own I/O does), so a kernel file system's page cache and delayed allocation "
           "can beat it on buffered writes; the O_DIRECT phase is the clean device limit",
}

WORKLOAD_TEXT = {
    "smallfile": (
        "Sprite LFS small-file benchmark (`bench/smallfile.c`): create {sf_files} files of "
        "{sf_size} bytes in a tree of 100 files per directory, read them back in creation "
        "order after an unmount, a remount and `drop_caches` (cold), then delete them. "
        "Durability: {sf_fsync_text}; `delete` ends with an fsync of the top directory. "
        "`create_wa` = bytes written to the device during create (and the unmount after it) "
        "per byte of file data."
    ),
    "largefile": (
        "One {lf_size_mib} MiB file (on `raw`: the first {lf_size_mib} MiB of the device), "
        "fio job files in `bench/fio/`: `seqwrite` 1 MiB blocks, buffered, `end_fsync=1` "
        "(the fsync is inside fio's runtime); `seqread_cold` 1 MiB blocks after remount + "
        "`drop_caches`; `randwrite_qd1` {rand_iosize_mib} MiB of random 4 KiB overwrites, "
        "psync, buffered, `end_fsync=1`; `randread_cold` {rand_iosize_mib} MiB of random 4 KiB "
        "reads, qd1; `reread_cold` the sequential read again, now after the random writes "
        "(shows the fragmentation they left); `randwrite_qd16_direct` {rand_iosize_mib} MiB of "
        "random 4 KiB overwrites, libaio, iodepth 16, `direct=1`, `end_fsync=1` (n/a where "
        "the target refuses O_DIRECT). The `_wa` rows are device bytes written during the "
        "phase and the unmount that follows, per byte fio wrote."
    ),
    "fileops": (
        "fio's `filecreate`, `filestat` and `filedelete` engines on {fo_files} files in one "
        "directory. Create and delete are followed by an fsync of every remaining file and of "
        "the directory (`smallfile fsynctree`), and the rate is files / (fio runtime + fsync "
        "time); `filestat_cold` runs after remount + `drop_caches`. `filecreate_dev_kib` is "
        "KiB written to the device per file created (including the unmount after it)."
    ),
    "untar": (
        "`tar -xf` of a tarball of {tar}, then an fsync of every file and directory "
        "(`smallfile fsynctree`); the time covers both. sync(1) does not reach FUSE daemons, "
        "hence the explicit fsyncs, done the same way on every target. `untar_wa` = device "
        "bytes written (including the unmount after) per byte of file data."
    ),
}


def load_env(path):
    env = {}
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    env[k] = v
    return env


def fmt(v):
    if v is None:
        return "—"
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 0.995:
        return f"{v:.2f}"
    return f"{v:.3g}"


def fmt_ratio(r):
    if r is None:
        return "—"
    if r >= 10:
        return f"{r:.0f}×"
    if r >= 0.1:
        return f"{r:.2f}×"
    return f"{r:.2g}×"


class Results:
    def __init__(self, rows):
        self.rows = rows
        self.workloads = OrderedDict()  # workload -> OrderedDict(metric -> (unit, better))
        self.values = defaultdict(list)  # (workload, metric, target) -> [float]
        self.status = defaultdict(set)  # (workload, metric, target) -> {"n/a", ...}
        self.failures = []  # rows with status FAIL
        self.targets = []
        self.rounds = set()
        for r in rows:
            w, m, t = r["workload"], r["metric"], r["target"]
            self.rounds.add(r["round"])
            if t not in self.targets:
                self.targets.append(t)
            if r["status"] == "FAIL":
                self.failures.append(r)
                if r["unit"]:  # a metric that could not be computed
                    self.workloads.setdefault(w, OrderedDict()).setdefault(m, (r["unit"], r["better"]))
                    self.status[(w, m, t)].add("FAIL")
                else:  # the whole unit stopped at step m
                    self.workloads.setdefault(w, OrderedDict())
                    self.status[(w, "*", t)].add("FAIL")
                continue
            self.workloads.setdefault(w, OrderedDict()).setdefault(m, (r["unit"], r["better"]))
            if r["status"] == "ok" and r["value"] != "":
                self.values[(w, m, t)].append(float(r["value"]))
            else:
                self.status[(w, m, t)].add(r["status"])
        self.targets.sort(key=lambda t: TARGET_ORDER.index(t) if t in TARGET_ORDER else 99)

    def median(self, w, m, t):
        v = self.values.get((w, m, t))
        return statistics.median(v) if v else None

    def cell(self, w, m, t):
        med = self.median(w, m, t)
        failed = "FAIL" in self.status[(w, m, t)] or "FAIL" in self.status[(w, "*", t)]
        if med is None:
            if failed:
                return "**FAIL**"
            if "n/a" in self.status[(w, m, t)]:
                return "n/a"
            return "—"
        vals = self.values[(w, m, t)]
        n = len(vals)
        s = fmt(med)
        if n >= 2 and med:
            # half the range across rounds, relative to the median: the noise
            s += f" ±{(max(vals) - min(vals)) / 2 / abs(med) * 100:.0f}%"
        if failed:
            s += f" ({n} ok, some rounds FAILED)"
        return s

    def targets_for(self, w):
        return [t for t in self.targets
                if any((w, m, t) in self.values or self.status[(w, m, t)] for m in self.workloads[w])
                or self.status[(w, "*", t)]]


def md_table(header, rows, align="--:"):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + [align] * (len(header) - 1)) + "|"]
    for r in rows:
        out.append("| " + " | ".join(r) + " |")
    return "\n".join(out)


def better_mark(b):
    return {"higher": "↑", "lower": "↓"}.get(b, "")


def gnuplot_bars(path_png, title, ylabel, cats, series, log=None):
    """cats: category labels (x); series: [(name, [value or None per cat])]."""
    vals = [v for _, vs in series for v in vs if v is not None and v > 0]
    if not vals:
        return False
    if log is None:
        log = max(vals) / min(vals) > 30
    fd, dat = tempfile.mkstemp(suffix=".dat")
    with os.fdopen(fd, "w") as f:
        f.write("# cat " + " ".join(n for n, _ in series) + "\n")
        for i, c in enumerate(cats):
            f.write('"%s" ' % c + " ".join("NaN" if s[1][i] is None else repr(s[1][i]) for s in series) + "\n")
    colors = {"lfs": "#d62728", "fuse2fs-ext2": "#ff7f0e", "fuse2fs-ext4": "#2ca02c",
              "ext4-kernel": "#1f77b4", "raw": "#7f7f7f"}
    plots = []
    for i, (name, _) in enumerate(series):
        col = colors.get(name, "#9467bd")
        using = f"{i + 2}:xtic(1)" if i == 0 else f"{i + 2}"
        plots.append(f"'{dat}' using {using} title '{name}' lc rgb '{col}'")
    ymin = min(vals)
    script = [
        "set terminal pngcairo size 960,480 font ',10' noenhanced",
        f"set output '{path_png}'",
        f"set title '{title}'",
        f"set ylabel '{ylabel}'",
        "set style data histogram",
        "set style histogram clustered gap 1",
        "set style fill solid 0.85 border -1",
        "set boxwidth 0.9",
        "set datafile missing 'NaN'",
        "set key outside right top",
        "set grid ytics",
        "set xtics rotate by -20",
        f"set xrange [-0.5:{len(cats) - 0.5}]",
    ]
    if log:
        script += ["set logscale y", f"set yrange [{ymin / 3:g}:*]"]
    else:
        script += ["set yrange [0:*]"]
    script.append("plot " + ", ".join(plots))
    try:
        subprocess.run(["gnuplot"], input="\n".join(script) + "\n", text=True, check=True,
                       capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError) as e:
        err = getattr(e, "stderr", "") or str(e)
        print(f"report.py: gnuplot failed for {path_png}: {err.strip()}", file=sys.stderr)
        return False
    finally:
        os.unlink(dat)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--env")
    ap.add_argument("--out", required=True)
    ap.add_argument("--plots", required=True)
    a = ap.parse_args()

    with open(a.csv, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    env = load_env(a.env)
    res = Results(rows)
    os.makedirs(a.plots, exist_ok=True)
    plot_rel = os.path.relpath(a.plots, os.path.dirname(os.path.abspath(a.out)))

    fill = dict(env)
    fill.setdefault("sf_files", "?")
    fill["sf_fsync_text"] = (
        "every file is fsync()ed before it is closed"
        if env.get("sf_fsync") == "each"
        else "after all files are written and closed, each file is reopened and fsync()ed, then "
             "every directory (inside the timed interval; lfs can batch, as the Sprite paper's "
             "benchmark allowed)")

    o = []
    mode = env.get("mode", "?")
    o.append("# lfs benchmark results\n")
    o.append(f"Generated by `bench/run{' --quick' if mode == 'quick' else ''}` on {env.get('date', '?')} "
             f"(run `{env.get('run_id', '?')}`, {len(res.rounds)} round(s), "
             f"raw data `{os.path.relpath(os.path.abspath(a.csv), os.path.dirname(os.path.abspath(a.out)))}`). "
             "This file is regenerated by every run; `bench/run --report CSV` rebuilds it from a CSV.\n")
    o.append("Each cell is the **median over rounds**, with ±half the range across rounds relative "
             "to the median (the run-to-run noise on this shared machine); ↑ = higher is better, ↓ = lower is better. "
             "\"—\" = not applicable to that target, **FAIL** = the target failed that workload "
             "(details under *Failures*).\n")

    o.append("## Machine\n")
    mach = [
        ("CPU", f"{env.get('cpu', '?')} ({env.get('cores', '?')} cores, shared and noisy)"),
        ("RAM", env.get("ram", "?")),
        ("Kernel", env.get("kernel", "?")),
        ("OS", env.get("os", "?")),
        ("fio", env.get("fio", "?")),
        ("fuse2fs", env.get("fuse2fs", "?")),
        ("e2fsprogs", env.get("e2fsprogs", "?")),
        ("libfuse3 / fusermount3", env.get("fuse3", "?")),
        ("lfs", f"source commit {env.get('lfs_rev', '?')}; binary {env.get('lfs_binary', '?')}; "
                f"mount options `{env.get('lfs_opts', '?')}`"),
        ("Backing store", f"{env.get('backing', '?')}; one {env.get('image_size', '?')} zero-filled "
                          f"image file per target, each on its own loop device (direct I/O to the "
                          f"image: {env.get('loop_dio', '?')})"),
    ]
    o.append(md_table(["", ""], [[k, v] for k, v in mach], align="---") + "\n")

    o.append("## Setup\n")
    o.append(f"Mode `{mode}`, {env.get('rounds', '?')} round(s); in every round each workload runs on each "
             "target in turn (the target order rotates every round), each time on a freshly made "
             "file system. Targets:\n")
    for t in res.targets:
        o.append(f"- **{t}**: {TARGET_TEXT.get(t, '')}")
    o.append("")
    o.append("Method notes:\n")
    o.append("- *Durability*: sync(1) does not reach FUSE daemons, so every write phase ends with "
             "fsync() calls (fio `end_fsync=1`; `smallfile`/`fsynctree` fsync each file and "
             "directory), the same on every target, inside the timed interval.")
    o.append("- *Cold reads*: the target is unmounted (for FUSE: and its daemon waited for), the "
             "loop device's buffers are flushed, `echo 3 > /proc/sys/vm/drop_caches`, and the "
             "target is mounted again.")
    o.append("- *Write amplification* (`_wa`, ↓): sectors-written (field 7 of "
             "`/sys/block/loopN/stat`) of the target's loop device, from just before the phase to "
             "after the unmount that follows it, divided by the bytes the workload wrote. It "
             "counts everything the target writes for that phase: data, metadata, journal, log "
             "summaries, checkpoints. 1.0 is the floor; `raw` shows the stack's own overhead.")
    o.append("- Rates are computed from fio's runtime (which includes the final fsync) or from "
             "`smallfile`'s own monotonic clock; no fio startup time is included.\n")

    for w, metrics in res.workloads.items():
        tg = res.targets_for(w)
        o.append(f"## {w}\n")
        if w in WORKLOAD_TEXT:
            try:
                o.append(WORKLOAD_TEXT[w].format(**{k: fill.get(k, "?") for k in
                                                    ("sf_files", "sf_size", "sf_fsync_text", "lf_size_mib",
                                                     "rand_iosize_mib", "fo_files", "tar")}) + "\n")
            except (KeyError, IndexError):
                pass
        rows_md = []
        for m, (unit, better) in metrics.items():
            rows_md.append([f"{m} ({unit}) {better_mark(better)}"] + [res.cell(w, m, t) for t in tg])
        o.append(md_table(["metric"] + tg, rows_md) + "\n")

        # ratios
        for ref, label in ((REF_FUSE, "fuse2fs-ext4"), (REF_RAW, "raw")):
            others = [t for t in tg if t != ref]
            if ref not in tg or not others:
                continue
            rr = []
            for m, (unit, better) in metrics.items():
                refv = res.median(w, m, ref)
                if refv is None or refv == 0:
                    continue
                line = [f"{m} {better_mark(better)}"]
                any_v = False
                for t in others:
                    v = res.median(w, m, t)
                    line.append(fmt_ratio(v / refv) if v is not None else "—")
                    any_v = any_v or v is not None
                if any_v:
                    rr.append(line)
            if rr:
                o.append(f"Ratio to **{label}** (target ÷ {label}; for ↓ metrics below 1 is better):\n")
                o.append(md_table(["metric"] + others, rr) + "\n")

        # plots: one per unit, write amplification collected separately
        units = OrderedDict()
        for m, (unit, better) in metrics.items():
            if unit != "x":
                units.setdefault(unit, []).append(m)
        for unit, ms in units.items():
            slug = unit.replace("/", "_per_").replace(" ", "_")
            png = os.path.join(a.plots, f"{w}-{slug}.png")
            series = [(t, [res.median(w, m, t) for m in ms]) for t in tg]
            if gnuplot_bars(png, f"{w}: {unit} (median of {len(res.rounds)} round(s))", unit, ms, series):
                o.append(f"![{w} {unit}]({plot_rel}/{os.path.basename(png)})\n")

    # write amplification across workloads
    wa = [(w, m) for w, ms in res.workloads.items() for m, (u, b) in ms.items() if u == "x"]
    if wa:
        o.append("## Write amplification, all workloads\n")
        tg = [t for t in res.targets if any(res.median(w, m, t) is not None for w, m in wa)]
        o.append(md_table(["workload / metric"] + tg,
                          [[f"{w} / {m}"] + [res.cell(w, m, t) for t in tg] for w, m in wa]) + "\n")
        png = os.path.join(a.plots, "write-amplification.png")
        series = [(t, [res.median(w, m, t) for w, m in wa]) for t in tg]
        if gnuplot_bars(png, "device bytes written per byte written by the workload", "x",
                        [m for _, m in wa], series, log=True):
            o.append(f"![write amplification]({plot_rel}/write-amplification.png)\n")

    o.append("## Failures\n")
    if not res.failures:
        o.append("None: every target completed every workload it applies to.\n")
    else:
        o.append("A failed step ends that target's workload for that round (later workloads and "
                 "rounds still run). The step's command and the end of its error output:\n")
        for r in res.failures:
            o.append(f"- round {r['round']}, **{r['target']}**, {r['workload']}, step `{r['metric']}`: "
                     f"{r['note'].strip()}")
        o.append("")

    na = OrderedDict()
    for r in rows:
        if r["status"] == "n/a":
            na.setdefault((r["target"], r["workload"], r["metric"], r["note"].strip()), []).append(r["round"])
    if na:
        o.append("## Not measured\n")
        for (t, w, m, note), rounds in na.items():
            o.append(f"- **{t}**, {w} / `{m}`: {note} (round {', '.join(rounds)})")
        o.append("")

    o.append("## Reproducing\n")
    o.append("```\nmkdir -p /tmp/bb && cd /tmp/bb && /work/main/configure -q && make -j2\n"
             "sudo bench/run --quick      # or: bench/run (full), see bench/run --help\n```\n"
             f"Sizes in this run: image {env.get('image_size', '?')}, small files {env.get('sf_files', '?')} × "
             f"{env.get('sf_size', '?')} B, large file {env.get('lf_size_mib', '?')} MiB, random phases "
             f"{env.get('rand_iosize_mib', '?')} MiB each, fileops {env.get('fo_files', '?')} files, "
             f"untar {env.get('tar', '?')}; per-step timeout {env.get('step_timeout', '?')} s.\n")

    tmp = a.out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("\n".join(o))
    shutil.move(tmp, a.out)


if __name__ == "__main__":
    main()
