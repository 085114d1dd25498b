"""--family approx: the MUFU forms (``fragsim.approx``) against the GPU on every input.

The GPU runs each form over its whole input space -- all 2^32 words of an f32 or x2 form, all 65,536
of a 16-bit form, 2^30 operand pairs of a ``div`` form (``pairs.py``) -- and digests its results per
block of 2^20 inputs (``digest.py``: a sum, so the GPU forms it in one pass); the f64 forms, whose
space cannot be swept, on 32,768 random and near-one doubles, kept whole.  fragsim's model then
computes the digests of ``--cases`` blocks per form (default 8: zeros and subnormals, one, the
largest finite, infinities and NaNs, their negatives, then blocks spread evenly; ``--cases 4096``:
every block, the whole space) and the two must agree.  ``--record DIR`` writes DIR/approx.npz: every
block digest of every form the GPU ran, the 16-bit forms' whole tables, and the device.
``--replay FILE`` recomputes the chosen blocks of a recording on the CPU.  Forms the GPU ran that
fragsim does not model yet are recorded and listed, not compared.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

import numpy as np

from fragsim.ptx.semantics.approx import FORMS, approx

from .. import runner
from ..family import RunnerFamily, Say
from . import probe
from .digest import BLOCK, block_digests, cpu_block_digests
from .pairs import pairs

#: inputs per recorded digest (a sum of 2^20 / BLOCK GPU blocks)
GROUP = 1 << 20
FILE = "approx.npz"
#: the pairs of the div forms: stream seed and count
DIV_SEED, DIV_PAIRS = 1, 1 << 30
#: blocks every comparison covers first (f32 words >> 20): +0 and subnormals, one, the largest
#: finites, infinities and NaNs, and the same negative
FIXED = (0x000, 0x3F8, 0x7F7, 0x7F8, 0x800, 0xBF8, 0xFF7, 0xFF8)


#: f64 samples per form: random words and words near one (an f64 space cannot be swept)
F64_SAMPLES = 1 << 14


def f64_inputs(seed: int = 30) -> np.ndarray:
    """The f64 forms' inputs: random doubles, then doubles near one with random low words."""
    rng = np.random.default_rng(seed)
    rnd = rng.integers(0, 2**64, F64_SAMPLES, dtype=np.uint64, endpoint=False)
    near = ((np.arange(F64_SAMPLES, dtype=np.uint64) % np.uint64(1 << 12)) * np.uint64(0x10001)
            + np.uint64(0x3FF0000000000000)) ^ rng.integers(0, 2**32, F64_SAMPLES, dtype=np.uint64)
    return np.concatenate([rnd, near])


def _kind(form: str) -> str:
    if form.startswith("div"):
        return "div"
    if form.endswith(".f64"):
        return "f64"
    t = form.split(".")[-1]
    return "x2" if t.endswith("x2") else ("half" if t in ("f16", "bf16") else "word")


def blocks(form: str, n: int) -> list[int]:
    """The ``n`` groups of ``form`` a comparison covers, in order."""
    total = DIV_PAIRS // GROUP if _kind(form) == "div" else (1 << 32) // GROUP
    if n >= total:
        return list(range(total))
    if _kind(form) == "div":
        return list(range(n))
    out = list(FIXED[:n])
    for b in np.linspace(0, total - 1, n + len(FIXED)).astype(int):
        if len(out) >= n:
            break
        if int(b) not in out:
            out.append(int(b))
    return out


def model_digests(form: str, group: int) -> int:
    """fragsim's digest of ``form``'s inputs ``group * GROUP ..``."""
    first = group * GROUP
    if _kind(form) == "div":
        a, b = pairs(first, GROUP, DIV_SEED)
        out = approx(form, a, b)
    else:
        w = np.arange(first, first + GROUP, dtype=np.uint64).astype(np.uint32)
        out = approx(form, w)
    return int(cpu_block_digests(out, first).sum(dtype=np.uint64))


