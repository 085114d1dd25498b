"""wgmma's speed per m16n8k16-equivalent multiply-add, side by side with ``fragsim.mma`` and ``fragsim.gemm``.

    python benchmarks/bench_wgmma.py [--batch 64] [--mma-batch 8192] [--repeat 5] [--values normal|random]
                                     [--only api run gemm] [--cases S ...] [--reference] [--gemm-size 512]
                                     [--json]

On one core (numba and fragsim's kernel threads set to one).  A "m16n8k16-equivalent" is 16 x 8 x 16 =
2,048 multiply-adds: an m64nNkK wgmma is 64 N K / 2048 of them, an m16n8k8 mma one half, an m16n8k32 mma
two.  Every figure is microseconds per m16n8k16-equivalent, the best of ``--repeat`` calls after a warm-up;
the things compared in one section run alternately (A, B, A, B, ...), so that each finds the caches as the
other left them.  Time is the process's CPU time (``time.process_time``: on a shared machine the time the
process waits for a core is not counted), or wall-clock time with ``--wall``.

- ``api``: ``fragsim.wgmma`` on a batch of ``--batch`` warpgroups (each its own shared memory, one
  descriptor value for the batch, as in a kernel), per form family and operand source (A in registers or
  shared memory), swizzle and majorness; beside it ``fragsim.mma`` of the same input and accumulator types
  (m16n8k16 f16/bf16, m16n8k8 tf32, m16n8k32 fp8 and s8) on ``--mma-batch`` warps, and the ratio.
  ``--reference`` also times the NumPy model (``fragsim.sim.wgmma.wgmma_reference``, the oracle) where it
  exists.
- ``run``: ``fragsim run`` of Triton's fp16 matmul (tests/data/ptx/triton_matmul.sm90.ptx, m64n64k16
  wgmma from 128-byte-swizzled descriptors) and of tma_wgmma (tma_wgmma.sm90a.ptx: bf16, TMA boxes and
  m64n64k16 wgmma), ``--run-size``^3 (one warpgroup per 64 x 64 tile): the time inside the run's wgmma
  instructions (operands read, the arithmetic, D written back) per m16n8k16-equivalent, against
  ``fragsim.mma`` of the same types (m16n8k16); each run's D checked against ``fragsim.gemm``.
  ``--reference`` also times the run's wgmma as it was before the numba kernels (the general path and
  the NumPy model).
- ``gemm``: ``fragsim.gemm`` of a ``--gemm-size``^3 product (f16 inputs, f32 and f16 accumulators; bf16)
  per mma, against ``fragsim.mma`` of the same form.

Operands: ``normal`` (default) fills shared memory, A's and C's registers with the formats' encodings of
normally distributed values (integers: random bytes); ``random`` with uniformly random bytes (every bit
pattern: NaN, Inf, subnormals).  The load average before and after is printed: the machine may be shared.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, ROOT)

import fragsim  # noqa: E402
from fragsim.instructions.wgmma import lookup_wgmma  # noqa: E402
from fragsim.layout.descriptor import canonical_descriptor  # noqa: E402

EQ = 16 * 8 * 16          # multiply-adds of an m16n8k16

# (name, wgmma form, A source, B swizzle, B major, A swizzle, A major)
CASES = [
    ("f16 n64 A smem 128B", "m64n64k16.f32.f16.f16", "smem", "128B", "K", "128B", "K"),
    ("f16 n64 A regs 128B", "m64n64k16.f32.f16.f16", "regs", "128B", "K", None, None),
    ("f16 n64 A smem none", "m64n64k16.f32.f16.f16", "smem", "none", "K", "none", "K"),
    ("f16 n64 A smem 32B MN", "m64n64k16.f32.f16.f16", "smem", "32B", "MN", "32B", "MN"),
    ("f16 n64 A smem 64B MN", "m64n64k16.f32.f16.f16", "smem", "64B", "MN", "64B", "K"),
    ("f16 n64 f16-acc", "m64n64k16.f16.f16.f16", "smem", "128B", "K", "128B", "K"),
    ("f16 n256 f16-acc regs", "m64n256k16.f16.f16.f16", "regs", "128B", "MN", None, None),
    ("bf16 n128", "m64n128k16.f32.bf16.bf16", "smem", "128B", "K", "128B", "K"),
    ("bf16 n256", "m64n256k16.f32.bf16.bf16", "smem", "128B", "K", "128B", "K"),
    ("bf16 n256 regs MN", "m64n256k16.f32.bf16.bf16", "regs", "128B", "MN", None, None),
    ("tf32 n64", "m64n64k8.f32.tf32.tf32", "smem", "128B", "K", "128B", "K"),
    ("tf32 n128 regs", "m64n128k8.f32.tf32.tf32", "regs", "64B", "K", None, None),
    ("e4m3 n64 f32", "m64n64k32.f32.e4m3.e4m3", "smem", "128B", "K", "128B", "K"),
    ("e5m2.e4m3 n128 f16", "m64n128k32.f16.e5m2.e4m3", "regs", "32B", "K", None, None),
    ("s8 n64", "m64n64k32.s32.s8.s8", "smem", "128B", "K", "128B", "K"),
    ("u8.s8 n256 satfinite", "m64n256k32.satfinite.s32.u8.s8", "regs", "none", "K", None, None),
]

# the mma.sync form of the same input and accumulator types, and its m16n8k16-equivalents per mma
MMA_OF = {("f16", "f32"): "m16n8k16.row.col.f32.f16.f16.f32", ("f16", "f16"): "m16n8k16.row.col.f16.f16.f16.f16",
          ("bf16", "f32"): "m16n8k16.row.col.f32.bf16.bf16.f32", ("tf32", "f32"): "m16n8k8.row.col.f32.tf32.tf32.f32",
          ("e4m3", "f32"): "m16n8k32.row.col.f32.e4m3.e4m3.f32", ("e5m2", "f16"): "m16n8k32.row.col.f16.e5m2.e4m3.f16",
          ("s8", "s32"): "m16n8k32.row.col.s32.s8.s8.s32", ("u8", "s32"): "m16n8k32.row.col.satfinite.s32.u8.s8.s32"}

SMEM = 65536
A_AT, B_AT = 0, 16384


clock = time.process_time


def best_of(fns: dict, repeat: int) -> dict:
    """Best seconds of each function, run alternately ``repeat`` times after one warm-up each."""
    for fn in fns.values():
        fn()
    out = {name: float("inf") for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = clock()
            fn()
            out[name] = min(out[name], clock() - t)
    return out


def words(rng, shape, fmt: str, values: str) -> np.ndarray:
    """Element words of ``fmt`` (uint8/16/32 by its width): normal values, or random bits."""
    from fragsim.facts.formats import get_format
    f = get_format(fmt)
    if values == "random" or fmt in ("s8", "u8", "s32"):
        return rng.integers(0, 1 << f.storage_bits, shape, dtype=np.uint64).astype(_dtype(fmt))
    return fragsim.to_bits(rng.standard_normal(shape).astype(np.float32), fmt)


def smem_image(rng, batch: int, fmt: str, values: str) -> np.ndarray:
    """``batch`` shared memories of SMEM bytes, every element slot holding a word of ``fmt``."""
    w = np.ascontiguousarray(words(rng, (batch, SMEM * 8 // np.dtype(_dtype(fmt)).itemsize // 8), fmt, values))
    return w.view(np.uint8).reshape(batch, SMEM)


def _dtype(fmt):
    from fragsim.facts.formats import get_format
    return {8: np.uint8, 16: np.uint16, 32: np.uint32}[get_format(fmt).storage_bits]


def regs_of(rng, f, op: str, batch: int, values: str) -> np.ndarray:
    from fragsim.sim.wgmma import pack_wg
    return pack_wg(f, op, words(rng, (batch,) + f.matrix_shape(op), f.types[op], values))


def mma_operands(rng, form: str, batch: int, values: str):
    f = fragsim.lookup(form)
    return [fragsim.pack(f, op, words(rng, (batch,) + f.matrix_shape(op), f.fmt(op).name, values)) for op in "ABC"]


def wgmma_call(case, batch: int, values: str, rng, reference=False):
    """A function computing the case's wgmma on ``batch`` warpgroups, and its m16n8k16-equivalents."""
    from fragsim.sim import wgmma as W
    _, form, a_src, b_sw, b_major, a_sw, a_major = case
    f = lookup_wgmma(form)
    M, N, K = f.shape
    smem = smem_image(rng, batch, f.types["B"], values)
    if a_src == "smem" and f.types["A"] != f.types["B"]:       # fp8 mixes: A's own region
        smem[:, :B_AT] = smem_image(rng, batch, f.types["A"], values)[:, :B_AT]
    bits = f.fmt("B").storage_bits
    bdesc = canonical_descriptor(b_sw, major=b_major, elem_bits=bits, rows=N, start=B_AT).encode()
    if a_src == "regs":
        a = regs_of(rng, f, "A", batch, values)
    else:
        a = np.uint64(canonical_descriptor(a_sw, major=a_major, elem_bits=f.fmt("A").storage_bits, rows=M,
                                           start=A_AT).encode())
    c = regs_of(rng, f, "C", batch, values)
    trans = {"trans_a": a_src == "smem" and a_major == "MN", "trans_b": b_major == "MN"}
    fn = W.wgmma_reference if reference else W.wgmma

    def go():
        return fn(f, a, np.uint64(bdesc), c, smem=smem, **trans)
    return go, batch * M * N * K / EQ


