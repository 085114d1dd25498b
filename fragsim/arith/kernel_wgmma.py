"""numba kernels of ``fragsim.wgmma``: a warpgroup's D from its operands where they lie (shared memory
through descriptors, A's and C's registers), the arithmetic of ``fragsim.arith.kernel16`` (float forms)
and of ``fragsim.arith.kernel_exact`` (integer forms), bit for bit the NumPy model of
``fragsim.sim.wgmma.wgmma_reference``.

Why the same arithmetic: wgmma's floating-point model is the truncated fused dot-product-add of
``fragsim.arith`` with the wgmma row's F, L, e_zero and rounding (``fragsim.facts.arch.WgmmaParams``); an
m64nNkK wgmma is, element for element, 4 x N/8 m16n8 tiles of that arithmetic over the whole K (blocks of
L k in ascending order, each block's rounded result the next block's c).  fp8 inputs are exact f16
values (products below 2**32, exact in float32), so their blocks run kernel16's f16 code with the fp8
formats' own emin for the nominal exponents; the f32 results of a grid with fewer mantissa bits (fp8:
e8m13) are the binary32 RZ result with the low bits dropped (RZ onto a grid inside binary32's is RZ onto
binary32, then onto the coarser grid).

Per warpgroup, from the operands in place (no register packing, no copies of shared memory):

* decode: 16 elements per gather (``w16_gather``: a word of shared memory, or of A's registers, per
  element, then the element's bit shift), in the order kernel16 keeps them -- A k-major by rows of a
  warp (``av[k * 16 + r]``), B k-major by column blocks of 8 (``bv[(j * K + k) * 8 + n]``) -- with
  kernel16's values, nominal exponents and range flags.  B is decoded once per warpgroup, A once per
  warp: each A is shared by N/8 tiles, each B by 4 (``fragsim.mma`` decodes both for every tile).
* each 16 x 8 tile: kernel16's column-pair loop (E_max, the int32 or float64 truncated sums, the
  rounding), C's columns gathered from the accumulator registers, D's columns kept for the warp.
* D: the warp's register words gathered from its columns and stored, 16 at a time, where ``doff`` says:
  in place in ``fragsim.wgmma``'s lane-major registers, or in the rows of ``fragsim run``'s register file
  (C read from the same rows: no copy of the registers either way).
* memory: while a warpgroup computes, the next one's operands (A's and B's words in shared memory, C's
  and D's registers) are prefetched a few lines per tile -- a batch of warpgroups each with its own shared
  memory otherwise waits on a cache miss at every gather (a third of the time on cold operands).

The integer forms: A's rows and B's columns decoded to float64 (every product and every sum of at most
32 of them is an exact integer), 8 k per vector, eight columns per row at once, c, the wrap and the
clamp in int64 -- kernel_exact's scheme over the warpgroup's whole D.

``compiled`` specialises the float kernel per (compute format, accumulator, rounding, K, L): numba
compiles each on first use and caches it on disk.  ``fragsim.sim.wgmma`` imports this module on first
use and says which calls it takes (the others run the NumPy model).
"""

from __future__ import annotations

import threading
from functools import lru_cache

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core import types
from numba.extending import intrinsic

from .kernel import F16, LANES, SPEXP, TF32
from .kernel16 import ROWS, ZERO_EXP, NONE, _c16, _column, _emax, _emax2, _next_c, _nexp16, _sum32x2, _widen
from .simd import (_elem_ptr, _llvm_fn, f8_fma, f8_hsum8, f8_load, f8_splat, f8_store, f8_to_i8, i8_add, i8_and, i8_gather, i8_lt,
                   i8_max, i8_min, i8_splat, i8_store, i8_store_u32, i8_sub, i8_to_f8)
from .simd16 import (h32_dup, h32_store16, s16_bits, s16_from_bits, s16_from_f16, s16_store, w16_add, w16_and,
                     w16_any,
                     w16_ctlz, w16_eq, w16_gather, w16_hmax, w16_hi, w16_huminu, w16_load, w16_lo, w16_lt,
                     w16_max, w16_minu, w16_or, w16_shl, w16_shr, w16_splat, w16_store, w16_sub, w16_where,
                     w16_xor)

