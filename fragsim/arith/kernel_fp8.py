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

The m16n8 forms (every fp8 form on sm_90) run this in sixteen 32-bit lanes instead (``_warp16``): one
vector is a column of D's 16 rows; an fp8 product and its truncation at the block's fixed point are
exact in float32, a block's truncated terms sum exactly in int32, E_max is a maximum of integer
exponent sums, the rounded block result stays a float64 value (no encode/decode between the blocks),
and Inf/NaN products enter through their float32 sum.  ``_warp`` remains for any other plan.

``fragsim.mma`` imports this module on first use of an fp8 form.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, prange
from numba.core import types
from numba.extending import intrinsic

from fragsim.facts.hardware import WARP_LANES
from .kernel import (ABS_MASK, EXP_MASK, LANES, NAN_BITS, P_ACC_CODE, P_ACC_EBITS, P_ACC_EMIN, P_ACC_MAN, P_AWORDS,
                     P_BWORDS, P_C_EXACT, P_CWORDS, P_DWORDS, P_EZERO, P_F, P_IN_EMIN, P_K, P_L, P_M, P_RNE,
                     P_ZERO_IEEE, NPARAMS, SPEXP, _c_words, _chain, _decode8, _load_c, _round8, _scratch, _store_d, make_params)
from .simd import (_llvm_fn, _splat, _unop, f8_add, f8_bits, f8_eq, f8_from_bits, f8_from_f16, f8_load, f8_mul,
                   f8_roundeven, f8_splat, f8_store, f8_trunc, f8_where, i8_add, i8_and, i8_eq, i8_gather, i8_load,
                   i8_lt, i8_max, i8_min, i8_or, i8_shl, i8_shr, i8_splat, i8_store, i8_sub, i8_to_f8,
                   i8_where)

from .simd16 import (S16, W16, _S16, _W16, _c16, f8_to_f32_bits, s16_add, s16_bcast, s16_hi,
                     s16_lo, s16_load, s16_mul, s16_store8, s16_trunc, s16_zero, w16_add, w16_bcast, w16_byte, w16_hi,
                     w16_join, w16_lo, w16_load, w16_max, w16_min, w16_pow2, w16_splat, w16_store8, w16_sub)

# Hash of the sources this file compiles in (listed in fragsim.arith.stamps.KERNELS).  numba keys
# its disk cache on this file's content only: after editing one of them run
# `python -m fragsim.arith.stamps` (tests/test_numba_cache_key.py fails until then).
INLINED_SOURCE_HASH = "37a49e96e61134c5d153e3d031f4602ccceb5bebf9a3abb2fc1ca8a926001348"

# Appended to the float kernel's parameters.
P_C_LAST, P_A_E4M3, P_B_E4M3, P_AGROUPS, P_BGROUPS, P_LANES16 = range(NPARAMS, NPARAMS + 6)
ZERO_EXP = -8192     # a zero's exponent: a product with a zero factor lies below ZERO_EXP // 2


# --- sixteen 32-bit lanes: one column of D (the 16 rows of m16n8) per vector ---------------------
# Why: an fp8 product (at most 4 x 4 significant bits, |p| in [2**-32, 2**32)) is exact in float32, and
# so is its scaling to the block's fixed point (below 2**(F + 2)); a block of at most 16 truncated terms
# sums exactly in int32.  So a 512-bit register holds 16 rows where the float64 path holds 8 columns
# (the 16-lane vocabulary is fragsim.arith.simd16's; what is fp8's own follows).


def _f16_to_s16(builder, h):
    return builder.fpext(builder.bitcast(builder.trunc(h, ir.VectorType(ir.IntType(16), 16)),
                                         ir.VectorType(ir.HalfType(), 16)), _S16)


