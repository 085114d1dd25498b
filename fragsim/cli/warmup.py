"""fragsim warmup: compile every numba kernel now, so that no later command stalls on a first call.

A fresh install compiles each kernel on its first use (5-20 s each, once: numba keeps the machine
code in its on-disk cache).  This runs each kernel once on a small input -- every arithmetic
variant of mma.sync and of wgmma, the whole-GEMM kernel, and the bank-conflict kernel for every
shared-memory instruction of the table -- and says, per kernel, whether it compiled or loaded from the
cache.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial

import numpy as np

from fragsim.facts.hardware import WARP_LANES

NAME = "warmup"
HELP = "compile fragsim's numba kernels now (once per install), instead of on the first command that needs one"

#: One form per mma arithmetic variant (each compiles its own kernel or kernel specialisation).
MMA_FORMS = {
    "fragsim.arith.kernel16": ["m16n8k16.row.col.f32.f16.f16.f32", "m16n8k16.row.col.f16.f16.f16.f16",
                               "m16n8k8.row.col.f32.tf32.tf32.f32"],
    "fragsim.arith.kernel_exact": ["m16n8k32.row.col.s32.s8.s8.s32", "m8n8k4.row.col.f64.f64.f64.f64"],
    "fragsim.arith.kernel_fp8": ["m16n8k32.row.col.f32.e4m3.e4m3.f32", "m16n8k32.row.col.f16.e4m3.e4m3.f16"],
    "fragsim.arith.kernel_chain": ["m8n8k4.row.col.f16.f16.f16.f16", "m8n8k4.row.col.f32.f16.f16.f32"],
}


def add_arguments(p):
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _mma(forms) -> None:
    import numba

    import fragsim

    many = 2 * numba.get_num_threads() + 1       # the parallel driver runs batches of at least twice the threads
    for name in forms:
        f = fragsim.lookup(name)
        for batch in (1, many):
            regs = [np.zeros((batch, WARP_LANES, f.nregs(op)), np.uint32) for op in "ABC"]
            fragsim.mma(f, *regs)


def _row_kernel() -> None:
    """kernel.py, the float model's general path (plans kernel16 does not take: other zero signs, odd
    or many blocks), called directly: fragsim.mma sends the shipped rows' plans to kernel16."""
    import numba

    from fragsim.arith import index_maps, plan
    from fragsim.arith import kernel

    many = 2 * numba.get_num_threads() + 1
    for name in MMA_FORMS["fragsim.arith.kernel16"]:
        pl = plan(name, "sm_90")
        for batch in (1, many):
            a, b, c = (np.zeros((batch, WARP_LANES * pl.form.nregs(op)), np.uint32) for op in "ABC")
            kernel.run(pl, index_maps(pl.form), a, b, c, parallel=True)


#: One wgmma form per configuration of fragsim.arith.kernel_wgmma on the sm_90 row (input class, accumulator).
WGMMA_FORMS = ["m64n8k16.f32.f16.f16", "m64n8k16.f16.f16.f16", "m64n8k16.f32.bf16.bf16", "m64n8k8.f32.tf32.tf32",
               "m64n8k32.f32.e4m3.e5m2", "m64n8k32.f16.e5m2.e4m3", "m64n8k32.s32.s8.u8"]


def _wgmma() -> None:
    import numba

    import fragsim
    from fragsim.instructions.wgmma import THREADS, lookup_wgmma
    from fragsim.layout.descriptor import canonical_descriptor

    many = 2 * numba.get_num_threads() + 1
    for name in WGMMA_FORMS:
        f = lookup_wgmma(name)
        desc = canonical_descriptor("128B", elem_bits=f.fmt("B").storage_bits, rows=64).encode()
        for batch in (1, many):
            c = np.zeros((batch, THREADS, f.nregs("C")), np.uint32)
            fragsim.wgmma(f, desc, desc, c, smem=np.zeros(8192, np.uint8))


def _gemm() -> None:
    import fragsim

    f = fragsim.lookup("m16n8k16.row.col.f32.f16.f16.f32")
    m, n, k = f.shape
    fragsim.gemm(f, np.zeros((m, k), np.uint16), np.zeros((k, n), np.uint16))


def _banks() -> None:
    from fragsim.banks import bank_conflicts
    from fragsim.instructions.shared_ops import SHARED_OPS

    for op in SHARED_OPS.values():
        lanes = np.arange(WARP_LANES, dtype=np.int64) * op.bytes_per_addr
        bank_conflicts(op, np.stack([lanes, lanes]))


def _sfu() -> None:
    from fragsim import sfu
    from fragsim.sfu.kernel import FORMS

    for spelling in FORMS:
        sfu.form(spelling, *([np.zeros(2, np.uint32)] * (2 if spelling.startswith("div") else 1)))


def run(args) -> int:
    import warnings

    from fragsim.arith.jit import CompileNotice

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileNotice)     # "run `fragsim warmup`": this is it
        return _run(args)


def _run(args) -> int:
    from fragsim.arith.jit import KERNEL_NAMES, compile_seconds, listen

    listen()
    steps: dict[str, Callable[[], None]] = {module: partial(_mma, forms) for module, forms in MMA_FORMS.items()}
    steps |= {"fragsim.arith.kernel": _row_kernel, "fragsim.arith.kernel_gemm": _gemm,
              "fragsim.arith.kernel_wgmma": _wgmma, "fragsim.banks.kernel_generated": _banks,
              "fragsim.sfu.kernel": _sfu}
    rows = []
    for module, what in KERNEL_NAMES.items():
        step = steps[module]
        t0, c0 = time.perf_counter(), compile_seconds()
        step()
        compiled = compile_seconds() - c0
        rows.append({"kernel": what, "compiled": compiled > 0, "seconds": round(time.perf_counter() - t0, 2)})
        if not args.json:
            how = "compiled" if compiled > 0 else "loaded from numba's cache"
            print(f"{what}: {how} in {rows[-1]['seconds']:.1f} s", flush=True)
    if args.json:
        print(json.dumps({"kernels": rows}))
    return 0
