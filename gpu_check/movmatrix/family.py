"""The movmatrix family: ``movmatrix`` (``fragsim.instructions.REGISTER_OPS``) on the GPU against
``fragsim.movmatrix``, bit for bit, on random source registers (every eighth warp sparse: signs and
low bits only); ``--record DIR`` keeps the first ``--keep`` cases (default 2,000) as the warp corpus
DIR/movmatrix.trans.npz (gpu_check/corpus.py), which ``--replay DIR`` runs through fragsim again.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

import fragsim
from fragsim.facts.arch import arch_for_cc
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import REGISTER_OPS

from .. import compile, corpus, runner
from ..family import RunnerFamily, Say
from ..kernels import register_kernel
from ..prelude import THREADS_PER_BLOCK, WARPS_PER_BLOCK, unit

OP = REGISTER_OPS["movmatrix.trans"]
CLASSES = ("uniform", "sparse")
SPARSE = np.uint32(0x80018001)      # the bits a sparse warp keeps: each half's sign and lowest bit
CHUNK = 1 << 18


def inputs(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Source registers (n, 32, 1) and each warp's class (index into CLASSES)."""
    a = rng.integers(0, 1 << 32, (n, WARP_LANES, 1), dtype=np.uint64).astype(np.uint32)
    tag = (np.arange(n) % 8 == 0).astype(np.uint8)
    a[tag == 1] &= SPARSE
    return a, tag


def mismatches(a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Bool (n,): warps whose destination registers differ from fragsim's in any bit."""
    return (fragsim.movmatrix(a) != d).reshape(len(a), -1).any(axis=1)


class MovmatrixFamily(RunnerFamily):
    name = "movmatrix"
    summary = "movmatrix.sync.aligned.m8n8.trans.b16 (--cases: warps, default 1,000,000)"
    default_cases = 1_000_000
    options = frozenset({"cases", "seed", "record", "keep", "replay", "quiet", "json", "json_file"})

    def source(self, cc: int) -> str:
        return unit(register_kernel(OP).source)

    def compile(self, info: dict[str, Any]) -> Any:
        name = register_kernel(OP).name
        return compile.nvrtc(self.source(info["cc_int"]), [name], f"the movmatrix kernel for compute capability "
                             f"{info['cc']}")[name]

    def device_outputs(self, fn: Any, a: np.ndarray) -> np.ndarray:
        """The GPU's destination registers for source registers ``a`` uint32 (n, 32, 1)."""
        cp = runner.import_cupy()
        n = a.shape[0]
        d = cp.empty((n, WARP_LANES, 1), cp.uint32)
        if n:
            fn(((n + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK,), (THREADS_PER_BLOCK,),
               (cp.asarray(np.ascontiguousarray(a, np.uint32)), d, np.int64(n)))
        return cp.asnumpy(d)

    def gpu(self, cases: int, seed: int, info: dict[str, Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(inputs, classes, hardware outputs, mismatching warps) of ``cases`` random warps."""
        fn = self.compile(info)
        rng = np.random.default_rng(seed)
        keep_a, keep_t, keep_d, bad = [], [], [], 0
        for s in range(0, cases, CHUNK):
            a, tag = inputs(min(CHUNK, cases - s), rng)
            d = self.device_outputs(fn, a)
            bad += int(mismatches(a, d).sum())
            keep_a.append(a)
            keep_t.append(tag)
            keep_d.append(d)
        if not keep_a:
            return (np.zeros((0, WARP_LANES, 1), np.uint32), np.zeros(0, np.uint8),
                    np.zeros((0, WARP_LANES, 1), np.uint32), 0)
        return np.concatenate(keep_a), np.concatenate(keep_t), np.concatenate(keep_d), bad

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        a, tag, d, bad = self.gpu(args.cases, args.seed, info)
        say(f"{OP.name}: {args.cases:,} cases, {bad} mismatches ({info['device']})")
        if args.record:
            keep = 2000 if args.keep is None else args.keep
            info = dict(info, arch=arch_for_cc(info["cc_int"] // 10, info["cc_int"] % 10, info["device"]))
            corpus.save(args.record, OP.name, {"a": a[:keep], "tag": tag[:keep], "tag_names": CLASSES},
                        {"d": d[:keep]}, info,
                        {"of": args.cases, "mismatches": bad, "seed": args.seed,
                         "command": f"fragsim gpu-check --family movmatrix --cases {args.cases} --seed {args.seed} "
                                    f"--record DIR --keep {keep}"})
        return {"cases": args.cases, "mismatches": bad}

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        path = os.path.join(args.replay, corpus.file_name(OP.name))
        if not os.path.isfile(path):
            raise ValueError(f"--replay {args.replay}: no {corpus.file_name(OP.name)} there; expected the folder "
                             "--family movmatrix --record wrote")
        c = corpus.load(path, ("movmatrix",))
        a, d = c.arrays["a"][: args.cases], c.arrays["d"][: args.cases]
        return {"cases": len(a), "mismatches": int(mismatches(a, d).sum())}


FAMILIES = {"movmatrix": MovmatrixFamily()}
