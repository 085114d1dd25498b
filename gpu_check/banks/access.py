"""Measure whole access sets under Nsight Compute and compare with fragsim's totals.

    python -m fragsim.gpu_check.banks.access measure --out DIR [--random 3] [--seed 0]
    python -m fragsim.gpu_check.banks.access compare RECORD.npz

``measure`` does everything on a machine with a GPU, nvcc and ncu: for every case of
``access_kernels.CASES`` it runs the swizzle search (CPU) and picks the layouts to measure -- the
search's best and worst, the unswizzled tile and ``--random`` random candidates, each verified by
the round trip; builds the kernels with nvcc for the device, checks their SASS (cuobjdump: the
kernel holds exactly one LDSM/STSM/LDS/STS/LDGSTS per instruction slot), then profiles one launch
per (case, layout) with ``ncu --clock-control none --cache-control none``.  The launch process
(``launch DIR``, run under ncu) checks every register the reads return against the tagged tile.
The record (``DIR/access_ncu.npz``: cases, layouts, the source buffer's address, measured counters,
data check) is replayed on the CPU by ``tests/test_access_ncu_replay.py``.

Missing nvcc, ncu, CuPy or a GPU: one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

from typing import Any

import numpy as np

from . import access_kernels as K
from .. import compile, record
from .probe import NcuUnavailable, sass_functions
from .ncu import COUNTERS, INSTRUCTIONS, figures, metrics, ncu_version

METRICS = metrics()             # the table's counters and op_misc (ncu.py)
RECORD = "access_ncu.npz"
RECORD_KIND = "access-ncu"
DEFAULT_SMEM = 48 * 1024      # dynamic shared memory a launch gets without cudaFuncSetAttribute


# ---------------------------------------------------------------------------------------------
# choosing the layouts
# ---------------------------------------------------------------------------------------------

def choose_layouts(case: K.AccessCase, n_random: int, rng) -> list:
    """[(role, layout spec)]: the search's best, the unswizzled tile, the worst layout that passes the
    round trip, and ``n_random`` random candidates that pass it (each distinct)."""
    from fragsim.search.swizzle_search import swizzle_search

    s = case.access_set()
    r = swizzle_search(case.base_tile(), s.reads, s.writes, top=1)
    chosen = [("best", r.best), ("none", r.nothing)]
    for c in reversed(r.candidates):
        if r.verify(c):
            chosen.append(("worst", c))
            break
    pool = [c for c in r.candidates if all(c is not d for _, d in chosen)]
    for i in rng.permutation(len(pool)):
        if sum(role == "random" for role, _ in chosen) >= n_random:
            break
        if r.verify(pool[i]):
            chosen.append(("random", pool[i]))
    out, seen = [], set()
    for role, c in chosen:
        assert c.tile is not None, "the search's candidates carry their tiles"
        spec = K.layout_spec(c.tile)
        key = (spec["pitch"], tuple(spec["xor"]))
        if key not in seen:
            seen.add(key)
            out.append((role, spec))
    return out


# ---------------------------------------------------------------------------------------------
# build and check the kernels
# ---------------------------------------------------------------------------------------------

def build(out: str, arch: str) -> str:
    (cubin,) = compile.nvcc([(K.module_source(), os.path.join(out, "access_kernels.cubin"))], [f"-arch={arch}", "-cubin"],
                            "the access-set kernels", NcuUnavailable)
    return cubin


def check_sass(cubin: str, out: str) -> None:
    """Every kernel holds exactly the shared-memory instructions its access set issues per warp."""
    text = compile.sass(cubin, NcuUnavailable)
    with open(os.path.join(out, "access_kernels.sass"), "w") as f:
        f.write(text)
    funcs = sass_functions(text)
    shared = {"LDS", "STS", "LDSM", "STSM", "LDGSTS", "ATOMS"}
    for c in K.CASES:
        name = K.kernel_name(c)
        if name not in funcs:
            raise RuntimeError(f"SASS check: kernel {name} not in the cubin")
        got: dict = {}
        for o in funcs[name]:
            if o in shared:
                got[o] = got.get(o, 0) + 1
        want = K.expected_sass(c)
        if got != want:
            raise RuntimeError(f"SASS check: {name} holds {got}, its access set issues {want} per warp")


# ---------------------------------------------------------------------------------------------
# the launch process (runs under ncu)
# ---------------------------------------------------------------------------------------------

def launch(out: str) -> None:
    """Launch every (case, layout) of ``DIR/plan.json`` once; write ``DIR/launched.json``."""
    from ..runner import import_cupy

    cp = import_cupy()
    with open(os.path.join(out, "plan.json")) as f:
        plan = json.load(f)
    fns = compile.functions(os.path.join(out, "access_kernels.cubin"), [K.kernel_name(c) for c in K.CASES], cp)
    g = cp.zeros(K.GLOBAL_BYTES, dtype=cp.uint8)
    gbase = int(g.data.ptr)
    info = cp.zeros(4, dtype=cp.uint32)
    results = []
    for item in plan:
        case = K.AccessCase.from_json(item["case"])
        s = case.access_set()
        tile = K.layout_tile(case, item["layout"])
        t = K.tables(case, tile, s)
        g.set(t["G"])
        dev = {k: cp.asarray(t[k]) for k in ("ADDR", "MASK", "VALS", "SRC")}
        o = cp.zeros(t["out_words"], dtype=cp.uint32)
        fn = fns[K.kernel_name(case)]
        if tile.size > DEFAULT_SMEM:
            raise ValueError(f"{case.name} [{tile.layout_name}]: {tile.size} bytes of shared memory exceed the "
                             f"{DEFAULT_SMEM} a launch gets without opting in")
        fn((1,), (case.threads,), (dev["ADDR"], dev["MASK"], dev["VALS"], dev["SRC"], g, o, info),
           shared_mem=tile.size)
        cp.cuda.runtime.deviceSynchronize()
        got = cp.asnumpy(o).astype(np.int64)
        want = t["want"]
        bad = (want >= 0) & (got != want)
        results.append({"data_ok": not bool(bad.any()), "bad_words": int(bad.sum()),
                        "smem_base": int(cp.asnumpy(info)[0])})
    with open(os.path.join(out, "launched.json"), "w") as f:
        json.dump({"gbase": gbase, "launches": results}, f)


# ---------------------------------------------------------------------------------------------
# measure: plan, build, profile, record
# ---------------------------------------------------------------------------------------------

def _device() -> tuple[dict, str]:
    """The GPU and its nvcc architecture, from nvidia-smi (no CUDA context in this process: the
    kernels run in the process ncu starts)."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        raise NcuUnavailable("nvidia-smi not found: no NVIDIA driver here")
    r = subprocess.run([smi, "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0 or not r.stdout.strip():
        raise NcuUnavailable(f"nvidia-smi found no GPU: {r.stderr.strip()[:200]}")
    name, driver, cc = (x.strip() for x in r.stdout.strip().splitlines()[0].split(","))
    return {"device": name, "driver": driver, "cc": cc}, "sm_" + cc.replace(".", "")


def measure(out: str, n_random: int = 3, seed: int = 0, verbose: bool = True) -> str:
    from .ncu import available_metrics, find_ncu, parse_ncu_csv

    say = print if verbose else (lambda *a, **k: None)
    os.makedirs(out, exist_ok=True)
    ncu = find_ncu()
    info, arch = _device()
    t0 = time.time()
    rng = np.random.default_rng(seed)
    plan = []
    for c in K.CASES:
        for role, spec in choose_layouts(c, n_random, rng):
            plan.append({"case": c.to_json(), "name": c.name, "role": role, "layout": spec})
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump(plan, f)
    say(f"{len(plan)} launches over {len(K.CASES)} access sets, planned in {time.time() - t0:.1f}s")
    cubin = build(out, arch)
    check_sass(cubin, out)
    say("SASS check passed: every kernel holds one shared-memory instruction per slot of its access set")
    avail = available_metrics(ncu)
    names = [m for m in METRICS if avail is None or m.split(".")[0] in avail]
    log = os.path.join(out, "ncu.csv")
    cmd = [ncu, "--clock-control", "none", "--cache-control", "none", "--csv", "--print-units", "base",
           "-k", "regex:^fs_acc_", "--metrics", ",".join(names), "--log-file", log,
           sys.executable, "-m", "fragsim.gpu_check.banks.access", "launch", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = open(log).read() if os.path.exists(log) else ""
    rows = parse_ncu_csv(text)
    if r.returncode != 0 or len(rows) != len(plan):
        tail = (r.stderr + r.stdout + text).strip().splitlines()[-6:]
        raise NcuUnavailable(f"ncu profiled {len(rows)} of {len(plan)} launches (exit {r.returncode}): {' | '.join(tail)}")
    with open(os.path.join(out, "launched.json")) as f:
        launched = json.load(f)
    values: dict[str, list[int]] = {m: [] for m in names}
    for (kname, vals), item in zip(rows, plan):
        if not kname.startswith(K.kernel_name(K.AccessCase.from_json(item["case"]))):
            raise NcuUnavailable(f"ncu row {kname!r} does not match the planned launch of {item['name']}")
        for m in names:
            values[m].append(int(vals.get(m, -1)))
    meta = {"device": info, "ncu": ncu_version(ncu), "gbase": launched["gbase"],
            "date": time.strftime("%Y-%m-%d"), "seed": seed, "random": n_random}
    path = os.path.join(out, RECORD)
    save_record(path, meta, plan, launched["launches"], values)
    say(f"wrote {path} ({len(plan)} launches) in {time.time() - t0:.0f}s")
    compare(path, verbose=verbose)
    return path


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------

def save_record(path: str, meta: dict, plan: list, launches: list, values: dict) -> None:
    """A record of kind "access-ncu": per launch its case, layout role and layout, the data check,
    the shared window's base, and ``m_<metric>``: each metric's values (``meta["metrics"]`` lists them)."""
    record.save(path, RECORD_KIND, dict(meta, metrics=list(values)),
                {"case": np.array([p["case"] for p in plan]), "role": np.array([p["role"] for p in plan]),
                 "layout": np.array([json.dumps(p["layout"]) for p in plan]),
                 "data_ok": np.array([x["data_ok"] for x in launches]),
                 "bad_words": np.array([x["bad_words"] for x in launches]),
                 "smem_base": np.array([x["smem_base"] for x in launches], np.int64),
                 **{f"m_{k}": np.asarray(v, np.int64) for k, v in values.items()}})


def load_record(path: str) -> dict:
    meta, arrays = record.load(path, (RECORD_KIND,))
    rec: dict[str, Any] = {**arrays, "meta": meta}
    rec["metrics"] = {k[2:]: rec.pop(k) for k in list(rec) if k.startswith("m_")}
    return rec


def measured(rec: dict, i: int) -> dict:
    """Launch i's counters, in predict()'s shape (cp.async's wavefronts: ncu.figures)."""
    out: dict = {}
    for counter in COUNTERS:
        wf, bc = figures(rec["metrics"], counter)
        out[counter] = {"wavefronts": int(wf[i]), "conflicts": int(bc[i])}
    m = rec["metrics"]
    out["inst"] = {kind: int(m[name][i]) if name in m else -1 for kind, name in INSTRUCTIONS.items()}
    return out


def differences(rec: dict) -> list:
    """[(launch, case, layout, what, predicted, measured, exact)] wherever fragsim and the record differ."""
    out = []
    gbase = int(rec["meta"]["gbase"])
    for i in range(len(rec["case"])):
        case = K.AccessCase.from_json(str(rec["case"][i]))
        layout = json.loads(str(rec["layout"][i]))
        p, m = K.predict(case, layout, gbase), measured(rec, i)
        for kind in K.KINDS:
            for what in ("wavefronts", "conflicts"):
                if p[kind][what] != m[kind][what]:
                    out.append((i, case.name, layout["name"], f"{kind} {what}", p[kind][what], m[kind][what], p["exact"]))
        for kind in K.INST_KINDS:
            if p["inst"][kind] != m["inst"][kind]:
                out.append((i, case.name, layout["name"], f"{kind} instructions", p["inst"][kind], m["inst"][kind], True))
        if not bool(rec["data_ok"][i]):
            out.append((i, case.name, layout["name"], "data", "tagged elements", f"{int(rec['bad_words'][i])} wrong words", True))
    return out


def compare(path: str, verbose: bool = True) -> list:
    rec = load_record(path)
    diffs = differences(rec)
    if verbose:
        n = len(rec["case"])
        print(f"{path}: {n} launches on {rec['meta']['device'].get('device', '?')}; "
              f"{n - len({d[0] for d in diffs})} agree with fragsim on every counter and the data")
        for i, case, layout, what, p, m, exact in diffs:
            print(f"  launch {i} {case} [{layout}] {what}: fragsim {p}, measured {m}"
                  + ("" if exact else " (fragsim's cp.async figure is an estimate here)"))
    return diffs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fragsim.gpu_check.banks.access", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="plan, build, check and profile every access-set case; write the record")
    m.add_argument("--out", required=True, help="folder for the record and the build")
    m.add_argument("--random", type=int, default=3, help="random candidate layouts per access set")
    m.add_argument("--seed", type=int, default=0)
    la = sub.add_parser("launch", help="(run under ncu by measure) launch every planned (case, layout)")
    la.add_argument("out")
    c = sub.add_parser("compare", help="fragsim vs a record")
    c.add_argument("record")
    args = p.parse_args(argv)
    try:
        if args.cmd == "measure":
            measure(args.out, args.random, args.seed)
        elif args.cmd == "launch":
            launch(args.out)
        else:
            compare(args.record)
    except NcuUnavailable as e:
        sys.stderr.write(f"access_ncu: {e}\n")
        return 2
    except Exception as e:  # GpuUnavailable and friends: one line
        if type(e).__name__ != "GpuUnavailable":
            raise
        sys.stderr.write(f"access_ncu: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
