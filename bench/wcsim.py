#!/usr/bin/env python3
"""wcsim.py — the Sprite LFS paper's cleaning simulator (Rosenblum &
Ousterhout 1992, section 3.5): write cost against disk utilization for a
cleaning policy, in seconds, so that a policy change can be judged before
the real cleaner runs, and the real cleaner's gap to its own policy's ideal
is visible (bench/report.py prints both side by side).

  wcsim.py [--policy greedy|cost-benefit] [--age-sort] [--access uniform|hot-cold]
           [--util U] [--segments N] [--seg-blocks S] [--seed K]
  wcsim.py --table      the grid report.py uses, as text

The model, as in the paper: a file system of N segments of S blocks holds
u*N*S one-block files; every step overwrites one file (uniform: any file
alike; hot-and-cold: 10% of the files get 90% of the writes), appending the
new block at the log head and killing the old one.  When fewer than CMIN
segments are clean, the cleaner picks segments by the policy until it has
freed enough for CMAX clean segments (at most MAX_VICTIMS a pass), reads
those with live blocks, and appends their live blocks at the log head
(sorted by age when age sort is on).  Policies:
  greedy        the least utilized segments first
  cost-benefit  the highest (1-u)*age/(1+u), age = now - the newest
                modification time of a block in the segment
write cost = (new blocks + blocks of segments read + live blocks
written) / new blocks; a segment with no live block is not read (cost
1.0 when every cleaned segment was empty).  The paper's formula for a
cleaned-segment utilization u is 2/(1-u).  CMIN/CMAX follow the real
bench's cleaner settings (min_clean_segments 4, max_clean_segments 8,
segments_per_clean 8).  N=128 segments of S=256 blocks by default: 128 MiB
of 4 KiB blocks in 1 MiB segments, the size of the real bench's cleaning
file system.  The first 6x the files' count of writes warm it up, the
next 4x are measured.
"""
import argparse
import random
from collections import deque

# the real bench's cleaner settings (bench/run cl_conf): min_clean_segments 4,
# max_clean_segments 8, segments_per_clean 8.  Larger batches were tried:
# they tie up more clean segments, which raises every policy's cost here.
CMIN, CMAX, MAX_VICTIMS = 4, 8, 8


def simulate(policy="greedy", age_sort=False, access="uniform", util=0.75, nseg=128, seg_blocks=256,
             warm=6.0, measure=4.0, seed=1):
    """returns (write cost, mean utilization of the segments cleaned)"""
    rng = random.Random(seed)
    S = seg_blocks
    nfiles = int(util * nseg * S)
    nhot = max(1, nfiles // 10)
    seg_files = [[] for _ in range(nseg)]   # (file, version) appended to each segment
    seg_live = [0] * nseg
    seg_mtime = [0] * nseg
    file_ver = [0] * nfiles
    file_seg = [-1] * nfiles
    file_mtime = [0] * nfiles
    clean = deque(range(nseg))
    head = clean.popleft()
    now = 0
    cnt = {"new": 0, "read": 0, "moved": 0, "cleaned": 0, "cleaned_live": 0}

    def append(f, mtime):
        nonlocal head
        if len(seg_files[head]) == S:
            head = clean.popleft()
        old = file_seg[f]
        if old >= 0:
            seg_live[old] -= 1
        file_ver[f] += 1
        seg_files[head].append((f, file_ver[f]))
        seg_live[head] += 1
        seg_mtime[head] = max(seg_mtime[head], mtime)
        file_seg[f] = head
        file_mtime[f] = mtime

    def clean_pass():
        cand = [s for s in range(nseg) if s != head and seg_files[s]]
        if policy == "greedy":
            cand.sort(key=lambda s: seg_live[s])
        else:
            cand.sort(key=lambda s: -((1 - seg_live[s] / S) * (now - seg_mtime[s] + 1) / (1 + seg_live[s] / S)))
        need = (CMAX - len(clean)) * S
        victims, freed = [], 0
        for s in cand:
            if freed >= need or len(victims) >= MAX_VICTIMS:
                break
            if seg_live[s] == S:
                continue   # cleaning a full segment frees nothing
            victims.append(s)
            freed += S - seg_live[s]
        live = []
        for s in victims:
            if seg_live[s]:
                cnt["read"] += S
            cnt["cleaned"] += 1
            cnt["cleaned_live"] += seg_live[s]
            for f, v in seg_files[s]:
                if file_ver[f] == v and file_seg[f] == s:
                    live.append(f)
            seg_files[s] = []
            seg_live[s] = 0
            seg_mtime[s] = 0
            clean.append(s)
        if age_sort:
            live.sort(key=lambda f: file_mtime[f])
        for f in live:
            file_seg[f] = -1   # its old copy is gone with the segment
            append(f, file_mtime[f])
            cnt["moved"] += 1
        return bool(victims)

    # the initial fill: every file written once, in order
    for f in range(nfiles):
        if len(clean) < CMIN and len(seg_files[head]) == S:
            clean_pass()
        append(f, 0)
    total = int((warm + measure) * nfiles)
    start_measure = int(warm * nfiles)
    for i in range(total):
        if i == start_measure:
            for k in cnt:
                cnt[k] = 0
        now += 1
        if access == "hot-cold":
            f = rng.randrange(nhot) if rng.random() < 0.9 else nhot + rng.randrange(nfiles - nhot)
        else:
            f = rng.randrange(nfiles)
        if len(clean) < CMIN and not clean_pass():
            raise RuntimeError("wcsim: nothing to clean (utilization too high for the reserve)")
        append(f, now)
        cnt["new"] += 1
    wc = (cnt["new"] + cnt["read"] + cnt["moved"]) / cnt["new"]
    cu = cnt["cleaned_live"] / (cnt["cleaned"] * S) if cnt["cleaned"] else 0.0
    return wc, cu


POLICIES = [("greedy", "greedy", False), ("greedy+age", "greedy", True), ("cost-benefit+age", "cost-benefit", True)]


def table(utils, accesses=("uniform", "hot-cold"), **kw):
    """{(policy label, access, u%): (write cost, cleaned utilization)}"""
    res = {}
    for label, pol, srt in POLICIES:
        for acc in accesses:
            for u in utils:
                res[(label, acc, u)] = simulate(pol, srt, acc, u / 100.0, **kw)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--policy", default="greedy", choices=["greedy", "cost-benefit"])
    ap.add_argument("--age-sort", action="store_true")
    ap.add_argument("--access", default="uniform", choices=["uniform", "hot-cold"])
    ap.add_argument("--util", type=float, default=75, help="disk utilization, percent")
    ap.add_argument("--segments", type=int, default=128)
    ap.add_argument("--seg-blocks", type=int, default=256)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--table", action="store_true", help="every policy x access at 30..90%%")
    a = ap.parse_args()
    if a.table:
        utils = [30, 50, 65, 75, 80, 85, 90]
        res = table(utils, nseg=a.segments, seg_blocks=a.seg_blocks, seed=a.seed)
        print("policy access " + " ".join(f"u={u}%" for u in utils))
        for label, _, _ in POLICIES:
            for acc in ("uniform", "hot-cold"):
                print(f"{label} {acc} " + " ".join(f"{res[(label, acc, u)][0]:.2f}" for u in utils))
        print("2/(1-u) - " + " ".join(f"{2 / (1 - u / 100):.2f}" for u in utils))
        return
    wc, cu = simulate(a.policy, a.age_sort, a.access, a.util / 100.0, a.segments, a.seg_blocks, seed=a.seed)
    print(f"write_cost={wc:.3f} cleaned_utilization={cu:.3f}")


if __name__ == "__main__":
    main()
