"""A small reference corpus from MMA-Sim 2.1.1 (PyPI ``mmasim``), so that CI compares the
``sm_80`` arithmetic, which no committed hardware corpus covers, with something (and ``sm_90``
as well).  Only the data MMA-Sim produced is committed (tests/data/mmasim/), never its code;
CI replays it without mmasim or torch (tests/test_mma_mmasim_corpus.py).

    python -m fragsim.gpu_check.mmasim_corpus OUT_DIR [--cases N] [--seed S]

needs ``mmasim==2.1.1`` and torch, and runs from a source checkout: the operands are drawn
with the input classes of tests/mma_cases.py (uniform words, specials with NaN payloads,
subnormals, narrow and wide exponent bands, the e_zero edge, zeros; and the scenarios exact
cancellation, C cancelling the dot product, sparse terms, all -0 rows).

One ``mmasim.<form>.npz`` per form (a record of kind "mmasim", gpu_check/record.py), matrix-level bit patterns:

- ``a`` (n, M, K), ``b`` (n, K, N), ``c`` (n, M, N): inputs, in the operand's storage width
- ``d`` (n, len(archs), M, N): MMA-Sim's result on each architecture (same inputs)
- ``classes`` (n, 3) and ``scenario`` (n,): indexes into ``class_names``/``scenario_names``
  (how each case was drawn), ``case_seed`` (n,): the seed handed to ``mma_cases.matrices``
- metadata: form, archs, the generator and its versions, seed, command
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import zlib

import numpy as np

from . import record

MMASIM_VERSION = "2.1.1"
ARCHS = {"sm_80": "Ampere", "sm_90": "Hopper"}
CASES_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "mma_cases.py")


def file_name(form: str) -> str:
    return f"mmasim.{form}.npz"


def _mma_cases():
    """tests/mma_cases.py of this source checkout (the operand classes the property tests use)."""
    if not os.path.isfile(CASES_FILE):
        raise RuntimeError(f"{CASES_FILE} not found: run the generator from a fragsim source checkout")
    spec = importlib.util.spec_from_file_location("mma_cases", CASES_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_mmasim():
    """(mmasim.nv_ptx, torch); RuntimeError naming what is missing or the wrong version."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        v = version("mmasim")
    except PackageNotFoundError:
        raise RuntimeError(f"mmasim is not installed (pip install torch mmasim=={MMASIM_VERSION})") from None
    if v != MMASIM_VERSION:
        raise RuntimeError(f"mmasim {v} is installed; the corpus is defined by mmasim {MMASIM_VERSION}")
    import mmasim.nv_ptx  # type: ignore[import-not-found]  # the generator's own needs, never CI's
    import torch  # type: ignore[import-not-found]
    return mmasim.nv_ptx, torch


def to_torch(torch, bits, fmt):
    """Bit matrix -> the torch tensor MMA-Sim takes (tf32 travels as float32, low bits included)."""
    dtype = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32}[fmt.name]
    signed = {16: np.int16, 32: np.int32}[fmt.storage_bits]
    return torch.from_numpy(np.ascontiguousarray(bits).view(signed)).view(dtype)


def from_torch(torch, t, fmt):
    signed = {16: torch.int16, 32: torch.int32}[fmt.storage_bits]
    return t.contiguous().view(signed).numpy().view(fmt.dtype)


