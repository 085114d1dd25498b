"""Recover the MUFU's interpolation tables from what the GPU returned (``probe.py``'s sweeps).

For every input of a sweep the unit's result pins its polynomial ``P = a + b*x + c*square(x)`` of
that input's segment to an interval (the result is ``P`` shifted, or normalized and truncated:
``fragsim.sfu.kernel``); a segment's coefficients are integers satisfying every interval of its
inputs at once.  ``solve`` finds them exactly: for a fixed ``c`` the gap ``max(lo - t) - min(hi - t)``
(``t = b*x + c*q``) is convex in ``b``, and with ``b`` relaxed to 1/256 steps nearly convex in
``c``; the integers near the relaxed optimum are then checked on every input.  The search runs
on a subset of a segment's inputs and adds the inputs a candidate violates until one satisfies all.

    python -m gpu_check.approx.recover PROBE_OUT > fragsim/sfu/tables.py
"""

from __future__ import annotations

import io
import re
import sys

import numpy as np

from fragsim.sfu import kernel as K

_FRAC = K.FRACTION


def _tern(f, lo: int, hi: int) -> tuple[int, int]:
    while hi - lo > 2:
        m1, m2 = lo + (hi - lo) // 3, hi - (hi - lo) // 3
        if f(m1) <= f(m2):
            hi = m2
        else:
            lo = m1
    best = min(range(lo, hi + 1), key=f)
    return best, f(best)


def _gap(x, q, lo, hi, b, c, k):
    t = (c * q << k) + b * x
    return int(((lo << k) - t).max() - ((hi << k) - t).min())


def _solve_subset(x, q, lo, hi, window=64, k=8, span=1 << 36, cspan=1 << 28):
    def h(c):
        return _tern(lambda B: _gap(x, q, lo, hi, B, c, k), -span << k, span << k)[1]
    c0, _ = _tern(h, -cspan, cspan)
    for d in sorted(range(-window, window + 1), key=abs):
        b, g = _tern(lambda b, c=c0 + d: _gap(x, q, lo, hi, b, c, 0), -span, span)
        if g <= 0:
            return b, c0 + d
    return None


