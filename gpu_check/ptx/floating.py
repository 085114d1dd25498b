"""The ptx_float family: the PTX interpreter's floating-point instructions
(fragsim.ptx.semantics.floating) on the GPU against fragsim, bit for bit.

Every variant (gpu_check/ptx/floating_cases.py: ``groups``) is one generated kernel whose threads each
load a case's operands, run the instruction as written (inline PTX) and store the result bits;
``--cases`` cases per variant (default 131,072 = 32 blocks of 4,096), ``--forms`` keeps the
variants whose name contains one of the given strings.  ``--record DIR`` writes DIR/ptx_float.npz:
for every variant, an 8-byte digest of what the GPU wrote for each block of cases (the inputs are
deterministic, so the digests stand for every output), and up to ``KEEP`` cases where fragsim
disagreed (``--keep``), with the GPU's output; DIR/ptx_float_block0.npz (not replayed) keeps block 0, the
special-value grid, in full.  ``--replay DIR`` regenerates the inputs of the first ``--cases``
cases, runs fragsim, and compares block digests and the kept cases.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from fragsim.facts.arch import arch_for_cc

from .. import compile, record, runner
from ..family import RunnerFamily, Say
from ..prelude import unit
from .floating_cases import (BLOCK, CMP_OPS, DTYPES, Group, block_digests, groups, inputs, kernel_name,
                              kernel_source, predict)

FILE = "ptx_float.npz"
BLOCK0_FILE = "ptx_float_block0.npz"
KIND = "ptx-float"
#: disagreeing cases kept per variant by --record
KEEP = 256
THREADS = 256


def selected(forms: list[str] | None) -> list[tuple[int, Group]]:
    """(index, group) of every group, or of those whose name contains one of ``forms``."""
    every = list(enumerate(groups()))
    if not forms:
        return every
    out = [(i, g) for i, g in every if any(f in g.name for f in forms)]
    if not out:
        raise ValueError(f"--forms {' '.join(forms)}: no ptx_float variant's name contains any of these "
                         f"(e.g. add.rn.f32, fma.rn.f16x2, setp.CMP.and.f32, set.CMP.u32.f16)")
    return out


def _pad14(x: np.ndarray) -> np.ndarray:
    """Outputs as uint64 rows of 14 (set groups write 14 words per case, others one)."""
    x = x.reshape(len(x), -1).astype(np.uint64)
    return np.pad(x, ((0, 0), (0, len(CMP_OPS) - x.shape[1])))


class PtxFloatFamily(RunnerFamily):
    name = "ptx_float"
    summary = ("the PTX interpreter's floating-point instructions, every variant on special and random "
               "operands (--cases per variant, default 131,072; --forms: variants whose name contains one of these)")
    default_cases = 32 * BLOCK
    options = frozenset({"cases", "seed", "forms", "record", "keep", "replay", "quiet", "json", "json_file"})
    replay_expects = f"a folder holding {FILE} (--family ptx_float --record DIR)"

    def source(self, cc: int, forms: list[str] | None = None) -> str:
        return unit(*(kernel_source(g, i) for i, g in selected(forms)))

    def compile(self, info: dict[str, Any], forms: list[str] | None = None) -> dict[str, Any]:
        names = [kernel_name(i) for i, _ in selected(forms)]
        return compile.nvrtc(self.source(info["cc_int"], forms), names,
                             f"the ptx_float kernels for compute capability {info['cc']}")

    def device_outputs(self, fn: Any, g: Group, arrays: list[np.ndarray]) -> np.ndarray:
        cp = runner.import_cupy()
        n = len(arrays[0])
        dev = [cp.asarray(a) for a in arrays]
        while len(dev) < 3:
            dev.append(dev[0])
        d = cp.zeros((n, g.width), DTYPES[g.out_bits])
        fn(((n + THREADS - 1) // THREADS,), (THREADS,), (dev[0], dev[1], dev[2], d, np.int64(n)))
        out = cp.asnumpy(d)
        return out if g.width > 1 else out[:, 0]

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        if info["cc_int"] < 90:
            raise runner.GpuUnavailable(f"--family ptx_float needs sm_90 (bf16 arithmetic, .oob); this GPU is "
                                        f"compute capability {info['cc']}")
        chosen = selected(args.forms)
        fns = self.compile(info, args.forms)
        names: list[str] = []
        digests: list[np.ndarray] = []
        ex_g: list[np.ndarray] = []
        ex_c: list[np.ndarray] = []
        ex_o: list[np.ndarray] = []
        block0: dict[str, Any] = {"variants": None}
        bad_total, bad_groups = 0, []
        keep = KEEP if args.keep is None else args.keep
        for i, g in chosen:
            arrays = inputs(g, args.cases, args.seed)
            hw = self.device_outputs(fns[kernel_name(i)], g, arrays)
            try:
                want = predict(g, arrays)
            except Exception as e:  # a fault of fragsim's model: every case of this variant differs
                say(f"{g.name}: fragsim failed: {runner.one_line(e)}")
                want = ~hw
            bad = (hw != want).reshape(len(hw), -1).any(axis=1)
            nbad = int(bad.sum())
            if nbad:
                bad_groups.append({"variant": g.name, "mismatches": nbad})
                say(f"{g.name}: {nbad:,} of {args.cases:,} cases differ")
                idx = np.flatnonzero(bad)[:keep]
                ex_g.append(np.full(len(idx), len(names), np.int32))
                ex_c.append(idx.astype(np.int64))
                ex_o.append(_pad14(hw[idx]))
            bad_total += nbad
            names.append(g.name)
            digests.append(block_digests(hw))
            block0[f"g{len(names) - 1}"] = hw[:BLOCK]
        say(f"ptx_float: {len(chosen)} variants x {args.cases:,} cases, {bad_total:,} mismatches ({info['device']})")
        if args.record:
            nb = max(len(d) for d in digests)
            dig = np.zeros((len(digests), nb), np.uint64)
            for k, d in enumerate(digests):
                dig[k, :len(d)] = d
            meta = dict(info, arch=arch_for_cc(info["cc_int"] // 10, info["cc_int"] % 10, info["device"]),
                        cases=args.cases, seed=args.seed, block=BLOCK, mismatches=bad_total,
                        command=f"fragsim gpu-check --family ptx_float --cases {args.cases} --seed {args.seed} "
                                "--record DIR" + (f" --forms {' '.join(args.forms)}" if args.forms else ""))
            record.save(os.path.join(args.record, FILE), KIND, meta, {
                "variants": np.array(names), "digests": dig,
                "ex_variant": np.concatenate(ex_g) if ex_g else np.zeros(0, np.int32),
                "ex_case": np.concatenate(ex_c) if ex_c else np.zeros(0, np.int64),
                "ex_out": np.concatenate(ex_o) if ex_o else np.zeros((0, len(CMP_OPS)), np.uint64)})
            block0["variants"] = np.array(names)
            np.savez_compressed(os.path.join(args.record, BLOCK0_FILE), **block0)
        return {"cases": args.cases * len(chosen), "variants": len(chosen), "mismatches": bad_total,
                "differing": bad_groups}

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        path = os.path.join(args.replay, FILE)
        if not os.path.isfile(path):
            raise ValueError(f"--replay {args.replay}: no {FILE} there; expected the folder --family ptx_float "
                             "--record wrote")
        meta, arr = record.load(path, (KIND,))
        recorded = {str(v): k for k, v in enumerate(arr["variants"])}
        chosen = [(i, g) for i, g in selected(args.forms) if g.name in recorded]
        if not chosen:
            raise ValueError(f"--replay {args.replay}: the recording holds none of the chosen variants")
        n = min(args.cases, int(meta["cases"]))
        n = n - n % BLOCK if n >= BLOCK else n
        cases = bad = 0
        differing = []
        for _, g in chosen:
            k = recorded[g.name]
            sel = arr["ex_variant"] == k
            ex_case, ex_out = arr["ex_case"][sel], arr["ex_out"][sel]
            arrays = inputs(g, max(n, int(ex_case.max()) + 1 if len(ex_case) else 0), int(meta["seed"]))
            want = predict(g, [a[:n] for a in arrays])
            got = block_digests(want)
            nb = len(got) if n % BLOCK == 0 else len(got) - 1      # a partial block was not digested so
            wrong = np.flatnonzero(got[:nb] != arr["digests"][k, :nb])
            ex_pred = _pad14(predict(g, [a[ex_case] for a in arrays])) if len(ex_case) else ex_out
            ex_bad = int((ex_pred != ex_out).any(axis=1).sum())
            nbad = int(len(wrong)) * BLOCK + ex_bad
            if nbad:
                differing.append({"variant": g.name, "blocks": [int(b) for b in wrong], "kept_cases": ex_bad})
                say(f"{g.name}: blocks {', '.join(map(str, wrong))} and {ex_bad} kept cases differ")
            cases += nb * BLOCK + len(ex_case)
            bad += nbad
        say(f"ptx_float replay: {len(chosen)} variants, {cases:,} cases, {bad:,} in differing blocks or kept cases")
        return {"cases": cases, "variants": len(chosen), "mismatches": bad, "differing": differing}


FAMILIES = {"ptx_float": PtxFloatFamily()}
