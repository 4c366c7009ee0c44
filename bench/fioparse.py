#!/usr/bin/env python3
"""fioparse.py JSON — print the numbers bench/run needs from fio's JSON output.

One line:  error read_bytes read_ios read_ms write_bytes write_ios write_ms
summed over the jobs in the file (each of our job files has one job).
fio may print warnings before the JSON object when --output is not used;
everything before the first '{' is skipped.
"""
import json
import sys


def main():
    text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
    start = text.find("{")
    if start < 0:
        sys.exit("fioparse: no JSON in %s" % sys.argv[1])
    data = json.loads(text[start:])
    err = 0
    tot = {"read": [0, 0, 0], "write": [0, 0, 0]}
    for job in data.get("jobs", []):
        err = err or job.get("error", 0)
        for d in ("read", "write"):
            s = job.get(d, {})
            tot[d][0] += s.get("io_bytes", 0)
            tot[d][1] += s.get("total_ios", 0)
            tot[d][2] = max(tot[d][2], s.get("runtime", 0))
    print(err, *tot["read"], *tot["write"])


if __name__ == "__main__":
    main()
