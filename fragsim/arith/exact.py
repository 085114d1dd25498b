"""The arithmetic of the forms that are not a truncated fused dot product: integers and f64.

Integer forms (s8/u8, s4/u4 inputs, s32 accumulators) are exact: d = c + sum_k a*b, wrapped
modulo 2**32, or under ``.satfinite`` clamped to the s32 range (PTX ISA: "on overflow, the
accumulated value is limited to MIN_INT32..MAX_INT32").  The ``ArchParams`` row says where the
clamp applies: after every ``sat_block_8bit`` / ``sat_block_4bit`` products (ascending k), the
running sum saturating each time; 0 means once, on c plus the whole exact dot product.
Single-bit forms add popc(a AND b) or popc(a XOR b) over k to c, wrapping.

f64 forms are a chain of IEEE binary64 operations per output element (``f64_*`` fields of the
row): c enters first as the accumulator, then one fused multiply-add acc = a*b + acc per k in
``f64_order``; ``f64_fused=False`` rounds each product before its add;
``f64_subnormals='ftz'`` reads subnormal inputs as zero and flushes subnormal results.  A step
with a NaN operand gives the first NaN in ``f64_nan_order`` (H100: b, then acc, then a),
quieted with its sign and payload; an invalid step of NaN-free operands gives
``f64_default_nan`` (H100: 0xFFF8000000000000).

``exact_plan`` resolves a (form, arch) pair, ``exact_maps`` the register <-> element index
maps the kernels read; the kernels are in ``kernel_exact`` (numba, loaded on first use).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from fragsim.facts.arch import ArchParams
from fragsim.facts.formats import FloatFormat, IntFormat
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import MmaForm

__all__ = ["IntPlan", "F64Plan", "exact_plan", "exact_maps"]

OP_MUL, OP_AND, OP_XOR = 0, 1, 2


@dataclass(frozen=True)
class IntPlan:
    form: MmaForm
    arch: ArchParams
    a_fmt: IntFormat
    b_fmt: IntFormat
    op: int                    # OP_MUL, or OP_AND / OP_XOR with popc (b1)
    satfinite: bool
    sat_block: int             # products per saturating step (K when it saturates once)


@dataclass(frozen=True)
class F64Plan:
    form: MmaForm
    arch: ArchParams
    descending: bool           # k order of the chain
    fused: bool                # one rounding per multiply-add (else the product is rounded first)
    ftz: bool                  # subnormal inputs read as zero, subnormal results flushed
    nan_order: str             # NaN operand priority of each fma ('bca'), or 'canonical'
    default_nan: int           # the NaN of an invalid operation


def exact_plan(f: MmaForm, a: ArchParams) -> IntPlan | F64Plan | None:
    """The plan of an integer or f64 form; None for the forms of the float model."""
    fa, fb, fc, fd = (f.fmt(op) for op in "ABCD")
    if isinstance(fa, IntFormat) and isinstance(fb, IntFormat):
        if fc.name != "s32" or fd.name != "s32":
            raise ValueError(f"form {f.name}: integer forms accumulate in s32")
        if fa.name == "b1":
            op = OP_XOR if "xor" in f.modifiers else OP_AND
        else:
            op = OP_MUL
        K = f.shape[2]
        block = {8: a.sat_block_8bit, 4: a.sat_block_4bit}.get(fa.storage_bits, 0)
        block = K if block <= 0 or block >= K else block
        return IntPlan(f, a, fa, fb, op, "satfinite" in f.modifiers, block)
    if isinstance(fa, FloatFormat) and fa.name == "f64":
        if not all(x.name == "f64" for x in (fb, fc, fd)):
            raise ValueError(f"form {f.name}: f64 forms take f64 A, B, C and D")
        return F64Plan(f, a, a.f64_order == "descending", a.f64_fused, a.f64_subnormals == "ftz",
                       a.f64_nan_order, a.f64_default_nan)
    return None


@lru_cache(maxsize=None)
def exact_maps(form: MmaForm) -> dict[str, np.ndarray]:
    """Index maps of an integer or f64 form, for the kernels (flat register index = lane * nregs + reg).

    'a_src'/'a_sh' (K*M, k-major: element (m, k) at k*M + m) and 'b_src'/'b_sh' (K*N, k-major):
    the register holding each element and its bit shift (an f64 element: its low word's
    register).  'c_src' (M*N, row-major) likewise for C (32-bit or the low word of 64).
    'a_words': the register of A[m, 32j:32j+32] at m*(K/32) + j, and 'b_words' that of
    B[32j:32j+32, n] at j*N + n, for forms whose registers each hold 32 consecutive k of one row /
    column (every integer and single-bit map of the PTX ISA), else empty.
    'a_grp', 'b_grp', 'lanes' (8- and 4-bit integers): see below.  'd_dst' (32*nregs_D): for each D register
    the flat index m*N + n of its element, 'd_word' which word of that element it holds.
    """
    M, N, K = form.shape
    out = {}
    for op, (width, kmajor) in (("A", (M, True)), ("B", (N, True)), ("C", (N, False))):
        rows, cols = form.coords(op)                       # (32, nregs, epr)
        nregs, epr = rows.shape[1], rows.shape[2]
        bits = form.fmt(op).storage_bits
        w = form.words_per_elem(op)
        lane, reg, half = np.meshgrid(np.arange(WARP_LANES), np.arange(nregs), np.arange(epr), indexing="ij")
        low = reg % w == 0                                 # an element's low word
        if op == "A":
            k, x = cols, rows
        else:
            k, x = rows, cols
        flat = (k * width + x)[low] if kmajor else (rows * N + cols)[low]
        src = np.full(flat.size, -1, np.int64)
        sh = np.zeros(flat.size, np.int64)
        src[flat] = (lane * nregs + reg)[low]
        sh[flat] = (half * bits)[low]
        out[op.lower() + "_src"], out[op.lower() + "_sh"] = src, sh
        if op in "AB":
            chunks = bits * epr == 32 and bool((k == (k[..., :1] + np.arange(epr))).all()) and bool(
                (k[..., 0] % epr == 0).all()) and bool((x == x[..., :1]).all())
            words = np.zeros(0, np.int64)
            if chunks:
                words = np.full(width * (K // epr), -1, np.int64)
                at = x[..., 0] * (K // epr) + k[..., 0] // epr if op == "A" else k[..., 0] // epr * width + x[..., 0]
                words[at] = lane[..., 0] * nregs + reg[..., 0]
            out[op.lower() + "_words"] = words
    # A row by row (A[m, k] at m*K + k) and B column by column (B[k, n] at n*K + k), in groups of 8
    # elements: the one or two registers holding each group ('a_grp', 'b_grp': two entries per
    # group), and per lane the bit shift of its element and whether it reads the first of the two
    # ('lanes': 8 shifts, then 8 flags).  Registers hold consecutive k, so no gathers are needed.
    fa = form.fmt("A")
    if isinstance(fa, IntFormat) and fa.storage_bits in (4, 8):
        epr = 32 // fa.storage_bits
        kw = K // epr
        per = 8 // epr                                            # registers per group of 8
        for op, words in (("a", out["a_words"]), ("b", out["b_words"].reshape(kw, N).T.reshape(-1))):
            out[op + "_grp"] = np.repeat(words.reshape(-1, per), 2 // per, axis=1).reshape(-1)
        lane8 = np.arange(8)
        out["lanes"] = np.concatenate([(lane8 % epr) * fa.storage_bits, (lane8 < epr).astype(np.int64)])
    elif isinstance(fa, IntFormat):                               # b1 reads whole words only
        out["a_grp"], out["b_grp"], out["lanes"] = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(16, np.int64)
    rows, cols = form.coords("D")
    w = form.words_per_elem("D")
    out["d_dst"] = (rows[..., 0] * N + cols[..., 0]).reshape(-1).astype(np.int64)
    out["d_word"] = np.broadcast_to(np.arange(rows.shape[1]) % w, rows.shape[:2]).reshape(-1).astype(np.int64)
    for name, v in out.items():
        assert (v >= 0).all(), f"{form.name}: fragment map {name} does not cover the matrix"
        v.setflags(write=False)
    return out
