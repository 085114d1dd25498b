"""The arithmetic of the fp8 (e4m3/e5m2) ``mma.sync`` forms: f16 mma over exactly converted inputs.

On sm_90 ptxas compiles an fp8 ``mma.sync`` to no fp8 tensor-core instruction: F2FP.F16.E4M3/E5M2
.UNPACK_B turns the low two bytes of every A and B register into an f16x2 register, one HMMA
(.16816 for k32, .1688 for k16) multiplies them with c = +0 (RZ), the high two bytes are unpacked
and a second HMMA accumulates onto the first one's result, and C is added last by FADD (f32) or
HADD2 (f16x2).  Every fp8 value is exact in f16, so this is the 16-bit model of the row run on
f16 registers: two halves of K/2 products (each in blocks of the row's ``block_16bit``), the low
halves (k % 4 in {0, 1}) first.  The row's
``fp8_split`` and ``fp8_c`` hold that order and where C enters (``fragsim.facts.arch``).

The f16 registers are laid out as an f16 form of the same K (``_virtual``): register j < nA holds
the low halves of fp8 register j, register nA + j its high halves, and the virtual k numbers the
products block by block, so the float kernel's chained blocks are the HMMAs.  The decode (straight
from the fp8 bytes to the virtual form's k order: ``byte_groups``), the HMMAs and the add of C run
per warp in one numba loop (``fragsim.arith.kernel_fp8``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from fragsim.facts.arch import ArchParams
from fragsim.facts.formats import FloatFormat, get_format, to_float
from fragsim.instructions import MmaForm
from fragsim.instructions import mma as T

__all__ = ["Fp8Plan", "fp8_plan", "byte_table", "byte_groups", "run"]

FP8 = ("e4m3", "e5m2")


@dataclass(frozen=True)
class Fp8Plan:
    form: MmaForm
    arch: ArchParams
    inner: Any                 # the float model's Plan over the virtual f16 form (fragsim.arith.Plan)
    c_last: bool               # C added by one IEEE addition after the blocks (else it enters the first)


@lru_cache(maxsize=None)
def _virtual(form: MmaForm, split: str) -> MmaForm:
    """The f16 form whose registers hold [low halves of A's registers, high halves] (same for B)."""
    M, N, K = form.shape
    acc = form.types["D"]
    c = T.ACC_F32 if acc == "f32" else T.ACC_F16
    kb = {16: 3, 32: 4}[K]                    # bit of k (virtual) / register bit that picks the high halves
    g, t = T.GROUP_ROWS_TIG_COLPAIRS, T.TIG_ROWPAIRS_GROUP_COLS
    if split == "halves":                     # virtual k = real k: the halves hold k = 4*tig + {0,1} / {2,3}
        lane_a = ["col2", "col3", "row0", "row1", "row2"]
        lane_b = ["row2", "row3", "col0", "col1", "col2"]
        a_reg = (["row3", "col4"] if K == 32 else ["row3"]) + ["col1"]
        b_reg = (["row4"] if K == 32 else []) + ["row1"]
        a = T.fragment_map(lane_a, reg=a_reg, elem=["col0"])
        b = T.fragment_map(lane_b, reg=b_reg, elem=["row0"])
    else:                                     # virtual k = the f16 fragment's k, + K/2 for the high halves
        a = T.fragment_map(g, reg=(["row3", "col3"] if K == 32 else ["row3"]) + [f"col{kb}"], elem=["col0"])
        b = T.fragment_map(t, reg=(["row3"] if K == 32 else []) + [f"row{kb}"], elem=["row0"])
    return MmaForm(name=f"{form.name} (as f16, {split})", shape=(M, N, K), min_cc=form.min_cc,
                   types={"A": "f16", "B": "f16", "C": acc, "D": acc},
                   layouts={"A": a, "B": b, "C": c, "D": c})


def fp8_plan(form: MmaForm, arch: ArchParams, float_plan) -> Fp8Plan | None:
    """The plan of an fp8 form (``float_plan(virtual form, block)`` builds the inner Plan); None for
    other forms."""
    if form.types["A"] not in FP8:
        return None
    if not arch.fp8_split:
        raise ValueError(f"form {form.name}: arch {arch.name} has no fp8 mma (PTX: e4m3/e5m2 mma.sync needs "
                         f"sm_89 or later)")
    K = form.shape[2]
    split = arch.fp8_split
    # each HMMA is blocks of the row's 16-bit block length (one block of 16 or 8 on sm_90)
    block = K if split == "none" else min(K // 2, arch.block_16bit)
    inner = float_plan(_virtual(form, "halves" if split == "halves" else "pairs"), block)
    return Fp8Plan(form, arch, inner, arch.fp8_c == "add")


@lru_cache(maxsize=None)
def byte_table(fmt: str) -> np.ndarray:
    """uint32 (256,): each fp8 byte -> the f16 bits of its exact value (F2FP.F16.E4M3/E5M2.UNPACK_B)."""
    f = get_format(fmt)
    assert isinstance(f, FloatFormat)
    out = to_float(np.arange(256, dtype=np.uint8), f).astype(np.float16).view(np.uint16).astype(np.uint32)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=None)
def byte_groups(form: MmaForm, virtual: MmaForm) -> dict[str, np.ndarray]:
    """Where the kernel puts the fp8 bytes of A and B (``fragsim.arith.kernel_fp8``).

    Group g of an operand is one register of the 8 lanes 4*q + t (q = 0..7): '<op>_src'[8g:8g+8]
    their word indices (lane * nregs + reg).  Byte j of those words holds 8 consecutive elements
    (an aligned run of 8 rows of A / columns of B) of one k: '<op>_dst'[4g + j] is the k-major
    index k*X + x of the first, k being the virtual f16 form's (its low halves hold bytes 0, 1 of
    the fp8 registers, its high halves bytes 2, 3)."""
    out = {}
    for op, X in (("A", form.shape[0]), ("B", form.shape[1])):
        n = form.nregs(op)
        rows, cols = virtual.coords(op)                       # (32, 2n, 2)
        k, x = (cols, rows) if op == "A" else (rows, cols)
        src: list[int] = []
        dst: list[int] = []
        for reg in range(n):
            for t in range(4):
                lanes = 4 * np.arange(8) + t
                src.extend(lanes * n + reg)
                for j in range(4):
                    ks, xs = k[lanes, reg + n * (j // 2), j % 2], x[lanes, reg + n * (j // 2), j % 2]
                    if not ((ks == ks[0]).all() and (xs == xs[0] + np.arange(8)).all() and xs[0] % 8 == 0):
                        raise ValueError(f"form {form.name}: operand {op} register {reg} byte {j} of lanes 4q+{t} "
                                         f"is not one k of 8 aligned consecutive {'rows' if op == 'A' else 'columns'}")
                    dst.append(ks[0] * X + xs[0])
        out[op.lower() + "_src"] = np.array(src, np.int64)
        out[op.lower() + "_dst"] = np.array(dst, np.int64)
    for v in out.values():
        v.setflags(write=False)
    return out


def run(pl: Fp8Plan, a, b, c, parallel: bool = True) -> np.ndarray:
    """D registers (batch, 32, nregs_D) of an fp8 plan from register batches (batch, 32*nregs)."""
    from . import kernel_fp8
    from .gather import index_maps
    return kernel_fp8.run(pl, index_maps(pl.inner.form), byte_groups(pl.form, pl.inner.form), a, b, c,
                          parallel=parallel)
