"""numba kernel of ``fragsim.mma`` for the m16n8 forms of the float model: a column of D per vector.

The same arithmetic as ``fragsim.arith.kernel`` (its ``_round8`` too), laid out for
sixteen 32-bit lanes: one vector is a column of D's 16 rows, A is read by columns (a k of every row),
and an element of B -- one k of one column -- is a scalar broadcast to the 16 rows.  Per warp, from the
registers in place (``fragsim.arith.gather.column_maps``: the gathers come from the form's fragment maps):

* decode: a gather of 16 register words gives two k of A (or, for B, one k of 8 columns twice); each
  element is decoded once, to its value and its nominal exponent max(floor(log2|x|), emin) (Inf/NaN
  SPEXP, a zero ZERO_EXP: a product with a zero factor lies below ZERO_EXP // 2); f16 and bf16 words
  both halves at once, in 16-bit lanes, from their exponent fields.
* E_max: the maximum of exponent sums, a pair of columns at once in 16-bit halves; with c's, and
  e_zero where a zero term decides it.
* the truncated sum.  f16 inputs, and the bf16 and tf32 ones of a warp whose nonzero products all lie
  between 2**(F - 127) and 2**126 with no Inf or NaN among them (what GEMM data gives): a product is
  exact in float32 and so is its scaling to the block's fixed point (2**(F - E), E clamped where that
  changes no term), truncated to int32 (cvttps2dq), the at most 16 terms of a block below 2**(F + 2)
  each summed in int32.  Other bf16 and tf32 warps (products up to 2**256): the products in float64
  (exact), scaled, truncated to int64 and summed there.
* c's term and the rounding (``_finish32``), in 32-bit lanes where the int32 sum holds them and the
  result is normal: c's truncated term by subtracting E - F from its exponent field, the sum
  converted toward zero to float32 (binary32, RZ: exact, then scaled by 2**(E - F)) or with a sticky
  bit for the CPU's binary16 RNE conversion.  Lanes with an Inf or NaN term take its class (f16: the
  products' float sum plus c).  Otherwise, and for the open-choice roundings, float64 (``_words``:
  normal results, zero, Inf and NaN directly, subnormal ones by ``kernel._round8``).  A block's
  rounded result is the next block's c.
* D: the column results dealt to the registers by a gather per 16 words.  (Streaming stores gained a
  few % here but left ``fragsim run``, which reads D straight back, reading it from memory.)

Specialised per configuration (``compiled``: input format, accumulator, rounding, K, block length;
the loops unroll, the other formats' code goes): numba compiles each once, on first use (a few
seconds), and caches it on disk.
``supports`` says which plans it computes; the others (and the chained-f16, fp8, integer and f64
forms) run ``kernel``'s and the other kernels' code.  ``fragsim.mma`` imports this module on first use.
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np
from numba import njit

from fragsim.facts.hardware import WARP_LANES
from .kernel import (ABS_MASK, BF16, EXP_MASK, F16, LANES, P_ACC_EMIN, P_AWORDS, P_BWORDS, P_C_EXACT, P_CWORDS,
                     P_DWORDS, P_EZERO, P_F, P_IN_EMIN, P_NAN_LOW, SPEXP, TF32, FMT_CODE, _round8,
                     plan_params)
from .simd import (f8_add, f8_bcast, f8_bits, f8_eq, f8_from_bits, f8_load, f8_mul, f8_splat, f8_store, f8_to_i8,
                   f8_trunc, f8_where, i8_add, i8_and, i8_any, i8_max, i8_min, i8_or, i8_shl, i8_shr,
                   i8_splat, i8_sub, i8_to_f8, i8_ult, i8_where)
from .simd16 import (w16_hmax, w16_huminu, w16_minu, h32_add, h32_bcast, h32_dup, h32_dup_hi, h32_eq, h32_hi, h32_lo,
                     h32_max, h32_minu, h32_shr, h32_store16, h32_sub, h32_where, s16_add,
                     s16_bcast, s16_bits, s16_from_bits, s16_from_f16, s16_hi, s16_join, s16_lo, s16_load, s16_mul, s16_store,
                     s16_trunc, s16_zero, w16_add, w16_and, w16_any, w16_ctlz, w16_eq, w16_gather, w16_hi,
                     w16_join, w16_lo, w16_load, w16_lt, w16_max, w16_min, w16_or, w16_pow2, w16_shl, w16_shr,
                     w16_splat, w16_store, w16_sub, w16_where, w16_xor, w16_float_rz, s16_to_f16)

# Hash of the sources this file compiles in (listed in fragsim.arith.stamps.KERNELS).  numba keys
# its disk cache on this file's content only: after editing one of them run
# `python -m fragsim.arith.stamps` (tests/test_numba_cache_key.py fails until then).
INLINED_SOURCE_HASH = "37a49e96e61134c5d153e3d031f4602ccceb5bebf9a3abb2fc1ca8a926001348"

ROWS = 16            # rows of D in a vector
MAX_BLOCKS = 4       # blocks of a K at most (K / L)
PER_THREAD = 64      # warps below which another thread costs more than it saves
ZERO_EXP = -8192     # a zero's exponent: a product with a zero factor lies below ZERO_EXP // 2
NONE = (1 << 32) - 1  # _decode's least exponent of an operand whose every element is zero
SIGN = ~ABS_MASK


# --- decoding -----------------------------------------------------------------------------------

@njit(_nrt=False)  # type: ignore[call-overload]
def _value16(w, h, code, nan_low):
    """The exact float32 values of element h of 16 register words (format ``code``; tf32 words lose
    their low 13 bits first, ``nan_low``: unless those make a NaN of an all-ones exponent)."""
    if code == F16:
        return s16_from_f16(w if h == 0 else w16_shr(w, w16_splat(16)))
    if code == BF16:
        return s16_from_bits(w16_shl(w, w16_splat(16)) if h == 0 else w16_and(w, w16_splat(-65536)))
    if code == TF32:
        v = w16_and(w, w16_splat(-8192))
        if nan_low:
            lownan = w16_and(w16_eq(w16_and(w, w16_splat(0x7F800000)), w16_splat(0x7F800000)),
                             w16_lt(w16_splat(0), w16_and(w, w16_splat(0x1FFF))))
            v = w16_where(lownan, w16_splat(0x7FC00000), v)
        return s16_from_bits(v)
    return s16_from_bits(w)                             # f32


@njit(_nrt=False)  # type: ignore[call-overload]
def _nexp16(bits, emin, exact):
    """Nominal exponents of 16 float32 values (their bits): max(floor(log2|x|), emin) (no emin clamp
    when ``exact``), ZERO_EXP for a zero, SPEXP for Inf/NaN -- ``kernel._decode8``'s hat, by integer
    operations only (x86 runs float32 arithmetic on subnormals in microcode)."""
    field = w16_and(w16_shr(bits, w16_splat(23)), w16_splat(0xFF))
    e = w16_sub(field, w16_splat(127))
    if exact:           # a subnormal: its mantissa times 2**-149
        sub = w16_sub(w16_splat(-118), w16_ctlz(w16_and(bits, w16_splat(0x7FFFFF))))
        e = w16_where(w16_eq(field, w16_splat(0)), sub, e)
    else:
        e = w16_max(e, w16_splat(emin))
    return w16_where(w16_eq(w16_and(bits, w16_splat(0x7FFFFFFF)), w16_splat(0)), w16_splat(ZERO_EXP), e)


@njit(inline="always")
def _decode(words, base, src, slot, nvec, epr, code, emin, nan_low, v32, pairs, is_a):
    """Decode the ``nvec`` gathers of an operand (``src``): element h of gather u goes to position
    16 * slot[u * epr + h] of ``v32`` (float32 values), its exponent as a 16-bit number to ``pairs`` (A: each
    twice, at 16 * slot in an int32 array; B: 16 int16 at that position).  Returns, by lane (a register
    word), the largest exponent (an Inf or NaN's is SPEXP) and the least of a nonzero element less
    ZERO_EXP + 1 (unsigned: 2**32 - 1 where every element is zero).  The 16-bit formats take both
    elements of a word at once in 16-bit lanes, from the fields of the words themselves."""
    if epr == 2:
        return _decode_pairs(words, base, src, slot, nvec, code, emin, v32, pairs, is_a)
    top = w16_splat(ZERO_EXP)
    least = w16_splat(-1)       # unsigned: exponents less ZERO_EXP + 1, a zero's the largest
    for u in range(nvec):
        v = _value16(w16_gather(words, base, src, u * ROWS), 0, code, nan_low)
        e = _nexp16(s16_bits(v), emin, False)
        top = w16_max(top, e)
        least = w16_minu(least, w16_sub(e, w16_splat(ZERO_EXP + 1)))
        o = slot[u] * ROWS
        if is_a:
            w16_store(pairs, o, h32_dup(e))
        else:
            h32_store16(pairs, o, e)
        s16_store(v32, o, v)
    return top, least


@njit(inline="always")
def _h(x):
    """x in both 16-bit halves of every lane."""
    return w16_splat(((x & 0xFFFF) << 16) | (x & 0xFFFF))


@njit(inline="always")
def _decode_pairs(words, base, src, slot, nvec, code, emin, v32, pairs, is_a):
    """``_decode`` of binary16 and bfloat16 words: a word's two elements' nominal exponents in its 16-bit
    halves, max(field - bias, emin) (a subnormal's field 0 gives emin), ZERO_EXP for a zero, SPEXP for
    Inf/NaN -- ``_nexp16`` of their float32 values."""
    shift, field_max, bias = (10, 0x1F, 15) if code == F16 else (7, 0xFF, 127)
    top = _h(ZERO_EXP)
    least = _h(-1)
    for u in range(nvec):
        w = w16_gather(words, base, src, u * ROWS)
        field = w16_and(h32_shr(w, _h(shift)), _h(field_max))
        e = h32_max(h32_sub(field, _h(bias)), _h(emin))
        e = h32_where(h32_eq(w16_and(w, _h(0x7FFF)), _h(0)), _h(ZERO_EXP), e)
        e = h32_where(h32_eq(field, _h(field_max)), _h(SPEXP), e)
        top = h32_max(top, e)
        least = h32_minu(least, h32_sub(e, _h(ZERO_EXP + 1)))
        o0, o1 = slot[2 * u] * ROWS, slot[2 * u + 1] * ROWS
        s16_store(v32, o0, _value16(w, 0, code, False))
        s16_store(v32, o1, _value16(w, 1, code, False))
        if is_a:
            w16_store(pairs, o0, h32_dup(e))
            w16_store(pairs, o1, h32_dup_hi(e))
        else:
            h32_store16(pairs, o0, e)
            h32_store16(pairs, o1, w16_shr(e, w16_splat(16)))
    lo, hi = w16_and(least, w16_splat(0xFFFF)), w16_shr(least, w16_splat(16))
    least = w16_minu(lo, hi)
    return w16_max(h32_lo(top), h32_hi(top)), w16_or(least, w16_eq(least, w16_splat(0xFFFF)))


@njit(_nrt=False)  # type: ignore[call-overload]
def _widen(v32, v64, n):
    """v64[:n] = v32[:n] in float64."""
    for o in range(0, n, ROWS):
        v = s16_load(v32, o)
        f8_store(v64, o, s16_lo(v))
        f8_store(v64, o + LANES, s16_hi(v))


# --- the block arithmetic of one column -----------------------------------------------------------

@njit(inline="always")
def _emax2(ae2, be16, n, s0, s1):
    """The maximum exponent sum of the products of columns n and n + 1 (n even) over slots s0..s1-1,
    both columns at once in 16-bit halves (low: column n); sign-extended to 32 bits."""
    E = h32_add(w16_load(ae2, s0 * ROWS), h32_bcast(be16, s0 * LANES + n))
    for s in range(s0 + 1, s1):
        E = h32_max(E, h32_add(w16_load(ae2, s * ROWS), h32_bcast(be16, s * LANES + n)))
    return h32_lo(E), h32_hi(E)


@njit(_nrt=False)  # type: ignore[call-overload]
def _emax(E, ae2, be16, n, s0, s1, ce, ezero):
    """E_max of column n from its products' maximum exponent sum E and c's exponent ce; e_zero where a
    zero term (ZERO_EXP sums, or c zero) is there and everything else lies below it."""
    E = w16_max(E, ce)
    low = w16_lt(E, w16_splat(ezero))
    if w16_any(low):
        zero = w16_eq(ce, w16_splat(ZERO_EXP))
        for s in range(s0, s1):
            zero = w16_or(zero, w16_lt(w16_add(h32_lo(w16_load(ae2, s * ROWS)), w16_splat(np.int32(be16[s * LANES + n]))),
                                       w16_splat(ZERO_EXP // 2)))
        E = w16_where(w16_and(low, zero), w16_splat(ezero), E)
    return E


@njit(_nrt=False)  # type: ignore[call-overload]
def _sc(e, F):
    """2**(F - e) (float64 bits built from the int64 lanes e)."""
    return f8_from_bits(i8_shl(i8_sub(i8_splat(F + 1023), e), i8_splat(52)))


@njit(_nrt=False)  # type: ignore[call-overload]
def _unsc(sc):
    """2**(e - F), the inverse of ``_sc``'s power of two."""
    return f8_from_bits(i8_sub(i8_splat(2046 << 52), f8_bits(sc)))


@njit(inline="always")
def _scale32(E, F, top):
    """2**(F - E) in float32: E below F - 127 has only zero products (f16 ones lie above 2**-48, tame ones
    above 2**(F - 127)); from top on, the scale of top gives every finite product's 0 too."""
    return w16_pow2(w16_sub(w16_splat(F + 127), w16_min(w16_max(E, w16_splat(F - 127)), w16_splat(top))))


@njit(inline="always")
def _sum32x2(av, bv, n, s0, s1, E, E1, F, top):
    """``_sum32`` of columns n and n + 1 at once (no float sums): each A vector loaded once."""
    t, t1 = _scale32(E, F, top), _scale32(E1, F, top)
    y, y1 = w16_splat(0), w16_splat(0)
    for s in range(s0, s1):
        a = s16_load(av, s * ROWS)
        y = w16_add(y, s16_trunc(s16_mul(s16_mul(a, s16_bcast(bv, s * LANES + n)), t)))
        y1 = w16_add(y1, s16_trunc(s16_mul(s16_mul(a, s16_bcast(bv, s * LANES + n + 1)), t1)))
    return y, y1


@njit(inline="always")
def _sum32(av, bv, n, s0, s1, E, F, top, special):
    """The products of a column (float32 exact: f16 inputs, or bf16/tf32 ones in range) scaled by
    2**(F - E), truncated and summed in int32; and, when ``special`` (an Inf or NaN input), their float32
    sum (else zeros).  ``top``: an E from which every finite product truncates to 0."""
    t = _scale32(E, F, top)
    y = w16_splat(0)
    ps = s16_zero()
    if special:
        pt = s16_zero()
        for s in range(s0, s1, 2):
            p = s16_mul(s16_load(av, s * ROWS), s16_bcast(bv, s * LANES + n))
            q = s16_mul(s16_load(av, s * ROWS + ROWS), s16_bcast(bv, s * LANES + LANES + n))
            y = w16_add(y, w16_add(s16_trunc(s16_mul(p, t)), s16_trunc(s16_mul(q, t))))
            ps = s16_add(ps, p)
            pt = s16_add(pt, q)
        ps = s16_add(ps, pt)
    else:
        for s in range(s0, s1):
            y = w16_add(y, s16_trunc(s16_mul(s16_mul(s16_load(av, s * ROWS), s16_bcast(bv, s * LANES + n)), t)))
    return y, ps


@njit(inline="always")
def _sum64(a64, b64, h, n, s0, s1, sc, special):
    """The products of 8 rows of a column (bf16, tf32 inputs: exact in float64) scaled by ``sc`` =
    2**(F - E), truncated and summed in int64; and, when ``special`` (an Inf or NaN input), their float64
    sum (else zeros)."""
    t0 = i8_splat(0)
    t1 = i8_splat(0)
    ps = f8_splat(0.0)
    pt = f8_splat(0.0)
    for s in range(s0, s1, 2):
        p = f8_mul(f8_load(a64, s * ROWS + h), f8_bcast(b64, s * LANES + n))
        q = f8_mul(f8_load(a64, s * ROWS + ROWS + h), f8_bcast(b64, s * LANES + LANES + n))
        t0 = i8_add(t0, f8_to_i8(f8_mul(p, sc)))
        t1 = i8_add(t1, f8_to_i8(f8_mul(q, sc)))
        if special:
            ps = f8_add(ps, p)
            pt = f8_add(pt, q)
    return i8_add(t0, t1), f8_add(ps, pt)


@njit(_nrt=False)  # type: ignore[call-overload]
def _half(t, ps, c, sc, special):
    """S of 8 rows: c's truncated term plus the products' truncated sum t, or the products' float sum
    ps where that is Inf or NaN (a term that absorbs or poisons the finite ones, as in kernel.py's
    float64 sum; finite, ps says nothing)."""
    S = f8_add(f8_trunc(f8_mul(c, sc)), i8_to_f8(t))
    if special:
        S = f8_add(S, f8_where(f8_eq(f8_mul(ps, f8_splat(0.0)), f8_splat(0.0)), f8_splat(0.0), ps))
    return S


@njit(_nrt=False)  # type: ignore[call-overload]  # numba's stubs omit its private _nrt option
def _round8_out(x, man, ebits, rne):
    """``kernel._round8`` (zero +0), compiled apart: the rare subnormal results need no copy inlined."""
    return _round8(x, man, ebits, rne, False)


@njit(_nrt=False)  # type: ignore[call-overload]
def _subnormal(x, bias):
    """Whether a lane of 8 float64 values lies strictly between 0 and the format's smallest normal."""
    ab = i8_and(f8_bits(x), i8_splat(ABS_MASK))
    return i8_any(i8_ult(i8_sub(ab, i8_splat(1)), i8_splat(((1 - bias + 1023) << 52) - 1)))


@njit(_nrt=False)  # type: ignore[call-overload]
def _f16word(x, man, ebits, rne, special):
    """``_words`` for binary16 (and any format but binary32): the word from x's bits rounded at the
    format's last place (RNE adds half an ulp less one plus the kept lsb; a carry rolls into the
    exponent), Inf beyond the largest finite value."""
    b = f8_bits(x)
    ab = i8_and(b, i8_splat(ABS_MASK))
    bias = (1 << (ebits - 1)) - 1
    drop = 52 - man
    r = ab
    if rne:
        r = i8_add(r, i8_add(i8_splat((1 << (drop - 1)) - 1), i8_and(i8_shr(ab, i8_splat(drop)), i8_splat(1))))
    w = i8_sub(i8_shr(r, i8_splat(drop)), i8_splat((1023 - bias) << man))        # zero: negative, then 0
    w = i8_min(i8_max(w, i8_splat(0)), i8_splat(((1 << ebits) - 1) << man))     # beyond the largest finite: Inf
    w = i8_or(w, i8_and(i8_shr(b, i8_splat(63 - man - ebits)), i8_splat(1 << (man + ebits))))
    if special:
        w = i8_where(i8_ult(i8_splat(EXP_MASK), ab), i8_splat((1 << (man + ebits)) - 1), w)
    return w


@njit(_nrt=False)  # type: ignore[call-overload]
def _words(x0, x1, man, ebits, rne, tiny, special):
    """``kernel._round8(x, man, ebits, rne, zero_ieee=False)`` of a column's 16 exact float64 values (two
    F8), as 16 words.  A zero here is +0 (c's truncated term plus an int sum).  ``tiny``: a lane may be a
    subnormal of the format -- then, if one is, ``_round8`` itself.  ``special``: a lane may be Inf or
    NaN.  binary32: RZ drops the bits below the last place, and the conversion (RNE, exact after RZ)
    gives the word, Inf beyond the range; a NaN with every payload bit set converts to the canonical
    NaN."""
    bias = (1 << (ebits - 1)) - 1
    if tiny and (_subnormal(x0, bias) or _subnormal(x1, bias)):
        return w16_join(_round8_out(x0, man, ebits, rne), _round8_out(x1, man, ebits, rne))
    if ebits != 8:
        return w16_join(_f16word(x0, man, ebits, rne, special), _f16word(x1, man, ebits, rne, special))
    if special:
        nan = f8_from_bits(i8_splat(ABS_MASK))
        x0 = f8_where(f8_eq(x0, x0), x0, nan)
        x1 = f8_where(f8_eq(x1, x1), x1, nan)
    if not rne:
        keep = i8_splat(~((1 << (52 - man)) - 1))
        x0 = f8_from_bits(i8_and(f8_bits(x0), keep))
        x1 = f8_from_bits(i8_and(f8_bits(x1), keep))
    return s16_bits(s16_join(x0, x1))


# --- a warp ------------------------------------------------------------------------------------

@njit(inline="always")
def _c_term(cbits, d):
    """c's truncated term trunc(c * 2**(F - E)) from its float32 bits and d = (E - F) << 23: the scaling
    as a subtraction from the exponent field, exact where the result is a normal number.  A result
    below 1 truncates to 0 whatever it is: those, and c = 0, subnormal c and exponents that leave the
    field, all give bits below 1.0's (E >= c's exponent keeps the result below 2**(F + 1), and the
    caller's E >= F - 126 keeps d above -(126 << 23))."""
    nb = w16_sub(w16_and(cbits, w16_splat(0x7FFFFFFF)), d)
    t = s16_trunc(s16_from_bits(w16_or(nb, w16_and(cbits, w16_splat(-(1 << 31))))))
    return w16_and(t, w16_lt(w16_splat(0x3F7FFFFF), nb))


@njit(inline="always")
def _finish32(S, d, f16acc):
    """The words of a column's block results S * 2**(E - F) (S: int32, exact; d = (E - F) << 23),
    rounded to the accumulator: binary32 toward zero -- S converted toward zero, exact in float32, times
    the power of two (exact for a normal result: the caller checks E; Inf beyond the range); binary16 to
    nearest even -- the same float32 with its last bit set where bits were dropped (a sticky bit 13 places
    below binary16's last one), then the CPU's IEEE conversion (subnormal results and overflow to Inf
    included; a zero is +0, as the float64 path's)."""
    f = w16_float_rz(S)
    if f16acc:      # |f| <= |S| < 2**31: its integer conversion is exact
        f = s16_from_bits(w16_or(s16_bits(f), w16_add(w16_eq(s16_trunc(f), S), w16_splat(1))))
    v = s16_mul(f, s16_from_bits(w16_add(d, w16_splat(127 << 23))))
    if f16acc:      # a negative sum too small for binary16 rounds to the model's zero, +0 (IEEE's is -0)
        h = s16_to_f16(v)
        return w16_where(w16_eq(h, w16_splat(0x8000)), w16_splat(0), h)
    return s16_bits(v)


@njit(inline="always")
def _special(xb, f16acc):
    """The accumulator word of an Inf or NaN result (float32 bits): the Inf itself, the canonical NaN."""
    nan = w16_lt(w16_splat(0x7F800000), w16_and(xb, w16_splat(0x7FFFFFFF)))
    if f16acc:
        return w16_where(nan, w16_splat(0x7FFF), w16_or(w16_and(w16_shr(xb, w16_splat(16)), w16_splat(0x8000)),
                                                          w16_splat(0x7C00)))
    return w16_where(nan, w16_splat(0x7FFFFFFF), xb)


@njit(inline="always")
def _column(n, s0, s1, E, c32, ce, av, bv, a64, b64, aspec, bs, tame, code, f16acc, rne, F, acc_emin, y_pre, pre):
    """The block s0..s1-1 of column n from its E_max and c (float32 values, exponents): the words of its
    16 results.  ``pre``: ``y_pre`` holds its products' truncated sum already (a tame column whose float
    sum says nothing: no Inf or NaN in A or this column of B)."""
    man, ebits = (10, 5) if f16acc else (23, 8)
    # a result is a subnormal of the accumulator (or rounds to zero) only below 2**emin: its S (an
    # integer) times 2**(E - F) lies below that only where E < F + emin (binary16: check the results)
    tiny = f16acc or w16_any(w16_lt(E, w16_splat(F + acc_emin)))
    # one flag for the column: an Inf or NaN among A's, this column of B's or C's elements
    sp = aspec or bs or w16_any(w16_eq(ce, w16_splat(SPEXP)))
    if tame:
        # products below 2**32 (f16) or 2**126 (tame): from F + 32 / F + 126 on every one truncates to 0.
        # Their float sum only where it can say something: f16's (a tame warp's A and B hold no Inf or
        # NaN, and its finite float32 sum could overflow)
        if pre:
            y, ps = y_pre, s16_zero()
        else:
            y, ps = _sum32(av, bv, n, s0, s1, E, F, F + 32 if code == F16 else F + 126, sp and code == F16)
        # terms whose sum S fits int32, a normal binary32 result: S and its rounding in 32 bits; the
        # lanes with an Inf or NaN term take the class of the products' float sum plus c
        if (rne and f16acc) or not (rne or f16acc or tiny):     # binary16 RNE, binary32 RZ (the hardware's)
            d = w16_shl(w16_sub(E, w16_splat(F)), w16_splat(23))
            ct = _c_term(s16_bits(c32), d)
            S = w16_add(y, ct)
            over = w16_lt(w16_and(w16_xor(y, S), w16_xor(ct, S)), w16_splat(0))
            if sp:
                xb = s16_bits(s16_add(ps, c32) if code == F16 else c32)
                finite = w16_lt(w16_and(xb, w16_splat(0x7F800000)), w16_splat(0x7F800000))
                over = w16_and(over, finite)
            if not w16_any(over):
                w = _finish32(S, d, f16acc)
                return w16_where(finite, w, _special(xb, f16acc)) if sp else w
        t0, t1, p0, p1 = w16_lo(y), w16_hi(y), s16_lo(ps), s16_hi(ps)
    e0, e1 = w16_lo(E), w16_hi(E)
    sc0, sc1 = _sc(e0, F), _sc(e1, F)
    if not tame:
        t0, p0 = _sum64(a64, b64, 0, n, s0, s1, sc0, sp)
        t1, p1 = _sum64(a64, b64, LANES, n, s0, s1, sc1, sp)
    c0, c1 = s16_lo(c32), s16_hi(c32)
    return _words(f8_mul(_half(t0, p0, c0, sc0, sp), _unsc(sc0)), f8_mul(_half(t1, p1, c1, sc1, sp), _unsc(sc1)),
                  man, ebits, rne, tiny, sp)


@njit(_nrt=False)  # type: ignore[call-overload]
def _c16(cw, cbase, c_src, c_sh, n, f16acc, acc_emin, c_exact):
    """Column n of C: its nominal exponents and float32 values."""
    w = w16_gather(cw, cbase, c_src, n * ROWS)
    return _next_c(w16_shr(w, w16_load(c_sh, n * ROWS)) if f16acc else w, f16acc, acc_emin, c_exact)


@njit(_nrt=False)  # type: ignore[call-overload]
def _next_c(w, f16acc, acc_emin, c_exact):
    """Accumulator words (binary16: in the low 16 bits) as a block's c: nominal exponents and float32
    values -- a block's rounded results are the next block's c."""
    c32 = s16_from_f16(w) if f16acc else s16_from_bits(w)
    return _nexp16(s16_bits(c32), acc_emin, c_exact), c32


@njit(inline="always")
def _warp(i, aw, bw, cw, dw, a_src, b_src, slot, b_slot, c_src, c_sh, d_lo, d_hi, prm, code, f16acc, rne, K, L,
          av, ae2, bv, be16, a64, b64, bsp, dout):
    wide = code != F16
    epr = 1 if code == TF32 else 2
    F, ezero, acc_emin, c_exact = prm[P_F], prm[P_EZERO], prm[P_ACC_EMIN], prm[P_C_EXACT] != 0

    atop, aleast = _decode(aw, i * prm[P_AWORDS], a_src, slot, K // epr, epr, code, prm[P_IN_EMIN],
                           prm[P_NAN_LOW], av, ae2, True)
    btop, bleast = _decode(bw, i * prm[P_BWORDS], b_src, b_slot, K // (2 * epr), epr, code, prm[P_IN_EMIN],
                           prm[P_NAN_LOW], bv, be16, False)
    w16_store(bsp, 0, w16_eq(btop, w16_splat(SPEXP)))
    aspec = w16_any(w16_eq(atop, w16_splat(SPEXP)))
    # bf16, tf32: the float32 products (f16's) where they are exact and scale without over- or underflow:
    # every nonzero product between 2**(F - 127) and 2**126 (no Inf or NaN input either: SPEXP is 128)
    tame = not wide
    if wide:
        # first lane by lane (no horizontal reductions): every element zero or of an exponent within
        # [-low, 62] -- nonzero products then lie within [2**(F - 127), 2**126); else exactly
        low = (127 - F) // 2
        tame = not w16_any(w16_or(w16_lt(w16_splat(62), w16_max(atop, btop)),
                                  w16_lt(w16_minu(w16_minu(aleast, bleast), w16_splat(-low - ZERO_EXP - 1)),
                                         w16_splat(-low - ZERO_EXP - 1))))
        if not tame:
            la, lb = w16_huminu(aleast), w16_huminu(bleast)      # 2**32 - 1: every element zero
            # (no Inf or NaN either, even where the other operand is all zeros: their products are NaN)
            ta, tb = w16_hmax(atop), w16_hmax(btop)
            tame = (ta + tb <= 124 and max(ta, tb) < SPEXP
                    and (la == NONE or lb == NONE or la + lb + 2 * (ZERO_EXP + 1) >= F - 127))
        if not tame:
            _widen(av, a64, K * ROWS)
            _widen(bv, b64, K * LANES)

    cbase = i * prm[P_CWORDS]
    for n in range(0, LANES, 2):        # a pair of columns: E_max of both at once
        ce, c32 = _c16(cw, cbase, c_src, c_sh, n, f16acc, acc_emin, c_exact)
        ce1, c321 = _c16(cw, cbase, c_src, c_sh, n + 1, f16acc, acc_emin, c_exact)
        bs = bsp[n] != 0 or bsp[n + LANES] != 0     # column n of B holds an Inf or NaN
        bs1 = bsp[n + 1] != 0 or bsp[n + 1 + LANES] != 0
        for s0 in range(0, K, L):
            E, E1 = _emax2(ae2, be16, n, s0, s0 + L)
            E = _emax(E, ae2, be16, n, s0, s0 + L, ce, ezero)
            E1 = _emax(E1, ae2, be16, n + 1, s0, s0 + L, ce1, ezero)
            # both columns' products in one loop where neither needs their float sum
            pre = tame and not (aspec or bs or bs1)
            y, y1 = (_sum32x2(av, bv, n, s0, s0 + L, E, E1, F, F + 32 if code == F16 else F + 126) if pre
                     else (w16_splat(0), w16_splat(0)))
            w = _column(n, s0, s0 + L, E, c32, ce, av, bv, a64, b64, aspec, bs, tame, code, f16acc, rne, F,
                        acc_emin, y, pre)
            w1 = _column(n + 1, s0, s0 + L, E1, c321, ce1, av, bv, a64, b64, aspec, bs1, tame, code, f16acc, rne,
                         F, acc_emin, y1, pre)
            if s0 + L < K:      # the rounded block results are the next block's c
                ce, c32 = _next_c(w, f16acc, acc_emin, c_exact)
                ce1, c321 = _next_c(w1, f16acc, acc_emin, c_exact)
            else:
                w16_store(dout, n * ROWS, w)
                w16_store(dout, n * ROWS + ROWS, w1)

    dbase = i * prm[P_DWORDS]
    for r in range(0, d_lo.size, ROWS):
        w = w16_gather(dout, 0, d_lo, r)
        if f16acc:
            w = w16_or(w16_and(w, w16_splat(0xFFFF)), w16_shl(w16_gather(dout, 0, d_hi, r), w16_splat(16)))
        w16_store(dw, dbase + r, w)


@njit(inline="always")
def _a64(n, dtype):
    """An empty array on a 64-byte boundary (16-lane loads and stores then never straddle a cache line)."""
    raw = np.empty(n + 64 // np.dtype(dtype).itemsize, dtype)
    off = ((-raw.ctypes.data) % 64) // raw.itemsize
    return raw[off:off + n]


@lru_cache(maxsize=None)
def compiled(code: int, f16acc: bool, rne: bool, K: int, L: int):
    """The kernel of one configuration (input format code, f16 accumulator, RNE, K, block length L):
    ``run(lo, hi, a, b, c, d, <column_maps arrays>, prm, *scratch(K))`` computes warps lo..hi-1.  The
    configuration is compile-time (numba freezes the closure's constants: the loops unroll, the other
    formats' code goes); each compiles once, on first use, and numba caches it on disk."""

    @njit(cache=True, nogil=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit _nrt
    def run(lo, hi, aw, bw, cw, dw, a_src, b_src, slot, b_slot, c_src, c_sh, d_lo, d_hi, prm,
            av, ae2, bv, be16, a64, b64, bsp, dout):
        # no reference counting in the warp loop (_nrt=False), as in fragsim.arith.kernel
        for i in range(lo, hi):
            _warp(i, aw, bw, cw, dw, a_src, b_src, slot, b_slot, c_src, c_sh, d_lo, d_hi, prm, code, f16acc, rne,
                  K, L, av, ae2, bv, be16, a64, b64, bsp, dout)
    return run


def compiled_for(pl):
    """``compiled`` for a plan ``supports`` accepts."""
    return compiled(FMT_CODE[pl.in_fmt.name], pl.acc_fmt.name == "f16", pl.rounding == "rne", pl.form.shape[2],
                    pl.block)


def _aligned(n: int, dtype) -> np.ndarray:
    """An empty array on a 64-byte boundary (16-lane loads and stores then never straddle a cache line)."""
    raw = np.empty(n + 64, dtype)
    off = (-raw.ctypes.data % 64) // raw.itemsize
    return raw[off:off + n]


def scratch(K: int) -> tuple[np.ndarray, ...]:
    """The calling thread's working arrays (made once per thread and K): A's values (float32) and
    exponents (twice in 16 bits), B's values and exponents (int16), A's and B's values in float64, B's
    Inf/NaN columns, D by columns."""
    held = _LOCAL.__dict__.setdefault("scratch", {})
    if K not in held:
        held[K] = (_aligned(K * ROWS, np.float32), _aligned(K * ROWS, np.int32),
                   _aligned(K * LANES, np.float32), _aligned(K * LANES, np.int16),
                   _aligned(K * ROWS, np.float64), _aligned(K * LANES, np.float64), _aligned(ROWS, np.int32),
                   _aligned(ROWS * LANES, np.int32))
    return held[K]


_LOCAL = threading.local()


@lru_cache(maxsize=None)
def _pool(threads: int):
    """Worker threads for batches split over ``threads`` (the kernel releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor
    return ThreadPoolExecutor(threads, thread_name_prefix="fragsim-kernel16")


def supports(pl) -> bool:
    """``_supports``, worked out once per plan object (``fragsim.mma`` asks on every call)."""
    return _per_plan(_SUPPORTS, id(pl), pl, lambda: _supports(pl))


#: id(plan) -> (plan, supports); holding the plan keeps its id from being reused
_SUPPORTS: dict = {}


def _supports(pl) -> bool:
    """Whether this kernel computes a plan: the float model's ``Plan`` as this kernel knows it (f16, bf16
    and tf32 inputs, f32 and f16 accumulators, m16n8 fragments that fit ``column_maps``), with zero
    results of sign +0 (the int sums keep no sign), blocks of an even length (the sums take k in
    pairs), at most MAX_BLOCKS of them, whose truncated terms sum in int32."""
    from .gather import blocks_fill_slots, column_maps

    # the float model's Plan by its fields (importing the package here would be an import cycle)
    known = ("form", "arch", "in_fmt", "acc_fmt", "block", "frac_bits", "e_zero", "rounding")
    if type(pl).__name__ != "Plan" or tuple(getattr(type(pl), "__dataclass_fields__", {})) != known:
        return False
    f = pl.form
    maps = column_maps(f)
    return (maps is not None and pl.in_fmt.name in FMT_CODE and pl.in_fmt.name != "f32"
            and pl.acc_fmt.name in ("f32", "f16") and f.fmt("B") == pl.in_fmt
            and f.fmt("C") == pl.acc_fmt == f.fmt("D") and pl.arch.zero_sign == "positive"
            and f.shape[2] % pl.block == 0 and pl.block % 2 == 0 and f.shape[2] // pl.block <= MAX_BLOCKS
            and pl.block << (pl.frac_bits + 2) <= 1 << 31 and blocks_fill_slots(maps, pl.block))


def _per_plan(cache: dict, key, pl, make):
    """``make()`` kept in ``cache`` under ``key`` (built from ``id(pl)``) while ``pl`` is the plan there:
    the entry holds the plan, so its id is not reused; at most PREPARED_KEPT entries (callers that build a
    new plan for every call would otherwise grow it)."""
    hit = cache.get(key)
    if hit is None or hit[0] is not pl:
        if len(cache) >= PREPARED_KEPT:
            cache.clear()
        hit = cache[key] = (pl, make())
    return hit[1]


def _prepared(pl, major):
    """What a call needs of its plan, worked out once per plan object: the compiled kernel, the maps and
    the parameter vector (looking them up again costs more than a few warps' arithmetic, and
    ``fragsim.run_kernel`` calls once per batch of mma.sync)."""
    def make():
        from .gather import column_maps, index_maps

        f = pl.form
        maps = column_maps(f, major)
        return (compiled_for(pl), f.shape[2], f.nregs("D"),
                (maps["a_src"], maps["b_src"], maps["slot"], _B_SLOTS[:f.shape[2]], maps["c_src"], maps["c_sh"],
                 maps["d_lo"], maps["d_hi"], plan_params(pl, index_maps(f))))
    return _per_plan(_PREPARED, (id(pl), major), pl, make)


#: (id(plan), major) -> (plan, kernel, K, nregs_D, maps and parameters); holding the plan keeps its id from
#: being reused
_PREPARED: dict = {}
#: Plans kept at most (callers that build a new plan for every call would otherwise grow it).
PREPARED_KEPT = 256


def run(pl, a, b, c, parallel: bool = True, major: str = "lane") -> np.ndarray:
    """D registers (batch, 32, nregs_D) uint32 of a plan ``supports`` accepts, from register batches a, b,
    c (batch, 32*nregs), read where they lie.  ``major``: each warp's words lane-major (``lane * nregs +
    reg``, fragsim.mma's layout) or "register"-major (``reg * 32 + lane``, fragsim run's); D comes in the
    same layout, shaped (batch, 32, nregs_D) or (batch, nregs_D, 32)."""
    import numba

    kern, K, nd, static = _prepared(pl, major)
    batch = a.shape[0]
    d = _aligned(batch * WARP_LANES * nd, np.uint32)     # whole cache lines per 16 words of D
    # One array type per argument, whatever the caller holds (read-only broadcast views, strided
    # slices): numba compiles a new specialization for each distinct type.
    a, b, c = (np.require(x.reshape(-1), np.uint32, ("C", "A", "W")) for x in (a, b, c))
    chunks = min(numba.get_num_threads(), batch // PER_THREAD) if parallel else 1
    if chunks <= 1:
        kern(0, batch, a, b, c, d, *static, *scratch(K))
    else:       # numba's threads would need the kernel compiled again, parallel: threads of our own
        list(_pool(chunks).map(lambda t: kern(t * batch // chunks, (t + 1) * batch // chunks, a, b, c, d, *static,
                                              *scratch(K)), range(chunks)))
    return d.reshape((batch, WARP_LANES, nd) if major == "lane" else (batch, nd, WARP_LANES))


# B's decoded halves go to consecutive positions of 16 (column_maps' slots in the order they come)
_B_SLOTS = np.arange(64, dtype=np.int32)
_B_SLOTS.setflags(write=False)
