"""numba kernel of the fp8 ``mma.sync`` forms (``fragsim.arith.fp8``): decode, chained blocks, add of C.

Per warp, in one compiled loop, straight from the fp8 registers (no f16 registers in between):

* decode: a gather of 8 register words (the same register of 8 lanes) gives, byte by byte, 8
  consecutive elements of one k of the operand (the fp8 fragments put four k of one row/column
  in a word), which go k-major to the float kernel's layout (``av[k*M + m]``, ``bv[k*N + n]``)
  under the virtual f16 form's k (``fragsim.arith.fp8._virtual``: its blocks are the HMMAs).
  A byte's exact value comes by arithmetic, not a table: e5m2 is the high byte of an f16; e4m3's
  magnitude bits shifted into an f16 are its value times 2**-8 (normal and subnormal alike; 0x7F
  is NaN).  Its nominal exponent is the f16 one (clamped at f16's emin), as for the f16 model.
* the blocks: the float kernel's E_max and truncated-sum row passes (``fragsim.arith.kernel``,
  inlined), from c = +0 when C is added last, and its rounding into the accumulator.
* C last: the exact float64 sum of the block result and C (two f16, or two f32: binary64 has
  more than 2*24 + 2 bits, so rounding it again is the correctly rounded sum), rounded to
  nearest even by the kernel's encoder (subnormals kept, overflow to Inf, NaN canonical).

``fragsim.mma`` imports this module on first use of an fp8 form.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .kernel import (EXP_MASK, LANES, NAN_BITS, P_ACC_CODE, P_ACC_EBITS, P_ACC_EMIN, P_ACC_MAN, P_AWORDS,
                     P_BWORDS, P_C_EXACT, P_CWORDS, P_DWORDS, P_EZERO, P_F, P_IN_EMIN, P_K, P_L, P_M, P_RNE,
                     P_ZERO_IEEE, NPARAMS, SPEXP, _decode8, _emax_row, _round8, _scratch, _sum_row, make_params)
from .simd import (f8_bits, f8_eq, f8_from_bits, f8_from_f16, f8_load, f8_mul, f8_add, f8_splat, f8_store,
                   f8_where, i8_and, i8_eq, i8_gather, i8_load, i8_max, i8_min, i8_or, i8_shl, i8_shr,
                   i8_splat, i8_store, i8_store_u32, i8_sub, i8_where)

# Hash of what this file inlines: fragsim/arith/kernel.py and fragsim/arith/simd.py
# (fragsim._cachekey).  numba keys its disk cache on this file's content only; after either
# changes run `python -m fragsim.arith.kernel_fp8` (tests/test_mma_fast_paths.py fails until then).
KERNEL_SOURCE_HASH = "98df3ee270a96e642be8e078840cfffdba1e4dcb222ec2013cdaa59247532582"

# Appended to the float kernel's parameters.
P_C_LAST, P_A_E4M3, P_B_E4M3, P_AGROUPS, P_BGROUPS = range(NPARAMS, NPARAMS + 5)


@njit(inline="always")
def _k(x):
    return i8_splat(np.int64(x))


@njit(inline="always")
def _decode_fp8(b, e4m3, emin):
    """(value, hat) of 8 fp8 bytes, as ``kernel._decode8`` gives them for their f16 conversions."""
    if e4m3:
        v = f8_mul(f8_from_f16(i8_or(i8_shl(i8_and(b, _k(0x7F)), _k(7)), i8_shl(i8_and(b, _k(0x80)), _k(8)))),
                   f8_splat(256.0))
        v = f8_where(i8_eq(i8_and(b, _k(0x7F)), _k(0x7F)), f8_from_bits(_k(NAN_BITS)), v)
    else:
        v = f8_from_f16(i8_shl(b, _k(8)))
    hb = i8_min(i8_max(i8_and(f8_bits(v), _k(EXP_MASK)), _k((emin + 1023) << 52)), _k((SPEXP + 1023) << 52))
    return v, f8_from_bits(i8_where(f8_eq(v, f8_splat(0.0)), _k(0), hb))


@njit(inline="always")
def _decode_op(words, base, src, dst, ngroups, e4m3, emin, vals, hats):
    """Group g: the 8 words words[base + src[8g:8g+8]]; byte j of them -> vals/hats[dst[4g + j]:+8]."""
    for g in range(ngroups):
        w = i8_gather(words, base, src, 8 * g)
        for j in range(4):
            v, h = _decode_fp8(i8_and(i8_shr(w, _k(8 * j)), _k(0xFF)), e4m3, emin)
            o = dst[4 * g + j]
            f8_store(vals, o, v)
            f8_store(hats, o, h)


@njit(inline="always")
def _warp(i, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, prm,
          av, ah, bv, bh, cv, ch, eb, sv, dout):
    M, K, L, F, e_zero, emin = prm[P_M], prm[P_K], prm[P_L], prm[P_F], prm[P_EZERO], prm[P_IN_EMIN]
    acc_code, acc_emin, acc_man, acc_ebits = prm[P_ACC_CODE], prm[P_ACC_EMIN], prm[P_ACC_MAN], prm[P_ACC_EBITS]
    rne, zero_ieee, c_exact, c_last = prm[P_RNE], prm[P_ZERO_IEEE], prm[P_C_EXACT], prm[P_C_LAST]
    N = LANES
    nblk = (K + L - 1) // L
    acc_mask = (np.int64(1) << (1 + acc_man + acc_ebits)) - 1
    zhat8 = f8_from_bits(_k((e_zero + 1023) << 52))

    _decode_op(aw, i * prm[P_AWORDS], a_src, a_dst, prm[P_AGROUPS], prm[P_A_E4M3], emin, av, ah)
    _decode_op(bw, i * prm[P_BWORDS], b_src, b_dst, prm[P_BGROUPS], prm[P_B_E4M3], emin, bv, bh)

    cbase = i * prm[P_CWORDS]
    for m in range(M):
        if c_last:                                     # the first HMMA starts from c = +0
            f8_store(cv, m * N, f8_splat(0.0))
            f8_store(ch, m * N, f8_splat(0.0))
        else:
            w = i8_and(i8_shr(i8_gather(cw, cbase, c_src, m * N), i8_load(c_sh, m * N)), _k(acc_mask))
            cval, chat = _decode8(w, acc_code, acc_emin, False, c_exact)
            f8_store(cv, m * N, cval)
            f8_store(ch, m * N, chat)
    for j in range(nblk):
        k0 = j * L
        k1 = min(k0 + L, K)
        for m in range(M):
            i8_store(eb, m * N, _emax_row(ah, bh, M, m, k0, k1, f8_load(ch, m * N), f8_load(cv, m * N), zhat8))
        for m in range(M):
            ebits = i8_load(eb, m * N)
            scale = f8_from_bits(i8_sub(_k((F + 2046) << 52), ebits))      # 2**(F - E)
            S = _sum_row(av, bv, M, m, k0, k1, f8_load(cv, m * N), scale)
            f8_store(sv, m * N, f8_mul(S, f8_from_bits(i8_sub(ebits, _k(F << 52)))))   # S * 2**(E - F)
        for m in range(M):
            w = _round8(f8_load(sv, m * N), acc_man, acc_ebits, rne, zero_ieee)
            if k1 < K:                                 # the rounded block result is the next block's c
                cval, chat = _decode8(w, acc_code, acc_emin, False, c_exact)
                f8_store(cv, m * N, cval)
                f8_store(ch, m * N, chat)
            elif c_last:                               # FADD / HADD2: C + D, rounded to nearest even
                x, _ = _decode8(w, acc_code, acc_emin, False, True)
                c = i8_and(i8_shr(i8_gather(cw, cbase, c_src, m * N), i8_load(c_sh, m * N)), _k(acc_mask))
                cval, _ = _decode8(c, acc_code, acc_emin, False, True)
                i8_store(dout, m * N, _round8(f8_add(cval, x), acc_man, acc_ebits, True, True))
            else:
                i8_store(dout, m * N, w)

    nd = prm[P_DWORDS]
    for r in range(0, nd, LANES):
        w = i8_gather(dout, 0, d_lo, r)
        if acc_ebits == 5:
            w = i8_or(w, i8_shl(i8_gather(dout, 0, d_hi, r), _k(16)))
        i8_store_u32(dw, i * nd + r, w)


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit its private _nrt option
def _run_range(lo, hi, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, prm,
               av, ah, bv, bh, cv, ch, eb, sv, dout):
    # No reference counting in the warp loop (_nrt=False), as in the float kernel.
    for i in range(lo, hi):
        _warp(i, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, prm,
              av, ah, bv, bh, cv, ch, eb, sv, dout)


@njit(cache=True)
def _run_serial(aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, prm):
    av, ah, bv, bh, cv, ch, eb, sv, dout = _scratch(prm)
    _run_range(0, dw.size // prm[P_DWORDS], aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh,
               d_lo, d_hi, prm, av, ah, bv, bh, cv, ch, eb, sv, dout)


@njit(cache=True, parallel=True)
def _run_parallel(nchunks, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, prm):
    n = dw.size // prm[P_DWORDS]
    for t in prange(nchunks):
        av, ah, bv, bh, cv, ch, eb, sv, dout = _scratch(prm)
        _run_range(t * n // nchunks, (t + 1) * n // nchunks, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst,
                   c_src, c_sh, d_lo, d_hi, prm, av, ah, bv, bh, cv, ch, eb, sv, dout)


def run(pl, maps, groups, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) uint32 of an ``Fp8Plan`` from register batches (batch, 32*nregs);
    ``maps``: the index maps of its virtual f16 form (C and D), ``groups``: ``fragsim.arith.fp8.byte_groups``
    of the plan (A and B)."""
    import numba

    batch = a.shape[0]
    f = pl.form
    nd = f.nregs("D")
    d = np.empty(batch * 32 * nd, np.uint32)
    prm = make_params(pl.inner, maps)
    prm[[P_AWORDS, P_BWORDS]] = 32 * f.nregs("A"), 32 * f.nregs("B")
    prm = np.append(prm, np.array([pl.c_last, f.types["A"] == "e4m3", f.types["B"] == "e4m3",
                                   groups["a_dst"].size // 4, groups["b_dst"].size // 4], np.int64))
    a, b, c = (np.require(x.reshape(-1), np.uint32, ("C", "A", "W")) for x in (a, b, c))
    args = (a, b, c, d, groups["a_src"], groups["a_dst"], groups["b_src"], groups["b_dst"],
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
