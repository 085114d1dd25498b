"""fragsim gpu-check: run every modelled instruction on the GPU and compare bit for bit.

The model follows the device: sm_80 on compute capability 8.x, sm_90 on 9.x.  Exit code
0 when every case agrees, 1 on any mismatch, 2 when nothing could be checked (no CuPy,
no GPU, no NVRTC, an unsupported GPU, bad arguments).

``--family`` picks what is checked: the instruction table's mma forms and shared-memory ops (the
default, both), or one of the runners of their own -- movmatrix (gpu_check/movmatrix_check.py),
wgmma (gpu_check/wgmma_run.py) and whole GEMMs (gpu_check/gemm.py), which this module only wires in.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time

from fragsim.facts.arch import ARCHS, DEFAULT_ARCH
from .files import readable_dir, writable_dir, writable_file

NAME = "gpu-check"
HELP = ("cross-check fragsim against the GPU: run N random cases of every mma form and shared-memory "
        "instruction on the device and on fragsim, and compare bit for bit")

GROUPS = ("all", "mma", "shared", "ldmatrix", "stmatrix", "ld.shared", "st.shared", "cp.async")
# --family: what each checks, and the meaning of --cases there
FAMILIES = {
    "mma": "the mma.sync forms of the instruction table",
    "shared": "ldmatrix, stmatrix, ld/st.shared and cp.async",
    "movmatrix": "movmatrix.sync.aligned.m8n8.trans.b16 (--cases: warps, default 1,000,000)",
    "wgmma": "every sm_90a wgmma family x swizzle x majorness, and the descriptor fuzz (needs nvcc and an "
             "sm_90 GPU; --cases: cases per family x swizzle x majorness, default 100,000)",
    "gemm": "whole mma.sync GEMMs of every form against fragsim.gemm (--cases: GEMMs per form, default 100)",
}
DEFAULT_CASES = {"mma": 100_000, "shared": 100_000, "movmatrix": 1_000_000, "wgmma": 100_000, "gemm": 100}
# the options each runner of its own understands (the table's pipeline takes them all)
OWN_OPTIONS = {
    "movmatrix": {"cases", "seed", "record", "keep", "replay", "quiet", "json", "json_file"},
    "wgmma": {"cases", "jobs", "record", "replay", "quiet", "json", "json_file"},
    "gemm": {"cases", "forms", "record", "record_only", "replay", "quiet", "json", "json_file"},
}


def add_arguments(p):
    p.add_argument("--family", choices=tuple(FAMILIES),
                   help="what to check (default: mma and shared): "
                        + "; ".join(f"{k}: {v}" for k, v in FAMILIES.items()))
    p.add_argument("--cases", type=int, default=None, metavar="N",
                   help="cases per form / address sets per shared-memory variant (default 100,000; "
                        "see --family for the others)")
    p.add_argument("--forms", nargs="+", metavar="OP",
                   help="what to check: mma forms (m16n8k16.row.col.f32.f16.f16.f32 ...), shared ops "
                        f"(ldmatrix.x4.trans, st.shared.v2.b32, cp.async.cg.16 ...) or groups ({', '.join(GROUPS)}); "
                        "default all the device has; with --family gemm: forms whose name contains one of these")
    p.add_argument("--record", metavar="DIR", help="write what the hardware said as compressed corpora into DIR "
                   "(movmatrix: DIR/movmatrix.trans.npz; wgmma: the run's summary.json, fuzz.npz, corpus_*.npz; "
                   "gemm: DIR/gemm.json)")
    p.add_argument("--record-cases", type=int, default=None, metavar="K",
                   help="cases per op kept in the corpus (default 20,000; mismatching cases always)")
    p.add_argument("--keep", type=int, metavar="N",
                   help="with --record: shrink each recorded corpus to its probe cases, the cases that mismatched "
                        "and N others drawn evenly across the input classes (seeded by --seed); the rule is "
                        "written into the corpus's metadata; movmatrix: the first N cases (default 2,000)")
    p.add_argument("--record-only", action="store_true",
                   help="run on the GPU and record, without comparing to fragsim")
    p.add_argument("--probes", action="store_true",
                   help="also run the named probe cases (open questions of the arithmetic reference) "
                        "and the overlapping-store probes, and print what the hardware gave")
    p.add_argument("--seed", type=int, default=0, help="seed of the input generators (default 0)")
    p.add_argument("--chunk", type=int, default=None, metavar="N", help="cases per launch (default 65536)")
    p.add_argument("--jobs", type=int, default=None, metavar="J",
                   help="worker processes for input generation and per-warp models (default: half the cores, <= 8)")
    p.add_argument("--details", type=int, default=None, metavar="K",
                   help="mismatches shown in detail per op (default 5)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: fragsim stands in for the device (checks the pipeline, not the model)")
    p.add_argument("--arch", choices=tuple(ARCHS), default=DEFAULT_ARCH,
                   help="model for --dry-run (on a GPU the device decides)")
    p.add_argument("--replay", metavar="DIR",
                   help="no GPU: take inputs and hardware outputs from the corpora recorded in DIR (gemm: the "
                        "recording's .json file, e.g. tests/data/gemm/gemm_h100.json)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--json-file", metavar="PATH", help="also write the JSON report to PATH")


def _select(ops_wanted, available):
    from fragsim.gpu_check import kernels as K
    if not ops_wanted:
        return list(available)
    out = []
    for w in ops_wanted:
        wl = w.lower()
        if wl in GROUPS:
            for o in available:
                kind = K.kernel_for(o).kind
                hit = (wl == "all" or (wl == "mma" and kind == "mma") or (wl == "shared" and kind != "mma")
                       or o.startswith(wl))
                if hit and o not in out:
                    out.append(o)
            continue
        op = K.kernel_for(w).op          # ValueError with the table's own message if unknown
        if op not in available:
            raise ValueError(f"{w}: not available here (the device or the corpus lacks it); "
                             f"available: {', '.join(available)}")
        if op not in out:
            out.append(op)
    return out


def _shrink_recorded(path, args, arch, pool, mismatched):
    """Rewrite one recorded corpus as its --keep subset; cases that mismatched stay (found again
    by running the model on the recorded cases, only when the check saw any)."""
    import numpy as np

    from fragsim.gpu_check import bulk, corpus

    c = corpus.load(path)
    always = None
    if mismatched:
        inp = c.inputs()
        always = np.flatnonzero(bulk.mismatching(c.outputs(), bulk.model_outputs(c.op, inp, arch, pool)))
    command = (f"fragsim gpu-check --record DIR --record-cases {args.record_cases} --keep {args.keep} "
               f"--seed {args.seed}" + (" --probes" if args.probes else ""))
    corpus.write(os.path.dirname(path), corpus.shrink(c, args.keep, seed=args.seed, always=always, command=command))


def _header(info, arch) -> str:
    return (f"device: {info['device']}  (compute capability {info.get('cc', '-')})\n"
            f"model:  {arch}\n"
            f"driver: {info.get('driver', '-')}   CUDA runtime {info.get('cuda_runtime', '-')}   "
            f"driver API {info.get('cuda_driver_api', '-')}   NVRTC {info.get('nvrtc', '-')}\n"
            f"date:   {info.get('date', '-')}")


def _table(results) -> str:
    w = max([len(r.ptx) for r in results] + [20])
    lines = [f"{'instruction':<{w}}  {'cases':>10}  {'mismatches':>10}  {'seconds':>8}  "
             f"{'(inputs / device / fragsim)':>27}  note", "-" * (w + 76)]
    for r in results:
        mm = f"{r.mismatches:,}" if r.compared else "-"
        split = f"{r.t_generate:.1f} / {r.t_device:.1f} / {r.t_model:.1f}"
        lines.append(f"{r.ptx:<{w}}  {r.cases:>10,}  {mm:>10}  {r.seconds:>8.1f}  {split:>27}  {r.note}")
    return "\n".join(lines)


def _one_family_options(args):
    """Refuse, in one line, an option the family's runner does not take."""
    allowed = OWN_OPTIONS[args.family]
    defaults = {"arch": DEFAULT_ARCH, "seed": 0}
    for name, value in sorted(vars(args).items()):
        if name.startswith("_") or name in ("command", "family") or name in allowed:
            continue
        if not (value is None or value is False or (name in defaults and value == defaults[name])):
            raise ValueError(f"--{name.replace('_', '-')} does not apply to --family {args.family} "
                             f"(it takes {', '.join('--' + o.replace('_', '-') for o in sorted(allowed))})")