def _e4m3(builder, b):
    # the magnitude bits shifted into an f16 are the value times 2**-8 (normal and subnormal); 0x7F is NaN
    mag = builder.and_(b, _c16(0x7F))
    h = builder.or_(builder.shl(mag, _c16(7)), builder.shl(builder.and_(b, _c16(0x80)), _c16(8)))
    v = builder.fmul(_f16_to_s16(builder, h), ir.Constant(_S16, [256.0] * 16))
    return builder.select(builder.icmp_unsigned("==", mag, _c16(0x7F)), ir.Constant(_S16, [float("nan")] * 16), v)


e4m3_val16 = _unop(W16, S16, _e4m3)
e5m2_val16 = _unop(W16, S16, lambda b, x: _f16_to_s16(b, b.shl(x, _c16(8))))    # the high byte of an f16


@intrinsic
def s16_nexp(typingctx, v, emin):
    """Nominal exponents: max(floor(log2|v|), emin), ZERO_EXP for a zero, 128 (SPEXP) for Inf/NaN."""
    if v != S16 or not isinstance(emin, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        bits = builder.bitcast(args[0], _W16)
        e = builder.sub(builder.and_(builder.lshr(bits, _c16(23)), _c16(0xFF)), _c16(127))
        e = builder.call(_llvm_fn(builder, "llvm.smax.v16i32", _W16, [_W16, _W16]),
                         [e, _splat(builder, builder.trunc(args[1], ir.IntType(32)), _W16)])
        zero = builder.icmp_unsigned("==", builder.and_(bits, _c16(0x7FFFFFFF)), _c16(0))
        return builder.select(zero, _c16(ZERO_EXP), e)
    return W16(v, emin), codegen




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
    M, emin = prm[P_M], prm[P_IN_EMIN]
    acc_code, acc_emin, acc_man, acc_ebits = prm[P_ACC_CODE], prm[P_ACC_EMIN], prm[P_ACC_MAN], prm[P_ACC_EBITS]
    N = LANES

    _decode_op(aw, i * prm[P_AWORDS], a_src, a_dst, prm[P_AGROUPS], prm[P_A_E4M3], emin, av, ah)
    _decode_op(bw, i * prm[P_BWORDS], b_src, b_dst, prm[P_BGROUPS], prm[P_B_E4M3], emin, bv, bh)

    cbase = i * prm[P_CWORDS]
    if prm[P_C_LAST]:                                  # the first HMMA starts from c = +0
        for m in range(M):
            f8_store(cv, m * N, f8_splat(0.0))
            f8_store(ch, m * N, f8_splat(0.0))
    else:
        _load_c(cw, cbase, c_src, c_sh, prm, cv, ch)
    _chain(prm, av, ah, bv, bh, cv, ch, eb, sv, dout)
    if prm[P_C_LAST]:                                  # FADD / HADD2: C + D, rounded to nearest even
        acc_mask = (np.int64(1) << (1 + acc_man + acc_ebits)) - 1
        for m in range(M):
            x, _ = _decode8(i8_load(dout, m * N), acc_code, acc_emin, False, True)
            cval, _ = _decode8(_c_words(cw, cbase, c_src, c_sh, m * N, acc_mask), acc_code, acc_emin, False, True)
            i8_store(dout, m * N, _round8(f8_add(cval, x), acc_man, acc_ebits, True, True))

    _store_d(dw, i * prm[P_DWORDS], dout, d_lo, d_hi, prm[P_DWORDS], acc_ebits)


@njit(inline="always")
def _decode_op32(words, base, src, dst, ngroups, e4m3, emin, vals, exps):
    """``_decode_op`` to float32 values and int32 nominal exponents, two groups at a time."""
    for g in range(0, ngroups, 2):
        w = w16_join(i8_gather(words, base, src, 8 * g), i8_gather(words, base, src, 8 * g + 8))
        for j in range(4):
            b = w16_byte(w, j)
            v = e4m3_val16(b) if e4m3 else e5m2_val16(b)
            e = s16_nexp(v, emin)
            o, p = dst[4 * g + j], dst[4 * g + 4 + j]
            s16_store8(vals, o, v, 0)
            s16_store8(vals, p, v, 1)
            w16_store8(exps, o, e, 0)
            w16_store8(exps, p, e, 1)


@njit(inline="always")
def _block8(y, ps, e, cv, first, F):
    """8 rows of a block's result, unrounded: c (unless ``first``: c = +0) scaled by 2**(F - E) and
    truncated, plus the int32 sum y of the truncated products, plus their float32 sum ps where that
    is Inf or NaN (as in the float64 sum, where such a term absorbs or poisons the finite ones),
    times 2**(E - F).  -0.0 adds nothing, not even to a zero's sign."""
    S = i8_to_f8(y)
    if not first:
        S = f8_add(f8_trunc(f8_mul(cv, f8_from_bits(i8_shl(i8_sub(_k(F + 1023), e), _k(52))))), S)
    S = f8_add(S, f8_where(f8_eq(f8_mul(ps, f8_splat(0.0)), f8_splat(0.0)), f8_splat(-0.0), ps))
    return f8_mul(S, f8_from_bits(i8_shl(i8_add(e, _k(1023 - F)), _k(52))))


@njit(inline="always")
def _rvalue(x, prm):
    """The value of ``_round8``'s word for 8 exact float64 values (zero signs dropped), in the float
    domain: x scaled to integers at the accumulator's ulp (2**(max(e, emin) - man)), rounded (RNE or
    toward zero), scaled back; beyond the largest finite value Inf.  The scalings are powers of two
    and the rounded integer is below 2**(man + 1), so all of it is exact."""
    man, ebits = prm[P_ACC_MAN], prm[P_ACC_EBITS]
    bias = (1 << (ebits - 1)) - 1
    qb = i8_sub(i8_max(i8_and(f8_bits(x), _k(EXP_MASK)), _k((1 - bias + 1023) << 52)), _k(man << 52))
    r = f8_mul(x, f8_from_bits(i8_sub(_k(2046 << 52), qb)))
    r = f8_roundeven(r) if prm[P_RNE] else f8_trunc(r)
    v = f8_add(f8_mul(r, f8_from_bits(qb)), f8_splat(0.0))
    top = _k(((bias + 1023) << 52) | (((1 << man) - 1) << (52 - man)))      # the largest finite value
    big = i8_lt(top, i8_and(f8_bits(v), _k(ABS_MASK)))
    return f8_where(big, f8_mul(v, f8_splat(np.inf)), v)


@njit(inline="always")
def _next_c(v, prm, ezero):
    """The exponent a block's rounded result brings to the next block's E_max as its c (e_zero for
    a zero c, SPEXP for Inf/NaN)."""
    e = i8_sub(i8_shr(i8_and(f8_bits(v), _k(EXP_MASK)), _k(52)), _k(1023))
    if not prm[P_C_EXACT]:
        e = i8_max(e, _k(prm[P_ACC_EMIN]))
    return i8_where(f8_eq(v, f8_splat(0.0)), _k(ezero), i8_min(e, _k(SPEXP)))


@njit(inline="always")
def _c_plus(x, cw, cbase, ct_src, ct_sh, o, acc_mask, prm):
    """FADD / HADD2 of C and 8 rows of the last block's rounded result, rounded to nearest even."""
    code, cemin, man, ebits = prm[P_ACC_CODE], prm[P_ACC_EMIN], prm[P_ACC_MAN], prm[P_ACC_EBITS]
    cval, _ = _decode8(_c_words(cw, cbase, ct_src, ct_sh, o, acc_mask), code, cemin, False, True)
    r = f8_add(cval, x)
    if man == 23:                                      # f32: the hardware conversion rounds so
        return i8_where(f8_eq(r, r), f8_to_f32_bits(r), _k(0x7FFFFFFF))
    return _round8(r, man, ebits, True, True)


@njit(inline="always")
def _warp16(i, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, ct_src, ct_sh, dt_lo, dt_hi, prm, a32, ea, b32, eb,
            cv, ce, dout):
    """``_warp`` column by column of D, its 16 rows in 32-bit lanes (``run`` says when): E_max as
    integer exponent sums, the products' truncated sum in int32, the columns block by block (their
    chains are independent), the rounded block results kept as float64 values until C is added.
    ``dout`` is column-major here."""
    K, L, F, ezero = prm[P_K], prm[P_L], prm[P_F], prm[P_EZERO]
    acc_mask = (np.int64(1) << (1 + prm[P_ACC_MAN] + prm[P_ACC_EBITS])) - 1
    emin = prm[P_IN_EMIN]
    _decode_op32(aw, i * prm[P_AWORDS], a_src, a_dst, prm[P_AGROUPS], prm[P_A_E4M3], emin, a32, ea)
    _decode_op32(bw, i * prm[P_BWORDS], b_src, b_dst, prm[P_BGROUPS], prm[P_B_E4M3], emin, b32, eb)
    # block by block over the columns, whose chains are independent (cv, ce: c's value and exponent,
    # column-major, between blocks)
    for k0 in range(0, K, L):
        first = k0 == 0
        for n in range(LANES):
            o = n * 16
            v0, v1 = f8_load(cv, o), f8_load(cv, o + 8)
            # E_max: a zero c (the first block's +0) brings e_zero; so may a zero product
            E = w16_splat(ezero) if first else w16_join(i8_load(ce, o), i8_load(ce, o + 8))
            zmin = w16_splat(0)
            for k in range(k0, k0 + L):
                s = w16_add(w16_load(ea, k * 16), w16_bcast(eb, k * LANES + n))
                E = w16_max(E, s)
                zmin = w16_min(zmin, s)
            e0, e1 = w16_lo(E), w16_hi(E)
            if not first:
                e0 = i8_where(i8_and(i8_lt(w16_lo(zmin), _k(ZERO_EXP // 2)), i8_lt(e0, _k(ezero))), _k(ezero), e0)
                e1 = i8_where(i8_and(i8_lt(w16_hi(zmin), _k(ZERO_EXP // 2)), i8_lt(e1, _k(ezero))), _k(ezero), e1)
                E = w16_join(e0, e1)
            # 2**(F - E) in float32: E below F - 127 has only zero products; from F + 32 on (an Inf/NaN
            # term's) every finite product (below 2**32) truncates to 0, and does so at 2**-32 too,
            # where none of them is a subnormal float32 (slow on x86)
            t = w16_pow2(w16_sub(w16_splat(F + 127), w16_min(w16_max(E, w16_splat(F - 127)), w16_splat(F + 32))))
            y = w16_splat(0)
            ps = s16_zero()
            for k in range(k0, k0 + L):
                p = s16_mul(s16_load(a32, k * 16), s16_bcast(b32, k * LANES + n))
                ps = s16_add(ps, p)
                y = w16_add(y, s16_trunc(s16_mul(p, t)))
            v0 = _rvalue(_block8(w16_lo(y), s16_lo(ps), e0, v0, first, F), prm)
            v1 = _rvalue(_block8(w16_hi(y), s16_hi(ps), e1, v1, first, F), prm)
            f8_store(cv, o, v0)
            f8_store(cv, o + 8, v1)
            if k0 + L < K:
                i8_store(ce, o, _next_c(v0, prm, ezero))
                i8_store(ce, o + 8, _next_c(v1, prm, ezero))
    cbase = i * prm[P_CWORDS]
    for o in range(0, 16 * LANES, LANES):
        i8_store(dout, o, _c_plus(f8_load(cv, o), cw, cbase, ct_src, ct_sh, o, acc_mask, prm))

    _store_d(dw, i * prm[P_DWORDS], dout, dt_lo, dt_hi, prm[P_DWORDS], prm[P_ACC_EBITS])


@njit(cache=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit its private _nrt option
def _run_range(lo, hi, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, ct, prm,
               av, ah, bv, bh, cv, ch, eb, sv, dout, s32):
    # No reference counting in the warp loop (_nrt=False), as in the float kernel.
    if prm[P_LANES16]:
        a32, ea32, b32, eb32 = s32
        for i in range(lo, hi):
            _warp16(i, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, ct[0], ct[1], ct[2], ct[3], prm,
                    a32, ea32, b32, eb32, cv, eb, dout)
    else:
        for i in range(lo, hi):
            _warp(i, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, prm,
                  av, ah, bv, bh, cv, ch, eb, sv, dout)


@njit(inline="always")
def _scratch32(prm):
    K = prm[P_K]
    return (np.empty(K * prm[P_M], np.float32), np.empty(K * prm[P_M], np.int32),
            np.empty(K * LANES, np.float32), np.empty(K * LANES, np.int32))


@njit(cache=True)
def _run_serial(aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, ct, prm):
    av, ah, bv, bh, cv, ch, eb, sv, dout = _scratch(prm)
    _run_range(0, dw.size // prm[P_DWORDS], aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh,
               d_lo, d_hi, ct, prm, av, ah, bv, bh, cv, ch, eb, sv, dout, _scratch32(prm))


@njit(cache=True, parallel=True)
def _run_parallel(nchunks, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst, c_src, c_sh, d_lo, d_hi, ct, prm):
    n = dw.size // prm[P_DWORDS]
    for t in prange(nchunks):
        av, ah, bv, bh, cv, ch, eb, sv, dout = _scratch(prm)
        _run_range(t * n // nchunks, (t + 1) * n // nchunks, aw, bw, cw, dw, a_src, a_dst, b_src, b_dst,
                   c_src, c_sh, d_lo, d_hi, ct, prm, av, ah, bv, bh, cv, ch, eb, sv, dout, _scratch32(prm))


def run(pl, maps, groups, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) uint32 of an ``Fp8Plan`` from register batches (batch, 32*nregs);
    ``maps``: the index maps of its virtual f16 form (C and D), ``groups``: ``fragsim.arith.fp8.byte_groups``
    of the plan (A and B)."""
    import numba

    batch = a.shape[0]
    f = pl.form
    nd = f.nregs("D")
    d = np.empty(batch * WARP_LANES * nd, np.uint32)
    prm = make_params(pl.inner, maps)
    prm[[P_AWORDS, P_BWORDS]] = WARP_LANES * f.nregs("A"), WARP_LANES * f.nregs("B")
    M, N, K = f.shape
    L, F = prm[P_L], prm[P_F]
    # the 32-bit lanes hold a column of 16 rows (and decode two groups of bytes at once), a block of L
    # terms below 2**(F + 2) each in int32; they need C last (the first block from c = +0) and zero
    # results without sign (the int32 sum has none)
    lanes16 = bool(pl.c_last and M == 16 and K % L == 0 and L << (F + 2) <= 1 << 31 and not prm[P_ZERO_IEEE]
                   and groups["a_dst"].size % 8 == 0 and groups["b_dst"].size % 8 == 0)
    prm = np.append(prm, np.array([pl.c_last, f.types["A"] == "e4m3", f.types["B"] == "e4m3",
                                   groups["a_dst"].size // 4, groups["b_dst"].size // 4, lanes16], np.int64))
    a, b, c = (np.require(x.reshape(-1), np.uint32, ("C", "A", "W")) for x in (a, b, c))
    # C's and D's maps column-major (element (m, n) at n*M + m) for the 32-bit lanes
    col = np.arange(M * N).reshape(N, M).T.ravel()            # column-major index of row-major (m, n)
    ct = (maps["c_src"][col.argsort()], maps["c_sh"][col.argsort()], col[maps["d_lo"]], col[maps["d_hi"]])
    args = (a, b, c, d, groups["a_src"], groups["a_dst"], groups["b_src"], groups["b_dst"],
            maps["c_src"], maps["c_sh"], maps["d_lo"], maps["d_hi"],
            tuple(np.ascontiguousarray(x, np.int64) for x in ct), prm)
    threads = numba.get_num_threads()
    if parallel and threads > 1 and batch >= 2 * threads:
        _run_parallel(min(batch, 8 * threads), *args)
    else:
        _run_serial(*args)
    return d.reshape(batch, WARP_LANES, nd)
