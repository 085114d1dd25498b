"""Derive the cp.async source-line class hash from the H100 two-line probes, and check it.

    python docs/research/cp_async/fit_hash.py

1. The two-line probes (tests/data/banks/ncu_banks_h100_cp_async_pairs.npz; cases:
   fragsim.gpu_check.banks.cp_async_cases.pairs): lines B = 1..255 (+7 beyond) against line 0, line
   numbers relative to the probe's source buffer.  A pair is "incompatible" when every probe took 2
   wavefronts; otherwise exactly the probe holding A's word collided (same bank, different line:
   an ordinary bank conflict).  Each aligned quad of lines holds exactly one line incompatible with
   line 0, so class = (line & 3) ^ d(line >> 2); the algebraic normal form of d shows the carries
   of (line >> 2) + 1, i.e. a XOR hash of the absolute address with the buffer at 512 mod 64 KiB
   (fragsim.gpu_check.banks.measure.UNRECORDED_SRC_BASE).
2. The model's hash (fragsim.banks.rules.source_line_class, on the absolute source addresses that
   load_record gives) against every two-line probe of the pairs record and the bit probes (address
   bits 9..21) of the validation record.
"""

from __future__ import annotations

import collections
import os
import re

from fragsim.banks.rules import source_line_class
from fragsim.gpu_check.banks.measure import load_record, measured_figures

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "data", "banks")


def launches(name):
    """(op, label, wavefronts, active lanes' absolute source addresses) of every cp.async launch."""
    rec = load_record(os.path.join(DATA, f"ncu_banks_h100_cp_async_{name}.npz"))
    wf, _ = measured_figures(rec)
    for i in range(len(rec["op"])):
        lanes = [lane for lane in range(32) if rec["mask"][i] >> lane & 1]
        yield str(rec["ops"][rec["op"][i]]), str(rec["label"][i]), int(wf[i]), [int(rec["src"][i][ln]) for ln in lanes]


def anf(f, n):
    a = list(f)
    for i in range(n):
        for x in range(1 << n):
            if x >> i & 1:
                a[x] ^= a[x ^ (1 << i)]
    return [x for x in range(1 << n) if a[x]]


def main():
    res = collections.defaultdict(dict)    # (op, A, a, B) -> {probe: wavefronts}
    same_class = {}                        # (op, A, a, B) -> the model's hash puts A and B in one class
    for op, label, wf, src in launches("pairs"):
        m = re.match(r"pair (?:base|other) A=(\d+) a=(\d+) B=(\d+) (\w+)", label)
        if m:
            key = (op, int(m[1]), int(m[2]), int(m[3]))
            res[key][m[4]] = wf
            # lane 0 reads line A, the highest active lane line B
            same_class[key] = source_line_class(src[0] >> 7) == source_line_class(src[-1] >> 7)
    incompatible = {k: all(v == 2 for v in p.values()) for k, p in res.items()}
    odd = 0
    for key, p in res.items():
        if not incompatible[key]:
            w = 0 if p["Z"] == 2 else sum(1 << int(k[1:]) for k, v in p.items() if k.startswith("W") and v == 2)
            odd += w != key[2]
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
    agree = sum(same_class[k] == v for k, v in incompatible.items())
    print(f"source_line_class vs the two-line probes: {agree} of {len(incompatible)} agree")
    misses = odd + len(incompatible) - agree
    n = agree = 0
    for _op, label, wf, src in launches("validate"):
        if label.startswith("hb "):   # lane 0: line A, lane 1: line A ^ 2^k ^ x
            n += 1
            agree += (source_line_class(src[0] >> 7) == source_line_class(src[1] >> 7)) == (wf == 2)
    print(f"source_line_class vs the probes of address bits 9..21: {agree} of {n} agree")
    return 1 if misses or agree < n else 0


if __name__ == "__main__":
    raise SystemExit(main())