@contextlib.contextmanager
def one_core():
    import numba
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(threads)


def bench_api(args) -> list[dict]:
    from fragsim.sim import wgmma as W
    rng = np.random.default_rng(0)
    rows = []
    for case in CASES:
        if args.cases and not any(s in case[0] or s in case[1] for s in args.cases):
            continue
        f = lookup_wgmma(case[1])
        mform = MMA_OF[(f.types["A"], f.types["D"])]
        mf = fragsim.lookup(mform)
        regs = mma_operands(rng, mform, args.mma_batch, args.values)
        mma_eq = args.mma_batch * mf.shape[0] * mf.shape[1] * mf.shape[2] / EQ
        go, eq = wgmma_call(case, args.batch, args.values, rng)
        fns = {"wgmma": go, "mma": lambda mform=mform, regs=regs: fragsim.mma(mform, *regs)}
        if args.reference and hasattr(W, "wgmma_reference"):
            ref, _ = wgmma_call(case, args.batch, args.values, rng, reference=True)
            fns["reference"] = ref
        with one_core():
            t = best_of(fns, args.repeat)
        row = {"case": case[0], "form": case[1], "a": case[2], "b_swizzle": case[3], "b_major": case[4],
               "mma_form": mform, "wgmma_us": t["wgmma"] / eq * 1e6, "mma_us": t["mma"] / mma_eq * 1e6,
               "us_per_wgmma": t["wgmma"] / args.batch * 1e6}
        row["ratio"] = row["wgmma_us"] / row["mma_us"]
        if "reference" in t:
            row["reference_us"] = t["reference"] / eq * 1e6
        rows.append(row)
        if not args.json:
            ref = f"  reference {row['reference_us']:8.2f}" if "reference_us" in row else ""
            print(f"{case[0]:24s} {case[1]:32s} wgmma {row['wgmma_us']:7.3f}  mma {row['mma_us']:6.3f}  "
                  f"ratio {row['ratio']:5.2f}  ({row['us_per_wgmma']:8.1f} us per wgmma){ref}", flush=True)
    return rows


