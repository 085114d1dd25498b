"""The wgmma family: the wgmma cross-check on an sm_90a GPU (``fragsim gpu-check --family wgmma``).

``run`` compiles every kernel the plan needs (nvcc, sm_90a; several files at once), dumps their SASS
mnemonics with --record, then runs the jobs in worker processes, each with its own CUDA context: a worker
generates its cases from the job's seed (gpu_check/wgmma/cases.py), runs them, computes fragsim's
D (and, for the fit jobs, D under every alternative parameter row of ``ALTERNATIVES``) and
returns counts.  Writes DIR/summary.json (cases and mismatches per family, swizzle, majorness;
mismatches per alternative), DIR/sass.txt, DIR/fuzz.npz (what the descriptor-fuzz cases read; compacted
for CI by gpu_check/wgmma/fuzz_corpus.py) and DIR/corpus_*.npz (a few recorded cases per family and
swizzle: inputs and the hardware's D).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from fragsim.instructions.wgmma import THREADS, lookup_wgmma
from fragsim.sim.wgmma import WGMMA_PARAMS, unpack_wg

from .. import compile, record, runner
from . import cases as W
from ..family import RunnerFamily, Say
from .kernels import NVCC_FLAGS, SMEM_BYTES, Variant, module_source

FAMILY_FORMS = {
    "f16/bf16": ("f32.f16.f16", "f16.f16.f16", "f32.bf16.bf16"),
    "tf32": ("f32.tf32.tf32",),
    "fp8": ("f32.e4m3.e4m3", "f32.e4m3.e5m2", "f32.e5m2.e4m3", "f32.e5m2.e5m2",
            "f16.e4m3.e4m3", "f16.e4m3.e5m2", "f16.e5m2.e4m3", "f16.e5m2.e5m2"),
    "int8": ("s32.s8.s8", "s32.s8.u8", "s32.u8.s8", "s32.u8.u8", "satfinite.s32.s8.s8", "satfinite.s32.s8.u8",
             "satfinite.s32.u8.s8", "satfinite.s32.u8.u8"),
}
K_OF_FAMILY = {"f16/bf16": 16, "tf32": 8, "fp8": 32, "int8": 32}
# cases per job by N (bigger N: fewer cases, the same order of outputs)
SIZES = {8: 5000, 16: 2500, 24: 2000, 64: 800, 256: 200}

_BASE = WGMMA_PARAMS["sm_90"]
# Alternative rows, each differing from the model in one value (the fit jobs count each one's mismatches).
ALTERNATIVES = {
    "f16/bf16": {"F=24": _BASE.with_(frac_bits_16bit=24), "F=26": _BASE.with_(frac_bits_16bit=26),
                 "F=27": _BASE.with_(frac_bits_16bit=27), "L=8": _BASE.with_(block_16bit=8),
                 "e_zero_f16=-20": _BASE.with_(e_zero_f16=-20), "round_f16=rz": _BASE.with_(round_f16="rz"),
                 "e_zero_f16=-22": _BASE.with_(e_zero_f16=-22), "e_zero_f32=-132": _BASE.with_(e_zero_f32=-132),
                 "e_zero_f32=-134": _BASE.with_(e_zero_f32=-134)},
    "tf32": {"F=24": _BASE.with_(frac_bits_tf32=24), "F=26": _BASE.with_(frac_bits_tf32=26),
             "L=4": _BASE.with_(block_tf32=4), "round_f32=rne": _BASE.with_(round_f32="rne")},
    "fp8": {"F=12": _BASE.with_(frac_bits_fp8=12), "F=14": _BASE.with_(frac_bits_fp8=14),
            "F=25": _BASE.with_(frac_bits_fp8=25), "L=16": _BASE.with_(block_fp8=16),
            "f32 grid e8m23": _BASE.with_(f32_man_bits_fp8=23), "f32 grid e8m14": _BASE.with_(f32_man_bits_fp8=14),
            "f32 grid e8m12": _BASE.with_(f32_man_bits_fp8=12), "round_f16=rz": _BASE.with_(round_f16="rz"),
            "e_zero_f16=-20": _BASE.with_(e_zero_f16=-20)},
    "int8": {"sat per 16": _BASE.with_(sat_block_int=16), "sat per 8": _BASE.with_(sat_block_int=8)},
}


def plan(scale: float = 1.0, per_combo: int = 100_000):
    """Jobs: (family, swizzle, major, Variant, kind, n, seed, fit, corpus)."""
    jobs = []
    seed = 1000
    for fam, forms in FAMILY_FORMS.items():
        majors = ("K", "MN") if fam == "f16/bf16" else ("K",)
        ns = (8, 16, 24, 64, 256) if fam == "int8" else (8, 16, 64, 256)
        for sw in W.SWIZZLES:
            for major in majors:
                total, i = 0, 0
                while total < per_combo * scale:
                    form = forms[i % len(forms)]
                    N = ns[(i // len(forms)) % len(ns)]
                    a_src = ("smem", "reg")[(i // 3) % 2]
                    sc = [(1, 1), (-1, 1), (1, -1), (-1, -1)][(i // 2) % 4] if fam != "int8" else (1, 1)
                    if N > 64:
                        sc = (1, 1)
                    t = major == "MN"
                    v = Variant(f"m64n{N}k{K_OF_FAMILY[fam]}.{form}", a_src, *sc, t and a_src == "smem", t).check()
                    n = max(20, int(SIZES[N] * scale))
                    fit = sw == "none" and major == "K" and N == 8
                    jobs.append((fam, sw, major, v, "arith", n, seed, fit, i < len(forms)))
                    seed += 1
                    total += n
                    i += 1
    jobs.append(("f16/bf16", "none", "K", Variant("m64n8k16.f16.f16.f16", "reg").check(), "ezero", 64, seed, True, True))
    seed += 1
    # descriptor fuzz: every swizzle and majorness, B and A
    for sw in W.SWIZZLES:
        for t in (False, True):
            for N in (8, 16, 64, 256):
                jobs.append(("fuzz_b", sw, "MN" if t else "K", Variant(f"m64n{N}k16.f32.f16.f16", "reg", 1, 1, False, t),
                             "fuzz_b", max(20, int(400 * scale)), seed, False, False))
                seed += 1
            jobs.append(("fuzz_a", sw, "MN" if t else "K", Variant("m64n16k16.f32.f16.f16", "smem", 1, 1, t, False),
                         "fuzz_a", max(20, int(800 * scale)), seed, False, False))
            seed += 1
    return jobs


def compile_all(variants, workdir: str, nfiles: int = 16) -> dict[str, str]:
    """Cubins (path per variant name), ``nfiles`` compiled at once."""
    variants = sorted(set(variants), key=lambda v: v.name)
    groups = [variants[i::nfiles] for i in range(nfiles) if variants[i::nfiles]]
    units = [(module_source(vs), os.path.join(workdir, f"wg{g}.cubin")) for g, vs in enumerate(groups)]
    compile.nvcc(units, NVCC_FLAGS, "the wgmma kernels for sm_90a")
    return {v.name: out for (_, out), vs in zip(units, groups) for v in vs}


_KERNELS: dict = {}


def _kernel(path: str, name: str) -> Any:
    if (path, name) not in _KERNELS:
        k = compile.functions(path, [name])[name]
        k.max_dynamic_shared_size_bytes = SMEM_BYTES
        _KERNELS[path, name] = k
    return _KERNELS[path, name]


def run_gpu(path, v, inp):
    cp = runner.import_cupy()
    n, S = inp["img"].shape
    f = lookup_wgmma(v.form)
    nd = f.nregs("D")
    d = cp.zeros((n, THREADS, nd), cp.uint32)
    base = cp.zeros(1, cp.uint32)
    args = (cp.asarray(inp["img"]), np.int32(S), cp.asarray(inp["desc"]), cp.asarray(inp["areg"]),
            cp.asarray(inp["creg"]), cp.asarray(inp["scale_d"].astype(np.int32)), d, base)
    _kernel(path, v.name)((n,), (THREADS,), args, shared_mem=SMEM_BYTES)
    cp.cuda.Device().synchronize()
    b = int(base.get()[0])
    if b % 1024:
        raise RuntimeError(f"shared window base {b:#x} is not 1024-byte aligned")
    return d.get(), b


def fuzz_ids(v, kind, d_regs):
    """The slot ids a fuzz case's D registers name (the D values are the f16 bits of the slots read):
    B ('fuzz_b'): (n, k, N); A ('fuzz_a'): (n, 64, k)."""
    vals = unpack_wg(lookup_wgmma(v.form), "D", d_regs).view(np.float32)      # (n, 64, N) f32 ids
    ids = vals.astype(np.float16).view(np.uint16)
    return ids[:, :16, :] if kind == "fuzz_b" else ids[:, :, :16]


def work(job, path):
    fam, sw, major, v, kind, n, seed, fit, corpus = job
    inp = W.batch(v, n, seed, swizzle=sw, kind=kind)
    hw, base = run_gpu(path, v, inp)
    res = {"family": fam, "swizzle": sw, "major": major, "variant": v.name, "form": v.form, "kind": kind, "n": n,
           "seed": seed, "base": base}
    if kind.startswith("fuzz"):
        ref = W.model(v, inp)
        res["mismatch_cases"] = int((ref != hw).reshape(n, -1).any(axis=1).sum())
        res["ids"] = fuzz_ids(v, kind, hw)
        res["desc"] = inp["desc"]
        return res
    ref = W.model(v, inp)
    bad = (ref != hw).reshape(n, -1).any(axis=1)
    res["mismatch_cases"] = int(bad.sum())
    res["mismatch_words"] = int((ref != hw).sum())
    res["first_bad"] = [int(i) for i in np.nonzero(bad)[0][:5]]
    if fit:
        alt = {}
        for label, prm in ALTERNATIVES[fam].items():
            r = W.model(v, inp, prm)
            b = (r != hw).reshape(n, -1).any(axis=1)
            alt[label] = [int(b.sum()), [int(i) for i in np.nonzero(b)[0][:3]]]
        res["alternatives"] = alt
    if corpus or bad.any():
        keep = np.unique(np.concatenate([np.arange(min(n, 3)), np.nonzero(bad)[0][:4]])) if corpus else \
            np.nonzero(bad)[0][:4]
        # alternatives' first breaking cases too, so that the tests can show each one fails a hardware case
        for lst in res.get("alternatives", {}).values():
            keep = np.union1d(keep, np.array(lst[1][:2], np.int64))
        res["keep"] = {k: x[keep] for k, x in inp.items()} | {"d": hw[keep], "index": keep}
    return res


_PATHS: dict = {}


def _init(paths):
    _PATHS.update(paths)


def _work(job):
    try:
        return work(job, _PATHS[job[3].name])
    except Exception as e:   # one line per failed job; the run goes on
        return {"error": f"{job[3].name} {job[1]} {job[4]}: {type(e).__name__}: {e}"[:500]}


def run(out: str, scale: float = 1.0, workers: int = 14, sass: bool = False, log: Say = print) -> dict[str, Any]:
    """Compile and run the plan at ``scale``; write the run's files into ``out``; the summary."""
    os.makedirs(out, exist_ok=True)
    t0 = time.time()
    jobs = plan(scale)
    tmp = tempfile.mkdtemp()
    paths = compile_all([j[3] for j in jobs], tmp)
    log(f"{len(jobs)} jobs, {len(set(j[3].name for j in jobs))} kernels compiled in {time.time() - t0:.0f} s", flush=True)
    if sass:
        with open(os.path.join(out, "sass.txt"), "w") as fh:
            for cub in sorted(set(paths.values())):
                text = compile.sass(cub)
                fh.write(f"== {os.path.basename(cub)}\n")
                fh.write("\n".join(ln.strip() for ln in text.splitlines() if "Function" in ln or "GMMA" in ln
                                   or "WARPGROUP" in ln or "WARPSYNC" in ln) + "\n")
    summary: dict = {}
    fuzz: dict = {}
    keep: dict = {}
    errors = []
    # spawned, not forked: the command has opened the device in this process, and a forked child
    # cannot use a CUDA context its parent initialized
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"), initializer=_init,
                             initargs=(paths,)) as ex:
        for r in ex.map(_work, jobs, chunksize=1):
            if "error" in r:
                errors.append(r["error"])
                log("ERROR", r["error"], flush=True)
                continue
            key = f"{r['family']} | {r['swizzle']} | {r['major']}"
            s = summary.setdefault(key, {"cases": 0, "mismatch_cases": 0, "n_values": [], "alternatives": {}})
            s["cases"] += r["n"]
            s["mismatch_cases"] += r["mismatch_cases"]
            N = lookup_wgmma(r["form"]).shape[1]
            if N not in s["n_values"]:
                s["n_values"].append(N)
            for lab, (cnt, _) in r.get("alternatives", {}).items():
                s["alternatives"][lab] = s["alternatives"].get(lab, 0) + cnt
            if r["mismatch_cases"]:
                s.setdefault("bad_jobs", []).append([r["variant"], r["seed"], r["mismatch_cases"], r.get("first_bad")])
            if r["kind"].startswith("fuzz"):
                fz = fuzz.setdefault(f"{r['kind']}_{r['swizzle']}_{r['major']}_{r['variant']}", {"ids": [], "desc": []})
                fz["ids"].append(r["ids"])
                fz["desc"].append(r["desc"])
            if "keep" in r:
                keep.setdefault(r["family"], []).append((r["variant"], r["swizzle"], r["major"], r["seed"], r["keep"]))
            log(f"{key} {r['variant']} n={r['n']} bad={r['mismatch_cases']} t={time.time() - t0:.0f}", flush=True)
    summary["_errors"] = errors
    summary["_seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(summary, fh, indent=1)
    record.save(os.path.join(out, "fuzz.npz"), "wgmma-fuzz-run", {"scale": scale},
                {f"{k}|{part}": np.concatenate(v[part]) for k, v in fuzz.items() for part in ("ids", "desc")})
    for fam, items in keep.items():
        arrs = {}
        for j, (var, sw, major, seed, kp) in enumerate(items):
            for name, x in kp.items():
                arrs[f"{j}|{var}|{sw}|{major}|{seed}|{name}"] = x
        record.save(os.path.join(out, f"corpus_{fam.replace('/', '_')}.npz"), "wgmma-run", {"family": fam}, arrs)
    return summary


#: the compacted corpora of a run (corpus.py), one per family of forms
CORPORA = ("f16_bf16", "tf32", "fp8", "int8")


class WgmmaFamily(RunnerFamily):
    name = "wgmma"
    summary = ("every sm_90a wgmma family x swizzle x majorness, and the descriptor fuzz (needs nvcc and an "
               "sm_90 GPU; --cases: cases per family x swizzle x majorness, default 100,000)")
    default_cases = 100_000
    options = frozenset({"cases", "jobs", "record", "replay", "quiet", "json", "json_file"})
    replay_expects = "a folder of recorded corpora (*.npz)"

    def device(self) -> dict[str, Any]:
        info = super().device()
        if info.get("cc_int") != 90:
            raise runner.GpuUnavailable(f"wgmma needs an sm_90a GPU (H100/H200); {info['device']} is compute "
                                        f"capability {info.get('cc', '-')}")
        if shutil.which("nvcc") is None:
            raise runner.GpuUnavailable("nvcc is not on PATH; the wgmma check compiles its kernels with nvcc for "
                                        "sm_90a")
        return info

    def source(self, cc: int) -> str:
        return module_source(sorted({j[3] for j in plan()}, key=lambda v: v.name))

    def compile(self, info: dict[str, Any]) -> Any:
        return compile_all([j[3] for j in plan()], tempfile.mkdtemp(prefix="fragsim_wgmma_"))

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        out = args.record or tempfile.mkdtemp(prefix="fragsim_wgmma_")
        summary = run(out, args.cases / 100_000, 14 if args.jobs is None else args.jobs, bool(args.record),
                      log=say)
        if not args.record:
            shutil.rmtree(out, ignore_errors=True)
        combos = {k: v for k, v in summary.items() if not k.startswith("_")}
        for e in summary["_errors"]:
            say(f"job failed: {e}")
        return {"cases": sum(v["cases"] for v in combos.values()),
                "mismatches": sum(v["mismatch_cases"] for v in combos.values()) + len(summary["_errors"]),
                "failed_jobs": len(summary["_errors"]),
                "per_family_swizzle_major": {k: [v["cases"], v["mismatch_cases"]] for k, v in combos.items()}}

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        from .corpus import load

        paths = [os.path.join(args.replay, f"{n}.npz") for n in CORPORA
                 if os.path.isfile(os.path.join(args.replay, f"{n}.npz"))]
        if not paths:
            raise ValueError(f"--replay {args.replay}: no wgmma corpora there; expected "
                             f"{', '.join(n + '.npz' for n in CORPORA)} (gpu_check/wgmma/corpus.py's output, "
                             "e.g. tests/data/wgmma)")
        cases = bad = 0
        for path in paths:
            for v, sw, major, inp, d in load(path)[: args.cases]:
                cases += 1
                if not np.array_equal(W.model(v, inp), d):
                    bad += 1
                    say(f"mismatch: {v.name} swizzle {sw} {major}-major ({os.path.basename(path)})")
        return {"cases": cases, "mismatches": bad}


FAMILIES = {"wgmma": WgmmaFamily()}
