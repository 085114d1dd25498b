"""Results per second of every MUFU form (``fragsim.approx``) beside the f32 fma of the instruction
table, and the cost of an approx instruction in ``fragsim run`` beside an fma there.

    taskset -c 0 python benchmarks/bench_approx.py [--n 4194304] [--repeat 5] [--json]

Each form runs on ``--n`` random words (every bit pattern; div: pairs), best of ``--repeat``; the
table's ``fma.rn.f32`` (NumPy) on the same count is the yardstick.  The run part launches one
kernel whose threads each apply one instruction 64 times in a loop -- ``ex2.approx.ftz.f32``,
``div.full.f32``, or ``fma.rn.f32`` -- and reports microseconds per warp-instruction.  numba runs
on one thread; pin the process to one core on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import fragsim  # noqa: E402
from fragsim.ptx.semantics.approx import FORMS  # noqa: E402

KERNEL = """
.version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 out)
{{
  .reg .b32 %r<4>; .reg .f32 %f<4>; .reg .b64 %rd<4>; .reg .pred %p;
  ld.param.u64 %rd1, [out];
  mov.u32 %r1, %tid.x;
  cvt.rn.f32.u32 %f1, %r1;
  mov.f32 %f2, 0f3F000000;
  mov.u32 %r2, 0;
LOOP:
  {op}
  add.u32 %r2, %r2, 1;
  setp.lt.u32 %p, %r2, 64;
  @%p bra LOOP;
  mul.wide.u32 %rd2, %r1, 4;
  add.s64 %rd3, %rd1, %rd2;
  st.global.f32 [%rd3], %f2;
  ret;
}}
"""
OPS = {"ex2.approx.ftz.f32": "ex2.approx.ftz.f32 %f2, %f2;", "div.full.f32": "div.full.f32 %f2, %f2, %f1;",
       "fma.rn.f32": "fma.rn.f32 %f2, %f2, %f1, %f2;"}


def best(fn, repeat):
    fn()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return min(out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1 << 22)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2**32, args.n, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, args.n, dtype=np.uint64).astype(np.uint32)
    h = (a & 0xFFFF).astype(np.uint16)
    from fragsim.ptx.isa.table import resolve
    from fragsim.ptx.semantics import Spec
    fma = resolve(Spec("fma", ("rn", "f32"), 1, 3)).fn
    rows = {"fma.rn.f32 (the table's)": args.n / best(lambda: fma(a, b, a), args.repeat)}
    for form, f in FORMS.items():
        ops = (h,) if f.type in ("f16", "bf16") else ((a, b) if f.operands == 2 else (a,))
        rows[form] = args.n / best(lambda ops=ops, form=form: fragsim.approx(form, *ops), args.repeat)
    run = {}
    for name, op in OPS.items():
        ptx = KERNEL.format(op=op)
        out = np.zeros(1024, np.float32)
        t = best(lambda ptx=ptx, out=out: fragsim.run_kernel(ptx, "k", grid=1, block=1024, args=[out]), args.repeat)
        run[name] = t / (32 * 64) * 1e6          # per warp-instruction of the loop body's op
    if args.json:
        print(json.dumps({"machine": platform.processor() or platform.machine(), "per_second": rows,
                          "run_us_per_warp_loop": run}))
        return 0
    print(f"{'form':28s} {'results/s':>14s}")
    for k, v in rows.items():
        print(f"{k:28s} {v / 1e6:11.1f} M/s")
    print("\nfragsim run, one CTA of 32 warps, 64 iterations of: (us per warp-iteration, whole loop)")
    for k, v in run.items():
        print(f"  {k:24s} {v:8.2f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
