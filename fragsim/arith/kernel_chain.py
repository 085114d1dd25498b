"""numba kernel of the f16 ``mma.m8n8k4`` forms (``fragsim.arith.chain``): a binary32 tree per output.

The tree arrives as a postfix program (``chain.program``); per warp the kernel decodes A, B and C
into float32 (f16 exactly, through a table), runs the program over all outputs at once, one
operation over the stacked D matrix at a time, and encodes D.  Every operation is float32
arithmetic, which numba compiles to IEEE binary32 operations rounded to nearest even (no fast-math).
fma(a, b, x) is the product a*b followed by a float32 addition: a product of two f16 values is exact
in binary32 (at most 22 significant bits, exponents within range), so that addition is its only
rounding -- exactly the one rounding of a fused multiply-add, and the same whether or not LLVM
contracts the pair.  f16 D rounds the float32 result once, to nearest even (``_f16_bits``).

``fragsim.mma`` imports this module on first use of such a form.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

PUSH_C, PUSH_ZERO, MUL, FMA, ADD = range(5)     # opcodes of chain.program
N8 = 8                                          # columns of every form (n8), a constant: unrolled loops
# the int64 vector ``dims``: stacked rows of D (groups * M), M, K, N, register words per warp of
# A, B, C, D, and whether C / D are f16
D_GM, D_M, D_K, D_N, D_AWORDS, D_BWORDS, D_CWORDS, D_DWORDS, D_C16, D_D16 = range(10)


@njit(inline="always")
def _f16_bits(x, xb):
    """The f16 encoding of float32 x (bits xb): round to nearest even, subnormals produced, overflow
    to Inf, NaN canonical (0x7FFF)."""
    sign = (xb >> 16) & 0x8000
    a = xb & 0x7FFFFFFF
    if a > 0x7F800000:
        return 0x7FFF
    if a >= 0x477FF000:                   # 65520 and up: beyond the largest f16 by half an ulp or more
        return sign | 0x7C00
    if a >= 0x38800000:                   # f16 normal: drop 13 significand bits, ties to even
        return sign | (((a + 0xFFF + ((a >> 13) & 1)) >> 13) - (112 << 10))
    return sign | np.int64(np.rint(np.float64(abs(x)) * 16777216.0))   # count of 2**-24, exact product


@njit(inline="always")
def _decode(w, base, lo, hi, f16, f32_of_f16, words, out):
    """Elements lo[r] (low half) and hi[r] (high half) of register word r of an operand into out:
    f16 through the table; an f32 word (lo[r] == hi[r]) as its bits (``words`` is a uint32 view
    of ``out``)."""
    for r in range(lo.size):
        x = w[base + r]
        if f16:
            out[lo[r]] = f32_of_f16[x & 0xFFFF]
            out[hi[r]] = f32_of_f16[x >> 16]
        else:
            words[lo[r]] = x


@njit(inline="always")
def _warp(i, aw, bw, cw, dw, prog, dims, a_lo, a_hi, b_lo, b_hi, c_lo, c_hi, d_lo, d_hi, f32_of_f16,
          av, bv, cv, cwords, st, res, rwords):
    GM, M, K, N, na, nb, nc, nd, c16, d16 = (dims[D_GM], dims[D_M], dims[D_K], dims[D_N], dims[D_AWORDS],
                                             dims[D_BWORDS], dims[D_CWORDS], dims[D_DWORDS], dims[D_C16], dims[D_D16])
    _decode(aw, i * na, a_lo, a_hi, True, f32_of_f16, cwords, av)
    _decode(bw, i * nb, b_lo, b_hi, True, f32_of_f16, cwords, bv)
    _decode(cw, i * nc, c_lo, c_hi, c16, f32_of_f16, cwords, cv)
    # row by row of the stacked D (8 columns: every form is n8), the program over 8-wide slots
    for gm in range(GM):
        b_row = (gm // M) * K * N
        sp = 0
        for j in range(0, prog.size, 2):
            op, k = prog[j], prog[j + 1]
            t = sp * N8
            if op == PUSH_C:
                for n in range(N8):
                    st[t + n] = cv[gm * N8 + n]
                sp += 1
            elif op == PUSH_ZERO:
                for n in range(N8):
                    st[t + n] = np.float32(0.0)
                sp += 1
            elif op == ADD:
                sp -= 1
                for n in range(N8):
                    st[t - 2 * N8 + n] = st[t - 2 * N8 + n] + st[t - N8 + n]
            elif op == MUL:
                a = av[gm * K + k]
                for n in range(N8):
                    st[t + n] = a * bv[b_row + k * N8 + n]
                sp += 1
            else:
                a = av[gm * K + k]
                for n in range(N8):
                    st[t - N8 + n] = a * bv[b_row + k * N8 + n] + st[t - N8 + n]
        for n in range(N8):
            res[gm * N8 + n] = st[n]
    # D; NaN canonical
    for r in range(nd):
        e = d_lo[r]
        x, xb = res[e], rwords[e]
        if d16:
            w = _f16_bits(x, xb) | (_f16_bits(res[d_hi[r]], rwords[d_hi[r]]) << 16)
        else:
            w = 0x7FFFFFFF if (xb & 0x7FFFFFFF) > 0x7F800000 else xb
        dw[i * nd + r] = w


@njit(cache=True)
def _scratch(prog, dims):
    """One warp's float32 A (g*M, K), B (g*K, N), C, the operand stack of one row (one slot per
    instruction at most) and D, with uint32 views of C and D."""
    GM, K, N, g = dims[D_GM], dims[D_K], dims[D_N], dims[D_GM] // dims[D_M]
    cv = np.empty(GM * N, np.float32)
    res = np.empty(GM * N, np.float32)
    return (np.empty(GM * K, np.float32), np.empty(g * K * N, np.float32), cv, cv.view(np.uint32),
            np.empty(prog.size // 2 * N, np.float32), res, res.view(np.uint32))


@njit(cache=True)
def _run_range(lo, hi, aw, bw, cw, dw, prog, dims, a_lo, a_hi, b_lo, b_hi, c_lo, c_hi, d_lo, d_hi, f32_of_f16,
               av, bv, cv, cwords, st, res, rwords):
    # No reference counting in here (_nrt=False), as in kernel.py: it would run once per warp.
    for i in range(lo, hi):
        _warp(i, aw, bw, cw, dw, prog, dims, a_lo, a_hi, b_lo, b_hi, c_lo, c_hi, d_lo, d_hi, f32_of_f16,
              av, bv, cv, cwords, st, res, rwords)


@njit(cache=True)
def run_serial(aw, bw, cw, dw, prog, dims, a_lo, a_hi, b_lo, b_hi, c_lo, c_hi, d_lo, d_hi, f32_of_f16):
    av, bv, cv, cwords, st, res, rwords = _scratch(prog, dims)
    _run_range(0, dw.size // dims[D_DWORDS], aw, bw, cw, dw, prog, dims, a_lo, a_hi, b_lo, b_hi, c_lo, c_hi, d_lo,
               d_hi, f32_of_f16, av, bv, cv, cwords, st, res, rwords)


@njit(cache=True, parallel=True)
def run_parallel(nchunks, aw, bw, cw, dw, prog, dims, a_lo, a_hi, b_lo, b_hi, c_lo, c_hi, d_lo, d_hi, f32_of_f16):
    n = dw.size // dims[D_DWORDS]
    for t in prange(nchunks):
        av, bv, cv, cwords, st, res, rwords = _scratch(prog, dims)
        _run_range(t * n // nchunks, (t + 1) * n // nchunks, aw, bw, cw, dw, prog, dims, a_lo, a_hi, b_lo, b_hi,
                   c_lo, c_hi, d_lo, d_hi, f32_of_f16, av, bv, cv, cwords, st, res, rwords)
