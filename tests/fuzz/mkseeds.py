#!/usr/bin/env python3
"""mkseeds.py — write the seeds of tests/fuzz/corpus that aim at the
snapshot tables, the roll-forward records and the xattr blocks.

A seed is a list of 20-byte edits (tests/fuzz/fuzz_mount.c):
  u8 target | u8 field | u8 op | u8 0 | le32 which | le32 sub | le64 value
Targets and fields are named here as tests/lib/imgedit.h and imgedit.c
have them (the enum, and each field by its table entry), so the numbers
follow the editor.  The older seeds of the corpus were written by hand.

usage: mkseeds.py [SRCDIR]   (writes SRCDIR/tests/fuzz/corpus/<name>)
"""
import os
import re
import struct
import sys

SET, ADD, XOR = 0, 1, 2

# name: [(target, field entry, op, which, sub, value), ...]
SEEDS = {
    "ckpt-held-slots": [("IMG_CKPT", "LFS_CK_OFF_HELD_SLOTS, 8, 0", SET, 0, 0, 1 << 20)],
    "ckpt-hist-slots": [("IMG_CKPT", "LFS_CK_OFF_HIST_SLOTS, 4, 0", ADD, 1, 0, 64)],
    "ckpt-hist-root": [("IMG_CKPT", "LFS_CK_OFF_HIST_ROOT, 8, 0", ADD, 0, 0, 1)],
    "ckpt-protect": [("IMG_CKPT", "LFS_CK_OFF_PROTECT, 4, 0", SET, 1, 0, 1)],
    "pseg-repl": [("IMG_PSEG", "LFS_PS_OFF_REPL, 4, 0", ADD, 19, 0, 1)],
    "tnode-ptr": [("IMG_TNODE", "0, 8, SUB_TABLE_PTR", ADD, 0, 0, 1)],
    "tnode-past": [("IMG_TNODE", "0, 8, SUB_NODE_PTR", SET, 1, 3, 40)],
    "held-until": [("IMG_HELD", "LFS_HE_OFF_UNTIL, 8, 0", ADD, 0, 0, 100)],
    "held-from": [("IMG_HELD", "LFS_HE_OFF_FROM, 8, 0", SET, 3, 0, 0)],
    "held-cur": [("IMG_HELD", "LFS_HE_OFF_CUR, 8, 0", XOR, 5, 0, 1)],
    "held-charge": [("IMG_HELD", "LFS_HE_OFF_CHARGE, 4, 0", SET, 7, 0, 0)],
    "held-kind-imap": [("IMG_HELD", "LFS_HE_OFF_KIND, 1, 0", SET, 2, 0, 5),
                       ("IMG_HELD", "LFS_HE_OFF_AUX, 8, 0", SET, 2, 0, 1 << 40)],
    "held-slot": [("IMG_HELD", "LFS_HE_OFF_SLOT, 2, 0", SET, 9, 0, 0xffff)],
    "hist-seq": [("IMG_HIST", "LFS_HI_OFF_SEQ, 8, 0", ADD, 1, 0, 1)],
    "hist-name": [("IMG_HIST", "LFS_HI_OFF_NAME, 1, SUB_HIST_NAME", SET, 0, 0, ord("/"))],
    "hist-name-end": [("IMG_HIST", "LFS_HI_OFF_NAME + LFS_HIST_NAME_MAX, 1, 0", SET, 0, 0, ord("x"))],
    "hist-flags": [("IMG_HIST", "LFS_HI_OFF_FLAGS, 4, 0", SET, 2, 0, 2)],
    "repl-count": [("IMG_REPL", "LFS_RP_OFF_COUNT, 4, 0", ADD, 0, 0, 1)],
    "repl-addr": [("IMG_REPL", "LFS_RP_OFF_ADDR, 8, 0", XOR, 1, 0, 1 << 20)],
    "repl-kind": [("IMG_REPL", "LFS_RP_OFF_KIND, 1, 0", SET, 1, 0, 7)],
    "relink-ind": [("IMG_RELINK", "LFS_DI_OFF_IND + 8, 8, 0", ADD, 0, 0, 1)],
    "relink-flags": [("IMG_RELINK", "LFS_DI_OFF_FLAGS, 4, 0", XOR, 0, 0, 16)],
    "relink-version": [("IMG_RELINK", "LFS_DI_OFF_VERSION, 4, 0", ADD, 0, 0, 1)],
    "inode-xblocks": [("IMG_INODE", "LFS_DI_OFF_XBLOCKS, 4, 0", SET, 3, 0, 0xffffffff)],
    "xroot-slot": [("IMG_XROOT", "0, 8, SUB_XSLOT", XOR, 1, 0, 1)],
    "xroot-slot-kind": [("IMG_XROOT", "7, 1, SUB_XSLOT", SET, 1, 1, 3)],
    "xroot-nslots": [("IMG_XROOT", "LFS_XR_OFF_NSLOTS, 2, 0", ADD, 1, 0, 0xffff)],
    "xent-vallen": [("IMG_XENT", "LFS_XE_OFF_VALLEN, 4, 0", ADD, 0, 0, 4096)],
    "xent-slot": [("IMG_XENT", "0, 2, SUB_XENT_SLOT", SET, 43, 1, 0)],
    "xent-out": [("IMG_XENT", "LFS_XE_OFF_FLAGS, 1, 0", XOR, 3, 0, 1)],
    "xent-name": [("IMG_XENT", "0, 1, SUB_XENT_NAME", SET, 2, 0, 0)],
    # unwritten blocks (lfs(5)): counts larger than the file or than the
    # image, markers where the image or the file cannot have them
    "inode-unwritten": [("IMG_INODE", "LFS_DI_OFF_UNWRITTEN, 4, 0", SET, 40, 0, 0xffffffff)],
    "inode-unwritten-step": [("IMG_INODE", "LFS_DI_OFF_UNWRITTEN, 4, 0", ADD, 40, 0, 1)],
    "inode-direct-unwritten": [("IMG_INODE", "LFS_DI_OFF_DIRECT, 8, 0", SET, 1, 0, (1 << 64) - 1)],
    "inode-ind-unwritten": [("IMG_INODE", "LFS_DI_OFF_IND + 8, 8, 0", SET, 30, 0, (1 << 64) - 1)],
    "node-unwritten": [("IMG_NODE", "0, 8, SUB_NODE_PTR", SET, 2, 7, (1 << 64) - 1)],
    "ckpt-unwritten": [("IMG_CKPT", "LFS_CK_OFF_UNWRITTEN, 8, 0", SET, 1, 0, 1 << 40)],
    "ckpt-unwritten-step": [("IMG_CKPT", "LFS_CK_OFF_UNWRITTEN, 8, 0", ADD, 1, 0, (1 << 64) - 1)],
    "super-no-unwritten": [("IMG_SUPER", "LFS_SB_OFF_INCOMPAT, 4, 0", XOR, 0, 0, 32)],
    "snapshots-mixed": [("IMG_HELD", "LFS_HE_OFF_ORIG, 8, 0", ADD, 0, 0, 1),
                        ("IMG_HIST", "LFS_HI_OFF_SEQ, 8, 0", SET, 0, 0, 0),
                        ("IMG_REPL", "LFS_RP_OFF_COUNT, 4, 0", SET, 0, 0, 0)],
}


def targets(src):
    text = open(os.path.join(src, "tests/lib/imgedit.h")).read()
    body = re.search(r"enum img_target \{(.*?)\};", text, re.S).group(1)
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = [n.strip() for n in body.split(",") if n.strip()]
    return {n: i for i, n in enumerate(names)}


def fields(src):
    """target name -> [field entry text, ...] in table order"""
    text = open(os.path.join(src, "tests/lib/imgedit.c")).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    tabs = {}
    for m in re.finditer(r"static const struct field (\w+)\[\] = \{(.*?)\};", text, re.S):
        tabs[m.group(1)] = [" ".join(e.split()) for e in re.findall(r"\{\s*([^{}]*?)\s*\}", m.group(2))]
    return {t: tabs[f] for t, f in re.findall(r"\[(IMG_\w+)\] = TABLE\((\w+)\)", text)}


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "../..")
    tnum, fl = targets(src), fields(src)
    for name, edits in SEEDS.items():
        out = b""
        for t, f, op, which, sub, value in edits:
            out += struct.pack("<BBBBIIQ", tnum[t], fl[t].index(f), op, 0, which, sub, value)
        with open(os.path.join(src, "tests/fuzz/corpus", name), "wb") as fh:
            fh.write(out)


main()
