#!/usr/bin/env python3
"""man_options.py -- does each manual page's OPTIONS section name the
options the program's --help names, and no others?

    man_options.py MANDIR BUILDDIR

For every program below, the options of its page are the tags of the
.TP paragraphs of OPTIONS (every -x and --long in the tag line); the
options of the program are every -x and --long in what --help prints.
A cluster of single-letter options in a synopsis, [-fnq], counts as
each of them.  For lfs(8), whose own options are -o suboptions, the
names in the tags of the subsections "lfs mount options" and "Standard
mount options" are compared with the names on the "-o NAME, NAME" lines
of its usage too.  Exit status 1 and one line per difference, else 0.
"""
import re
import subprocess
import sys

PROGRAMS = {  # page -> program, relative to the build directory
    "mkfs.lfs.8": "lfs/mkfs.lfs",
    "fsck.lfs.8": "ckpt/fsck.lfs",
    "dumplfs.8": "ckpt/dumplfs",
    "lfs-ckpt.8": "ckpt/lfs-ckpt",
    "lfs_cleanerd.8": "cleaner/lfs_cleanerd",
    "lfs-clean.8": "cleaner/lfs-clean",
    "lfs-requests.8": "cleaner/lfs-requests",
    "lfs-scrub.8": "cleaner/lfs-scrub",
    "lfs-tune.8": "lfs/lfs-tune",
    "lfs-resize.8": "lfs/lfs-resize",
    "lfs-send.8": "lfs/lfs-send",
    "lfs-receive.8": "lfs/lfs-receive",
    "lfs-probe.8": "lfs/lfs-probe",
    "mount.fuse.lfs.8": "lfs/daemon/mount.fuse.lfs",
    "lfs.8": "lfs/lfs",
}

OPT = re.compile(r"(?<![\w\\-])(--?[A-Za-z][\w-]*)")


def roff_plain(line):
    """A roff line as text: \\- is -, font escapes and quotes go."""
    line = line.replace("\\-", "-").replace("\\(em", " ").replace("\\&", "")
    line = re.sub(r"\\f[BIRP]", "", line)
    line = re.sub(r"^\.(B|I|BI|BR|IR|RB|RI|OP)\s+", "", line)
    return line.replace('"', " ")


def sections(page):
    """{section or subsection title: [lines]} of a page."""
    out, cur = {}, None
    for line in open(page, encoding="utf-8"):
        m = re.match(r"^\.S[HS]\s+\"?([^\"]*)\"?\s*$", line.rstrip("\n"))
        if m:
            cur = m.group(1).strip()
            out.setdefault(cur, [])
        elif cur:
            out[cur].append(line.rstrip("\n"))
    return out


def tags(lines):
    """The tag lines of .TP paragraphs."""
    return [roff_plain(lines[i + 1]) for i, l in enumerate(lines[:-1]) if l.startswith(".TP")]


def page_options(page):
    secs = sections(page)
    opts, subopts = set(), set()
    for t in tags(secs.get("OPTIONS", [])):
        first = t.split()
        if first and first[0].startswith("-"):
            opts.update(OPT.findall(t))
    for sub in ("lfs mount options", "Standard mount options"):
        for t in tags(secs.get(sub, [])):
            names = [n.strip() for n in t.split(",")]
            # a tag of names, "noatime" or "ckpt_interval= N"; not the
            # nested lists under one (fault= rules: "pread: n :EIO")
            if all(re.match(r"^[a-z_]+(=.*)?$", n) for n in names):
                subopts.update(re.match(r"[a-z_]+", n).group(0) for n in names)
    return opts, subopts


def help_options(prog):
    r = subprocess.run([prog, "--help"], capture_output=True, text=True, timeout=20)
    text = r.stdout + r.stderr
    if r.returncode != 0 or "usage:" not in text:
        raise RuntimeError(f"{prog} --help: status {r.returncode}: {text.strip()[:200]}")
    opts = set()
    for o in OPT.findall(text):
        if o.startswith("--") or len(o) == 2:
            opts.add(o)
        else:
            opts.update("-" + c for c in o[1:])  # [-fnq]
    subopts = set()
    for names in re.findall(r"-o ([a-z_]+(?:, [a-z_]+)*)", text):
        subopts.update(names.split(", "))
    return opts, subopts


def main():
    mandir, builddir = sys.argv[1], sys.argv[2]
    bad = 0
    for page, prog in PROGRAMS.items():
        try:
            mo, ms = page_options(f"{mandir}/{page}")
        except FileNotFoundError:
            print(f"{page}: no such page")
            bad += 1
            continue
        try:
            ho, hs = help_options(f"{builddir}/{prog}")
        except (OSError, RuntimeError) as e:
            print(f"{page}: {e}")
            bad += 1
            continue
        if page == "lfs.8":
            ho.discard("-o")
            mo.discard("-o")
        diffs = [f"{page}: {o} is in the page, not in {prog} --help" for o in sorted(mo - ho)]
        diffs += [f"{page}: {o} is in {prog} --help, not in the page's OPTIONS" for o in sorted(ho - mo)]
        if page == "lfs.8":
            diffs += [f"{page}: -o {o} is in the page, not in --help" for o in sorted(ms - hs)]
            diffs += [f"{page}: -o {o} is in --help, not in the page" for o in sorted(hs - ms)]
        for d in diffs:
            print(d)
        bad += len(diffs)
        if not diffs:
            print(f"ok {page}: {len(mo)} options{f', {len(ms)} -o options' if ms else ''} agree with --help")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
