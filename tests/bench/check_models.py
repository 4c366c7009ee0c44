#!/usr/bin/env python3
"""check_models.py — make check's test of the bench's models.

bench/disksim.py's selftest compares the disk and flash models with what
their own parameters say a device must do (sequential 1 MiB writes at the
media rate, random 4 KiB reads at 1/(mean seek + half a rotation), FTL write
amplification 1 for whole-block overwrites and > 2 for random ones ...).
The write-cost simulator (bench/wcsim.py) is checked against the paper's
analysis: no policy can beat 1.0, greedy under uniform access stays within
the formula 2/(1-u) for the disk's u (cleaned segments are emptier than the
disk), and under hot-and-cold access cost-benefit with age sort beats greedy
(the paper's Figure 7).  Any of these failing means the model, not lfs,
changed.
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "..", "bench"))

import disksim  # noqa: E402
import wcsim  # noqa: E402

fails = disksim.selftest()

# a smaller log than the bench's default keeps this under a few seconds
kw = dict(nseg=64, seg_blocks=128, warm=6.0, measure=4.0)
gu, _ = wcsim.simulate("greedy", False, "uniform", 0.75, **kw)
gh, _ = wcsim.simulate("greedy", False, "hot-cold", 0.75, **kw)
ch, _ = wcsim.simulate("cost-benefit", True, "hot-cold", 0.75, **kw)
lo, _ = wcsim.simulate("greedy", False, "uniform", 0.10, **kw)
checks = [
    (f"wcsim: greedy, uniform, u=75%: 1 < {gu:.2f} <= 2/(1-u) = 8", 1.0 < gu <= 8.0),
    (f"wcsim: hot-and-cold, u=75%: cost-benefit + age sort {ch:.2f} < greedy {gh:.2f}", ch < gh),
    (f"wcsim: greedy, uniform, u=10%: {lo:.2f} close to 1 (segments emptied before cleaning)", lo < 1.3),
]
for name, ok in checks:
    print(f"{'ok  ' if ok else 'FAIL'} {name}")
    fails |= 0 if ok else 1
sys.exit(1 if fails else 0)
