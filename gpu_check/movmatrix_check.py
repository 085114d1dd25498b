"""GPU check of ``movmatrix`` (``fragsim.instructions.REGISTER_OPS``): random source registers on the
device and through ``fragsim.movmatrix``, compared bit for bit; ``--record DIR`` keeps the first
cases (inputs and the hardware's outputs, with the device's description) as DIR/movmatrix.trans.npz.

usage: python -m fragsim.gpu_check.movmatrix_check [--cases N] [--seed S] [--record DIR] [--keep K]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

import fragsim
from fragsim.instructions import REGISTER_OPS

from . import kernels as K
from .runner import device_info, import_cupy


def device_outputs(a: np.ndarray) -> np.ndarray:
    """The GPU's destination registers for source registers ``a`` uint32 (n, 32, 1)."""
    cp = import_cupy()
    k = K.register_kernel(REGISTER_OPS["movmatrix.trans"])
    fn = cp.RawModule(code=K.PRELUDE + "\n" + k.source, backend="nvrtc").get_function(k.name)
    n = a.shape[0]
    d = cp.empty((n, 32, 1), cp.uint32)
    fn(((n + K.WARPS_PER_BLOCK - 1) // K.WARPS_PER_BLOCK,), (K.THREADS_PER_BLOCK,),
       (cp.asarray(np.ascontiguousarray(a, np.uint32)), d, np.int64(n)))
    return cp.asnumpy(d)


def run(cases: int, seed: int, chunk: int = 1 << 18):
    """(inputs, hardware outputs, mismatching cases, device info) for ``cases`` random warps."""
    cp = import_cupy()
    info = device_info(cp)
    op = REGISTER_OPS["movmatrix.trans"]
    k = K.register_kernel(op)
    fn = cp.RawModule(code=K.PRELUDE + "\n" + k.source, backend="nvrtc").get_function(k.name)
    rng = np.random.default_rng(seed)
    keep_a, keep_d, bad = [], [], 0
    for s in range(0, cases, chunk):
        n = min(chunk, cases - s)
        a = rng.integers(0, 1 << 32, (n, 32, 1), dtype=np.uint64).astype(np.uint32)
        a[: n // 8] &= np.uint32(0x80018001)          # an eighth sparse: signs and low bits only
        d = cp.empty((n, 32, 1), cp.uint32)
        blocks = (n + K.WARPS_PER_BLOCK - 1) // K.WARPS_PER_BLOCK
        fn((blocks,), (K.THREADS_PER_BLOCK,), (cp.asarray(a), d, np.int64(n)))
        hw = cp.asnumpy(d)
        bad += int((hw != fragsim.movmatrix(a)).reshape(n, -1).any(axis=1).sum())
        keep_a.append(a)
        keep_d.append(hw)
    return np.concatenate(keep_a), np.concatenate(keep_d), bad, info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fragsim.gpu_check.movmatrix_check", description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--record", metavar="DIR")
    ap.add_argument("--keep", type=int, default=2000, help="cases kept in the recording (default 2,000)")
    args = ap.parse_args(argv)
    a, d, bad, info = run(args.cases, args.seed)
    print(f"movmatrix.trans: {args.cases:,} cases, {bad} mismatches ({info['device']})")
    if args.record:
        os.makedirs(args.record, exist_ok=True)
        meta = {k: v for k, v in info.items() if isinstance(v, (str, int))}
        meta.update(op="movmatrix.trans", ptx=REGISTER_OPS["movmatrix.trans"].ptx, cases=args.keep, of=args.cases,
                    mismatches=bad, seed=args.seed, command=" ".join(["python -m fragsim.gpu_check.movmatrix_check"]
                                                                     + (argv or sys.argv[1:])))
        np.savez_compressed(os.path.join(args.record, "movmatrix.trans.npz"), a=a[:args.keep], d=d[:args.keep],
                            meta=np.array(json.dumps(meta, sort_keys=True)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