def _group(d: np.ndarray) -> np.ndarray:
    return d.reshape(-1, GROUP // BLOCK).sum(axis=1, dtype=np.uint64)


def compare(rec: dict[str, np.ndarray], forms: list[str], n: int, say: Say) -> dict[str, Any]:
    """The model against a recording's digests on ``n`` groups per form."""
    cases = bad = 0
    mismatching, skipped = [], []
    for form in forms:
        if form not in FORMS:
            skipped.append(form)
            continue
        if _kind(form) == "f64":
            x, want = rec[f"samples:{form}:in"], rec[f"samples:{form}:out"]
            got = approx(form, x)
            wrong = np.flatnonzero(got != want)
            cases += len(x)
            bad += len(wrong)
            mismatching += [f"{form} {int(x[i]):#018x}: GPU {int(want[i]):#018x}, fragsim {int(got[i]):#018x}"
                            for i in wrong[:8]]
            say(f"{form}: {len(x):,} random and near-one inputs, {len(wrong)} mismatches")
            continue
        if _kind(form) == "half":
            h = np.arange(1 << 16, dtype=np.uint16)
            got, want = approx(form, h), rec[f"table:{form}"]
            wrong = np.flatnonzero(got != want)
            cases += 1 << 16
            bad += len(wrong)
            mismatching += [f"{form} {int(h[i]):#06x}: GPU {int(want[i]):#06x}, fragsim {int(got[i]):#06x}" for i in wrong[:8]]
            say(f"{form}: every input, {len(wrong)} mismatches")
            continue
        digests = rec[f"digest:{form}"]
        miss = [g for g in blocks(form, n) if model_digests(form, g) != int(digests[g])]
        cases += len(blocks(form, n)) * GROUP
        bad += len(miss)
        what = "pairs" if _kind(form) == "div" else "inputs"
        mismatching += [f"{form}: {what} {g * GROUP:#x}..{(g + 1) * GROUP - 1:#x} differ" for g in miss]
        say(f"{form}: {len(blocks(form, n))} x 2^20 {what}, {len(miss)} groups differ")
    return {"cases": cases, "mismatches": bad, "mismatching": mismatching, "not_modelled": skipped}


def record_gpu(say: Say) -> dict[str, np.ndarray]:
    """Every probe form over its whole space on device 0: the digests per group, the 16-bit tables."""
    cp = runner.import_cupy()
    from ..compile import nvrtc
    names = probe.F32 + probe.H16 + list(probe.X2) + probe.F64 + probe.DIV
    k = nvrtc(probe.source(), [probe.kname(f) for f in names], "the approx probe", cp)
    grid, threads, chunk = 132 * 32, 256, 1 << 28
    out: dict[str, np.ndarray] = {}
    for f in probe.F32:
        y = cp.empty(chunk, cp.uint32)
        ds = []
        for c in range(0, 1 << 32, chunk):
            k[probe.kname(f)]((grid,), (threads,), (np.uint32(c), np.uint32(chunk), y))
            ds.append(_group(block_digests(y, c, cp).get()))
        out[f"digest:{f}"] = np.concatenate(ds)
        say(f"{f}: 2^32 inputs on the GPU")
    for f in probe.H16:
        y = cp.empty(1 << 16, cp.uint16)
        k[probe.kname(f)]((256,), (256,), (y,))
        out[f"table:{f}"] = y.get()
    for f in probe.X2:
        bad, first, y = cp.zeros(1, cp.uint64), cp.zeros(16, cp.uint32), cp.empty(chunk, cp.uint32)
        ds = []
        for c in range(0, 1 << 32, chunk):
            k[probe.kname(f)]((grid,), (threads,), (np.uint32(c), np.uint32(chunk), y, bad, first))
            ds.append(_group(block_digests(y, c, cp).get()))
        out[f"digest:{f}"] = np.concatenate(ds)
        out[f"halves_differ:{f}"] = bad.get()
        say(f"{f}: 2^32 inputs on the GPU, {int(bad.get()[0])} unlike two scalar results")
    x = f64_inputs()
    for f in probe.F64:
        a = cp.asarray(x)
        y = cp.empty_like(a)
        k[probe.kname(f)](((len(x) + 255) // 256,), (256,), (a, y, np.uint32(len(x))))
        out[f"samples:{f}:in"], out[f"samples:{f}:out"] = x, y.get()
        say(f"{f}: {len(x):,} inputs on the GPU")
    step = 1 << 26
    for f in probe.DIV:
        ds = []
        for s in range(0, DIV_PAIRS, step):
            a, b = pairs(s, step, DIV_SEED, cp)
            y = cp.empty(step, cp.uint32)
            k[probe.kname(f)](((step + 255) // 256,), (256,), (a, b, y, np.uint32(step)))
            ds.append(_group(block_digests(y, s, cp).get()))
        out[f"digest:{f}"] = np.concatenate(ds)
        say(f"{f}: 2^30 operand pairs on the GPU")
    return out


def load(path: str) -> dict[str, np.ndarray]:
    try:
        with np.load(path) as z:
            rec = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise ValueError(f"--replay {path}: not an approx recording ({runner.one_line(e)}); expected the "
                         f"{FILE} that fragsim gpu-check --family approx --record wrote") from None
    if not any(k.startswith("digest:") for k in rec):
        raise ValueError(f"--replay {path}: no digests in it; expected the {FILE} of --family approx --record")
    return rec


def _forms(args: argparse.Namespace, rec: dict[str, np.ndarray]) -> list[str]:
    every = sorted({k.split(":")[1] for k in rec if k.startswith(("digest:", "table:", "samples:"))})
    keep = [f for f in every if not args.forms or any(s in f for s in args.forms)]
    if not keep:
        raise ValueError(f"--forms {' '.join(args.forms)}: no recorded approx form contains any of these "
                         f"(e.g. ex2, div.full, f16)")
    return keep


class ApproxFamily(RunnerFamily):
    name = "approx"
    summary = ("the MUFU forms (ex2, lg2, rcp, rsqrt, sin, cos, div, 16-bit ex2) on every input, digested per "
               "2^20 inputs (--cases: groups fragsim recomputes per form, default 8; 4096: all)")
    default_cases = 8
    options = frozenset({"cases", "forms", "record", "record_only", "replay", "quiet", "json", "json_file"})
    replay_file = True
    replay_expects = f"an approx recording ({FILE}, e.g. tests/data/approx/approx_h100.npz)"

    def source(self, cc: int) -> str:
        return probe.source()

    def compile(self, info: dict[str, Any]) -> Any:
        return None

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        rec = record_gpu(say)
        rec["device"] = np.array(info["device"])
        path = None
        if args.record:
            os.makedirs(args.record, exist_ok=True)
            path = os.path.join(args.record, FILE)
            np.savez_compressed(path, **rec)  # type: ignore[arg-type]
        if args.record_only:
            return {"cases": 0, "mismatches": 0, "compared": False, "recorded": path}
        return compare(rec, _forms(args, rec), args.cases, say) | ({"recorded": path} if path else {})

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        rec = load(args.replay)
        return compare(rec, _forms(args, rec), args.cases, say)

    def summarize(self, report: dict[str, Any]) -> str:
        text = super().summarize(report)
        if report.get("not_modelled"):
            text += f"\nrecorded, not modelled yet: {', '.join(report['not_modelled'])}"
        return text


FAMILIES = {"approx": ApproxFamily()}