# ---------------------------------------------------------------------------------------- the run

@contextlib.contextmanager
def timed_wgmma(stats: dict):
    """Seconds inside the run's wgmma.mma_async instructions, and their m16n8k16-equivalents."""
    from fragsim.instructions.wgmma import WgmmaForm
    from fragsim.ptx.semantics import tensor
    real = tensor.Op

    def op(ins, fn, run, **kw):
        form = kw.get("extra", {}).get("form")
        if isinstance(form, WgmmaForm):
            inner = run
            M, N, K = form.shape

            def run(s, idx, inner=inner, per=M * N * K / EQ):
                t = clock()
                inner(s, idx)
                stats["s"] += clock() - t
                stats["eq"] += len(idx) // 128 * per
        return real(ins, fn, run, **kw)

    tensor.Op = op                      # type: ignore[misc]
    try:
        yield stats
    finally:
        tensor.Op = real                # type: ignore[misc]


def _triton(n: int, rng):
    """Triton's fp16 matmul (m64n64k16 f32.f16.f16, 128B-swizzled descriptors), and the D fragsim.gemm gives."""
    with open(os.path.join(ROOT, "tests", "data", "ptx", "triton_matmul.sm90.ptx")) as fh:
        mod = fh.read()
    a = fragsim.to_bits(rng.standard_normal((n, n)).astype(np.float32), "f16")
    b = fragsim.to_bits(rng.standard_normal((n, n)).astype(np.float32), "f16")

    def go():
        c = np.zeros((n, n), np.uint16)
        fragsim.run_kernel(mod, grid=(n // 64, n // 64), block=128, dynamic_smem=49152,
                           args=[a, b, c, n, n, n, n, n, n, np.uint64(0), np.uint64(0)])
        return c

    def want():     # Triton's epilogue converts the f32 accumulators to f16 (round to nearest even)
        d = fragsim.gemm("m16n8k16.row.col.f32.f16.f16.f32", a, b).view(np.float32)
        return fragsim.to_bits(d, "f16")
    return go, want, "m16n8k16.row.col.f32.f16.f16.f32"


def _tma(n: int, rng):
    """tests/data/ptx/tma_wgmma.sm90a.ptx: TMA boxes (128B swizzle) and m64n64k16 f32.bf16.bf16 wgmma."""
    A = fragsim.to_bits(rng.standard_normal((n, n)).astype(np.float32), "bf16")
    Bt = fragsim.to_bits(rng.standard_normal((n, n)).astype(np.float32), "bf16")
    base = 1 << 40
    ta = fragsim.TensorMap("bf16", (n, n), (n * 2,), (64, 64), swizzle="128B", base=base)
    tb = fragsim.TensorMap("bf16", (n, n), (n * 2,), (64, 64), swizzle="128B", base=base + (1 << 32))
    path = os.path.join(ROOT, "tests", "data", "ptx", "tma_wgmma.sm90a.ptx")

    def go():
        d = np.zeros((n, n), np.float32)
        fragsim.run_kernel(path, grid=(n // 64, n // 64), block=128, args=[(ta, A), (tb, Bt), d, n, n, n])
        return d.view(np.uint32)
    return go, lambda: fragsim.gemm("m16n8k16.row.col.f32.bf16.bf16.f32", A, Bt.T.copy()), \
        "m16n8k16.row.col.f32.bf16.bf16.f32"


@contextlib.contextmanager
def reference_run(on: bool):
    """With ``on``: the run's wgmma as before the numba kernels -- the general path (registers gathered, D
    written back) and the NumPy model."""
    from fragsim.sim import wgmma as W
    if not on:
        yield
        return
    plan, groups = W.file_plan, W.warpgroups
    W.file_plan = lambda *a, **k: None                                          # type: ignore[assignment]
    W.warpgroups = lambda *a, **k: groups(*a, **{**k, "reference": True})      # type: ignore[assignment]
    try:
        yield
    finally:
        W.file_plan, W.warpgroups = plan, groups                               # type: ignore[assignment]


def bench_run(args) -> list[dict]:
    rng = np.random.default_rng(1)
    rows = []
    kernels = {"triton fp16 matmul": _triton, "tma_wgmma bf16": _tma}
    for name, make in kernels.items():
        n = args.run_size
        go, want, mform = make(n, rng)
        exact = bool(np.array_equal(go(), want()))
        regs = mma_operands(rng, mform, args.mma_batch, "normal")
        with one_core():
            best = {"s": float("inf"), "eq": 0.0}
            ref = {"s": float("inf"), "eq": 0.0}
            total = float("inf")
            mma_t = float("inf")
            fragsim.mma(mform, *regs)
            for _ in range(args.repeat):
                stats = {"s": 0.0, "eq": 0.0}
                t0 = clock()
                with timed_wgmma(stats):
                    go()
                total = min(total, clock() - t0)
                if stats["s"] < best["s"]:
                    best = stats
                t0 = clock()
                fragsim.mma(mform, *regs)
                mma_t = min(mma_t, clock() - t0)
                if args.reference:
                    stats = {"s": 0.0, "eq": 0.0}
                    with reference_run(True), timed_wgmma(stats):
                        go()
                    if stats["s"] < ref["s"]:
                        ref = stats
        row = {"kernel": name, "size": n, "bit_exact": exact, "run_s": total, "wgmma_s": best["s"], "wgmma_eq": best["eq"],
               "wgmma_us": best["s"] / max(best["eq"], 1) * 1e6, "mma_form": mform, "mma_us": mma_t / args.mma_batch * 1e6}
        row["ratio"] = row["wgmma_us"] / row["mma_us"]
        if args.reference:
            row["reference_us"] = ref["s"] / max(ref["eq"], 1) * 1e6
        rows.append(row)
        if not args.json and args.reference:
            print(f"run: {name} {n}^3 with the NumPy model: its wgmma {row['reference_us']:.2f} us per "
                  "m16n8k16-equivalent", flush=True)
        if not args.json:
            print(f"run: {name} {n}^3 (D {'=' if exact else 'DIFFERS FROM'} fragsim.gemm): whole run {total:.3f} s, "
                  f"its wgmma {best['s']:.3f} s = {row['wgmma_us']:.3f} us per m16n8k16-equivalent ({best['eq']:.0f}); "
                  f"mma {row['mma_us']:.3f} us; ratio {row['ratio']:.2f}", flush=True)
    return rows


# ---------------------------------------------------------------------------------------- gemm

GEMM_FORMS = ["m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16.row.col.f16.f16.f16.f16",
              "m16n8k16.row.col.f32.bf16.bf16.f32"]


def bench_gemm(args) -> list[dict]:
    rng = np.random.default_rng(2)
    rows = []
    n = args.gemm_size
    for form in GEMM_FORMS:
        f = fragsim.lookup(form)
        A, B, C = (fragsim.to_bits(rng.standard_normal(s).astype(np.float32), f.fmt(op).name)
                   for op, s in (("A", (n, n)), ("B", (n, n)), ("C", (n, n))))
        regs = mma_operands(rng, form, args.mma_batch, "normal")
        with one_core():
            t = best_of({"gemm": lambda form=form, A=A, B=B, C=C: fragsim.gemm(form, A, B, C),
                         "mma": lambda form=form, regs=regs: fragsim.mma(form, *regs)}, args.repeat)
        mmas = (n // 16) * (n // 8) * (n // 16)
        row = {"form": form, "size": n, "gemm_us": t["gemm"] / mmas * 1e6, "mma_us": t["mma"] / args.mma_batch * 1e6}
        row["ratio"] = row["gemm_us"] / row["mma_us"]
        rows.append(row)
        if not args.json:
            print(f"gemm {n}^3 {form:36s} gemm {row['gemm_us']:6.3f} us per mma  mma {row['mma_us']:6.3f}  "
                  f"ratio {row['ratio']:5.2f}", flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=64, help="warpgroups per fragsim.wgmma call (default 64)")
    p.add_argument("--mma-batch", type=int, default=8192, help="warps per fragsim.mma call (default 8192)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--values", choices=("normal", "random"), default="normal")
    p.add_argument("--only", nargs="+", choices=("api", "run", "gemm"), default=["api", "run", "gemm"])
    p.add_argument("--cases", nargs="+", metavar="S", help="api cases whose name or form contains one of these")
    p.add_argument("--reference", action="store_true", help="also time the NumPy reference model (slow)")
    p.add_argument("--run-size", type=int, default=256, help="M = N = K of the run (default 256)")
    p.add_argument("--gemm-size", type=int, default=512, help="M = N = K of fragsim.gemm (default 512)")
    p.add_argument("--wall", action="store_true", help="wall-clock time instead of the process's CPU time")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    global clock
    clock = time.perf_counter if args.wall else time.process_time
    import numba
    load = os.getloadavg()[0]
    if not args.json:
        print(f"load average {load:.2f} ({os.cpu_count()} CPUs), {args.values} operands, one core, numba "
              f"{numba.__version__}", flush=True)
    out: dict = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
                 "numba": numba.__version__, "values": args.values, "clock": "wall" if args.wall else "cpu"}
    if "api" in args.only:
        out["api"] = bench_api(args)
    if "run" in args.only:
        out["run"] = bench_run(args)
    if "gemm" in args.only:
        out["gemm"] = bench_gemm(args)
    out["load_average"] = [load, os.getloadavg()[0]]
    if args.json:
        print(json.dumps(out, indent=1))
    else:
        print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