def run(args) -> int:
    family = getattr(args, "family", None)
    if args.cases is None:
        args.cases = DEFAULT_CASES[family or "mma"]
    if family in OWN_OPTIONS:
        _one_family_options(args)
        return _run_own(args)
    args.chunk = 1 << 16 if args.chunk is None else args.chunk
    args.details = 5 if args.details is None else args.details
    args.record_cases = 20_000 if args.record_cases is None else args.record_cases
    return _run_table(args, family)


def _run_table(args, family) -> int:
    from fragsim.gpu_check import bulk
    from fragsim.gpu_check.runner import GpuUnavailable

    for option, value, least in (("--cases", args.cases, 0), ("--chunk", args.chunk, 1), ("--seed", args.seed, 0),
                                 ("--details", args.details, 0), ("--record-cases", args.record_cases, 0),
                                 ("--jobs", 1 if args.jobs is None else args.jobs, 1)):
        if value < least:
            raise ValueError(f"{option} must be >= {least}, got {value}")
    if args.dry_run and args.replay:
        raise ValueError("--dry-run and --replay exclude each other")
    if args.record_only and not args.record:
        raise ValueError("--record-only needs --record DIR")
    if args.keep is not None and not args.record:
        raise ValueError("--keep needs --record DIR")
    if args.keep is not None and args.keep < 0:
        raise ValueError(f"--keep must be >= 0, got {args.keep}")
    # files before the run, which can take hours
    if args.replay:
        readable_dir(args.replay, "--replay", "a folder of recorded corpora (*.npz)")
    if args.record:
        writable_dir(args.record, "--record")
    if args.json_file:
        writable_file(args.json_file, "--json-file")
    jobs = bulk.default_jobs() if args.jobs is None else args.jobs
    pool = None
    try:
        if args.replay:
            backend = bulk.ReplayBackend(args.replay)
        elif args.dry_run:
            pool = bulk.make_pool(jobs)
            backend = bulk.ModelBackend(args.arch, pool)
        else:
            try:
                backend = bulk.GpuBackend()
            except GpuUnavailable as e:
                sys.stderr.write(f"fragsim gpu-check: {e}\n")
                return 2
        ops = _select(args.forms or ([family] if family else None), backend.available_ops())
        if family:
            from fragsim.gpu_check import kernels as K
            outside = [o for o in ops if (K.kernel_for(o).kind == "mma") != (family == "mma")]
            if outside:
                raise ValueError(f"--forms {outside[0]}: not of --family {family}")
        if pool is None and jobs > 1 and not args.replay:
            pool = bulk.make_pool(jobs)
        info = dict(backend.info, arch=backend.arch)
        recorder = bulk.Recorder(args.record, info, args.record_cases) if args.record else None
        progress = bulk.Progress(quiet=args.quiet or args.json)
        if not args.json:
            print(_header(info, backend.arch), flush=True)
        t0 = time.time()
        results, probes, overlaps = [], [], []
        for op in ops:
            if args.probes and not args.replay:
                probes += bulk.run_probes(backend, op, record_only=args.record_only, recorder=recorder)
                if not args.record_only:
                    overlaps += bulk.run_overlap_probes(backend, op, args.seed)
            r = bulk.check_op(backend, op, args.cases, seed=args.seed, chunk=args.chunk, pool=pool,
                              recorder=recorder, record_only=args.record_only, details=args.details,
                              progress=progress)
            results.append(r)
            if recorder is not None:
                path = recorder.flush(op, {"seed": args.seed, "generator": "fragsim.gpu_check.generate"})
                if path and args.keep is not None:
                    _shrink_recorded(path, args, backend.arch, pool, mismatched=r.mismatches > 0)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)

    total_bad = sum(r.mismatches for r in results)
    uncompared = [r for r in results if not r.compared]
    probe_bad = [p for p in probes if p.agrees is False]
    report = {"device": info["device"], "cc": info.get("cc"), "arch": backend.arch,
              "driver": info.get("driver"), "cuda_runtime": info.get("cuda_runtime"),
              "cuda_driver_api": info.get("cuda_driver_api"), "nvrtc": info.get("nvrtc"),
              "date": info.get("date"), "seconds": round(time.time() - t0, 1),
              "results": [r.json() for r in results],
              "probes": [p.json() for p in probes], "overlapping_stores": overlaps,
              "recorded": recorder.paths if recorder else [],
              "mismatches": total_bad + len(probe_bad)}
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(report, f, indent=1)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print()
        print(_table(results))
        if probes:
            print("\nprobes (one dot product repeated in all outputs; D[0,0] shown):")
            for p in probes:
                extra = "" if p.agrees is None else f"  fragsim {p.model} {'ok' if p.agrees else 'MISMATCH'}"
                flag = "" if p.uniform else "  (outputs differ across the tile!)"
                print(f"  {p.op:<36} {p.name:<70} {p.got}{extra}{flag}")
        if overlaps:
            print("\noverlapping stores (undefined in PTX; fragsim follows the order the H200 showed):")
            for o in overlaps:
                lanes = f"  winning lanes {o['winning_lanes']}" if "winning_lanes" in o else ""
                print(f"  {o['op']:<22} {o['probe']:<32} fragsim order "
                      f"{'agrees' if o['fragsim_order_agrees'] else 'differs'}{lanes}")
        for r in results:
            if r.first:
                print(f"\nfirst mismatches of {r.ptx}:")
                for d in r.first:
                    print(bulk.format_detail(d))
        if recorder is not None and recorder.paths:
            print(f"\nrecorded {len(recorder.paths)} corpus file(s) under {args.record}")
        cases = sum(r.cases for r in results)
        print(f"\n{cases:,} cases, {total_bad:,} mismatches"
              + (f", {len(probe_bad)} probe mismatches" if probe_bad else "")
              + (f"; {len(uncompared)} op(s) not compared" if uncompared else "")
              + f"  ({time.time() - t0:.1f} s)")
    return 1 if (total_bad or probe_bad) else 0