def solve(x, q, lo, hi, subset=1024, rounds=40):
    """Integers (a, b, c) with lo <= a + b*x + c*q <= hi at every point, or None."""
    x, q, lo, hi = (np.asarray(v, np.int64) for v in (x, q, lo, hi))
    pick = np.unique(np.concatenate([np.linspace(0, len(x) - 1, min(subset, len(x))).astype(np.int64)]))
    for _ in range(rounds):
        bc = _solve_subset(x[pick], q[pick], lo[pick], hi[pick])
        if bc is None:
            return None
        b, c = bc
        t = b * x + c * q
        a_lo, a_hi = (lo - t).max(), (hi - t).min()
        if a_lo <= a_hi:
            return int(a_lo), b, c
        bad = np.nonzero((lo - t > a_hi) | (hi - t < a_lo))[0]
        pick = np.unique(np.concatenate([pick, bad[:: max(1, len(bad) // 32)], [np.argmax(lo - t), np.argmin(hi - t)]]))
    return None


def sweeps(folder: str) -> dict[tuple[str, int], tuple[np.ndarray, np.ndarray]]:
    """(form, first word) -> (input words, output words) of every sweep in ``folder``."""
    import glob
    out = {}
    for f in sorted(glob.glob(f"{folder}/sweep_*.npz")):
        z = np.load(f)
        for name in z.files:
            m = re.match(r"\d\d_(.+)_([0-9a-f]{8})_(\d+)$", name)
            if not m:
                continue
            d = np.load(io.BytesIO(z[name].tobytes()))["d"]
            first, n = int(m.group(2), 16), int(m.group(3))
            out[(m.group(1), first)] = ((np.arange(n, dtype=np.int64) + first).astype(np.uint32),
                                        np.cumsum(d.view(np.uint32), dtype=np.uint32))
    return out


def _sig(y):
    y = y.astype(np.int64)
    return (y >> 23) & 0xFF, (y & _FRAC) | K.IONE


def _shifted(y, eo, shift):
    """Intervals of P for results made as pack(eo, P >> shift)."""
    ey, f = _sig(y)
    f = np.where(ey == eo + 1, f << 1, f)         # P >> shift reached 2^24 and carried
    return f << shift, (f << shift) + (1 << shift) - 1


def _truncated(mag, fraction_bits):
    """Intervals of a positive fixed-point value with ``fraction_bits`` that normalized and truncated
    to 24 bits gives the magnitude word ``mag``."""
    ey, f = _sig(mag)
    p = ey - 127 + fraction_bits
    k = p - 23
    lo = np.where(k >= 0, f << np.maximum(k, 0), f >> np.maximum(-k, 0))
    hi = np.where(k >= 0, ((f + 1) << np.maximum(k, 0)) - 1, lo)
    return lo, hi


def constraints(unit: str, data) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(segment, x, P lower bound, P upper bound) of every input the sweeps pin, for ``unit``."""
    seg, xs, los, his = [], [], [], []

    def add(i, x, lo, hi):
        seg.append(i), xs.append(x), los.append(lo), his.append(hi)

    if unit == "rcp":
        w, y = data[("rcp.approx.ftz.f32", 0x3F800000)]
        m = w.astype(np.int64) & _FRAC
        add(m >> 16, m & 0xFFFF, *_shifted(y, 126, 15))
    elif unit in ("rsqrt", "sqrt"):
        w, y = data[(f"{unit}.approx.ftz.f32", 0x3F800000)]
        w64 = w.astype(np.int64)
        fx = (w64 & _FRAC) | ((((w64 >> 23) & 0xFF) - 127) & 1) << 23
        keep = fx != 0 if unit == "rsqrt" else np.ones(len(fx), bool)
        lo, hi = _shifted(y, 126 if unit == "rsqrt" else 127, 16 if unit == "rsqrt" else K.SQRT_SHIFT)
        add(fx[keep] >> 17, fx[keep] & 0x1FFFF, lo[keep], hi[keep])
    elif unit == "ex2":
        w, y = data[("ex2.approx.ftz.f32", 0x3F000000)]
        keep = (w >> 23) == 127                      # x in [1, 2): the fraction is the whole significand
        m = w[keep].astype(np.int64) & _FRAC
        add(m >> 17, m & 0x1FFFF, *_shifted(y[keep], 128, 15))
    elif unit == "lg2":
        w, y = data[("lg2.approx.ftz.f32", 0x3F000000)]
        m = w.astype(np.int64) & _FRAC
        e = w >> 23
        one = 1 << K.LG2_FRACTION_BITS
        lo_r, hi_r = _truncated(y & 0x7FFFFFFF, K.LG2_FRACTION_BITS)
        below = e == 126                              # x in [0.5, 1): the result is ~(res - 1)
        lo_r, hi_r = np.where(below, one - 1 - hi_r, lo_r), np.where(below, one - 1 - lo_r, hi_r)
        keep = ~((m == 0) & (e == 127)) & (y != 0)
        lo_p, hi_p = lo_r << 2, (hi_r << 2) + 3
        add(m[keep] >> 17, m[keep] & 0x1FFFF, lo_p[keep], hi_p[keep])
    elif unit in ("sin", "cos"):
        for (form, _), (w, y) in data.items():
            if not form.startswith(("sin.", "cos.")):
                continue
            r = _fmul_rz(w, 0x3E22F983)
            sig = (r.astype(np.int64) & _FRAC) | K.IONE
            sh = ((r.astype(np.int64) >> 23) & 0xFF) - 127 + 2
            fixed = np.where(sh >= 0, (sig << np.clip(sh, 0, 40)) & 0x1FFFFFF, sig >> np.clip(-sh, 0, 40))
            quadrant = (fixed >> 23) + (1 if form.startswith("cos") else 0)
            fx = np.where(quadrant & 1, ~fixed & _FRAC, fixed & _FRAC)
            keep = (y & 0x7FFFFFFF) != 0
            lo, hi = _truncated(y & 0x7FFFFFFF, K.SIN_FRACTION_BITS)
            add(fx[keep] >> 17, fx[keep] & 0x1FFFF, lo[keep], hi[keep])
    return tuple(np.concatenate(v).astype(np.int64) for v in (seg, xs, los, his))   # type: ignore[return-value]


def _fmul_rz(w: np.ndarray, k: int) -> np.ndarray:
    """FMUL.RZ of f32 words by the f32 constant ``k`` (normal range): the exact product truncated."""
    p = w.view(np.float32).astype(np.float64) * float(np.array([k], np.uint32).view(np.float32)[0])
    f = p.astype(np.float32)
    f = np.where(np.abs(f.astype(np.float64)) > np.abs(p), np.nextafter(f, np.float32(0)), f)
    return f.view(np.uint32)


def recover(unit: str, data, nseg: int) -> np.ndarray:
    seg, x, lo, hi = constraints(unit, data)
    sq = K.squares()
    table = np.zeros((nseg, 3), np.int64)
    for i in range(nseg):
        s = seg == i
        # one interval per distinct x: the intersection of what every input with that x says
        xu, inv = np.unique(x[s], return_inverse=True)
        lo_u = np.full(len(xu), np.iinfo(np.int64).min)
        hi_u = np.full(len(xu), np.iinfo(np.int64).max)
        np.maximum.at(lo_u, inv, lo[s])
        np.minimum.at(hi_u, inv, hi[s])
        qu = sq[xu << 1] if unit == "rcp" else sq[xu]
        h = (i >> 6) & 1 if unit == "sqrt" else 0     # sqrt on [2, 4): the offset's step is twice as large
        found = solve(xu << h, qu << h, lo_u, hi_u)
        if found is None:
            raise SystemExit(f"{unit}: segment {i}: no quadratic reproduces the GPU's results")
        table[i] = found
        print(f"{unit} {i}: {found}", file=sys.stderr)
    return table


SEGMENTS = {"rcp": 128, "rsqrt": 128, "sqrt": 128, "ex2": 64, "lg2": 64, "sin": 64}
#: each table's name in fragsim/sfu/tables.py and what its rows interpolate
DOCS = {
    "rcp": ("RCP", "1/x on [1, 2): 128 segments (fraction bits 22..16), x = bits 15..0, square(x << 1); P >> 15"),
    "rsqrt": ("RSQRT", "1/sqrt(x) on [1, 4): 128 segments (exponent parity, fraction bits 22..17), x = bits 16..0; "
                       "P >> 16"),
    "sqrt": ("SQRT", "sqrt(x) on [1, 4): as rsqrt, the terms in x doubled on [2, 4); P >> 17"),
    "ex2": ("EX2", "2^f on [0, 1): 64 segments (fraction bits 22..17), x = bits 16..0; P >> 15"),
    "lg2": ("LG2", "log2(x) on [1, 2): 64 segments, x = bits 16..0; P >> 2 is the result's fraction (36 bits)"),
    "sin": ("SIN", "sin(pi/2 f) on [0, 1): 64 segments, x = bits 16..0; P is the result (37 fraction bits)"),
}
HEADER = '''"""The MUFU's interpolation tables on sm_90, recovered from an H100's own results.

One table per function: row ``i`` is segment ``i``'s ``(a, b, c)`` in
``P = a + b * x + c * square(x)`` (``fragsim.sfu.kernel``), ``a`` holding the rounding constant and
``c`` the squarer's scale.  Generated by ``python -m fragsim.gpu_check.approx.recover PROBE_OUT`` from the
sweeps of ``python -m fragsim.gpu_check.approx.probe`` (every input of each function's core range,
NVIDIA H100 80GB HBM3, driver 580.159.04): each row is the integers that reproduce every result of
its segment; where several ``a`` do, the least.  Validated on every input by ``fragsim gpu-check
--family approx`` (the recorded digests: tests/data/approx/).

rcp, rsqrt, ex2, lg2 and sin have the same ``b`` and ``c`` -- and ``a`` within each segment's range --
as the G80 tables envytools published (nvhw/sfu_tab.c, 2015): the interpolator and its tables are
unchanged since 2006.  sqrt (MUFU.SQRT, newer) has the same layout.
"""

from __future__ import annotations

import numpy as np
'''


def render(tables: dict[str, np.ndarray]) -> str:
    """fragsim/sfu/tables.py holding ``tables``."""
    out = [HEADER]
    for unit, t in tables.items():
        name, doc = DOCS[unit]
        out.append(f"#: {doc}\n{name} = np.array([")
        out += [f"    ({int(r[0]):#x}, {int(r[1])}, {int(r[2])})," for r in t]
        out.append("], np.int64)\n")
    return "\n".join(out)


def main(folder: str, units: list[str]) -> None:
    data = sweeps(folder)
    print(render({u: recover(u, data, SEGMENTS[u]) for u in units}), end="")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or list(SEGMENTS))
