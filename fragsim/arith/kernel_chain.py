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
def _decode(w, base, src, sh, f16, f32_of_f16, words, out):
    """out[e] = element e of an operand: f16 through the table, f32 words as their bits (``words``
    is a uint32 view of ``out``)."""
    for e in range(src.size):
        x = w[base + src[e]]
        if f16:
            out[e] = f32_of_f16[(x >> sh[e]) & 0xFFFF]
        else:
            words[e] = x


@njit(inline="always")
def _warp(i, aw, bw, cw, dw, prog, dims, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, f32_of_f16,
          av, bv, cv, cwords, st, stwords):
    GM, M, K, N, na, nb, nc, nd, c16, d16 = (dims[D_GM], dims[D_M], dims[D_K], dims[D_N], dims[D_AWORDS],
                                             dims[D_BWORDS], dims[D_CWORDS], dims[D_DWORDS], dims[D_C16], dims[D_D16])
    _decode(aw, i * na, a_src, a_sh, True, f32_of_f16, cwords, av)
    _decode(bw, i * nb, b_src, b_sh, True, f32_of_f16, cwords, bv)
    _decode(cw, i * nc, c_src, c_sh, c16, f32_of_f16, cwords, cv)
    E = GM * N
    sp = 0
    for j in range(0, prog.size, 2):
        op, k = prog[j], prog[j + 1]
        if op == PUSH_C:
            for e in range(E):
                st[sp * E + e] = cv[e]
            sp += 1
        elif op == PUSH_ZERO:
            for e in range(E):
                st[sp * E + e] = np.float32(0.0)
            sp += 1
        elif op == ADD:
            sp -= 1
            for e in range(E):
                st[(sp - 1) * E + e] = st[(sp - 1) * E + e] + st[sp * E + e]
        else:
            if op == MUL:
                sp += 1
            t = (sp - 1) * E
            for gm in range(GM):
                a = av[gm * K + k]
                b0 = ((gm // M) * K + k) * N
                for n in range(N):
                    p = a * bv[b0 + n]
                    st[t + gm * N + n] = p if op == MUL else p + st[t + gm * N + n]
    # D: stack slot 0 holds the result; NaN canonical
    for r in range(nd):
        e = d_lo[r]
        x, xb = st[e], stwords[e]
        if d16:
            w = _f16_bits(x, xb) | (_f16_bits(st[d_hi[r]], stwords[d_hi[r]]) << 16)
        else:
            w = 0x7FFFFFFF if (xb & 0x7FFFFFFF) > 0x7F800000 else xb
        dw[i * nd + r] = w


@njit(inline="always")
def _scratch(prog, dims, bsize):
    GM, K, N = dims[D_GM], dims[D_K], dims[D_N]
    depth = prog.size // 2                 # at most one slot per instruction
    cv = np.empty(GM * N, np.float32)
    st = np.empty(depth * GM * N, np.float32)
    return np.empty(GM * K, np.float32), np.empty(bsize, np.float32), cv, cv.view(np.uint32), st, st.view(np.uint32)


@njit(cache=True)
def _run_range(lo, hi, aw, bw, cw, dw, prog, dims, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi,
               f32_of_f16):
    av, bv, cv, cwords, st, stwords = _scratch(prog, dims, b_src.size)
    for i in range(lo, hi):
        _warp(i, aw, bw, cw, dw, prog, dims, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi, f32_of_f16,
              av, bv, cv, cwords, st, stwords)


@njit(cache=True, parallel=True)
def _run_parallel(nchunks, aw, bw, cw, dw, prog, dims, a_src, a_sh, b_src, b_sh, c_src, c_sh, d_lo, d_hi,
                  f32_of_f16):
    n = dw.size // dims[D_DWORDS]
    for t in prange(nchunks):
        _run_range(t * n // nchunks, (t + 1) * n // nchunks, aw, bw, cw, dw, prog, dims, a_src, a_sh, b_src, b_sh,
                   c_src, c_sh, d_lo, d_hi, f32_of_f16)
