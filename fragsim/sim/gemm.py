"""``fragsim.gemm``: the bits of a whole GEMM built from ``mma.sync``, bit-exact.

(This module is not called ``fragsim/gemm.py`` so that ``fragsim.gemm`` stays the function,
as ``fragsim.sim.mma`` is for ``fragsim.mma``.)

Semantics: D is cut into output tiles of the form's M x N; each tile's accumulator starts as
its tile of C and is updated by one mma per k-step -- A's tile (rows of the output tile,
columns of the k-step) times B's tile -- in ``k_order``, D of one mma being C of the next.
That is exactly ``fragsim.mma`` chained tile by tile (the reference path below does just that,
batched over tiles, for every form of the table).  For the forms of the truncated fused
dot-product model (f16, bf16, tf32 inputs) ``fragsim.arith.kernel_gemm`` computes the same chain
without packing registers, the accumulators in CPU registers from C to D.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from fragsim.facts.arch import DEFAULT_ARCH
from fragsim.validate import array, show, working_memory
from fragsim.facts.formats import IntFormat
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import lookup

__all__ = ["gemm", "k_steps"]

K_ORDERS = ("ascending", "descending")
# The reference path packs this many warps' registers per call (a few MB of registers).
_WARPS_PER_CALL = 4096
_WARPS_PARALLEL = 512


def _matrix(f, op: str, x, name: str) -> np.ndarray:
    """A bit-pattern matrix of operand ``op``'s format, as that format's dtype."""
    fmt = f.fmt(op)
    m = array(x, name)
    if m.dtype.kind == "f":
        conv = "fragsim.facts.formats.int_to_bits" if isinstance(fmt, IntFormat) else "fragsim.to_bits"
        raise TypeError(f"{name}: expected the form's .{fmt.name} bit patterns ({np.dtype(fmt.dtype).name}), got "
                        f"float dtype {m.dtype}; convert with {conv}(values, {fmt.name!r})")
    if m.dtype.kind not in "ui":
        raise TypeError(f"{name}: expected the form's .{fmt.name} bit patterns ({np.dtype(fmt.dtype).name}), "
                        f"got dtype {m.dtype}")
    if m.ndim != 2:
        raise ValueError(f"{name}: expected a matrix (2 dimensions), got shape {m.shape}")
    limit = 1 << fmt.storage_bits
    if m.size and (int(m.min()) < 0 or int(m.max()) >= limit):
        r, c = (int(i) for i in np.argwhere((m < 0) | (m > limit - 1))[0])
        raise ValueError(f"{name}: the form's .{fmt.name} words must lie in [0, 2**{fmt.storage_bits}), got "
                         f"{int(m[r, c])} at row {r}, col {c}")
    return np.ascontiguousarray(m.astype(fmt.dtype, copy=False))


def k_steps(k_order, nsteps: int) -> np.ndarray:
    """The k-step indices of ``k_order`` ('ascending', 'descending' or a sequence that lists each of
    0..nsteps-1 once), as an int64 array."""
    if isinstance(k_order, str):
        if k_order not in K_ORDERS:
            raise ValueError(f"k_order must be 'ascending', 'descending' or a sequence of k-step indices, "
                             f"got {k_order!r}")
        s = np.arange(nsteps, dtype=np.int64)
        return s if k_order == "ascending" else s[::-1].copy()
    o = array(k_order, "k_order")
    if o.dtype.kind not in "ui" or o.ndim != 1:
        raise TypeError(f"k_order must be 'ascending', 'descending' or a 1-d sequence of integer k-step indices, "
                        f"got {show(k_order) if o.ndim != 1 else f'dtype {o.dtype}'}")
    seen = np.zeros(nsteps, np.int64)
    for i, s in enumerate(o.tolist()):
        if not 0 <= s < nsteps:
            raise ValueError(f"k_order[{i}] = {s}: k-step indices lie in 0..{nsteps - 1} ({nsteps} k-steps)")
        if seen[s]:
            raise ValueError(f"k_order[{i}] = {s}: k-step {s} is listed twice; each k-step runs once")
        seen[s] = 1
    if o.size != nsteps:
        missing = int(np.flatnonzero(seen == 0)[0])
        raise ValueError(f"k_order lists {o.size} of the {nsteps} k-steps: k-step {missing} is missing")
    return o.astype(np.int64)


def _tile(tile, f, M: int, N: int) -> tuple[int, int]:
    fm, fn = f.shape[0], f.shape[1]
    if tile is None:
        return fm, fn
    t = array(tile, "tile")
    if t.shape != (2,) or t.dtype.kind not in "ui":
        raise TypeError(f"tile must be (rows, columns) of one warp's output tile, two integers, got {show(tile)}")
    tm, tn = (int(v) for v in t)
    for what, v, unit, total in (("rows", tm, fm, M), ("columns", tn, fn, N)):
        if v <= 0 or v % unit:
            raise ValueError(f"tile = ({tm}, {tn}): its {what} must be a positive multiple of {unit} "
                             f"(the {f.shape_name} tile)")
        if total % v:
            raise ValueError(f"tile = ({tm}, {tn}): D has {total} {what}, not a multiple of the tile's {v}")
    return tm, tn


def gemm(form, A, B, C=None, arch=DEFAULT_ARCH, k_order="ascending", tile=None, *,
         progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """D = A*B + C as a GEMM of ``mma.sync`` computes it, bit for bit.

    ``form``: an mma form of the table (``fragsim.FORMS``), e.g. ``"m16n8k16.row.col.f32.f16.f16.f32"``.
    ``A`` (M x K), ``B`` (K x N), ``C`` (M x N, default all zero): bit patterns of the form's operand
    formats (as ``fragsim.to_bits`` gives them; integer forms: ``fragsim.facts.formats.int_to_bits``);
    M, N, K multiples of the form's. Each M x N tile of the form (m16n8: 16 x 8) has one accumulator,
    initialised from C and updated by one mma per k-step of K (16 for m16n8k16) in ``k_order``:
    'ascending', 'descending', or a sequence listing each k-step index once (a split-K or a
    software-pipelined order).  ``tile``: (rows, columns) of D that one warp of the modelled kernel
    owns, multiples of the form's M, N dividing D: the work is done warp tile by warp tile; the
    bits do not depend on it (every mma.sync accumulator sees only its own k-steps).
    ``arch``: as for ``fragsim.mma``.  ``progress``: called as ``progress(done, total)`` in mma
    counts while a large GEMM runs.  Returns D's bits, M x N, in D's format.
    """
    from fragsim.arith import plan

    f = lookup(form)
    pl = plan(f, arch)
    fm, fn, fk = f.shape
    A = _matrix(f, "A", A, "A")
    B = _matrix(f, "B", B, "B")
    M, K = A.shape
    if B.shape[0] != K:
        raise ValueError(f"A is {M} x {K} and B is {B.shape[0]} x {B.shape[1]}: A's columns and B's rows are K "
                         f"and must be equal")
    N = B.shape[1]
    C = np.zeros((M, N), f.fmt("C").dtype) if C is None else _matrix(f, "C", C, "C")
    if C.shape != (M, N):
        raise ValueError(f"C is {C.shape[0]} x {C.shape[1]}, but A ({M} x {K}) times B ({K} x {N}) is {M} x {N}")
    for what, v, unit in (("M (rows of A and C)", M, fm), ("N (columns of B and C)", N, fn),
                          ("K (columns of A, rows of B)", K, fk)):
        if v % unit:
            raise ValueError(f"{what} = {v} is not a multiple of {unit}, the {what[0]} of {f.shape_name}: "
                             f"A is {M} x {K}, B {K} x {N}")
    if K == 0:
        raise ValueError(f"K (columns of A, rows of B) = 0: a GEMM runs at least one k-step of {fk}")
    # A and B decoded (value, exponent and 32-bit copies: 24 bytes an element); C decoded, D's words
    # and D: 16 + 8 + 8 bytes an element of M x N
    working_memory(24 * (M * K + K * N) + 32 * M * N, f"gemm: A ({M} x {K}) times B ({K} x {N})",
                   "compute D in blocks of rows or columns (A's rows, B's columns) in several calls")
    steps = k_steps(k_order, K // fk)
    tm, tn = _tile(tile, f, M, N)
    if f.fmt("C") != f.fmt("D") and steps.size > 1:
        raise ValueError(f"form {f.name}: C is .{f.fmt('C').name} and D .{f.fmt('D').name}, so the D of one "
                         f"k-step cannot be the C of the next; with this form K must be one k-step ({fk}), got {K}")
    if M == 0 or N == 0:
        return np.zeros((M, N), f.fmt("D").dtype)
    from fragsim.arith import kernel_gemm as gemm_kernel
    from fragsim.arith.jit import listen
    listen()
    if gemm_kernel.supports(pl):
        return _fast(pl, A, B, C, steps, tm, tn, progress)
    return _chained(pl, A, B, C, steps, tm, tn, progress)


def _fast(pl, A, B, C, steps, tm, tn, progress):
    from fragsim.arith import kernel_gemm as GK

    f = pl.form
    fk = f.shape[2]
    M, K = A.shape
    N = B.shape[1]
    prm = GK.params(pl)

    def decoded(words, width, is_acc):
        v, e = np.empty(words.size), np.empty(words.size, np.int64)
        GK.decode(words.reshape(-1), width, prm, is_acc, v, e)
        return v, e

    av, ae = decoded(A, 8, False)              # A as it is: rows of K
    bv, be = decoded(B, N, False)              # B in 8-column panels, each k-major
    cv, ce = decoded(C, 8, True)
    # f16 inputs: products exact in float32, the blocks of finite inputs summed in 32-bit lanes, 16
    # columns at a time (int32 holds a block of at most 16 truncated terms; signed zeros of the sum
    # need the float path)
    L = pl.blocks[0][1] - pl.blocks[0][0]
    if pl.in_fmt.name == "f16" and L <= 16 and pl.arch.zero_sign == "positive" and N % 16 == 0:
        b16 = (bv.reshape(N // 16, 2, K, 8).transpose(0, 2, 1, 3), be.reshape(N // 16, 2, K, 8).transpose(0, 2, 1, 3))
        s32 = (av.astype(np.float32), ae.astype(np.int32), b16[0].astype(np.float32).ravel(),
               b16[1].astype(np.int32).ravel())
        bad = np.concatenate([~np.isfinite(av.reshape(M, K // L, L)).all(axis=2).ravel(),
                              ~np.isfinite(bv.reshape(N // 8, K // L, L * 8)).all(axis=2).ravel()])
    else:
        s32 = (np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(0, np.float32), np.zeros(0, np.int32))
        bad = np.zeros(0, np.bool_)
    blocks = np.array(pl.blocks, np.int64)
    starts = (steps[:, None] * fk + blocks[None, :, 0]).reshape(-1)
    ends = (steps[:, None] * fk + blocks[None, :, 1]).reshape(-1)
    dout = np.empty(M * N, np.int64)
    # Work items and passes for the caches (the bits do not depend on them): 64 x 64 of D where
    # it divides (else 16 columns, else the warp tile), about 256 k per pass.
    wm = 64 if M % 64 == 0 and 64 % tm == 0 else tm
    wn = next((w for w in (64, 16) if N % w == 0 and w % tn == 0), tn)
    per_pass = max(1, 256 // (ends[0] - starts[0]))
    total = (M // f.shape[0]) * (N // f.shape[1]) * steps.size
    # without progress one call; with it, slabs of warp-tile rows of about 2**22 mma each
    per_row = (N // f.shape[1]) * steps.size / f.shape[0]
    rows = M if progress is None else max(wm, int(2 ** 22 / max(per_row, 1e-9)) // wm * wm)
    for r0 in range(0, M, rows):
        r1 = min(M, r0 + rows)
        GK.chain(r0, r1, wm, wn, K, N, av, ae, bv, be, cv, ce, starts, ends, per_pass, prm, dout, s32, bad, L)
        if progress is not None:
            progress(round(total * r1 / M), total)
    return dout.reshape(M, N).astype(f.fmt("D").dtype)


def _chained(pl, A, B, C, steps, tm, tn, progress):
    """The reference path: ``fragsim.mma``'s arithmetic (``fragsim.arith.run``) once per k-step
    over a batch of output tiles, D fed back as C."""
    from fragsim.arith import run
    from .registers import pack, unpack

    f = pl.form
    g = f.groups          # products per warp (m8n8k4 .f16: 4), stacked by rows
    fm, fn, fk = f.shape
    M, K = A.shape
    N = B.shape[1]
    MT, NT, KS = M // fm, N // fn, K // fk
    # Output tiles warp tile by warp tile (the modelled kernel's order), g tiles per warp
    # (padded with tile 0, whose extra results are dropped).
    wt = np.arange(MT * NT).reshape(M // tm, tm // fm, N // tn, tn // fn).transpose(0, 2, 1, 3).reshape(-1)
    mt, nt = wt // NT, wt % NT
    nw = -(-wt.size // g)
    pad = nw * g - wt.size
    mt, nt = np.concatenate([mt, np.zeros(pad, np.int64)]), np.concatenate([nt, np.zeros(pad, np.int64)])
    slot_mt, slot_nt = mt.reshape(nw, g), nt.reshape(nw, g)

    def slot_pack(op, tiles):
        """Registers of ``tiles`` (n, rows, cols) placed in each group slot q (zeros elsewhere): the
        registers of a warp are the OR of its g slots' (pack is an OR of disjoint bit fields)."""
        r, c = tiles.shape[1:]
        out = []
        for q in range(g):
            full = np.zeros((tiles.shape[0], g * r, c), tiles.dtype)
            full[:, q * r:(q + 1) * r] = tiles
            out.append(pack(f, op, full))
        return out

    # A by (mt, step) and B by (step, nt), packed once per slot
    a_pk = slot_pack("A", A.reshape(MT, fm, KS, fk).transpose(0, 2, 1, 3).reshape(MT * KS, fm, fk))
    b_pk = slot_pack("B", B.reshape(KS, fk, NT, fn).transpose(0, 2, 1, 3).reshape(KS * NT, fk, fn))
    c_tiles = C.reshape(MT, fm, NT, fn).transpose(0, 2, 1, 3)
    same_cd = f.fmt("C") == f.fmt("D") and all(np.array_equal(x, y) for x, y in zip(f.coords("C"), f.coords("D")))
    D = np.empty((MT, NT, fm, fn), f.fmt("D").dtype)
    total = wt.size * steps.size
    done = 0
    for w0 in range(0, nw, _WARPS_PER_CALL):
        w1 = min(nw, w0 + _WARPS_PER_CALL)
        smt, snt = slot_mt[w0:w1], slot_nt[w0:w1]
        c = pack(f, "C", c_tiles[smt, snt].reshape(w1 - w0, g * fm, fn)).reshape(w1 - w0, -1)
        parallel = w1 - w0 >= _WARPS_PARALLEL      # waking the threads costs more than a few warps' mma
        d = c
        for j, s in enumerate(steps):
            a = a_pk[0][smt[:, 0] * KS + s]
            b = b_pk[0][s * NT + snt[:, 0]]
            for q in range(1, g):
                a = a | a_pk[q][smt[:, q] * KS + s]
                b = b | b_pk[q][s * NT + snt[:, q]]
            d = run(pl, a.reshape(w1 - w0, -1), b.reshape(w1 - w0, -1), c, parallel=parallel).reshape(w1 - w0, -1)
            if j + 1 < steps.size:
                c = d if same_cd else pack(f, "C", unpack(f, "D", d.reshape(w1 - w0, WARP_LANES, -1))).reshape(w1 - w0, -1)
            if progress is not None:
                done += min(w1 * g, wt.size) - min(w0 * g, wt.size)
                progress(done, total)
        dm = unpack(f, "D", d.reshape(w1 - w0, WARP_LANES, -1)).reshape((w1 - w0) * g, fm, fn)
        keep = min(w1 * g, wt.size) - w0 * g
        D[mt[w0 * g:w0 * g + keep], nt[w0 * g:w0 * g + keep]] = dm[:keep]
    return D.transpose(0, 2, 1, 3).reshape(M, N)