# ------------------------------------------------------------------------------------------------
# the runners of their own: movmatrix, wgmma, gemm

def _need_gpu(family):
    """CuPy and a GPU (and for wgmma nvcc and compute capability 9.0), else GpuUnavailable in one line."""
    from fragsim.gpu_check.runner import GpuUnavailable, device_info, import_cupy

    info = device_info(import_cupy())
    if family == "wgmma":
        if info.get("cc_int") != 90:
            raise GpuUnavailable(f"wgmma needs an sm_90a GPU (H100/H200); {info['device']} is compute capability "
                                 f"{info.get('cc', '-')}")
        if shutil.which("nvcc") is None:
            raise GpuUnavailable("nvcc is not on PATH; the wgmma check compiles its kernels with nvcc for sm_90a")
    return info


def _run_own(args) -> int:
    from fragsim.gpu_check.runner import GpuUnavailable

    family = args.family
    if args.cases < 0:
        raise ValueError(f"--cases must be >= 0, got {args.cases}")
    if args.keep is not None and args.keep < 0:
        raise ValueError(f"--keep must be >= 0, got {args.keep}")
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be >= 1, got {args.jobs}")
    if args.replay and args.record:
        raise ValueError("--replay and --record exclude each other")
    if args.record_only and not args.record:
        raise ValueError("--record-only needs --record DIR")
    if args.replay:
        if family == "gemm":
            if not os.path.isfile(args.replay):
                problem = "is a folder" if os.path.isdir(args.replay) else "no such file"
                raise ValueError(f"--replay {args.replay}: {problem}; expected the GEMM recording's .json file "
                                 "(e.g. tests/data/gemm/gemm_h100.json)")
        else:
            readable_dir(args.replay, "--replay", "a folder of recorded corpora (*.npz)")
    if args.record:
        writable_dir(args.record, "--record")
    if args.json_file:
        writable_file(args.json_file, "--json-file")
    t0 = time.time()
    say = (lambda *a, **k: None) if (args.quiet or args.json) else print
    try:
        if args.replay:
            report = {"replay": args.replay} | _REPLAY[family](args, say)
        else:
            info = _need_gpu(family)
            report = {"device": info["device"], "cc": info.get("cc")} | _RECORD[family](args, say)
    except GpuUnavailable as e:
        sys.stderr.write(f"fragsim gpu-check: {e}\n")
        return 2
    report = {"family": family} | report | {"seconds": round(time.time() - t0, 1)}
    if args.json_file:
        with open(args.json_file, "w") as f:
            json.dump(report, f, indent=1)
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        compared = "" if report.get("compared", True) else " (recorded, not compared)"
        print(f"{family}: {report['cases']:,} cases, {report['mismatches']:,} mismatches{compared}  "
              f"({report['seconds']:.1f} s)")
    return 1 if report["mismatches"] else 0