def generate(form: str, cases: int, seed: int) -> dict:
    """Arrays and metadata of one form's corpus (see the module docstring).  Needs string hashing
    unrandomized (PYTHONHASHSEED=0): mma_cases' "mixed" class walks a set of class names, whose
    order follows the hash seed, so the same seed would draw other operands in another process."""
    import fragsim
    if sys.flags.hash_randomization:
        raise RuntimeError("string hashing is randomized: run with PYTHONHASHSEED=0 (main() does this itself)")
    nv, torch = load_mmasim()
    mc = _mma_cases()
    f = fragsim.lookup(form)
    fa, fb, fc, fd = (f.fmt(x) for x in "ABCD")
    # one stream per form, independent of the order forms are generated in
    rng = np.random.default_rng([seed, zlib.crc32(form.encode())])
    classes = rng.integers(0, len(mc.CLASSES), (cases, 3)).astype(np.uint8)
    scenario = rng.integers(0, len(mc.SCENARIOS), cases).astype(np.uint8)
    case_seed = rng.integers(0, 2**32, cases, dtype=np.uint64).astype(np.uint32)
    sims = [nv.MMA(name, form.replace(".row.col", "")) for name in ARCHS.values()]
    M, N, K = f.shape
    a = np.zeros((cases, M, K), fa.dtype)
    b = np.zeros((cases, K, N), fb.dtype)
    c = np.zeros((cases, M, N), fc.dtype)
    d = np.zeros((cases, len(sims), M, N), fd.dtype)
    for i in range(cases):
        cls = tuple(mc.CLASSES[j] for j in classes[i])
        a[i], b[i], c[i] = mc.matrices(form, cls, int(case_seed[i]), mc.SCENARIOS[scenario[i]])
        ta, tb, tc = to_torch(torch, a[i], fa), to_torch(torch, b[i], fb), to_torch(torch, c[i], fc)
        for j, sim in enumerate(sims):
            d[i, j] = from_torch(torch, sim(ta, tb, tc), fd)
    meta = {"form": form, "archs": ARCHS, "cases": cases, "seed": seed,
            "generator": f"MMA-Sim (PyPI mmasim {MMASIM_VERSION}), mmasim.nv_ptx.MMA(arch, form)",
            "mmasim": MMASIM_VERSION, "torch": torch.__version__, "numpy": np.__version__,
            "python": sys.version.split()[0], "pythonhashseed": 0,
            "inputs": "tests/mma_cases.py: matrices(form, classes, case_seed, scenario)",
            "command": f"python -m fragsim.gpu_check.mmasim_corpus tests/data/mmasim --cases {cases} --seed {seed}"}
    return {"meta": meta, "a": a, "b": b, "c": c, "d": d, "classes": classes, "scenario": scenario,
            "case_seed": case_seed, "class_names": np.array(mc.CLASSES), "scenario_names": np.array(mc.SCENARIOS)}


def save(directory: str, corpus: dict) -> str:
    path = os.path.join(directory, file_name(corpus["meta"]["form"]))
    return record.save(path, "mmasim", corpus["meta"], {k: v for k, v in corpus.items() if k != "meta"})


def load(path: str) -> dict:
    """A corpus file as a dict of arrays, ``meta`` parsed, names as lists of str."""
    meta, arrays = record.load(path, ("mmasim",))
    out: dict = {**arrays, "meta": meta}
    for k in ("class_names", "scenario_names"):
        out[k] = [str(s) for s in out[k]]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fragsim.gpu_check.mmasim_corpus", description=__doc__.split("\n\n")[0])
    p.add_argument("out_dir", metavar="OUT_DIR")
    p.add_argument("--cases", type=int, default=300, help="cases per form (default 300)")
    p.add_argument("--seed", type=int, default=2025, help="seed of the operand draws (default 2025)")
    args = p.parse_args(argv)
    if args.cases < 1:
        p.error(f"--cases must be >= 1, got {args.cases}")
    if sys.flags.hash_randomization:    # see generate(): the same command must draw the same operands
        argv = sys.argv[1:] if argv is None else list(argv)
        os.execve(sys.executable, [sys.executable, "-m", "fragsim.gpu_check.mmasim_corpus", *argv],
                  dict(os.environ, PYTHONHASHSEED="0"))
    import fragsim
    try:
        load_mmasim()
        _mma_cases()
    except (RuntimeError, ImportError) as e:
        sys.stderr.write(f"mmasim_corpus: {e}\n")
        return 2
    # the float forms: MMA-Sim 2.1.1 has no integer forms, and its f64 model is not recorded here
    # (m8n8k4 .f16, four products per warp, is emulated in software on sm_80/sm_90: not this model)
    for form in [n for n, f in fragsim.FORMS.items() if f.fmt("A").name in ("f16", "bf16", "tf32") and f.groups == 1]:
        path = save(args.out_dir, generate(form, args.cases, args.seed))
        print(f"{path}: {args.cases} cases, {os.path.getsize(path):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
