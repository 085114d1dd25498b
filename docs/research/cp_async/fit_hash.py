"""Derive the line-class hash from the two-line probes, and check it.

    python research/cp_async/fit_hash.py

1. Run 2 (records/cp_async_h100_pairs.npz): lines B = 1..255 (+7 beyond) against line 0.  A pair
   is "incompatible" when every probe took 2 wavefronts; otherwise exactly the probe holding
   B's word a collided (same bank, different line: an ordinary bank conflict).  Each aligned quad
   of lines holds exactly one line incompatible with line 0, so class = (line & 3) ^ d(line >> 2);
   the algebraic normal form of d shows carries of (line >> 2) + 1, i.e. a XOR hash of the
   absolute address with the source buffer at 512 mod 64 KiB.
2. The hash's masks (rule.CLASS_MASKS) against every two-line probe of runs 2 and 3.
"""

from __future__ import annotations

import collections
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from records import cp_rows, load_record  # noqa: E402
import rule  # noqa: E402


def probes(path):
    """{(op, A, a, B): {probe: wavefronts}} of the two-line probes in one record."""
    res = collections.defaultdict(dict)
    for r in cp_rows([path]):
        m = re.match(r"pair (?:base|other) A=(\d+) a=(\d+) B=(\d+) (\w+)", r["label"])
        if m:
            res[(r["op"], int(m[1]), int(m[2]), int(m[3]))][m[4]] = r["wf"]
    return res


def anf(f, n):
    a = list(f)
    for i in range(n):
        for x in range(1 << n):
            if x >> i & 1:
                a[x] ^= a[x ^ (1 << i)]
    return [x for x in range(1 << n) if a[x]]


def main():
    path = os.path.join(HERE, "records", "cp_async_h100_pairs.npz")
    res = probes(path)
    incompatible = {k: all(v == 2 for v in p.values()) for k, p in res.items()}
    # colliding word of compatible pairs: decode the bit probes, compare with A's word a
    odd = 0
    for (op, A, a, B), p in res.items():
        if incompatible[(op, A, a, B)]:
            continue
        w = 0 if p["Z"] == 2 else sum(1 << int(k[1:]) for k, v in p.items() if k.startswith("W") and v == 2)
        odd += w != a
    print(f"{len(res)} line pairs; {sum(incompatible.values())} never share a wavefront; "
          f"compatible pairs whose colliding word is not A's word: {odd}")
    inc0 = {B for (op, A, a, B), v in incompatible.items() if A == 0 and op.endswith(".4") and v} | {0}
    d = []
    for g in range(64):
        members = [L for L in inc0 if L >> 2 == g]
        assert len(members) == 1, (g, members)
        d.append(members[0] & 3)
    for bit in (0, 1):
        terms = anf([(v >> bit) & 1 for v in d], 6)
        print(f"d bit {bit} = " + " + ".join("*".join(f"g{i}" for i in range(6) if t >> i & 1) or "1" for t in terms))
    base = 512  # source buffer offset that turns those carries into a linear hash
    bad = 0
    for (op, A, a, B), inc in incompatible.items():
        same = rule.line_class(base + A * 128) == rule.line_class(base + B * 128)
        bad += same != inc
    print(f"rule.line_class vs run-2 pairs: {len(incompatible) - bad} of {len(incompatible)} agree")
    vpath = os.path.join(HERE, "records", "cp_async_h100_validate.npz")
    vbase = load_record(vpath)["meta"]["src_base"]
    bad = n = 0
    for r in cp_rows([vpath]):
        m = re.match(r"hb A=(\d+) k=(\d+) x=(\d+)", r["label"])
        if not m:
            continue
        A, k, x = int(m[1]), int(m[2]), int(m[3])
        B = A ^ (1 << k) ^ x
        same = rule.line_class(vbase + A * 128) == rule.line_class(vbase + B * 128)
        n += 1
        bad += same != (r["wf"] == 2)
    print(f"rule.line_class vs run-3 probes of address bits 9..21 (source buffer at {vbase:#x}): "
          f"{n - bad} of {n} agree")


if __name__ == "__main__":
    main()
