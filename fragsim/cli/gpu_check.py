"""fragsim gpu-check: run every modelled instruction on the GPU and compare bit for bit.

The model follows the device: sm_80 on compute capability 8.x, sm_90 on 9.x.  Exit code
0 when every case agrees, 1 on any mismatch, 2 when nothing could be checked (no CuPy,
no GPU, no NVRTC, an unsupported GPU, bad arguments).
"""

from __future__ import annotations

import json
import os
import sys
import time

from ..arch import ARCHS
from .files import readable_dir, writable_dir, writable_file

NAME = "gpu-check"
HELP = ("cross-check fragsim against the GPU: run N random cases of every mma form and shared-memory "
        "instruction on the device and on fragsim, and compare bit for bit")

GROUPS = ("all", "mma", "shared", "ldmatrix", "stmatrix", "ld.shared", "st.shared", "cp.async")


def add_arguments(p):
    p.add_argument("--cases", type=int, default=100_000, metavar="N",
                   help="cases per form / address sets per shared-memory variant (default 100,000)")
    p.add_argument("--forms", nargs="+", metavar="OP",
                   help="what to check: mma forms (m16n8k16.row.col.f32.f16.f16.f32 ...), shared ops "
                        f"(ldmatrix.x4.trans, st.shared.v2.b32, cp.async.cg.16 ...) or groups ({', '.join(GROUPS)}); "
                        "default all the device has")
    p.add_argument("--record", metavar="DIR", help="write what the hardware said as compressed corpora into DIR")
    p.add_argument("--record-cases", type=int, default=20_000, metavar="K",
                   help="cases per op kept in the corpus (default 20,000; mismatching cases always)")
    p.add_argument("--keep", type=int, metavar="N",
                   help="with --record: shrink each recorded corpus to its probe cases, the cases that mismatched "
                        "and N others drawn evenly across the input classes (seeded by --seed); the rule is "
                        "written into the corpus's metadata")
    p.add_argument("--record-only", action="store_true",
                   help="run on the GPU and record, without comparing to fragsim")
    p.add_argument("--probes", action="store_true",
                   help="also run the named probe cases (open questions of the arithmetic reference) "
                        "and the overlapping-store probes, and print what the hardware gave")
    p.add_argument("--seed", type=int, default=0, help="seed of the input generators (default 0)")
    p.add_argument("--chunk", type=int, default=1 << 16, metavar="N", help="cases per launch (default 65536)")
    p.add_argument("--jobs", type=int, default=None, metavar="J",
                   help="worker processes for input generation and per-warp models (default: half the cores, <= 8)")
    p.add_argument("--details", type=int, default=5, metavar="K", help="mismatches shown in detail per op (default 5)")
    p.add_argument("--dry-run", action="store_true",
                   help="no GPU: fragsim stands in for the device (checks the pipeline, not the model)")
    p.add_argument("--arch", choices=tuple(ARCHS), default="sm_90",
                   help="model for --dry-run (on a GPU the device decides)")
    p.add_argument("--replay", metavar="DIR",
                   help="no GPU: take inputs and hardware outputs from the corpora recorded in DIR")
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


def run(args) -> int:
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
        ops = _select(args.forms, backend.available_ops())
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
