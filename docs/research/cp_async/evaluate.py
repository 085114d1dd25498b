"""Evaluate rule.cp_async_figures on every recorded cp.async launch.

    python research/cp_async/evaluate.py [--fails N]

Records: tests/data/banks/ncu_banks_*.npz (H200) and research/cp_async/records/*.npz (H100).
Source offsets in the records are relative to the probe's source buffer; its absolute address is
meta["src_base"] where recorded, else 512 mod 64 KiB (the probe allocates 512 bytes before it;
the class hash fitted to the two-lane probes needs exactly this, and it reproduces the H200
records too).
"""

from __future__ import annotations

import argparse
import collections
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from records import NEW_RECORDS, OLD_RECORDS, cp_rows, load_record  # noqa: E402
import rule  # noqa: E402

DEFAULT_BASE = 512


def src_base(path: str) -> int:
    return int(load_record(path)["meta"].get("src_base", DEFAULT_BASE))


def regime(r, base) -> str:
    """Which part of the rule decides this launch (for the tables); the first that applies."""
    w = r["size"]
    nwords = max(1, w // 4)
    lanes = [rule._Lane(l, int(r["dst"][l]), int(r["src"][l]) + base, nwords)
             for l in range(32) if r["mask"] >> l & 1]
    if len({ln.line * 128 >> rule.HASH_BITS for ln in lanes}) > 1:
        return "lines differ in bits >= 22"
    names = set()
    for g in rule._groups(lanes, 128 // max(4, w)):
        ls = [ln for line in g for ln in line]
        pairs = [(a, b) for i, a in enumerate(ls) for b in ls[i + 1:]]
        inner = any(rule._collide(a, b) for a, b in pairs if a.line == b.line)
        if any(a.words & b.words for a, b in pairs) and any(a.dst_banks & b.dst_banks for a, b in pairs):
            names.add(0)
        if any(a.dst_banks & b.dst_banks for a, b in pairs if a.line != b.line):
            names.add(1)
        if any(a.src_banks & b.src_banks for a, b in pairs if a.line != b.line):
            names.add(2 if inner else 3)
        elif inner:
            names.add(4)
    return REGIMES[min(names)] if names else "no collision"


REGIMES = ["dup: 2 lanes on 1 element + dst collision", "lines write one dst bank",
           "lines share src bank + a line collides", "lines share src bank only", "collisions inside lines only"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fails", type=int, default=0, help="print this many mismatches inside the exact domain")
    a = p.parse_args()
    paths = OLD_RECORDS + NEW_RECORDS
    by_op = collections.defaultdict(collections.Counter)
    by_reg = collections.defaultdict(collections.Counter)
    by_rec = collections.defaultdict(collections.Counter)
    fails = []
    neg = 0
    for path in paths:
        base = src_base(path)
        for r in cp_rows([path]):
            if r["mask"] == 0:
                continue
            ideal_m = r["wf"] - r["bc"]
            neg += not (0 <= ideal_m <= r["wf"])
            wf, ideal, exact = rule.cp_async_figures(r["size"], r["level"], r["dst"], r["src"] + base, r["mask"])
            ok_w, ok_i = wf == r["wf"], ideal == ideal_m
            reg = regime(r, base) if r["level"] == "ca" else "cg"
            for c in (by_op[r["op"]], by_reg[(r["op"], reg)], by_rec[r["record"]]):
                c["n"] += 1
                c["wf"] += ok_w
                c["ideal"] += ok_i
                c["exact"] += exact
                c["exact_ok"] += exact and ok_w and ok_i
                c["inexact_ok"] += (not exact) and ok_w and ok_i
            if exact and not (ok_w and ok_i):
                fails.append((r, wf, ideal))
    print(f"measured 0 <= ideal <= wavefronts violated in {neg} launches\n")
    hdr = f"{'':58s} {'launches':>8s} {'wf ok':>6s} {'ideal ok':>8s} {'exact':>6s} {'exact ok':>8s} {'inexact ok':>10s}"

    def row(name, c):
        print(f"{name:58s} {c['n']:8d} {c['wf']:6d} {c['ideal']:8d} {c['exact']:6d} {c['exact_ok']:8d} "
              f"{c['inexact_ok']:10d}")

    print("per op (all records)\n" + hdr)
    tot = collections.Counter()
    for op in sorted(by_op):
        row(op, by_op[op])
        tot.update(by_op[op])
    row("all", tot)
    print("\nper op and regime\n" + hdr)
    for k in sorted(by_reg):
        row(f"{k[0]} {k[1]}", by_reg[k])
    print("\nper record\n" + hdr)
    for k in sorted(by_rec):
        row(k[-58:], by_rec[k])
    for r, wf, ideal in fails[: a.fails]:
        print(r["record"], r["op"], r["label"], "measured", r["wf"], r["wf"] - r["bc"], "rule", wf, ideal)


if __name__ == "__main__":
    main()
