"""numba driver of the fp8 ``mma.sync`` forms (``fragsim.arith.fp8``): decode, two HMMAs, FADD / HADD2.

Per warp, in one compiled loop: each fp8 register becomes its two f16x2 registers of the virtual
f16 form (low halves, then high halves; a 256-entry table per format gives every byte's exact f16),
the float kernel's warp (``fragsim.arith.kernel._warp``, inlined) runs the chained blocks on them
with c = +0, and C is added by one IEEE addition per element: the exact float64 sum of two f16
values, or the float64 sum of two f32 values (binary64 has more than 2*24 + 2 bits, so rounding
that sum again to f32 is the correctly rounded f32 sum), encoded by the kernel's round to nearest
even (subnormals kept, overflow to Inf, NaN canonical, the sum's zero sign).

``fragsim.mma`` imports this module on first use of an fp8 form.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kernel import (LANES, P_ACC_CODE, P_ACC_EBITS, P_ACC_EMIN, P_ACC_MAN, P_AWORDS, P_BWORDS, P_CWORDS,
                     NPARAMS, P_DWORDS, _decode8, _round8, _scratch, _warp, make_params)
from .simd import f8_add, i8_and, i8_gather, i8_or, i8_shl, i8_shr, i8_splat, i8_store_u32

# Hash of what this file inlines: fragsim/arith/kernel.py and fragsim/arith/simd.py
# (fragsim._cachekey).  numba keys its disk cache on this file's content only; after either
# changes run `python -m fragsim.arith.kernel_fp8` (tests/test_mma_fp8_fast.py fails until then).
P_C_LAST = NPARAMS         # appended to the float kernel's parameters: C is added after the HMMAs

KERNEL_SOURCE_HASH = "98df3ee270a96e642be8e078840cfffdba1e4dcb222ec2013cdaa59247532582"


@njit(inline="always")
def _k(x):
    return i8_splat(np.int64(x))


@njit(inline="always")
def _unpack(w, base, n, tab, t0, out):
    """The n fp8 registers per lane at w[base:] -> 2n f16x2 registers per lane in out: register j
    holds bytes 0, 1 of fp8 register j, register n + j its bytes 2, 3; tab[t0 + byte] is the f16."""
    for lane in range(32):
        for j in range(n):
            x = w[base + lane * n + j]
            o = lane * 2 * n + j
            out[o] = tab[t0 + (x & 0xFF)] | (tab[t0 + ((x >> 8) & 0xFF)] << 16)
            out[o + n] = tab[t0 + ((x >> 16) & 0xFF)] | (tab[t0 + (x >> 24)] << 16)


@njit(inline="always")
def _add1(xw, cw, code, emin, man, ebits):
    xv, _ = _decode8(xw, code, emin, False, True)
    cv, _ = _decode8(cw, code, emin, False, True)
    return _round8(f8_add(cv, xv), man, ebits, True, True)


@njit(inline="always")
def _add_c(x, c, cbase, iota, nd, prm, out, obase):
    """out[obase + r] = C + x per element of nd D words (f32: one per word; f16: two), one IEEE
    addition rounded to nearest even."""
    code, emin, man, ebits = prm[P_ACC_CODE], prm[P_ACC_EMIN], prm[P_ACC_MAN], prm[P_ACC_EBITS]
    for r in range(0, nd, LANES):
        xw = i8_gather(x, 0, iota, r)
        cw = i8_gather(c, cbase, iota, r)
        if ebits == 5:
            lo = _add1(i8_and(xw, _k(0xFFFF)), i8_and(cw, _k(0xFFFF)), code, emin, man, ebits)
            hi = _add1(i8_shr(xw, _k(16)), i8_shr(cw, _k(16)), code, emin, man, ebits)
            w = i8_or(lo, i8_shl(hi, _k(16)))
        else:
            w = _add1(xw, cw, code, emin, man, ebits)
        i8_store_u32(out, obase + r, w)


@njit(inline="always")
def _fp8_warp(i, aw, bw, cw, dw, tab, iota, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi,
              prm, av, ah, bv, bh, cv, ch, eb, sv, dout, a16, b16, c16, d16):
    na, nb, nc, nd = prm[P_AWORDS] // 64, prm[P_BWORDS] // 64, prm[P_CWORDS], prm[P_DWORDS]
    _unpack(aw, i * 32 * na, na, tab, 0, a16)
    _unpack(bw, i * 32 * nb, nb, tab, 256, b16)
    c_last = prm[P_C_LAST]
    if not c_last:                       # C enters the first HMMA
        for r in range(nc):
            c16[r] = cw[i * nc + r]
    _warp(0, a16, b16, c16, d16, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, prm,
          av, ah, bv, bh, cv, ch, eb, sv, dout)
    if c_last:
        _add_c(d16, cw, i * nc, iota, nd, prm, dw, i * nd)
    else:
        for r in range(nd):
            dw[i * nd + r] = d16[r]


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit its private _nrt option
def _run_range(lo, hi, aw, bw, cw, dw, tab, iota, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo,
               d_hi, prm, av, ah, bv, bh, cv, ch, eb, sv, dout, a16, b16, c16, d16):
    for i in range(lo, hi):
        _fp8_warp(i, aw, bw, cw, dw, tab, iota, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi,
                  prm, av, ah, bv, bh, cv, ch, eb, sv, dout, a16, b16, c16, d16)


@njit(cache=True)
def _scratch16(prm):
    """The virtual f16 registers of one warp: A, B, C (zero when C is added last), D."""
    return (np.empty(prm[P_AWORDS], np.uint32), np.empty(prm[P_BWORDS], np.uint32),
            np.zeros(prm[P_CWORDS], np.uint32), np.empty(prm[P_DWORDS], np.uint32))


@njit(cache=True)
def _run_serial(aw, bw, cw, dw, tab, iota, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, prm):
    av, ah, bv, bh, cv, ch, eb, sv, dout = _scratch(prm)
    a16, b16, c16, d16 = _scratch16(prm)
    _run_range(0, dw.size // prm[P_DWORDS], aw, bw, cw, dw, tab, iota, a_src, a_sh, b_src, b_sh,
               c_src, c_sh, d_lo, d_hi, prm, av, ah, bv, bh, cv, ch, eb, sv, dout, a16, b16, c16, d16)


@njit(cache=True, parallel=True)
def _run_parallel(nchunks, aw, bw, cw, dw, tab, iota, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo,
                  d_hi, prm):
    n = dw.size // prm[P_DWORDS]
    for t in prange(nchunks):
        av, ah, bv, bh, cv, ch, eb, sv, dout = _scratch(prm)
        a16, b16, c16, d16 = _scratch16(prm)
        _run_range(t * n // nchunks, (t + 1) * n // nchunks, aw, bw, cw, dw, tab, iota, a_src,
                   a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, prm, av, ah, bv, bh, cv, ch, eb, sv, dout,
                   a16, b16, c16, d16)


def run(pl, maps, tab_a, tab_b, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) uint32 of an ``Fp8Plan`` from register batches (batch, 32*nregs);
    ``maps``: the index maps of its virtual f16 form, ``tab_a``/``tab_b``: uint32 (256,) f16 bits of
    each fp8 byte of A's / B's format."""
    import numba

    batch = a.shape[0]
    nd = pl.form.nregs("D")
    d = np.empty(batch * 32 * nd, np.uint32)
    prm = np.append(make_params(pl.inner, maps), np.int64(pl.c_last))
    a, b, c = (np.require(x.reshape(-1), np.uint32, ("C", "A", "W")) for x in (a, b, c))
    iota = np.arange(32 * nd, dtype=np.int64)
    args = (a, b, c, d, np.concatenate([tab_a, tab_b]), iota, maps["a_src"], maps["a_sh"], maps["b_src"], maps["b_sh"],
            maps["c_src"], maps["c_sh"], maps["d_lo"], maps["d_hi"], prm)
    threads = numba.get_num_threads()
    if parallel and threads > 1 and batch >= 2 * threads:
        _run_parallel(min(batch, 8 * threads), *args)
    else:
        _run_serial(*args)
    return d.reshape(batch, 32, nd)


if __name__ == "__main__":
    from pathlib import Path

    from .._cachekey import restamp

    here = Path(__file__).resolve().parent
    changed = restamp(Path(__file__).resolve(), "KERNEL_SOURCE_HASH", here / "kernel.py", here / "simd.py")
    print(f"kernel_fp8.py: KERNEL_SOURCE_HASH {'updated' if changed else 'already current'}")
