"""One GPU-machine run for the integer and f64 mma forms (issue 13, first half).

    python docs/research/exact_mma/h100_run.py --out DIR [--cases 1000000] [--budget 420]

1. SASS: the generated kernels of every integer and f64 form, built for sm_90 (and sm_80) with
   nvcc, read back with cuobjdump: which instructions each form becomes.
2. Model choice: probes plus 4,000 random cases per form on the GPU, against every candidate
   setting of the open fields of the sm_90 row (sat_block_8bit / sat_block_4bit; f64_order,
   f64_fused, f64_subnormals, f64_nan_order); the candidate with no mismatch in any form of its
   family is kept (reported with every count).
3. Cross-check: probes plus ``--cases`` random cases per form against the chosen row (fewer when
   the time budget would run out: the counts are reported), recording the first 3,000 cases and
   up to 200 mismatching ones, shrunk to 400 plus probes and mismatches per form.
4. Timing of fragsim.mma per form (and two f16 forms for scale) on this machine's CPU (1 core
   and all cores).

Writes DIR/log.txt (via tee), report.json, sass.txt.gz, corpora_*.tar, bench.json.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

import fragsim
from fragsim.arch import ARCHS
from fragsim.gpu_check.table import bulk, generate as G
from fragsim.gpu_check import corpus, kernels as K

T0 = time.time()
NEW = [n for n, f in fragsim.FORMS.items() if f.fmt("A").name in ("s8", "u8", "s4", "u4", "b1", "f64")]


def say(*a):
    print(f"[{time.time() - T0:6.1f}s]", *a, flush=True)


def family(op):
    a = fragsim.lookup(op).fmt("A").name
    return {"s8": "int8", "u8": "int8", "s4": "int4", "u4": "int4"}.get(a, a)


# ---------------------------------------------------------------------------------------------

def sass(out):
    nvcc, tool = shutil.which("nvcc"), shutil.which("cuobjdump")
    res = {}
    text = io.StringIO()
    with tempfile.TemporaryDirectory() as d:
        for arch in ("sm_90", "sm_80"):
            cc = int(arch[3:])
            ops = [o for o in NEW if fragsim.lookup(o).min_cc <= cc]
            cu = os.path.join(d, f"k_{arch}.cu")
            open(cu, "w").write(K.module_source(cc, ops))
            cubin = os.path.join(d, f"k_{arch}.cubin")
            r = subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-o", cubin, cu], capture_output=True, text=True)
            if r.returncode:
                say(f"nvcc {arch} failed:", r.stderr[-3000:])
                res[arch] = {"error": r.stderr[-3000:]}
                continue
            s = subprocess.run([tool, "-sass", cubin], capture_output=True, text=True).stdout
            text.write(f"==== {arch}\n{s}\n")
            funcs, cur = {}, None
            for line in s.splitlines():
                m = re.match(r"\s*Function : (\S+)", line)
                if m:
                    cur = m.group(1)
                    funcs[cur] = []
                    continue
                m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)", line)
                if cur and m:
                    funcs[cur].append(m.group(2))
            per = {}
            for op in ops:
                k = K.kernel_for(op)
                opsq = funcs.get(k.name, [])
                mma = [o for o in opsq if "MMA" in o]
                per[op] = {"mma": mma, "n_instructions": len(opsq),
                           "other": sorted({o.split(".")[0] for o in opsq} - {o.split(".")[0] for o in mma})}
            res[arch] = per
            for op, v in per.items():
                say(f"SASS {arch} {op}: {len(v['mma'])} MMA: {' '.join(v['mma'])}  ({v['n_instructions']} instr)")
    with gzip.open(os.path.join(out, "sass.txt.gz"), "wt") as f:
        f.write(text.getvalue())
    return res


# ---------------------------------------------------------------------------------------------

def concat_inputs(parts):
    return corpus.concat(parts)


def candidates():
    base = ARCHS["sm_90"]
    out = {"int8": [], "int4": [], "f64": []}
    for b in (0, 8, 16, 32):
        out["int8"].append((f"sat_block_8bit={b}", {"sat_block_8bit": b}))
        out["int4"].append((f"sat_block_4bit={b}", {"sat_block_4bit": b}))
    for order in ("ascending", "descending"):
        for fused in (True, False):
            for sub in ("ieee", "ftz"):
                out["f64"].append((f"order={order} fused={fused} subnormals={sub}",
                                   {"f64_order": order, "f64_fused": fused, "f64_subnormals": sub}))
    for nan in ("abc", "acb", "bac", "cab", "cba", "canonical"):
        out["f64"].append((f"nan_order={nan}", {"f64_nan_order": nan}))
    return base, out


def choose(backend, ops, report):
    """Probes + 4,000 cases per form; mismatches per candidate; returns the chosen sm_90 row."""
    base, cands = candidates()
    rng = np.random.default_rng(1)
    data = {}
    for op in ops:
        inp = concat_inputs([G.probe_inputs(op), G.mma_inputs(op, 4000, rng)])
        data[op] = (inp, backend.run(op, inp))
    chosen = {}
    report["candidates"] = {}
    for fam, cl in cands.items():
        fam_ops = [o for o in ops if family(o) == fam and (fam == "f64" or "satfinite" in fragsim.lookup(o).modifiers)]
        if not fam_ops:
            continue
        rows = []
        for label, change in cl:
            arch = base.with_(**change)
            per = {}
            for op in fam_ops:
                inp, hw = data[op]
                bad = bulk.mismatching(hw, bulk.model_outputs(op, inp, arch))
                per[op] = int(bad.sum())
            rows.append((label, change, per))
            say(f"candidate {fam} {label}: {sum(per.values())} mismatching cases of {len(fam_ops)} forms x ~4,0xx",
                {k: v for k, v in per.items() if v})
        report["candidates"][fam] = [{"candidate": lab, "mismatches": per} for lab, _, per in rows]
        zero = [r for r in rows if sum(r[2].values()) == 0]
        pick = zero[0] if zero else min(rows, key=lambda r: sum(r[2].values()))
        chosen.update(pick[1])
        report.setdefault("chosen", {})[fam] = {"candidate": pick[0], "exact": bool(zero),
                                               "also_exact": [r[0] for r in zero[1:]]}
    # the rest of the forms under the chosen row (wrap forms, b1)
    arch = base.with_(**chosen)
    for op in ops:
        inp, hw = data[op]
        n = int(bulk.mismatching(hw, bulk.model_outputs(op, inp, arch)).sum())
        report.setdefault("choice_check", {})[op] = n
        if n:
            say(f"chosen row: {op}: {n} mismatching of {len(inp['tag'])}")
    say("chosen:", chosen)
    return arch


class CappedRecorder(bulk.Recorder):
    """The first ``max_cases`` cases and at most ``max_bad`` mismatching ones per op."""

    def __init__(self, *a, max_bad=200, **kw):
        super().__init__(*a, **kw)
        self.max_bad = max_bad
        self.bad_kept: dict[str, int] = {}

    def add(self, op, inp, hw, bad=None, force=False):
        if bad is not None and bad.any():
            room = self.max_bad - self.bad_kept.get(op, 0)
            idx = np.flatnonzero(bad)
            bad = bad.copy()
            bad[idx[max(room, 0):]] = False
            self.bad_kept[op] = self.bad_kept.get(op, 0) + min(idx.size, max(room, 0))
        super().add(op, inp, hw, bad, force)


def check(backend, ops, arch, args, report, pool):
    rec_dir = os.path.join(args.work, "recorded")
    final = os.path.join(args.work, "corpora")
    info = dict(backend.info, arch="sm_90")
    backend.arch = arch
    results = []
    spent_cases, spent_s = 0, 0.0
    for i, op in enumerate(ops):
        remaining = args.budget - (time.time() - T0)
        n = args.cases
        if spent_cases:
            rate = spent_s / spent_cases
            n = int(min(args.cases, max(20000, remaining / max(1, len(ops) - i) / rate)))
        rec = CappedRecorder(rec_dir, info, max_cases=3000, max_bad=200)
        probes = bulk.run_probes(backend, op, recorder=rec)
        t = time.time()
        r = bulk.check_op(backend, op, n, seed=args.seed, pool=pool, recorder=rec, details=3)
        spent_s += time.time() - t
        spent_cases += r.cases
        path = rec.flush(op, {"seed": args.seed, "generator": "fragsim.gpu_check.table.generate"})
        c = corpus.load(path)
        always = np.flatnonzero(bulk.mismatching(c.outputs(), bulk.model_outputs(c.op, c.inputs(), arch)))
        cmd = f"docs/research/exact_mma/h100_run.py --cases {args.cases} --seed {args.seed} (recorded 3,000 + probes)"
        corpus.write(final, corpus.shrink(c, 400, seed=args.seed, always=always, command=cmd))
        pbad = [p.name for p in probes if p.agrees is False]
        row = dict(r.json(), probes=len(probes), probe_mismatches=pbad, family=family(op))
        results.append(row)
        say(f"{op}: {r.cases:,} cases, {r.mismatches:,} mismatches, {len(probes)} probes ({len(pbad)} differ), "
            f"{r.seconds:.1f}s (gen {r.t_generate:.1f} / dev {r.t_device:.1f} / model {r.t_model:.1f})")
        for d in r.first[:2]:
            say("   ", bulk.format_detail(d).replace("\n", "\n    "))
        for p in probes:
            if p.agrees is False:
                say(f"    probe differs: {p.name}: hw {p.got} fragsim {p.model}")
    report["results"] = results
    # tar the corpora by family (<= 16 MiB each)
    for fam in ("int8", "int4", "b1f64"):
        with tarfile.open(os.path.join(args.out, f"corpora_{fam}.tar"), "w") as tf:
            for p in corpus.find(final):
                op = corpus.load(p).op
                f = family(op)
                if (f if f in ("int8", "int4") else "b1f64") == fam:
                    tf.add(p, arcname=os.path.basename(p))


def bench(ops, out):
    import numba
    rows = []
    rng = np.random.default_rng(0)
    threads = numba.get_num_threads()
    forms = ["m16n8k16.row.col.f16.f16.f16.f16", "m16n8k8.row.col.f16.f16.f16.f16"] + list(ops)
    for form in forms:
        f = fragsim.lookup(form)
        regs = [rng.integers(0, 2**32, (20000, 32, f.nregs(op)), dtype=np.uint64).astype(np.uint32) for op in "ABC"]
        row = {"form": form}
        for label, nt in (("us_1_core", 1), ("us_all_cores", threads)):
            numba.set_num_threads(nt)
            fragsim.mma(form, *regs)
            best = 1e9
            for _ in range(3):
                t = time.perf_counter()
                fragsim.mma(form, *regs)
                best = min(best, time.perf_counter() - t)
            row[label] = best / 20000 * 1e6
        rows.append(row)
        say(f"bench {form:45s} 1 core {row['us_1_core']:.3f} us  {threads} cores {row['us_all_cores']:.3f} us")
    numba.set_num_threads(threads)
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump({"cores": threads, "rows": rows}, f, indent=1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--work", default="/tmp/exact_mma")
    p.add_argument("--cases", type=int, default=1_000_000)
    p.add_argument("--seed", type=int, default=20261123)
    p.add_argument("--budget", type=float, default=400.0, help="seconds for everything up to the cross-check's end")
    p.add_argument("--dry-run", action="store_true", help="fragsim stands in for the GPU (a smoke test of this script)")
    p.add_argument("--forms", nargs="*", help="only these forms")
    p.add_argument("--no-sass", action="store_true", help="skip the SASS step")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    report: dict = {"forms": NEW}
    ops = [fragsim.lookup(o).name for o in args.forms] if args.forms else list(NEW)
    if args.dry_run:
        backend = bulk.ModelBackend("sm_90")
        backend.info.update(driver="dry", cuda_runtime="dry")
        return run_all(backend, ops, args, report)
    try:
        if not args.no_sass:
            report["sass"] = sass(args.out)
    except Exception as e:  # keep going: the GPU part does not need it
        say("SASS step failed:", repr(e))
    from fragsim.gpu_check.runner import GpuRunner
    try:
        GpuRunner(ops)
    except Exception as e:
        say("NVRTC build of all new forms failed:", repr(e)[:2000])
        ok = []
        for op in ops:
            try:
                GpuRunner([op])
                ok.append(op)
            except Exception as e2:
                say(f"  {op}: {repr(e2)[:500]}")
        report["build_failed"] = [o for o in ops if o not in ok]
        ops = ok
    return run_all(bulk.GpuBackend(ops), ops, args, report)


def run_all(backend, ops, args, report):
    report["device"] = backend.info
    say("device:", backend.info)
    arch = choose(backend, ops, report)
    report["arch_row"] = arch.row()
    pool = bulk.make_pool(bulk.default_jobs())
    try:
        check(backend, ops, arch, args, report, pool)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        with open(os.path.join(args.out, "report.json"), "w") as f:
            json.dump(report, f, indent=1, default=str)
    try:
        bench(ops, args.out)
    except Exception as e:
        say("bench failed:", repr(e))
    say("done")


if __name__ == "__main__":
    sys.exit(main())