# Hash of the sources this file compiles in (listed in fragsim.arith.stamps.KERNELS).  numba keys
# its disk cache on this file's content only: after editing one of them run
# `python -m fragsim.arith.stamps` (tests/test_numba_cache_key.py fails until then).
INLINED_SOURCE_HASH = "afafd539833f0df618790f18b7b1388d93a422c55b8f3acda92e0ecdd601c877"

# element formats the decoder reads (F16, BF16, TF32 are kernel.py's codes)
E4M3, E5M2 = 4, 5
WARPS = 4                   # warps of a warpgroup: 16 rows of D each
SIGN32 = -(1 << 31)

# the float kernel's int64 parameter vector
(Q_F, Q_EZERO, Q_ACC_EMIN, Q_A_CODE, Q_A_EMIN, Q_A_NEG, Q_B_CODE, Q_B_EMIN, Q_B_NEG, Q_MAN_MASK, Q_N, Q_CSTEP,
 Q_DWORDS, Q_DSTEP) = range(14)
NQ = 14
# the integer kernel's
(I_K, I_N, I_A_SIGNED, I_B_SIGNED, I_SAT, I_BLOCK, I_CWORDS, I_DWORDS) = range(8)
NI = 8
PER_THREAD = 64             # m16n8 tiles below which another thread costs more than it saves


# --- memory -------------------------------------------------------------------------------------------