def _movmatrix_gpu(args, say):
    from fragsim.gpu_check import movmatrix_check

    argv = ["--cases", str(args.cases), "--seed", str(args.seed)]
    if args.record:
        argv += ["--record", args.record] + ([] if args.keep is None else ["--keep", str(args.keep)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = movmatrix_check.main(argv)
    say(out.getvalue(), end="")
    # the runner prints "movmatrix.trans: N cases, B mismatches (device)" and returns 1 when B > 0
    bad = re.search(r"([\d,]+) mismatches", out.getvalue())
    return {"cases": args.cases, "mismatches": int(bad.group(1).replace(",", "")) if bad else rc}


def _movmatrix_replay(args, say):
    import numpy as np

    import fragsim

    path = os.path.join(args.replay, "movmatrix.trans.npz")
    if not os.path.isfile(path):
        raise ValueError(f"--replay {args.replay}: no movmatrix.trans.npz there; expected the folder "
                         "--family movmatrix --record wrote")
    z = np.load(path)
    a, d = z["a"][: args.cases], z["d"][: args.cases]
    bad = int((fragsim.movmatrix(a) != d).reshape(len(a), -1).any(axis=1).sum())
    return {"cases": len(a), "mismatches": bad}


def _wgmma_gpu(args, say):
    from fragsim.gpu_check import wgmma_run

    out = args.record or tempfile.mkdtemp(prefix="fragsim_wgmma_")
    argv = ["--out", out, "--scale", repr(args.cases / 100_000)]
    if args.jobs is not None:
        argv += ["--workers", str(args.jobs)]
    if args.record:
        argv.append("--sass")
    log = io.StringIO()
    with contextlib.redirect_stdout(log if (args.quiet or args.json) else sys.stdout):
        wgmma_run.main(argv)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    if not args.record:
        shutil.rmtree(out, ignore_errors=True)
    combos = {k: v for k, v in summary.items() if not k.startswith("_")}
    for e in summary["_errors"]:
        say(f"job failed: {e}")
    return {"cases": sum(v["cases"] for v in combos.values()),
            "mismatches": sum(v["mismatch_cases"] for v in combos.values()) + len(summary["_errors"]),
            "failed_jobs": len(summary["_errors"]),
            "per_family_swizzle_major": {k: [v["cases"], v["mismatch_cases"]] for k, v in combos.items()}}


def _wgmma_replay(args, say):
    import numpy as np

    from fragsim.gpu_check.wgmma_cases import model
    from fragsim.gpu_check.wgmma_corpus import load

    names = ("f16_bf16", "tf32", "fp8", "int8")
    paths = [os.path.join(args.replay, f"{n}.npz") for n in names if os.path.isfile(os.path.join(args.replay, f"{n}.npz"))]
    if not paths:
        raise ValueError(f"--replay {args.replay}: no wgmma corpora there; expected {', '.join(n + '.npz' for n in names)} "
                         "(gpu_check/wgmma_corpus.py's output, e.g. tests/data/wgmma)")
    cases = bad = 0
    for path in paths:
        for v, sw, major, inp, d in load(path)[: args.cases]:
            cases += 1
            if not np.array_equal(model(v, inp), d):
                bad += 1
                say(f"mismatch: {v.name} swizzle {sw} {major}-major ({os.path.basename(path)})")
    return {"cases": cases, "mismatches": bad}


def _gemm_forms(args, names):
    keep = [n for n in names if not args.forms or any(k in n for k in args.forms)]
    if not keep:
        raise ValueError(f"--forms {' '.join(args.forms)}: no GEMM form's name contains any of these")
    return keep


def _gemm_gpu(args, say):
    from fragsim.gpu_check import gemm as G
    from fragsim.instructions import FORMS

    path = os.path.join(args.record or tempfile.mkdtemp(prefix="fragsim_gemm_"), "gemm.json")
    rec = G.record(path, args.cases, _gemm_forms(args, list(FORMS)), log=say)
    n = sum(len(v) for v in rec["forms"].values())
    if args.record_only:
        return {"cases": n, "mismatches": 0, "compared": False, "recorded": path}
    bad = G.replay(rec)
    for line in bad:
        say(line)
    if not args.record:
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    return {"cases": n, "mismatches": len(bad), "mismatching": bad} | ({"recorded": path} if args.record else {})


def _gemm_replay(args, say):
    from fragsim.gpu_check import gemm as G

    from . import one_line

    try:
        with open(args.replay) as f:
            rec = json.load(f)
        forms = rec["forms"]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"--replay {args.replay}: not a GEMM recording ({one_line(e)}); expected the .json "
                         "python -m fragsim.gpu_check.gemm record wrote") from None
    cases = [(name, r[0]) for name in _gemm_forms(args, sorted(forms)) for r in forms[name][: args.cases]]
    bad = G.replay(rec, cases)
    for line in bad:
        say(line)
    return {"cases": len(cases), "mismatches": len(bad), "mismatching": bad}


_RECORD = {"movmatrix": _movmatrix_gpu, "wgmma": _wgmma_gpu, "gemm": _gemm_gpu}
_REPLAY = {"movmatrix": _movmatrix_replay, "wgmma": _wgmma_replay, "gemm": _gemm_replay}
