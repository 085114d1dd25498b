"""The ptx_kernels family: whole kernels of the PTX corpus (tests/data/ptx) run on the GPU and by
``fragsim.run_kernel``, output for output, bit for bit.

Each kernel of the corpus (``KERNELS``: our own CUDA kernels, CUTLASS's CuTe tutorials, a Triton
matmul) is launched on the GPU from its committed PTX -- loaded with the driver's JIT
(``cuModuleLoadData``); when the driver is older than the PTX's ``.version`` (Triton's 9.4 on a
CUDA 13.0 driver), by a ``ptxas`` that takes it, else by the JIT at the newest older ``.version`` it
takes, which changes no instruction's meaning -- for several shapes (partial tiles included) and
seeds.  The inputs come from the seed:
seed % 3 picks the values (``VALUES``: normal numbers; numbers with signed zeros, subnormals and the
extremes of the format mixed in; a few infinities and NaNs with payloads).  Output buffers start
with known bits, so a kernel that writes where it should not is seen too.  fragsim then runs the
same PTX on the same inputs, the whole grid (``ctas=None``) and, for grids of several CTAs, one CTA
(the last one, a partial tile where the shape has one): its output must equal the GPU's in every
bit of the region that CTA writes, and leave the rest as it was.

Atomics: ``reduce_shfl`` adds partial sums with ``atomicAdd`` in an order the hardware does not fix,
so its float ``sum`` is compared only where it cannot depend on the order -- one CTA (one atomic add),
or values that are small integers (every partial sum exact); ``count_neg`` (integer add) and
``max_bits`` (integer max) are compared always.  One shape sums subnormals: the shuffles'
``add.f32`` keeps them, ``atom.add.f32`` flushes them to zero.

Struct parameters (CuTe's shapes, strides, empty layouts and ``half_t`` scalars, our ``Params``) go
in as the bytes the host compiler lays out (``KERNELS``' builders spell them out with ``struct``).

``--record DIR`` writes DIR/kernels.npz: every case (kernel, PTX file, shape, seed, launch, the
digests of the inputs and of the GPU's outputs per buffer) and the full GPU outputs of the first
seed of each kernel's first shape; ``--replay DIR`` regenerates the inputs from the seeds and
compares fragsim's outputs with the recorded digests (tests/test_ptx_kernels_hw.py does that in CI).
``--forms`` keeps the kernels whose name has one of the given strings at the start of a word (its
start or after an underscore: ``tma`` names tma_wgmma, not softmax_fast); ``--cases N`` replays the
first N cases.  Some kernels are recorded on their own, each set in its own folder (``RECORDED_APART``:
the TMA kernels in tests/data/ptx/kernels_tma, the MUFU kernels in tests/data/ptx/kernels_mufu); the
rest in tests/data/ptx/kernels.  A recording holds the cases of the kernels its --forms named, so a
new set of kernels is recorded with --forms naming them alone, into a folder of its own, and its own
test replays it -- the older recordings stay as they are.

The MUFU kernels (row softmax, RMSNorm, LayerNorm, a FlashAttention-2-style forward, rotary embedding
and the functions elementwise; src/softmax_fast.cu, rmsnorm.cu, layernorm.cu, attention_fwd.cu,
sincos.cu) are built with --use_fast_math and with -prec-div/-prec-sqrt/-ftz variants (the ``// ptx:``
lines of their sources), so their PTX holds ex2/lg2/rcp/rsqrt/sqrt/sin/cos ``.approx`` (with and
without ``.ftz``), ``div.approx``, ``div.full`` and ``ex2.approx`` f16/bf16; fragsim computes them with
the MUFU's bits (``fragsim.approx``).  Their shapes scale the inputs so that exponentials underflow,
squares overflow and inputs go subnormal, besides ``VALUES``.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import math
import multiprocessing
import os
import re
import shutil
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from functools import partial
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from fragsim.facts.arch import arch_for_cc
from fragsim.facts.formats import to_bits
from fragsim.ptx.parse import parse
from fragsim.ptx.types import TYPES

from .. import record, runner
from ..family import RunnerFamily, Say
from ..prelude import unit

KIND = "ptx-kernels"
FILE = "kernels.npz"
#: Where the PTX corpus and its CUDA sources live in a clone of the repository (they are not installed).
CORPUS_IN_CLONE = Path("tests") / "data" / "ptx"


def corpus() -> Path:
    """The corpus folder: the clone this module runs from (an editable install), else the clone in the
    current directory (an installed fragsim run from its repository); a one-line error otherwise."""
    for root in (Path(__file__).resolve().parents[2], Path.cwd()):
        if (root / CORPUS_IN_CLONE / "src").is_dir():
            return root / CORPUS_IN_CLONE
    raise ValueError(f"--family ptx_kernels needs the PTX corpus ({CORPUS_IN_CLONE} of a fragsim clone): "
                     "run it from the repository's folder")
#: What seed % 3 draws (``floats``).
VALUES = ("normal", "edge", "special")
#: Bits an output buffer starts with where the kernel does not read it (a float NaN no kernel writes).
SENTINEL32 = 0x7FBADBAD
SENTINEL16 = 0x7DAD
#: Share of elements replaced by small edge values (zeros, subnormals) and by the largest finite
#: values in an "edge" input (the largest overflow a whole GEMM row: a few of them).
EDGE_SHARE = 0.08
LARGE_SHARE = 0.003
#: One special value per this many elements (at least one) in a "special" input.
SPECIAL_EVERY = 400
#: PTX ISA versions tried, newest first, when the driver's JIT refuses a file's newer .version.
PTX_VERSIONS = ("9.0", "8.8", "8.7", "8.5", "8.4", "8.3", "8.2", "8.1", "8.0")
#: Largest output buffer (bytes) kept in full in a recording (the rest: digests).
KEEP_BYTES = 40_000

# Bits of the edge and special values per format: +-0, +-the smallest and largest subnormals, the
# smallest normal, 1; +-the largest finite number; +-infinity, quiet NaN, a quiet NaN with a
# payload, a signalling NaN, a negative quiet NaN.
EDGE = {
    "f16": (0x0000, 0x8000, 0x0001, 0x03FF, 0x0400, 0x3C00, 0x8001, 0x83FF),
    "bf16": (0x0000, 0x8000, 0x0001, 0x007F, 0x0080, 0x3F80, 0x8001, 0x807F),
    "f32": (0x00000000, 0x80000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x3F800000, 0x80000001, 0x807FFFFF),
}
LARGE = {"f16": (0x7BFF, 0xFBFF), "bf16": (0x7F7F, 0xFF7F), "f32": (0x7F7FFFFF, 0xFF7FFFFF)}
SPECIAL = {
    "f16": (0x7C00, 0xFC00, 0x7E00, 0x7E5A, 0x7C01, 0xFE00),
    "bf16": (0x7F80, 0xFF80, 0x7FC0, 0x7FC5, 0x7F81, 0xFFC0),
    "f32": (0x7F800000, 0xFF800000, 0x7FC00000, 0x7FC12345, 0x7F800001, 0xFFC00000),
}
_UINT = {"f16": np.uint16, "bf16": np.uint16, "f32": np.uint32}


def floats(rng: np.random.Generator, shape: tuple[int, ...], fmt: str, values: str, scale: float = 1.0) -> np.ndarray:
    """Bits (uint16/uint32) of ``fmt`` numbers: normal ones times ``scale``, with edge values
    (``values == "edge"``) or a few infinities and NaNs (``"special"``) mixed in."""
    bits = to_bits(rng.standard_normal(shape) * scale, fmt).astype(_UINT[fmt])
    flat = bits.reshape(-1)
    if values == "edge":
        r = rng.random(flat.size)
        for share, table in ((EDGE_SHARE, EDGE), (LARGE_SHARE, LARGE)):
            pick = np.flatnonzero(r < share)
            flat[pick] = rng.choice(np.array(table[fmt], _UINT[fmt]), len(pick))
            r[pick] = 1.0
    elif values == "special":
        pick = rng.choice(flat.size, max(1, flat.size // SPECIAL_EVERY), replace=False)
        flat[pick] = rng.choice(np.array(SPECIAL[fmt], _UINT[fmt]), len(pick))
    return bits


def sentinel(shape: tuple[int, ...], bits: int = 32) -> np.ndarray:
    return np.full(shape, SENTINEL32 if bits == 32 else SENTINEL16, np.uint32 if bits == 32 else np.uint16)


def half(x: float) -> bytes:
    """A ``half``/``cutlass::half_t`` passed by value: its 2 bytes."""
    return np.float16(x).tobytes()


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------------------------------------
# the kernels

@dataclass(frozen=True)
class MapArg:
    """A ``CUtensorMap`` parameter (``__grid_constant__``): a tiled tensor map over buffer ``buffer``, as
    ``cuTensorMapEncodeTiled`` takes it (innermost dimension first; element strides 1, no interleave,
    zero fill), in a parameter of ``size`` bytes (CuTe's TMA atom: 256, the map first).  The GPU side
    encodes it with the driver at the buffer's device address; fragsim's side passes a
    ``fragsim.TensorMap`` whose base is the address the buffer is pinned at (``PIN``)."""

    buffer: str
    dtype: str
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: str = "none"
    size: int = 128

    def tensor_map(self, base: int):
        from fragsim.tma import TensorMap
        return TensorMap(self.dtype, self.dims, self.strides, self.box, swizzle=self.swizzle, base=base)

    def case(self) -> dict[str, Any]:
        """The argument set as gpu_check/tma/device.py's ``Driver.encode`` takes it."""
        return {"dtype": self.dtype, "dims": list(self.dims), "strides": list(self.strides), "box": list(self.box),
                "es": [1] * len(self.dims), "interleave": "none", "swizzle": self.swizzle, "oob_fill": "zero"}


#: Where fragsim places the buffers tensor maps name (one 4 GiB slot each, above the default placement).
PIN = 0x7F80_0000_0000
PIN_SLOT = 1 << 32

Arg = str | bytes | np.generic | MapArg   # a buffer's name, a struct's bytes, a typed number, a tensor map
Region = Callable[[tuple[int, int, int]], dict[str, np.ndarray]]


@dataclass
class Launch:
    """One launch: geometry, ``buffers`` (initial contents), ``args`` in .param order, the ``outputs``
    compared, and ``region(cta)``: per output, a bool mask of the elements that CTA writes (None: the
    kernel has no single-CTA comparison)."""

    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    buffers: dict[str, np.ndarray]
    args: list[Arg]
    outputs: tuple[str, ...]
    region: Region | None = None


@dataclass(frozen=True)
class Kernel:
    """A kernel of the corpus: ``files`` (the first runs every shape and seed, the others -- the same
    source compiled otherwise -- the first shape and seed), ``entry`` (a substring of the .entry name;
    None: the module's one kernel), ``shapes``, ``seeds`` and ``build(shape, seed)``."""

    name: str
    files: tuple[str, ...]
    entry: str | None
    shapes: tuple[dict[str, int], ...]
    seeds: tuple[int, ...]
    build: Callable[[dict[str, int], int], Launch]
    what: str = ""


def dims(*v: int) -> tuple[int, int, int]:
    return tuple(list(v) + [1] * (3 - len(v)))  # type: ignore[return-value]


def tile_region(name: str, shape: tuple[int, int], rows: int, cols: int, row_axis: str = "y") -> Region:
    """A GEMM's output tile of CTA (x, y): ``rows`` x ``cols`` at (y * rows, x * cols) (or at
    (x * rows, y * cols) with ``row_axis="x"``)."""
    def region(cta: tuple[int, int, int]) -> dict[str, np.ndarray]:
        r, c = (cta[1], cta[0]) if row_axis == "y" else (cta[0], cta[1])
        m = np.zeros(shape, bool)
        m[r * rows:(r + 1) * rows, c * cols:(c + 1) * cols] = True
        return {name: m}
    return region


def range_region(name: str, n: int, block: int) -> Region:
    """Elements [x * block, (x + 1) * block) of a 1-D output (one per thread)."""
    def region(cta: tuple[int, int, int]) -> dict[str, np.ndarray]:
        m = np.zeros(n, bool)
        m[cta[0] * block:(cta[0] + 1) * block] = True
        return {name: m}
    return region


def _mma_1warp(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    K = s["K"]
    bufs = {"A": floats(rng, (16, K), "bf16", v), "Bt": floats(rng, (8, K), "bf16", v), "D": sentinel((16, 8))}
    return Launch(dims(1), dims(32), 0, bufs, ["A", "Bt", "D", np.int32(K)], ("D",))


def _tn_gemm(fmt: str, tile: int, smem: int, s: dict[str, int], seed: int) -> Launch:
    """D = A * B^T kernels (A: M x K, Bt: N x K in ``fmt``; D f32) with square ``tile``s, 128 threads."""
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    M, N, K = s["M"], s["N"], s["K"]
    bufs = {"A": floats(rng, (M, K), fmt, v), "Bt": floats(rng, (N, K), fmt, v), "D": sentinel((M, N))}
    return Launch(dims(cdiv(N, tile), cdiv(M, tile)), dims(128), smem, bufs,
                  ["A", "Bt", "D", np.int32(M), np.int32(N), np.int32(K)], ("D",),
                  tile_region("D", (M, N), tile, tile))


_hgemm = partial(_tn_gemm, "f16", 64, 16384)      # 64x64 tiles, dynamic shared memory
_bgemm = partial(_tn_gemm, "bf16", 128, 0)        # 128x128 tiles, static shared memory


def _gemm_ldshared(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    M, N, K = s["M"], s["N"], s["K"]
    bufs = {"A": floats(rng, (M, K), "f32", v), "B": floats(rng, (K, N), "f32", v), "C": sentinel((M, N))}
    return Launch(dims(cdiv(N, 16), cdiv(M, 16)), dims(16, 16), 0, bufs,
                  ["A", "B", "C", np.int32(M), np.int32(N), np.int32(K)], ("C",), tile_region("C", (M, N), 16, 16))


def _reduce_shfl(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    n, block = s["n"], s["block"]
    grid = cdiv(n, block)
    exact = grid > 1 and v == "normal"
    if s.get("tiny"):
        # subnormals whose sum stays subnormal: the shuffles' add.f32 keeps them, atom.add.f32 flushes
        x = rng.integers(1, 1 << 16, n, dtype=np.uint32) | (rng.integers(0, 2, n, dtype=np.uint32) << 31)
    elif exact:
        # several CTAs add their sums atomically in no fixed order: small integers make every order exact
        x = rng.integers(-1000, 1001, n).astype(np.float32).view(np.uint32)
    else:
        x = floats(rng, (n,), "f32", v)
    bufs = {"x": x, "sum": np.zeros(1, np.uint32), "count_neg": np.zeros(1, np.uint32),
            "max_bits": np.full(1, np.iinfo(np.int32).min, np.int32)}
    outs = ("sum", "count_neg", "max_bits") if grid == 1 or exact else ("count_neg", "max_bits")
    return Launch(dims(grid), dims(block), 0, bufs, ["x", np.int32(n), "sum", "count_neg", "max_bits"], outs)


def _devfunc_local(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    n, block = s["n"], s["block"]
    bufs = {"x": floats(rng, (n,), "f32", v), "perm": rng.integers(-2**31, 2**31, n).astype(np.int32),
            "out": sentinel((n,))}
    return Launch(dims(cdiv(n, block)), dims(block), 0, bufs, ["x", "perm", "out", np.int32(n)], ("out",),
                  range_region("out", n, block))


#: struct Params { float alpha; half offset; int n; double beta; float pad[3]; } as the host lays it out.
PARAMS = np.dtype([("alpha", "<f4"), ("offset", "<f2"), ("n", "<i4"), ("beta", "<f8"), ("pad", "<f4", (3,))],
                  align=True)


def _struct_param(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    n, block = s["n"], 128
    p = np.zeros((), PARAMS)
    cv = "normal" if v == "special" else v      # a NaN coefficient would make every output NaN
    coef = floats(rng, (6,), "f32", cv).view(np.float32)
    p["alpha"], p["beta"], p["pad"] = coef[0], np.float64(coef[1]) * 3.0, coef[2:5]
    p["offset"], p["n"] = floats(rng, (1,), "f16", cv).view(np.float16)[0], n
    bufs = {"x": floats(rng, (n + 5,), "f32", v), "y": sentinel((n + 5,))}
    # one CTA more than the elements need: its threads find i >= n and write nothing
    return Launch(dims(cdiv(n, block) + 1), dims(block), 0, bufs, [p.tobytes(), "x", "y"], ("y",),
                  range_region("y", n + 5, block))


def _wgmma_desc(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    bufs = {"A": floats(rng, (64, 16), "bf16", v), "Bt": floats(rng, (64, 16), "bf16", v), "D": sentinel((64, 64))}
    return Launch(dims(1), dims(128), 0, bufs, ["A", "Bt", "D"], ("D",))


def _triton(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    M, N, K = s["M"], s["N"], s["K"]
    bufs = {"a": floats(rng, (M, K), "f16", v), "b": floats(rng, (K, N), "f16", v), "c": sentinel((M, N), 16)}
    # (a, b, c, M, N, K, stride_am, stride_bk, stride_cm, global scratch, profile scratch): Triton 3.6
    # passes null scratch pointers when the kernel needs none
    args: list[Arg] = ["a", "b", "c", np.uint32(M), np.uint32(N), np.uint32(K), np.uint32(K), np.uint32(N),
                       np.uint32(N), np.uint64(0), np.uint64(0)]
    return Launch(dims(cdiv(M, 64), cdiv(N, 64)), dims(128), 49152, bufs, args, ("c",),
                  tile_region("c", (M, N), 64, 64, row_axis="x"))


def _tma_wgmma(s: dict[str, int], seed: int) -> Launch:
    """tma_wgmma: D (M x N, f32) = A (M x K) * Bt^T (Bt: N x K), bf16, 64x64 tiles; 2-D tensor maps with
    64x64 boxes and 128-byte swizzle over A and Bt."""
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    M, N, K = s["M"], s["N"], s["K"]
    bufs = {"A": floats(rng, (M, K), "bf16", v), "Bt": floats(rng, (N, K), "bf16", v), "D": sentinel((M, N))}
    maps: list[Arg] = [MapArg("A", "bf16", (K, M), (K * 2,), (64, 64), "128B"),
                       MapArg("Bt", "bf16", (K, N), (K * 2,), (64, 64), "128B")]
    return Launch(dims(cdiv(N, 64), cdiv(M, 64)), dims(128), 0, bufs,
                  maps + ["D", np.int32(M), np.int32(N), np.int32(K)], ("D",), tile_region("D", (M, N), 64, 64))


def _tma_bulk(s: dict[str, int], seed: int) -> Launch:
    """tma_bulk: out = in * 3 + 1 through cp.async.bulk both ways, sums[0..3] += out[chunk start ..] of
    every CTA (cp.reduce.async.bulk), leaders[cta] the elect.sync lane; 1024 words per CTA."""
    rng = np.random.default_rng(seed)
    n = s["n"]
    grid = cdiv(n, 1024)
    bufs = {"x": rng.integers(0, 1 << 32, n, dtype=np.uint32), "out": sentinel((n,)),
            "sums": rng.integers(0, 1 << 32, 4, dtype=np.uint32), "leaders": sentinel((grid,))}

    def region(cta: tuple[int, int, int]) -> dict[str, np.ndarray]:
        # one CTA alone adds only its own words to sums: compared for the whole grid only
        out, lead = np.zeros(n, bool), np.zeros(grid, bool)
        out[cta[0] * 1024:(cta[0] + 1) * 1024] = True
        lead[cta[0]] = True
        return {"out": out, "leaders": lead}
    return Launch(dims(grid), dims(128), 0, bufs, ["x", "out", "sums", "leaders", np.int32(n)],
                  ("out", "sums", "leaders"), region)


EMPTY = b"\0"                               # a CuTe layout/copy/tiler of static shape: an empty struct


def _cute_scalars(seed: int) -> tuple[float, float]:
    """(alpha, beta): C = alpha * A B + beta * C; beta != 0 on seed 1 makes the epilogue read C."""
    return (0.5, 1.0) if seed % 3 == 1 else (1.0, 0.0)


def _cutlass_sgemm(s: dict[str, int], seed: int) -> Launch:
    """CuTe's sgemm_sm80 HGEMM TN: A (M,K) and B (N,K) K-major, C M-major (N,M in memory)."""
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    M, N, K = s["M"], s["N"], s["K"]
    alpha, beta = _cute_scalars(seed)
    bufs = {"A": floats(rng, (M, K), "f16", v), "B": floats(rng, (N, K), "f16", v),
            "C": floats(rng, (N, M), "f16", "normal")}
    i32 = struct.Struct("<i").pack
    args: list[Arg] = [struct.pack("<iii", M, N, K), EMPTY,           # shape_MNK, cta_tiler
                       "A", i32(K), EMPTY, EMPTY, EMPTY,              # dA = (K, _1), sA, copy_a, s2r atom a
                       "B", i32(K), EMPTY, EMPTY, EMPTY,
                       "C", i32(M), EMPTY, EMPTY,                     # dC = (_1, M), sC, mma
                       half(alpha), half(beta)]
    return Launch(dims(M // 128, N // 128), dims(128), 98304, bufs, args, ("C",),
                  tile_region("C", (N, M), 128, 128))


def _cutlass_wgmma(major: str) -> Callable[[dict[str, int], int], Launch]:
    """CuTe's wgmma_sm90 (cp.async into GMMA-swizzled smem, 64x64x16 wgmma): ``major`` "K" is the TN
    kernel (A (M,K), B (N,K)), "MN" the NT one (A (K,M), B (K,N)); C M-major (N,M in memory)."""
    def build(s: dict[str, int], seed: int) -> Launch:
        rng, v = np.random.default_rng(seed), VALUES[seed % 3]
        M, N, K = s["M"], s["N"], s["K"]
        alpha, beta = _cute_scalars(seed)
        a_shape, b_shape, ld_a, ld_b = ((M, K), (N, K), K, K) if major == "K" else ((K, M), (K, N), M, N)
        bufs = {"A": floats(rng, a_shape, "f16", v), "B": floats(rng, b_shape, "f16", v),
                "C": floats(rng, (N, M), "f16", "normal")}
        i32 = struct.Struct("<i").pack
        # TiledMMA: 8 bytes, the GMMA atom's accumulate_ (GMMA::ScaleOut::One = 1) first
        args: list[Arg] = [struct.pack("<iii", M, N, K), EMPTY, "A", i32(ld_a), EMPTY, EMPTY,
                           "B", i32(ld_b), EMPTY, EMPTY, "C", i32(M), struct.pack("<II", 1, 0),
                           half(alpha), half(beta)]
        return Launch(dims(M // 128, N // 128), dims(128), 98304, bufs, args, ("C",),
                      tile_region("C", (N, M), 128, 128))
    return build


def _cutlass_wgmma_tma(major: str) -> Callable[[dict[str, int], int], Launch]:
    """CuTe's wgmma_tma_sm90 (TMA into GMMA-swizzled smem, mbarrier pipeline of 3 stages, 64x64x16 wgmma):
    ``major`` "K" the TN kernel (A (M,K), B (N,K)), "MN" the NT one (A (K,M), B (K,N)); C M-major (N,M in
    memory).  The tensor maps are the ones its PTX uses: boxes of 64x128 (K-major) or 64x8 (MN-major)
    f16 elements, 128-byte swizzle, in 256-byte TMA-atom parameters."""
    def build(s: dict[str, int], seed: int) -> Launch:
        rng, v = np.random.default_rng(seed), VALUES[seed % 3]
        M, N, K = s["M"], s["N"], s["K"]
        alpha, beta = _cute_scalars(seed)
        if major == "K":
            a_shape, b_shape = (M, K), (N, K)
            ma = MapArg("A", "f16", (K, M), (K * 2,), (64, 128), "128B", 256)
            mb = MapArg("B", "f16", (K, N), (K * 2,), (64, 128), "128B", 256)
        else:
            a_shape, b_shape = (K, M), (K, N)
            ma = MapArg("A", "f16", (M, K), (M * 2,), (64, 8), "128B", 256)
            mb = MapArg("B", "f16", (N, K), (N * 2,), (64, 8), "128B", 256)
        bufs = {"A": floats(rng, a_shape, "f16", v), "B": floats(rng, b_shape, "f16", v),
                "C": floats(rng, (N, M), "f16", "normal")}
        i32 = struct.Struct("<i").pack
        args: list[Arg] = [struct.pack("<iii", M, N, K), EMPTY, "A", ma, "B", mb, "C", i32(M),
                           struct.pack("<II", 1, 0), half(alpha), half(beta)]
        # SharedStorage: 3 stages of A and B (49152 bytes each), 6 mbarriers, rounded up to its alignment 128
        return Launch(dims(M // 128, N // 128), dims(128), 98432, bufs, args, ("C",),
                      tile_region("C", (N, M), 128, 128))
    return build


# The MUFU kernels (src/softmax_fast.cu, rmsnorm.cu, layernorm.cu, attention_fwd.cu, sincos.cu): shapes
# hold ints; the normal inputs are multiplied by "scale" times 10 ** "scale_exp" (large ones make exp
# underflow and squares overflow, tiny ones make subnormals); "eps" is the norms' epsilon in 1e-6.

def row_region(shape: dict[str, tuple[int, ...]], per_cta: int, axis: int = 0) -> Region:
    """Rows [x * per_cta, (x + 1) * per_cta) of every output (name -> its shape); ``axis``: the grid
    axis that counts them (the rows of a 1-D output are its elements)."""
    def region(cta: tuple[int, int, int]) -> dict[str, np.ndarray]:
        out = {}
        for name, sh in shape.items():
            m = np.zeros(sh, bool)
            m[cta[axis] * per_cta:(cta[axis] + 1) * per_cta] = True
            out[name] = m
        return out
    return region


def col_region(shape: dict[str, tuple[int, int]], per_cta: int, row_axis: int | None = None) -> Region:
    """Columns [x * per_cta, (x + 1) * per_cta) of every 2-D output, of row y only if ``row_axis`` is 1."""
    def region(cta: tuple[int, int, int]) -> dict[str, np.ndarray]:
        out = {}
        for name, sh in shape.items():
            m = np.zeros(sh, bool)
            rows = slice(cta[1], cta[1] + 1) if row_axis == 1 else slice(None)
            m[rows, cta[0] * per_cta:(cta[0] + 1) * per_cta] = True
            out[name] = m
        return out
    return region


def _scaled(rng: np.random.Generator, shape: tuple[int, ...], fmt: str, v: str, s: dict[str, int],
            key: str = "scale") -> np.ndarray:
    return floats(rng, shape, fmt, v, float(s.get(key, 1)) * 10.0 ** s.get(key + "_exp", 0))


def _softmax_warp(s: dict[str, int], seed: int) -> Launch:
    """softmax_warp: one warp per row, 4 rows per CTA; ``mode``: 0 times 1/sum, 1 __fdividef, 2 / sum."""
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    rows, cols = s["rows"], s["cols"]
    bufs = {"x": _scaled(rng, (rows, cols), "f32", v, s), "y": sentinel((rows, cols))}
    return Launch(dims(cdiv(rows, 4)), dims(128), 0, bufs,
                  ["x", "y", np.int32(rows), np.int32(cols), np.int32(s["mode"])], ("y",),
                  row_region({"y": (rows, cols)}, 4))


def _softmax_block(s: dict[str, int], seed: int) -> Launch:
    """softmax_block: one CTA of ``block`` threads per row."""
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    rows, cols = s["rows"], s["cols"]
    bufs = {"x": _scaled(rng, (rows, cols), "f32", v, s), "y": sentinel((rows, cols))}
    return Launch(dims(rows), dims(s["block"]), 0, bufs, ["x", "y", np.int32(cols)], ("y",),
                  row_region({"y": (rows, cols)}, 1))


def _rmsnorm(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    rows, cols = s["rows"], s["cols"]
    bufs = {"x": _scaled(rng, (rows, cols), "f32", v, s), "w": floats(rng, (cols,), "f32", v),
            "y": sentinel((rows, cols))}
    return Launch(dims(rows), dims(s["block"]), 0, bufs,
                  ["x", "w", "y", np.int32(cols), np.float32(s["eps"] * 1e-6)], ("y",),
                  row_region({"y": (rows, cols)}, 1))


def _layernorm(s: dict[str, int], seed: int) -> Launch:
    """layernorm: y, and per row mean, rstd and std."""
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    rows, n = s["rows"], s["cols"]
    bufs = {"x": _scaled(rng, (rows, n), "f32", v, s), "w": floats(rng, (n,), "f32", v),
            "b": floats(rng, (n,), "f32", v), "y": sentinel((rows, n)), "mean": sentinel((rows,)),
            "rstd": sentinel((rows,)), "std": sentinel((rows,))}
    return Launch(dims(rows), dims(s["block"]), 0, bufs,
                  ["x", "w", "b", "y", "mean", "rstd", "std", np.int32(n), np.float32(s["eps"] * 1e-6)],
                  ("y", "mean", "rstd", "std"),
                  row_region({"y": (rows, n), "mean": (rows,), "rstd": (rows,), "std": (rows,)}, 1))


#: attention_fwd's head dimension, query tile and threads per CTA (src/attention_fwd.cu's ATT_D, ATT_BM).
ATT_D, ATT_BM = 32, 64


def _attention(fmt: str) -> Callable[[dict[str, int], int], Launch]:
    """attention_fwd_<fmt>: Q [bh, sq, D], K and V [bh, sk, D] in ``fmt``; O like Q, LSE [bh, sq] f32; one CTA
    of 64 threads per (64-query tile, bh); softmax_scale = ``scale_milli`` / 1000 (default 1 / sqrt(D))."""
    def build(s: dict[str, int], seed: int) -> Launch:
        rng, v = np.random.default_rng(seed), VALUES[seed % 3]
        bh, sq, sk = s["bh"], s["sq"], s["sk"]
        bits = 32 if fmt == "f32" else 16
        bufs = {"Q": _scaled(rng, (bh, sq, ATT_D), fmt, v, s), "K": _scaled(rng, (bh, sk, ATT_D), fmt, v, s),
                "V": floats(rng, (bh, sk, ATT_D), fmt, v), "O": sentinel((bh, sq, ATT_D), bits),
                "lse": sentinel((bh, sq))}
        scale = np.float32(s["scale_milli"] / 1000) if "scale_milli" in s else np.float32(1 / math.sqrt(ATT_D))

        def region(cta: tuple[int, int, int]) -> dict[str, np.ndarray]:
            o, lse = np.zeros((bh, sq, ATT_D), bool), np.zeros((bh, sq), bool)
            o[cta[1], cta[0] * ATT_BM:(cta[0] + 1) * ATT_BM] = True
            lse[cta[1], cta[0] * ATT_BM:(cta[0] + 1) * ATT_BM] = True
            return {"O": o, "lse": lse}
        return Launch(dims(cdiv(sq, ATT_BM), bh), dims(ATT_BM), 0, bufs,
                      ["Q", "K", "V", "O", "lse", np.int32(sq), np.int32(sk), scale, np.int32(s["causal"])],
                      ("O", "lse"), region)
    return build


def _rope(s: dict[str, int], seed: int) -> Launch:
    """rope: x [tokens, dim] rotated by pos[t] * base^(-2i/dim), base 10000; 64 pairs per CTA, a row of CTAs
    per token; ``mode`` picks the functions (src/sincos.cu); positions times ``pos_scale``."""
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    tokens, dim = s["tokens"], s["dim"]
    bufs = {"x": floats(rng, (tokens, dim), "f32", v), "pos": _scaled(rng, (tokens,), "f32", v, s, "pos_scale"),
            "y": sentinel((tokens, dim))}
    return Launch(dims(cdiv(dim // 2, 64), tokens), dims(64), 0, bufs,
                  ["x", "pos", "y", np.int32(tokens), np.int32(dim), np.float32(10000.0), np.int32(s["mode"])],
                  ("y",), col_region({"y": (tokens, dim)}, 128, row_axis=1))


#: mufu_map's outputs, one row each (src/sincos.cu).
MUFU_MAP = ("__sinf", "__cosf", "__log2f", "__expf", "exp2f", "__logf", "__fdividef(1, x)", "rsqrtf", "sqrtf",
            "__powf(|x|, p)")


def _mufu_map(s: dict[str, int], seed: int) -> Launch:
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    n = s["n"]
    bufs = {"x": _scaled(rng, (n,), "f32", v, s), "p": floats(rng, (n,), "f32", v, 4.0),
            "out": sentinel((len(MUFU_MAP), n))}
    return Launch(dims(cdiv(n, 128)), dims(128), 0, bufs, ["x", "p", "out", np.int32(n)], ("out",),
                  col_region({"out": (len(MUFU_MAP), n)}, 128))


def _half_ex2(s: dict[str, int], seed: int) -> Launch:
    """half_ex2: 4 rows of f16 and of bf16 results (hexp2, ex2.approx, the x2 form's halves)."""
    rng, v = np.random.default_rng(seed), VALUES[seed % 3]
    n = s["n"]
    bufs = {"h": _scaled(rng, (n,), "f16", v, s), "bf": _scaled(rng, (n,), "bf16", v, s),
            "out_h": sentinel((4, n), 16), "out_bf": sentinel((4, n), 16)}
    return Launch(dims(cdiv(n, 128)), dims(128), 0, bufs, ["h", "bf", "out_h", "out_bf", np.int32(n)],
                  ("out_h", "out_bf"), col_region({"out_h": (4, n), "out_bf": (4, n)}, 128))


def _shapes(keys: str, *rows: tuple[int | None, ...]) -> tuple[dict[str, int], ...]:
    """Shapes from tuples of the space-separated ``keys``' values (None: left out)."""
    return tuple({k: x for k, x in zip(keys.split(), r) if x is not None} for r in rows)


SOFTMAX_SHAPES = _shapes("rows cols mode scale", (4, 32, 0, 1), (10, 100, 1, 1), (7, 257, 2, 1), (6, 64, 0, 40),
                         (5, 96, 2, 300))
NORM_SHAPES = _shapes("rows cols block eps scale scale_exp", (4, 256, 128, 1, 1, 0), (3, 1000, 128, 10, 1, 0),
                      (5, 33, 64, 1, 1, 0), (2, 300, 128, 0, 1, -20), (2, 200, 128, 1, 1, 19))
ATT_SHAPES = _shapes("bh sq sk causal scale_milli", (1, 64, 64, 0, None), (2, 80, 80, 1, None),
                     (1, 100, 37, 0, None), (1, 48, 130, 1, 20000))


def _gemm_shapes(*mnk: tuple[int, int, int]) -> tuple[dict[str, int], ...]:
    return tuple({"M": m, "N": n, "K": k} for m, n, k in mnk)


KERNELS = (
    Kernel("mma_1warp", ("mma_1warp.sm90a.ptx", "mma_1warp.sm80.ptx", "mma_1warp.sm90a.lineinfo.ptx"), None,
           ({"K": 16}, {"K": 64}, {"K": 256}), (0, 1, 2), _mma_1warp, "ldmatrix + mma.sync bf16, one warp"),
    Kernel("hgemm_cpasync", ("hgemm_cpasync.sm90a.ptx", "hgemm_cpasync.sm80.ptx",
                             "hgemm_cpasync.sm90a.lineinfo.ptx"), None,
           _gemm_shapes((64, 64, 64), (96, 128, 128), (130, 72, 192)), (0, 1, 2), _hgemm,
           "cp.async zero-fill + XOR swizzle + ldmatrix + mma.sync f16, 64x64 tiles"),
    Kernel("bgemm_128x128", ("bgemm_128x128.sm90a.ptx", "bgemm_128x128.sm80.ptx",
                             "bgemm_128x128.sm90a.lineinfo.ptx"), None,
           _gemm_shapes((128, 128, 64), (200, 136, 96)), (0, 1, 2), _bgemm,
           "the speed benchmark's kernel: 128x128 tiles, 2-stage cp.async pipeline, swizzled ldmatrix, mma bf16"),
    Kernel("gemm_ldshared", ("gemm_ldshared.sm90a.ptx", "gemm_ldshared.sm80.ptx",
                             "gemm_ldshared.sm90a.lineinfo.ptx"), None,
           _gemm_shapes((16, 16, 16), (50, 37, 29), (64, 96, 80)), (0, 1, 2), _gemm_ldshared,
           "ld.shared tiled SGEMM with fma.rn.f32"),
    Kernel("reduce_shfl", ("reduce_shfl.sm90a.ptx", "reduce_shfl.sm80.ptx", "reduce_shfl.sm90a.lineinfo.ptx",
                           "reduce_shfl.sm90a.G.ptx"), None,
           ({"n": 256, "block": 256}, {"n": 200, "block": 256}, {"n": 1000, "block": 128},
            {"n": 5000, "block": 256}, {"n": 64, "block": 64, "tiny": 1}), (0, 1, 2, 3), _reduce_shfl,
           "shfl.sync, vote.ballot, popc, atomics"),
    Kernel("devfunc_local", ("devfunc_local.sm90a.ptx", "devfunc_local.sm80.ptx",
                             "devfunc_local.sm90a.lineinfo.ptx", "devfunc_local.sm90a.G.ptx"), None,
           ({"n": 100, "block": 128}, {"n": 1000, "block": 128}, {"n": 4096, "block": 256}), (0, 1, 2),
           _devfunc_local, ".func call with a return value, .local stack array"),
    Kernel("struct_param", ("struct_param.sm90a.ptx", "struct_param.sm80.ptx", "struct_param.sm90a.lineinfo.ptx"),
           None, ({"n": 100}, {"n": 1000}), (0, 1, 2), _struct_param, "a struct passed by value (.b8 [40])"),
    Kernel("wgmma_desc", ("wgmma_desc.sm90a.ptx", "wgmma_desc.sm90a.lineinfo.ptx"), None, ({},),
           (0, 1, 2, 3, 4, 5), _wgmma_desc, "wgmma.mma_async m64n64k16 bf16 from 128B-swizzled descriptors"),
    Kernel("triton_matmul_sm80", ("triton_matmul.sm80.ptx",), None,
           _gemm_shapes((64, 64, 32), (100, 72, 80), (128, 192, 64)), (0, 1, 2), _triton,
           "Triton fp16 matmul with masks (mma.sync)"),
    Kernel("triton_matmul_sm90", ("triton_matmul.sm90.ptx",), None,
           _gemm_shapes((64, 64, 32), (100, 72, 80), (128, 192, 64)), (0, 1, 2), _triton,
           "Triton fp16 matmul with masks (wgmma)"),
    Kernel("cutlass_sgemm_sm80", ("cutlass_sgemm_sm80.sm80.ptx",), "gemm_device",
           _gemm_shapes((128, 128, 64), (256, 128, 192)), (0, 1, 2), _cutlass_sgemm,
           "CuTe HGEMM TN: cp.async, ldmatrix, Swizzle<3,3,3>, mma.sync f16, struct parameters"),
    # K >= 128: with a single 64-wide k-tile the tutorial's prologue reads one tile past A and B
    Kernel("cutlass_wgmma_sm90_tn", ("cutlass_wgmma_sm90.sm90a.ptx",), "MajorE0",
           _gemm_shapes((128, 128, 128), (256, 256, 192)), (0, 1, 2), _cutlass_wgmma("K"),
           "CuTe wgmma GEMM TN (K-major GMMA operands)"),
    Kernel("cutlass_wgmma_sm90_nt", ("cutlass_wgmma_sm90.sm90a.ptx",), "MajorE1",
           _gemm_shapes((128, 128, 128), (256, 256, 192)), (0, 1, 2), _cutlass_wgmma("MN"),
           "CuTe wgmma GEMM NT (MN-major GMMA operands)"),
    Kernel("tma_wgmma", ("tma_wgmma.sm90a.ptx", "tma_wgmma.sm90a.lineinfo.ptx"), None,
           _gemm_shapes((64, 64, 64), (100, 72, 200), (128, 128, 320)), (0, 1, 2), _tma_wgmma,
           "TMA (128B swizzle) + mbarrier pipeline + wgmma bf16, 64x64 tiles, partial tiles filled by the TMA"),
    Kernel("tma_bulk", ("tma_bulk.sm90a.ptx", "tma_bulk.sm90a.lineinfo.ptx"), None,
           ({"n": 1024}, {"n": 2500}, {"n": 4100}), (0, 1, 2), _tma_bulk,
           "cp.async.bulk both ways, cp.reduce.async.bulk, test_wait/try_wait (parity, state), elect.sync, inval"),
    Kernel("cutlass_wgmma_tma_sm90_tn", ("cutlass_wgmma_tma_sm90.sm90a.ptx",), "MajorE0",
           _gemm_shapes((128, 128, 128), (256, 256, 192)), (0, 1, 2), _cutlass_wgmma_tma("K"),
           "CuTe TMA + wgmma GEMM TN (K-major)"),
    Kernel("cutlass_wgmma_tma_sm90_nt", ("cutlass_wgmma_tma_sm90.sm90a.ptx",), "MajorE1",
           _gemm_shapes((128, 128, 128), (256, 256, 192)), (0, 1, 2), _cutlass_wgmma_tma("MN"),
           "CuTe TMA + wgmma GEMM NT (MN-major)"),
    # the MUFU kernels (--forms softmax_fast rmsnorm layernorm attention_fwd sincos; recorded on their own)
    Kernel("softmax_fast", ("softmax_fast.sm90a.ptx",), "softmax_warp", SOFTMAX_SHAPES, (0, 1, 2), _softmax_warp,
           "row softmax, a warp per row, --use_fast_math: ex2.approx.ftz.f32, rcp/div.approx.ftz.f32"),
    Kernel("softmax_fast_block", ("softmax_fast.sm90a.ptx",), "softmax_block",
           _shapes("rows cols block scale", (3, 500, 128, 1), (2, 1000, 256, 40), (4, 37, 64, 1)), (0, 1, 2),
           _softmax_block, "row softmax, a CTA per row (shared-memory reductions), --use_fast_math"),
    Kernel("softmax_fast_precdiv", ("softmax_fast.precdiv.sm90a.ptx", "softmax_fast.default.sm90a.ptx"),
           "softmax_warp", SOFTMAX_SHAPES, (0, 1, 2), _softmax_warp,
           "row softmax, -prec-div=false: ex2.approx.f32, rcp.approx.f32, div.full.f32, div.approx.f32 (no .ftz)"),
    Kernel("rmsnorm", ("rmsnorm.sm90a.ptx",), None, NORM_SHAPES, (0, 1, 2), _rmsnorm,
           "RMSNorm, --use_fast_math: rsqrt.approx.ftz.f32, div.approx.ftz.f32"),
    Kernel("rmsnorm_default", ("rmsnorm.default.sm90a.ptx",), None, NORM_SHAPES, (0, 1, 2), _rmsnorm,
           "RMSNorm, default build: rsqrt.approx.f32 (no .ftz), div.rn.f32"),
    Kernel("layernorm", ("layernorm.sm90a.ptx",), None, NORM_SHAPES, (0, 1, 2), _layernorm,
           "LayerNorm, default build: sqrt.rn.f32, div.rn.f32, rcp.rn.f32"),
    Kernel("layernorm_approx", ("layernorm.approx.sm90a.ptx",), None, NORM_SHAPES, (0, 1, 2), _layernorm,
           "LayerNorm, -prec-div=false -prec-sqrt=false: div.full.f32, sqrt.approx.f32, rsqrt.approx.f32"),
    Kernel("layernorm_approx_ftz", ("layernorm.approx_ftz.sm90a.ptx",), None, NORM_SHAPES, (0, 1, 2), _layernorm,
           "LayerNorm, the same with -ftz=true: div.full.ftz.f32, sqrt/rsqrt.approx.ftz.f32"),
    Kernel("layernorm_fast", ("layernorm.fast.sm90a.ptx",), None, NORM_SHAPES, (0, 1, 2), _layernorm,
           "LayerNorm, --use_fast_math: div.approx.ftz.f32, sqrt/rsqrt.approx.ftz.f32"),
    Kernel("attention_fwd_f32", ("attention_fwd.sm90a.ptx",), "attention_fwd_f32", ATT_SHAPES, (0, 1, 2),
           _attention("f32"), "FlashAttention-2-style forward, f32, online softmax: ex2/lg2/rcp.approx.ftz.f32"),
    Kernel("attention_fwd_f16", ("attention_fwd.sm90a.ptx",), "attention_fwd_f16", ATT_SHAPES, (0, 1, 2),
           _attention("f16"), "FlashAttention-2-style forward, f16 in and out, f32 accumulation"),
    Kernel("sincos_rope", ("sincos.sm90a.ptx", "sincos.default.sm90a.ptx"), "rope",
           _shapes("tokens dim mode pos_scale", (8, 64, 0, 100), (5, 200, 1, 10000), (4, 130, 2, 100),
                   (3, 64, 0, 1000000)), (0, 1, 2), _rope,
           "rotary embedding, --use_fast_math: sin/cos/ex2/lg2.approx.ftz.f32"),
    Kernel("sincos_map", ("sincos.sm90a.ptx",), "mufu_map",
           _shapes("n scale scale_exp", (256, 1, 0), (1000, 1, 2), (300, 1, -39), (200, 1, 30)), (0, 1, 2),
           _mufu_map, "__sinf, __cosf, __log2f, __expf, exp2f, __logf, __fdividef, rsqrtf, sqrtf, __powf, fast math"),
    Kernel("sincos_map_default", ("sincos.default.sm90a.ptx",), "mufu_map",
           _shapes("n scale scale_exp", (256, 1, 0), (1000, 1, 2), (300, 1, -39), (200, 1, 30)), (0, 1, 2),
           _mufu_map, "the same without fast math: sin/cos/lg2/ex2.approx.f32, div.approx.f32 (no .ftz)"),
    Kernel("sincos_half_ex2", ("sincos.sm90a.ptx",), "half_ex2", _shapes("n scale", (512, 1), (1000, 4)), (0, 1, 2),
           _half_ex2, "hexp2 (f16, bf16), ex2.approx.f16, .f16x2, .ftz.bf16, .ftz.bf16x2"),
)
BY_NAME = {k.name: k for k in KERNELS}


def named(name: str, forms: list[str] | tuple[str, ...]) -> bool:
    """Whether ``--forms`` names kernel ``name``: one of the forms occurs in it at the start of a word (the
    name's start or after an underscore).  "tma" names tma_wgmma and cutlass_wgmma_tma_sm90_tn, not
    softmax_fast; "wgmma" names wgmma_desc and tma_wgmma; "1warp" names mma_1warp."""
    return any("_" + f.lstrip("_") in "_" + name for f in forms)


#: The TMA kernels, recorded on their own (``--forms tma --record tests/data/ptx/kernels_tma``).
TMA_KERNELS = frozenset(k.name for k in KERNELS if named(k.name, ["tma"]))
#: The forms that name the MUFU kernels (ex2/lg2/rcp/rsqrt/sqrt/sin/cos .approx, div.approx/.full).
MUFU_FORMS = ("softmax_fast", "rmsnorm", "layernorm", "attention_fwd", "sincos")
#: The MUFU kernels, recorded on their own (``--forms softmax_fast rmsnorm layernorm attention_fwd sincos
#: --record tests/data/ptx/kernels_mufu``; tests/test_ptx_mufu_kernels_hw.py replays them).
MUFU_KERNELS = frozenset(k.name for k in KERNELS if named(k.name, MUFU_FORMS))
#: The kernels of each recording under tests/data/ptx (folder -> kernels): the one recording of the rest
#: (``kernels``) and those recorded on their own.  A recording of a subset is made with --forms naming it.
RECORDED_APART = {"kernels_tma": TMA_KERNELS, "kernels_mufu": MUFU_KERNELS}


def _tma_check(swizzle: str) -> Callable[[dict[str, int], int], Launch]:
    """tma_wgmma_check (tma_wgmma.cu with -D knobs on the descriptor side): tma_wgmma's launch, the maps'
    swizzle mode ``swizzle``."""
    def build(s: dict[str, int], seed: int) -> Launch:
        g = _tma_wgmma(s, seed)
        g.args = [replace(a, swizzle=swizzle) if isinstance(a, MapArg) else a for a in g.args]
        return g
    return build


#: fragsim.check_tma_wgmma's injected mismatches on the H100 (``--forms tma_check`` only): name -> (PTX
#: variant of src/tma_wgmma_check.cu, the maps' swizzle, the product the check predicts, its finding).
TMA_CHECK = {
    "tma_check_right": ("tma_wgmma_check.sm90a.ptx", "128B", "right", ""),
    "tma_check_map_noswizzle": ("tma_wgmma_check.sm90a.ptx", "none", "wrong", "swizzle differs"),
    "tma_check_sbo512": ("tma_wgmma_check.sbo512.sm90a.ptx", "128B", "wrong", "SBO"),
    "tma_check_kadv16": ("tma_wgmma_check.kadv16.sm90a.ptx", "128B", "wrong", "k-step advance"),
    "tma_check_swz64": ("tma_wgmma_check.swz64.sm90a.ptx", "128B", "wrong", "swizzle differs"),
    "tma_check_shift384": ("tma_wgmma_check.shift384.sm90a.ptx", "128B", "right", ""),
    "tma_check_shift384_base3": ("tma_wgmma_check.shift384_base3.sm90a.ptx", "128B", "wrong", "alignment"),
    "tma_check_transb": ("tma_wgmma_check.transb.sm90a.ptx", "128B", "wrong", "K-major vs MN-major"),
}
CHECK_KERNELS = tuple(
    Kernel(name, (file,), "tma_wgmma_check", _gemm_shapes((64, 64, 128)), (0,), _tma_check(swz),
           f"check_tma_wgmma's case: product predicted {want}" + (f" ({kind})" if kind else ""))
    for name, (file, swz, want, kind) in TMA_CHECK.items())
#: Every kernel by name, the check cases included.
KERNEL = {k.name: k for k in KERNELS + CHECK_KERNELS}
#: Relative error (of |A| |B|) below which a product counts as right: a right one differs from the
#: mma.sync reference in rounding only, a wrong operand read by O(1).
PRODUCT_RTOL = 1e-3


def product_verdict(g: Launch, D: np.ndarray) -> str:
    """"right" or "wrong": tma_wgmma's D against fragsim.gemm's D = A Bt^T (bf16 m16n8k16 mma.sync)."""
    from fragsim.facts.formats import to_float
    from fragsim.sim.gemm import gemm
    A, Bt = g.buffers["A"], g.buffers["Bt"]
    ref = gemm("m16n8k16.row.col.f32.bf16.bf16.f32", A, np.ascontiguousarray(Bt.T)).view(np.float32)
    scale = np.abs(to_float(A, "bf16")) @ np.abs(to_float(Bt, "bf16")).T
    d = np.asarray(D).view(np.float32)
    ok = np.abs(d.astype(np.float64) - ref) <= PRODUCT_RTOL * scale + 1e-30
    return "right" if ok.all() else "wrong"


@dataclass(frozen=True)
class Case:
    """One comparison: ``kernel`` on ``file`` with shape ``shape`` (index) and ``seed``; fragsim runs
    ``ctas`` (None: the whole grid)."""

    kernel: str
    file: str
    shape: int
    seed: int
    ctas: tuple[tuple[int, int, int], ...] | None = None

    @property
    def id(self) -> str:
        where = "grid" if self.ctas is None else "cta" + "_".join(",".join(map(str, c)) for c in self.ctas)
        return f"{self.kernel}/{self.file}/shape{self.shape}/seed{self.seed}/{where}"

    @property
    def launch_key(self) -> tuple[str, str, int, int]:
        return (self.kernel, self.file, self.shape, self.seed)

    @property
    def launch_id(self) -> str:
        """The GPU launch the case compares with (a single-CTA case shares its grid's)."""
        return f"{self.kernel}/{self.file}/shape{self.shape}/seed{self.seed}"

    def launch(self) -> Launch:
        k = KERNEL[self.kernel]
        return k.build(k.shapes[self.shape], self.seed)


def cases(forms: list[str] | None = None) -> list[Case]:
    """Every case of the family (``forms``: only the kernels they name, ``named``)."""
    out = []
    # the check cases run only when a form names them (--forms tma_check), never with --forms tma
    chosen = KERNELS + tuple(k for k in CHECK_KERNELS if forms and named(k.name, [f for f in forms if "check" in f]))
    for k in chosen:
        if forms and not named(k.name, forms):
            continue
        for si, shape in enumerate(k.shapes):
            for seed in k.seeds:
                out.append(Case(k.name, k.files[0], si, seed))
                g = k.build(shape, seed)
                if seed == k.seeds[0] and g.region is not None and math.prod(g.grid) > 1:
                    out.append(Case(k.name, k.files[0], si, seed, (tuple(c - 1 for c in g.grid),)))  # type: ignore[arg-type]
        out += [Case(k.name, f, 0, k.seeds[0]) for f in k.files[1:]]
    if forms and not out:
        raise ValueError(f"--forms {' '.join(forms)}: no kernel of ptx_kernels has any of these at a word's start "
                         f"({', '.join(BY_NAME)})")
    return out


# ---------------------------------------------------------------------------------------------
# digests, masks and the fragsim side

def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:32]


def inputs_digest(g: Launch) -> str:
    h = hashlib.sha256()
    for name in sorted(g.buffers):
        h.update(name.encode() + b"\0" + np.ascontiguousarray(g.buffers[name]).tobytes())
    return h.hexdigest()[:32]


def masks(c: Case, g: Launch) -> dict[str, np.ndarray | None]:
    """Per output, the elements compared (None: all of them)."""
    if c.ctas is None:
        return dict.fromkeys(g.outputs)
    assert g.region is not None
    out: dict[str, np.ndarray | None] = {}
    for cta in c.ctas:
        for name, m in g.region(cta).items():
            prev = out.get(name)
            out[name] = m if prev is None else prev | m
    return out


def output_digests(c: Case, g: Launch, outputs: dict[str, np.ndarray]) -> dict[str, str]:
    return {name: digest(outputs[name] if m is None else outputs[name][m]) for name, m in masks(c, g).items()}


def module_text(file: str) -> str:
    path = corpus() / file
    if not path.is_file():
        raise ValueError(f"ptx_kernels needs the PTX corpus of a clone of fragsim's repository: no {path}")
    return path.read_text()


def fragsim_outputs(c: Case, g: Launch, arch: str = "sm_90") -> dict[str, np.ndarray]:
    """What ``fragsim.run_kernel`` leaves in the output buffers."""
    from fragsim.ptx.memory import Buffer
    from fragsim.ptx.run import run_kernel
    bufs = {k: v.copy() for k, v in g.buffers.items()}
    pins = {a.buffer: PIN + i * PIN_SLOT for i, a in enumerate(x for x in g.args if isinstance(x, MapArg))}
    pointers = {a for a in g.args if isinstance(a, str)}

    def arg(a: Arg) -> Any:
        if isinstance(a, MapArg):         # the map; its tensor placed at its base unless a pointer places it
            tm = a.tensor_map(pins[a.buffer])
            return tm if a.buffer in pointers else (tm, bufs[a.buffer])
        if isinstance(a, str):
            return Buffer(bufs[a], address=pins[a]) if a in pins else bufs[a]
        return a
    args = [arg(a) for a in g.args]
    run_kernel(str(corpus() / c.file), KERNEL[c.kernel].entry, grid=g.grid, block=g.block, args=args,
               dynamic_smem=g.smem, ctas=None if c.ctas is None else list(c.ctas), arch=arch)
    return {name: bufs[name] for name in g.outputs}


def first_difference(a: np.ndarray, b: np.ndarray, m: np.ndarray | None) -> str:
    """The first element (index into the whole buffer) where ``a`` (GPU) and ``b`` (fragsim) differ."""
    diff = a != b
    if m is not None:
        diff &= m
    bad = np.argwhere(diff)
    if not len(bad):
        return ""
    i = tuple(int(x) for x in bad[0])
    w = a.dtype.itemsize * 2
    return (f"{int(diff.sum())} element(s) differ, first at {list(i)}: GPU {int(a[i]):#0{w + 2}x}, "
            f"fragsim {int(b[i]):#0{w + 2}x}")


def compare(entry: dict[str, Any], full: dict[str, np.ndarray] | None = None, arch: str = "sm_90") -> dict[str, Any]:
    """Run one recorded case (``entry``: as ``--record`` wrote it) through fragsim; {"id", "status":
    "match" | "mismatch" | "error", "detail", "seconds"}.  ``full``: the GPU's whole output buffers
    when the recording kept them (the detail then names the first differing element)."""
    c = case_of(entry)
    t0 = time.time()
    g = c.launch()
    out = {"id": c.id, "kernel": c.kernel, "detail": ""}
    if inputs_digest(g) != entry["inputs"]:
        return out | {"status": "error", "detail": "the inputs regenerated from the seed are not the recorded ones "
                      "(NumPy's random streams changed?)", "seconds": 0.0}
    try:
        mine = fragsim_outputs(c, g, arch)
    except Exception as e:              # fragsim refused or stopped: one line, the case counts as not run
        return out | {"status": "error", "detail": f"{type(e).__name__}: {runner.one_line(e)}",
                      "seconds": round(time.time() - t0, 2)}
    bad = []
    if c.kernel in TMA_CHECK:            # the product the check predicts, from fragsim's bits
        out["product"] = product_verdict(g, mine["D"])
        if out["product"] != TMA_CHECK[c.kernel][2]:
            bad.append(f"product {out['product']}, check_tma_wgmma predicts {TMA_CHECK[c.kernel][2]}")
    for name, m in masks(c, g).items():
        if digest(mine[name] if m is None else mine[name][m]) != entry["outputs"][name]:
            hw = (full or {}).get(name)
            bad.append(f"{name}: " + (first_difference(hw, mine[name], m) if hw is not None else "digest differs"))
        elif m is not None and not np.array_equal(mine[name][~m], g.buffers[name][~m]):
            bad.append(f"{name}: CTA {list(c.ctas or ())} wrote outside its region")
    return out | {"status": "mismatch" if bad else "match", "detail": "; ".join(bad),
                  "seconds": round(time.time() - t0, 2)}


def case_of(entry: dict[str, Any]) -> Case:
    ctas = entry["ctas"]
    return Case(entry["kernel"], entry["file"], entry["shape"], entry["seed"],
                None if ctas is None else tuple(tuple(x) for x in ctas))


def compare_all(entries: list[dict[str, Any]], full: dict[str, dict[str, np.ndarray]], jobs: int,
                say: Say, arch: str) -> list[dict[str, Any]]:
    """``compare`` for every entry, ``jobs`` processes at a time (spawned: the caller may hold a CUDA
    context, which forked children cannot use).  ``arch``: the GPU that ran them (an sm_80 PTX file run
    on an H100 computes with the H100's arithmetic)."""
    results: dict[str, dict[str, Any]] = {}

    def done(r: dict[str, Any]) -> None:
        results[r["id"]] = r
        say(f"  {r['status']:8} {r['seconds']:6.1f} s  {r['id']}" + (f": {r['detail']}" if r["detail"] else ""))

    if jobs <= 1:
        for e in entries:
            done(compare(e, full.get(case_of(e).launch_id), arch))
    else:
        ctx = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
            futs = [pool.submit(compare, e, full.get(case_of(e).launch_id), arch) for e in entries]
            for e, f in zip(entries, futs):
                try:
                    done(f.result())
                except Exception as ex:   # a worker that died (BrokenProcessPool): the case is not run
                    done({"id": e["id"], "kernel": e["kernel"], "status": "error", "seconds": 0.0,
                          "detail": f"{type(ex).__name__}: {runner.one_line(ex)}"})
    return [results[e["id"]] for e in entries]


# ---------------------------------------------------------------------------------------------
# the GPU side

def param_bytes(ptype: str, count: int | None, value: Arg, pointers: dict[str, int], what: str,
                encode: Callable[[MapArg, int], bytes] | None = None) -> bytes:
    """The bytes of one argument as cuLaunchKernel takes them (``encode(map, address)``: a tensor map's)."""
    t = TYPES.get(ptype)
    size = (t.bytes if t else 1) * (count or 1)
    if isinstance(value, MapArg):
        assert encode is not None
        data = encode(value, pointers[value.buffer]).ljust(value.size, b"\0")
    elif isinstance(value, str):
        data = pointers[value].to_bytes(8, "little")
    elif isinstance(value, bytes):
        data = value
    else:
        data = np.asarray(value).tobytes()
    if len(data) != size:
        raise ValueError(f"{what}: .{ptype}{f' [{count}]' if count else ''} takes {size} bytes, got {len(data)}")
    return data


class Device:
    """Loads the corpus's PTX and launches its kernels through the CUDA driver (CuPy's bindings)."""

    def __init__(self, cp: Any, info: dict[str, Any]):
        self.cp = cp
        self.cc = info["cc_int"]
        self.modules: dict[str, tuple[int, str]] = {}
        self.driver: Any = None          # cuTensorMapEncodeTiled (gpu_check/tma/device.py), at the first map
        cp.zeros(1)                      # a current context before the driver calls

    def encode(self, m: MapArg, address: int) -> bytes:
        """The 128 bytes of the real driver's tensor map ``m`` over the buffer at ``address``."""
        if self.driver is None:
            from ..tma.device import Driver
            self.driver = Driver()
        code, data = self.driver.encode(m.case(), address)
        if code:
            raise ValueError(f"cuTensorMapEncodeTiled refused {m} at {address:#x}: CUresult {code}")
        return data

    def module(self, file: str) -> tuple[int, str]:
        """(module handle, how it was built) of a corpus file."""
        if file not in self.modules:
            try:
                self.modules[file] = self._load(file)
            except runner.GpuUnavailable as e:
                self.modules[file] = (0, str(e))
        handle, how = self.modules[file]
        if not handle:
            raise runner.GpuUnavailable(how)
        return handle, how

    def _load(self, file: str) -> tuple[int, str]:
        drv = self.cp.cuda.driver
        text = module_text(file)
        try:
            return drv.moduleLoadData(text.encode() + b"\0"), "driver JIT"
        except Exception as e:           # CUDADriverError: an older driver than the PTX (Triton's .version 9.x)
            jit_error = runner.one_line(e)
        target = next((ln.split()[1] for ln in text.splitlines() if ln.startswith(".target")), "sm_90")
        arch = f"sm_{self.cc}" + ("a" if target.endswith("a") else "")
        for ptxas in ptxas_candidates():
            with tempfile.TemporaryDirectory() as d:
                src, cubin = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
                Path(src).write_text(text)
                r = subprocess.run([ptxas, f"-arch={arch}", "-o", cubin, src], capture_output=True, text=True)
                if r.returncode == 0:
                    version = subprocess.run([ptxas, "--version"], capture_output=True, text=True).stdout
                    tag = next((ln for ln in version.splitlines() if "release" in ln), ptxas)
                    return drv.moduleLoadData(Path(cubin).read_bytes()), f"ptxas ({tag.strip()})"
        # the same text at an older .version the driver knows: that changes no instruction's meaning (a
        # newer .version only admits newer instructions, and the JIT refuses a text that uses one)
        old = re.search(r"^\.version\s+(\S+)", text, re.M)
        for version in PTX_VERSIONS:
            if old is None or float(version) >= float(old.group(1)):
                continue
            lowered = text[:old.start(1)] + version + text[old.end(1):]
            try:
                return drv.moduleLoadData(lowered.encode() + b"\0"), f"driver JIT at .version {version} (file: {old.group(1)})"
            except Exception:
                continue
        raise runner.GpuUnavailable(f"{file}: the driver's JIT refused it ({jit_error}), no ptxas here compiles it, "
                                    "and no older .version loads")

    def run(self, c: Case, g: Launch) -> dict[str, np.ndarray]:
        """The output buffers after launching ``g`` on the GPU."""
        cp, drv = self.cp, self.cp.cuda.driver
        import ctypes
        handle, _ = self.module(c.file)
        entry = entry_of(c.file, KERNEL[c.kernel].entry)
        fn = drv.moduleGetFunction(handle, entry.name)
        if g.smem > 48 * 1024:
            drv.funcSetAttribute(fn, getattr(drv, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8), g.smem)
        dev = {k: cp.asarray(v) for k, v in g.buffers.items()}
        pointers = {k: int(v.data.ptr) for k, v in dev.items()}
        raw = [param_bytes(p.type, p.count, a, pointers, f"{c.id} parameter {i}", self.encode)
               for i, (p, a) in enumerate(zip(entry.params, g.args))]
        if len(raw) != len(entry.params):
            raise ValueError(f"{c.id}: {len(g.args)} args for {len(entry.params)} parameters")
        holders = [(ctypes.c_char * len(b)).from_buffer_copy(b) for b in raw]
        ptrs = (ctypes.c_void_p * max(1, len(holders)))(*[ctypes.addressof(h) for h in holders])
        drv.launchKernel(fn, *g.grid, *g.block, g.smem, 0, ctypes.addressof(ptrs), 0)
        cp.cuda.runtime.deviceSynchronize()
        return {name: cp.asnumpy(dev[name]) for name in g.outputs}


def ptxas_candidates() -> list[str]:
    """ptxas programs that may be newer than the driver: Triton's own, then the CUDA toolkit's."""
    out = []
    try:
        import triton  # type: ignore[import-not-found]  # only where Triton is installed
        out.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas"))
    except Exception:
        pass
    found = shutil.which("ptxas")
    if found:
        out.append(found)
    return [p for p in out if os.path.isfile(p)]


_ENTRIES: dict[tuple[str, str | None], Any] = {}


def entry_of(file: str, key: str | None) -> Any:
    """The parsed .entry of ``file`` that ``key`` names (as ``run_kernel`` picks it)."""
    if (file, key) not in _ENTRIES:
        entries = {n: e for n, e in parse(module_text(file)).entries.items() if "EmptyKernel" not in n}
        found = [e for n, e in entries.items() if key is None or key == n or key in n]
        if len(found) != 1:
            raise ValueError(f"{file}: {len(found)} entries match {key!r}")
        _ENTRIES[(file, key)] = found[0]
    return _ENTRIES[(file, key)]


def builds(cu: Path) -> list[tuple[str, list[str]]]:
    """(PTX file, nvcc flags) of each build src/build.sh makes of ``cu`` that nvcc_matches compares: those
    its ``// ptx: FILE FLAGS`` lines name, else -arch=sm_90a and -arch=sm_80."""
    named_builds = [ln.split()[2:] for ln in cu.read_text().splitlines() if ln.startswith("// ptx: ")]
    if named_builds:
        return [(b[0], b[1:]) for b in named_builds]
    return [(f"{cu.stem}.sm90a.ptx", ["-arch=sm_90a"]), (f"{cu.stem}.sm80.ptx", ["-arch=sm_80"])]


def nvcc_matches(say: Say) -> dict[str, str]:
    """Per own kernel: whether the device's nvcc, run as src/build.sh runs it, gives the committed
    PTX ("same", "differs: ..." or why it was not checked)."""
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        return {"nvcc": "not found"}
    out = {}
    with tempfile.TemporaryDirectory() as d:
        jobs = []
        for cu in sorted((corpus() / "src").glob("*.cu")):
            for name, flags in builds(cu):
                committed = corpus() / name
                if committed.is_file():
                    dst = os.path.join(d, committed.name)
                    p = subprocess.Popen([nvcc, *flags, "-ptx", str(cu), "-o", dst], stderr=subprocess.PIPE,
                                         text=True)
                    jobs.append((committed, dst, p))
        for committed, dst, p in jobs:
            err = p.communicate()[1]
            if p.returncode:
                out[committed.name] = f"nvcc failed: {runner.one_line(err)}"
                continue
            # compiler banners (//) and source paths (.file) aside
            mine = [ln for ln in Path(dst).read_text().splitlines() if not ln.startswith((".file", "//"))]
            theirs = [ln for ln in committed.read_text().splitlines() if not ln.startswith((".file", "//"))]
            n = sum(a != b for a, b in zip(mine, theirs)) + abs(len(mine) - len(theirs))
            out[committed.name] = "same" if n == 0 else f"differs in {n} line(s)"
    say("nvcc on this machine vs the committed PTX: " + ", ".join(f"{k} {v}" for k, v in out.items()))
    return out


# ---------------------------------------------------------------------------------------------
# the family

@dataclass
class _Recording:
    entries: list[dict[str, Any]] = field(default_factory=list)
    full: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)      # file -> how the GPU got its code


def _summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    per: dict[str, dict[str, int]] = {}
    for r in results:
        d = per.setdefault(r["kernel"], {"match": 0, "mismatch": 0, "error": 0})
        d[r["status"]] += 1
    problems = [{"id": r["id"], "status": r["status"], "detail": r["detail"]} for r in results
                if r["status"] != "match"]
    errors = sum(r["status"] == "error" for r in results)
    return {"cases": len(results) - errors, "mismatches": sum(r["status"] == "mismatch" for r in results),
            "not_run": errors, "kernels": per, "problems": problems,
            "fragsim_seconds": round(sum(r["seconds"] for r in results), 1)}


class PtxKernelsFamily(RunnerFamily):
    name = "ptx_kernels"
    summary = ("whole kernels of the PTX corpus (own CUDA, CUTLASS CuTe, Triton) vs fragsim.run_kernel, "
               "several shapes and seeds (--cases: replay the first N)")
    default_cases = 10_000
    options = frozenset({"cases", "forms", "record", "replay", "jobs", "quiet", "json", "json_file"})
    replay_file = False
    replay_expects = f"a folder with the {FILE} that --family ptx_kernels --record wrote"

    def validate(self, args: argparse.Namespace) -> None:
        super().validate(args)
        if args.forms:
            cases(args.forms)                 # --forms naming no kernel: refused now, as the other families do

    def source(self, cc: int) -> str:
        """The CUDA of our own kernels of the corpus (the PTX that runs is the committed one, built from
        these files one by one by src/build.sh)."""
        srcs = sorted((corpus() / "src").glob("*.cu"), key=lambda p: (p.stem == "gemm_ldshared", p.stem))
        return unit(*(p.read_text() for p in srcs))     # gemm_ldshared's #define T last

    def compile(self, info: dict[str, Any]) -> Any:
        return Device(runner.import_cupy(), info)

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        if info["cc_int"] < 90:
            raise runner.GpuUnavailable(f"ptx_kernels needs an sm_90 GPU (wgmma kernels, sm_90a PTX); "
                                        f"{info['device']} has compute capability {info['cc']}")
        dev = self.compile(info)
        nvcc = nvcc_matches(say)
        rec = _Recording()
        hw: dict[tuple[str, str, int, int], dict[str, np.ndarray] | str] = {}
        for c in cases(args.forms):
            g = c.launch()
            if c.launch_key not in hw:
                t0 = time.time()
                try:
                    hw[c.launch_key] = dev.run(c, g)
                    say(f"GPU {c.kernel} {c.file} shape {KERNEL[c.kernel].shapes[c.shape]} seed {c.seed}: "
                        f"grid {g.grid}, {time.time() - t0:.2f} s ({dev.module(c.file)[1]})")
                except Exception as ex:     # a launch the GPU refused: recorded as such, the run goes on
                    hw[c.launch_key] = f"{type(ex).__name__}: {runner.one_line(ex)}"
                    say(f"GPU {c.id}: {hw[c.launch_key]}")
            got = hw[c.launch_key]
            if isinstance(got, str):
                rec.entries.append(self._entry(c, g, None, got))
                continue
            rec.entries.append(self._entry(c, g, got, ""))
            if c.kernel in TMA_CHECK:
                rec.entries[-1]["product"] = product_verdict(g, got["D"])
                rec.entries[-1]["predicted"] = TMA_CHECK[c.kernel][2]
                say(f"GPU {c.kernel}: product {rec.entries[-1]['product']} (check_tma_wgmma predicts "
                    f"{TMA_CHECK[c.kernel][2]})")
            rec.full[c.launch_id] = got
        rec.modules = {f: how for f, (_, how) in dev.modules.items()}
        if args.record:                  # what the GPU said is kept before fragsim's turn, which may be long
            self.save(args.record, rec, info, nvcc)
        launched = [e for e in rec.entries if not e["gpu_error"]]
        jobs = args.jobs or max(1, (os.cpu_count() or 2) - 2)
        results = compare_all(launched, rec.full, jobs, say,
                              arch_for_cc(info["cc_int"] // 10, info["cc_int"] % 10, info["device"]))
        for e, r in zip(launched, results):
            e["fragsim"] = r["status"]
            e["seconds"] = r["seconds"]
        if args.record:
            self.save(args.record, rec, info, nvcc)
        gpu_errors = [{"id": e["id"], "detail": e["gpu_error"]} for e in rec.entries if e["gpu_error"]]
        products = {e["kernel"]: {"gpu": e["product"], "predicted": e["predicted"]} for e in rec.entries
                    if "product" in e}
        checks = {"tma_check": products} if products else {}
        return _summary(results) | checks | {"launches": sum(isinstance(v, dict) for v in hw.values()),
                                    "gpu_errors": gpu_errors, "nvcc": nvcc, "modules": rec.modules}

    @staticmethod
    def _entry(c: Case, g: Launch, hw: dict[str, np.ndarray] | None, error: str) -> dict[str, Any]:
        return {"id": c.id, "kernel": c.kernel, "file": c.file, "shape": c.shape,
                "shape_dims": KERNEL[c.kernel].shapes[c.shape], "seed": c.seed, "values": VALUES[c.seed % 3],
                "ctas": None if c.ctas is None else [list(x) for x in c.ctas], "grid": list(g.grid),
                "block": list(g.block), "smem": g.smem, "inputs": inputs_digest(g),
                "outputs": output_digests(c, g, hw) if hw is not None else {}, "gpu_error": error}

    def save(self, folder: str, rec: _Recording, info: dict[str, Any], nvcc: dict[str, str]) -> str:
        """DIR/kernels.npz: every case's digests; whole outputs of each kernel's first launch."""
        arrays: dict[str, np.ndarray] = {}
        kept = set()
        for e in rec.entries:
            key = (e["kernel"], e["file"])
            lid = case_of(e).launch_id
            if e["gpu_error"] or e["ctas"] is not None or key in kept or lid not in rec.full:
                continue
            outs = rec.full[lid]
            if sum(a.nbytes for a in outs.values()) <= KEEP_BYTES:
                kept.add(key)
                for name, a in outs.items():
                    arrays[f"{lid}:{name}"] = a
        meta = dict(info, arch=arch_for_cc(info["cc_int"] // 10, info["cc_int"] % 10, info["device"]),
                    cases=rec.entries, nvcc=nvcc, modules=rec.modules,
                    command="fragsim gpu-check --family ptx_kernels --record DIR")
        return record.save(os.path.join(folder, FILE), KIND, meta, arrays)

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        path = os.path.join(args.replay, FILE)
        if not os.path.isfile(path):
            raise ValueError(f"--replay {args.replay}: no {FILE} there; expected {self.replay_expects}")
        meta, arrays = load(path)
        entries = [e for e in meta["cases"] if not e["gpu_error"]
                   and (not args.forms or named(e["kernel"], args.forms))][: args.cases]
        results = compare_all(entries, full_outputs(arrays), args.jobs or 1, say, meta.get("arch", "sm_90"))
        return _summary(results)

    def summarize(self, report: dict[str, Any]) -> str:
        lines = [super().summarize(report)]
        if report.get("not_run"):
            lines.append(f"  {report['not_run']} case(s) fragsim could not run")
        for p in report.get("problems", [])[:20]:
            lines.append(f"  {p['status']}: {p['id']}: {p['detail']}")
        for g in report.get("gpu_errors", []):
            lines.append(f"  GPU refused {g['id']}: {g['detail']}")
        return "\n".join(lines)


def load(path: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """A kernels.npz recording: (meta, arrays)."""
    return record.load(path, (KIND,))


def full_outputs(arrays: dict[str, np.ndarray]) -> dict[str, dict[str, np.ndarray]]:
    """The recording's whole GPU outputs: launch id -> buffer name -> array."""
    out: dict[str, dict[str, np.ndarray]] = {}
    for key, a in arrays.items():
        cid, name = key.rsplit(":", 1)
        out.setdefault(cid, {})[name] = a
    return out


FAMILIES = {"ptx_kernels": PtxKernelsFamily()}