def _prefetcher(write: int):
    @intrinsic
    def prefetch(typingctx, arr, idx):
        """Ask for the cache line of arr[idx] (for reading, or for writing); a hint: it never faults and
        changes no result."""
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and isinstance(idx, types.Integer)):
            return None

        def codegen(context, builder, sig, args):
            p = builder.bitcast(_elem_ptr(context, builder, sig.args[0], args[0], args[1]),
                                ir.IntType(8).as_pointer())
            i32 = ir.IntType(32)
            fn = _llvm_fn(builder, "llvm.prefetch.p0", ir.VoidType(), [p.type, i32, i32, i32])
            builder.call(fn, [p, ir.Constant(i32, write), ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()
        return types.none(arr, idx), codegen
    return prefetch


_prefetch = _prefetcher(0)
_prefetch_w = _prefetcher(1)
LINE = 16                   # 32-bit words of a cache line


@njit(inline="always")
def _prefetch_part(g, hi, t, nt, asrc, bsrc, cw, dw, pf, prow):
    """Part t of nt of warpgroup g + 1's operands on their way to the caches while g computes: the word
    ranges pf[8(g+1) ..] of A's source, B's (shared memory), C's registers and D's, a line at a time
    (spread over g's work: a burst of misses would stall it).  ``prow`` not empty: C and D are in
    fragsim run's register file, a warpgroup's 128 words at pf[8(g+1) + 4] in each row prow[r]."""
    if g + 1 < hi:
        q = 8 * (g + 1)
        la = (pf[q + 1] - pf[q] + LINE - 1) // LINE
        lb = (pf[q + 3] - pf[q + 2] + LINE - 1) // LINE
        if prow.size:
            lc, ld = prow.size * (128 // LINE), 0
        else:
            lc = (pf[q + 5] - pf[q + 4] + LINE - 1) // LINE
            ld = (pf[q + 7] - pf[q + 6] + LINE - 1) // LINE
        total = la + lb + lc + ld
        for i in range(t * total // nt, (t + 1) * total // nt):
            if i < la:
                _prefetch(asrc, pf[q] + LINE * i)
            elif i < la + lb:
                _prefetch(bsrc, pf[q + 2] + LINE * (i - la))
            elif i < la + lb + lc:
                x = i - la - lb
                if prow.size:       # read, then written: for writing
                    _prefetch_w(cw, prow[x // (128 // LINE)] + pf[q + 4] + LINE * (x % (128 // LINE)))
                else:
                    _prefetch(cw, pf[q + 4] + LINE * x)
            else:
                _prefetch_w(dw, pf[q + 6] + LINE * (i - la - lb - lc))


# --- decoding -----------------------------------------------------------------------------------

@njit(_nrt=False)  # type: ignore[call-overload]  # numba's stubs omit its private _nrt option
def _value(w, code):
    """The exact float32 values of 16 elements of format ``code`` in the low bits of the words ``w``
    (higher bits ignored); fp8 ones by integer operations (an e4m3 subnormal is a normal float32)."""
    if code == F16:
        return s16_from_f16(w)
    if code == E5M2:                       # e5m2 is binary16's high byte
        return s16_from_f16(w16_shl(w, w16_splat(8)))
    if code == E4M3:
        b = w16_and(w, w16_splat(0x7F))
        normal = w16_add(w16_shl(b, w16_splat(20)), w16_splat(120 << 23))
        # a subnormal m * 2**-9 (m in 1..7): its leading bit p = 31 - clz(m), exponent p - 9
        p = w16_sub(w16_splat(31), w16_ctlz(b))
        sub = w16_or(w16_shl(w16_add(p, w16_splat(118)), w16_splat(23)),
                     w16_and(w16_shl(b, w16_sub(w16_splat(23), p)), w16_splat(0x7FFFFF)))
        x = w16_where(w16_lt(b, w16_splat(8)), sub, normal)
        x = w16_where(w16_eq(b, w16_splat(0)), w16_splat(0), x)
        x = w16_where(w16_eq(b, w16_splat(0x7F)), w16_splat(0x7FC00000), x)       # S.1111.111: NaN
        return s16_from_bits(w16_or(x, w16_shl(w16_and(w, w16_splat(0x80)), w16_splat(24))))
    if code == TF32:
        return s16_from_bits(w16_and(w, w16_splat(-8192)))
    return s16_from_bits(w16_shl(w, w16_splat(16)))          # BF16


@njit(inline="always")
def _decode(src, base, idx, sh, toff, npos, code, emin, neg, v32, out, o0, is_a):
    """Decode ``npos`` elements (a multiple of 16) whose words are src[base + idx[toff + p]], shifted right
    by sh[toff + p]: values to v32[o0 + p] (float32, negated when ``neg``), nominal exponents (kernel16's:
    max(floor(log2|x|), emin), ZERO_EXP for a zero, SPEXP for Inf/NaN) to out[o0 + p] -- A: each twice,
    in the 16-bit halves of an int32; B: int16.  Returns, lane by lane, the largest exponent and the
    least of a nonzero element less ZERO_EXP + 1 (unsigned; 2**32 - 1 where every element is zero)."""
    top = w16_splat(ZERO_EXP)
    least = w16_splat(-1)
    for o in range(0, npos, ROWS):
        w = w16_shr(w16_gather(src, base, idx, toff + o), w16_load(sh, toff + o))
        v = _value(w, code)
        if neg:
            v = s16_from_bits(w16_xor(s16_bits(v), w16_splat(SIGN32)))
        e = _nexp16(s16_bits(v), emin, False)
        top = w16_max(top, e)
        least = w16_minu(least, w16_sub(e, w16_splat(ZERO_EXP + 1)))
        if is_a:
            w16_store(out, o0 + o, h32_dup(e))
        else:
            h32_store16(out, o0 + o, e)
        s16_store(v32, o0 + o, v)
    return top, least


@njit(inline="always")
def _tame(code, F, atop, aleast, btop, bleast):
    """kernel16's test: f16 products always; bf16, tf32 ones when every nonzero product lies within
    [2**(F - 127), 2**126) and no element is Inf or NaN (first lane by lane, then exactly)."""
    if code == F16:
        return True
    low = (127 - F) // 2
    if not w16_any(w16_or(w16_lt(w16_splat(62), w16_max(atop, btop)),
                          w16_lt(w16_minu(w16_minu(aleast, bleast), w16_splat(-low - ZERO_EXP - 1)),
                                 w16_splat(-low - ZERO_EXP - 1)))):
        return True
    la, lb = w16_huminu(aleast), w16_huminu(bleast)
    ta, tb = w16_hmax(atop), w16_hmax(btop)
    return (ta + tb <= 124 and max(ta, tb) < SPEXP
            and (la == NONE or lb == NONE or la + lb + 2 * (ZERO_EXP + 1) >= F - 127))


# --- the float forms ----------------------------------------------------------------------------------

@njit(inline="always")
def _warpgroup(g, hi, ops, maps, prm, code, f16acc, rne, K, L, scr):
    # (CPython passes more than 30 arguments as a tuple, which numba cannot inline: they come in groups)
    asrc, abase, aidx, ash, atoff, bsrc, bbase, bidx, bsh, btoff, cw, cbase, keep, dw, dbase, doff, pf, prow = ops
    c_src, c_sh, d_lo, d_hi = maps
    av, ae2, bv, be16, a64, b64, bst, dout = scr
    F, ezero, acc_emin, N = prm[Q_F], prm[Q_EZERO], prm[Q_ACC_EMIN], prm[Q_N]
    mask = np.int32(prm[Q_MAN_MASK])
    J = N // LANES
    KB = K * LANES              # elements of B per column block
    # B: every column block once, with its range flags (top, least, Inf/NaN lanes)
    for j in range(J):
        top, least = _decode(bsrc, bbase[g], bidx, bsh, btoff[g] + j * KB, KB, prm[Q_B_CODE], prm[Q_B_EMIN],
                             prm[Q_B_NEG] != 0, bv, be16, j * KB, False)
        w16_store(bst, j * 48, top)
        w16_store(bst, j * 48 + 16, least)
        w16_store(bst, j * 48 + 32, w16_eq(top, w16_splat(SPEXP)))
    c0 = cbase[g]
    for wp in range(WARPS):
        atop, aleast = _decode(asrc, abase[g], aidx, ash, atoff[g] + wp * K * ROWS, K * ROWS, prm[Q_A_CODE],
                               prm[Q_A_EMIN], prm[Q_A_NEG] != 0, av, ae2, 0, True)
        aspec = w16_any(w16_eq(atop, w16_splat(SPEXP)))
        widened = False
        for j in range(J):
            _prefetch_part(g, hi, wp * J + j, WARPS * J, asrc, bsrc, cw, dw, pf, prow)
            bvj = bv[j * KB:(j + 1) * KB]
            bej = be16[j * KB:(j + 1) * KB]
            bsp = bst[j * 48 + 32:j * 48 + 48]
            tame = _tame(code, F, atop, aleast, w16_load(bst, j * 48), w16_load(bst, j * 48 + 16))
            if not tame:
                if not widened:
                    _widen(av, a64, K * ROWS)
                    widened = True
                _widen(bvj, b64, KB)
            cb = c0 + wp * prm[Q_CSTEP]
            for n in range(0, LANES, 2):    # a pair of columns: E_max of both at once (kernel16's loop)
                col = j * LANES + n
                if keep[g]:
                    ce, c32 = _c16(cw, cb, c_src, c_sh, col, f16acc, acc_emin, False)
                    ce1, c321 = _c16(cw, cb, c_src, c_sh, col + 1, f16acc, acc_emin, False)
                else:                       # scale-d false: c = +0
                    ce, c32 = _next_c(w16_splat(0), f16acc, acc_emin, False)
                    ce1, c321 = ce, c32
                bs = bsp[n] != 0 or bsp[n + LANES] != 0
                bs1 = bsp[n + 1] != 0 or bsp[n + 1 + LANES] != 0
                for s0 in range(0, K, L):
                    E, E1 = _emax2(ae2, bej, n, s0, s0 + L)
                    E = _emax(E, ae2, bej, n, s0, s0 + L, ce, ezero)
                    E1 = _emax(E1, ae2, bej, n + 1, s0, s0 + L, ce1, ezero)
                    pre = tame and not (aspec or bs or bs1)
                    y, y1 = (_sum32x2(av, bvj, n, s0, s0 + L, E, E1, F, F + 32 if code == F16 else F + 126) if pre
                             else (w16_splat(0), w16_splat(0)))
                    w = _column(n, s0, s0 + L, E, c32, ce, av, bvj, a64, b64, aspec, bs, tame, code, f16acc, rne, F,
                                acc_emin, y, pre)
                    w1 = _column(n + 1, s0, s0 + L, E1, c321, ce1, av, bvj, a64, b64, aspec, bs1, tame, code, f16acc,
                                 rne, F, acc_emin, y1, pre)
                    if not f16acc and mask != -1:       # a coarser f32 grid (RZ): drop the low bits, NaN kept
                        w = w16_where(_nan32(w), w, w16_and(w, w16_splat(mask)))
                        w1 = w16_where(_nan32(w1), w1, w16_and(w1, w16_splat(mask)))
                    if s0 + L < K:      # the rounded block results are the next block's c
                        ce, c32 = _next_c(w, f16acc, acc_emin, False)
                        ce1, c321 = _next_c(w1, f16acc, acc_emin, False)
                    else:
                        w16_store(dout, col * ROWS, w)
                        w16_store(dout, col * ROWS + ROWS, w1)
        # the warp's D registers, 16 words at a time: words r.. go to dbase[g] + wp * step + doff[r / 16]
        db = dbase[g] + wp * prm[Q_DSTEP]
        for r in range(0, prm[Q_DWORDS], ROWS):
            w = w16_gather(dout, 0, d_lo, r)
            if f16acc:
                w = w16_or(w16_and(w, w16_splat(0xFFFF)), w16_shl(w16_gather(dout, 0, d_hi, r), w16_splat(16)))
            w16_store(dw, db + doff[r // ROWS], w)


@njit(inline="always")
def _nan32(w):
    return w16_lt(w16_splat(0x7F800000), w16_and(w, w16_splat(0x7FFFFFFF)))


@lru_cache(maxsize=None)
def compiled(code: int, f16acc: bool, rne: bool, K: int, L: int):
    """The float kernel of one configuration (compute format F16/BF16/TF32 -- fp8 computes as F16 --, f16
    accumulator, RNE, K, block length L): ``run(lo, hi, <operands>, prm, *scratch)`` computes warpgroups
    lo..hi-1.  Compile-time constants, as kernel16's ``compiled``."""

    @njit(cache=True, nogil=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit _nrt
    def run(lo, hi, asrc, abase, aidx, ash, atoff, bsrc, bbase, bidx, bsh, btoff, cw, cbase, keep, dw, dbase, doff, pf,
            prow, c_src, c_sh, d_lo, d_hi, prm, av, ae2, bv, be16, a64, b64, bst, dout):
        ops = (asrc, abase, aidx, ash, atoff, bsrc, bbase, bidx, bsh, btoff, cw, cbase, keep, dw, dbase, doff, pf, prow)
        scr = (av, ae2, bv, be16, a64, b64, bst, dout)
        _prefetch_part(lo - 1, hi, 0, 1, asrc, bsrc, cw, dw, pf, prow)      # the first one's, at once
        for g in range(lo, hi):
            _warpgroup(g, hi, ops, (c_src, c_sh, d_lo, d_hi), prm, code, f16acc, rne, K, L, scr)
    return run


# --- the integer forms ----------------------------------------------------------------------------------

@njit(inline="always")
def _decode_int(src, base, idx, sh, toff, npos, signed, out):
    """out[p] (float64) = the 8-bit integer src[base + idx[toff + p]] >> sh[toff + p], sign-extended when
    ``signed``."""
    sb = w16_splat(0x80 if signed else 0)
    for o in range(0, npos, ROWS):
        w = w16_and(w16_shr(w16_gather(src, base, idx, toff + o), w16_load(sh, toff + o)), w16_splat(0xFF))
        w = w16_sub(w16_xor(w, sb), sb)
        f8_store(out, o, i8_to_f8(w16_lo(w)))
        f8_store(out, o + LANES, i8_to_f8(w16_hi(w)))


@njit(cache=True, nogil=True, _nrt=False)  # type: ignore[call-overload]  # numba's stubs omit _nrt
def run_int(lo, hi, asrc, abase, aidx, ash, atoff, bsrc, bbase, bidx, bsh, btoff, cw, cbase, keep, dw, dbase, doff,
            pf, prow, c_src, d_dst, prm, av, bv, dout):
    """Warpgroups lo..hi-1 of an integer form: D = C + A B, wrapped modulo 2**32, or clamped to s32 after
    every ``block`` k under .satfinite.  C is read through c_src (every element's word) from cbase[g], D
    written through d_dst (every word's element), 8 words at a time."""
    K, N, sat, block = prm[I_K], prm[I_N], prm[I_SAT], prm[I_BLOCK]
    J = N // LANES
    M = WARPS * ROWS
    lo32, hi32 = i8_splat(np.int64(-(1 << 31))), i8_splat(np.int64((1 << 31) - 1))
    _prefetch_part(lo - 1, hi, 0, 1, asrc, bsrc, cw, dw, pf, prow)
    for g in range(lo, hi):
        _decode_int(asrc, abase[g], aidx, ash, atoff[g], M * K, prm[I_A_SIGNED] != 0, av)
        _decode_int(bsrc, bbase[g], bidx, bsh, btoff[g], N * K, prm[I_B_SIGNED] != 0, bv)
        for m in range(M):
            _prefetch_part(g, hi, m, M, asrc, bsrc, cw, dw, pf, prow)
            for j in range(J):
                if keep[g]:
                    s = i8_gather(cw, cbase[g], c_src, (m * J + j) * LANES)
                    s = i8_sub(s, i8_and(i8_lt(hi32, s), i8_splat(np.int64(1 << 32))))     # C as s32
                else:
                    s = i8_splat(np.int64(0))
                b0 = j * LANES * K
                for k0 in range(0, K, block):
                    z = f8_splat(0.0)
                    s0, s1, s2, s3, s4, s5, s6, s7 = z, z, z, z, z, z, z, z
                    for k in range(k0, min(k0 + block, K), LANES):
                        x = f8_load(av, m * K + k)
                        s0 = f8_fma(x, f8_load(bv, b0 + k), s0)
                        s1 = f8_fma(x, f8_load(bv, b0 + K + k), s1)
                        s2 = f8_fma(x, f8_load(bv, b0 + 2 * K + k), s2)
                        s3 = f8_fma(x, f8_load(bv, b0 + 3 * K + k), s3)
                        s4 = f8_fma(x, f8_load(bv, b0 + 4 * K + k), s4)
                        s5 = f8_fma(x, f8_load(bv, b0 + 5 * K + k), s5)
                        s6 = f8_fma(x, f8_load(bv, b0 + 6 * K + k), s6)
                        s7 = f8_fma(x, f8_load(bv, b0 + 7 * K + k), s7)
                    s = i8_add(s, f8_to_i8(f8_hsum8(s0, s1, s2, s3, s4, s5, s6, s7)))
                    if sat:
                        s = i8_min(i8_max(s, lo32), hi32)
                i8_store(dout, m * N + j * LANES, s)
        for r in range(0, prm[I_DWORDS], LANES):      # words r.. go to dbase[g] + doff[r / 8]
            i8_store_u32(dw, dbase[g] + doff[r // LANES], i8_gather(dout, 0, d_dst, r))


# --- scratch and threads ----------------------------------------------------------------------------------

def _aligned(n: int, dtype) -> np.ndarray:
    """An empty array on a 64-byte boundary (16-lane loads and stores then never straddle a cache line)."""
    raw = np.empty(n + 64, dtype)
    off = (-raw.ctypes.data % 64) // raw.itemsize
    return raw[off:off + n]


_LOCAL = threading.local()


def scratch(K: int, N: int) -> tuple[np.ndarray, ...]:
    """The calling thread's working arrays of the float kernel (made once per thread, K and N)."""
    held = _LOCAL.__dict__.setdefault("float", {})
    if (K, N) not in held:
        held[(K, N)] = (_aligned(K * ROWS, np.float32), _aligned(K * ROWS, np.int32), _aligned(K * N, np.float32),
                        _aligned(K * N, np.int16), _aligned(K * ROWS, np.float64), _aligned(K * LANES, np.float64),
                        _aligned(48 * (N // LANES), np.int32), _aligned(ROWS * N, np.int32))
    return held[(K, N)]


def scratch_int(K: int, N: int) -> tuple[np.ndarray, ...]:
    """The calling thread's working arrays of the integer kernel."""
    held = _LOCAL.__dict__.setdefault("int", {})
    if (K, N) not in held:
        M = WARPS * ROWS
        held[(K, N)] = (_aligned(M * K, np.float64), _aligned(N * K, np.float64), _aligned(M * N, np.int64))
    return held[(K, N)]


@lru_cache(maxsize=None)
def _pool(threads: int):
    """Worker threads for batches split over ``threads`` (the kernels release the GIL)."""
    from concurrent.futures import ThreadPoolExecutor
    return ThreadPoolExecutor(threads, thread_name_prefix="fragsim-wgmma")


def launch(kern, batch: int, tiles: int, args: tuple, make_scratch, parallel: bool) -> None:
    """``kern(lo, hi, *args, *make_scratch())`` over warpgroups 0..batch-1, split over numba's threads when
    ``parallel`` and the batch has enough tiles (``tiles`` m16n8 tiles a warpgroup)."""
    import numba

    chunks = min(numba.get_num_threads(), batch, batch * tiles // PER_THREAD) if parallel else 1
    if chunks <= 1:
        kern(0, batch, *args, *make_scratch())
    else:
        list(_pool(chunks).map(lambda t: kern(t * batch // chunks, (t + 1) * batch // chunks, *args,
                                              *make_scratch()), range(chunks)))
