"""The table's families: every mma.sync form (``mma``) and shared-memory instruction (``shared``) of
fragsim's instruction table, one generated kernel each, checked case by case through gpu_check/table/bulk.py
on the GPU, on recorded corpora (--replay) or, in a dry run, against fragsim itself.  ``BOTH`` is
the two together, what ``fragsim gpu-check`` runs without --family."""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from fragsim.instructions import parse_shared_op

from .. import kernels as K
from ..family import Report

#: --forms may name these groups besides single ops
GROUPS = ("all", "mma", "shared", "ldmatrix", "stmatrix", "ld.shared", "st.shared", "cp.async")


def select(ops_wanted: list[str] | None, available: list[str]) -> list[str]:
    """The ops --forms names (groups expanded), in order, each once; all of ``available`` by default."""
    if not ops_wanted:
        return list(available)
    out: list[str] = []
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


def _header(info: dict[str, Any], arch: str) -> str:
    return (f"device: {info['device']}  (compute capability {info.get('cc', '-')})\n"
            f"model:  {arch}\n"
            f"driver: {info.get('driver', '-')}   CUDA runtime {info.get('cuda_runtime', '-')}   "
            f"driver API {info.get('cuda_driver_api', '-')}   NVRTC {info.get('nvrtc', '-')}\n"
            f"date:   {info.get('date', '-')}")


def _shown(r) -> str:
    """A row's instruction: its PTX, and for cp.async the copy size, the operand that tells .4/.8/.16 apart."""
    if K.kernel_for(r.op).kind != "ldgsts":
        return r.ptx
    return f"{r.ptx} ..., {parse_shared_op(r.op).bytes_per_addr}"


def _table(results: list) -> str:
    w = max([len(_shown(r)) for r in results] + [20])
    lines = [f"{'instruction':<{w}}  {'cases':>10}  {'mismatches':>10}  {'seconds':>8}  "
             f"{'(inputs / device / fragsim)':>27}  note", "-" * (w + 76)]
    for r in results:
        mm = f"{r.mismatches:,}" if r.compared else "-"
        split = f"{r.t_generate:.1f} / {r.t_device:.1f} / {r.t_model:.1f}"
        lines.append(f"{_shown(r):<{w}}  {r.cases:>10,}  {mm:>10}  {r.seconds:>8.1f}  {split:>27}  {r.note}")
    return "\n".join(lines)


class TableFamily:
    """The instruction table's kernels of ``group``: the mma forms ("mma"), the shared ops ("shared"), or
    both (None)."""

    default_cases = 100_000
    options: frozenset[str] | None = None            # every option of the command
    replay_file = False
    replay_expects = "a folder of recorded corpora (*.npz)"

    def __init__(self, name: str, summary: str, group: str | None):
        self.name = name
        self.summary = summary
        self.group = group

    def covers(self, op: str) -> bool:
        return self.group is None or (K.kernel_for(op).kind == "mma") == (self.group == "mma")

    def ops(self, cc: int) -> list[str]:
        return [o for o in K.all_ops(cc) if self.covers(o)]

    def source(self, cc: int) -> str:
        return K.module_source(cc, self.ops(cc))

    def compile(self, info: dict[str, Any]) -> Any:
        from .bulk import GpuBackend
        return GpuBackend(self.ops(info["cc_int"]))

    def validate(self, args: argparse.Namespace) -> None:
        args.chunk = 1 << 16 if args.chunk is None else args.chunk
        args.details = 5 if args.details is None else args.details
        args.record_cases = 20_000 if args.record_cases is None else args.record_cases
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

    def run(self, args: argparse.Namespace) -> Report:
        """On the GPU (or, with --dry-run, fragsim standing in for it)."""
        return self._check(args)

    def replay(self, args: argparse.Namespace) -> Report:
        return self._check(args)

    def _check(self, args: argparse.Namespace) -> Report:
        from . import bulk

        jobs = bulk.default_jobs() if args.jobs is None else args.jobs
        pool = None
        backend: Any
        try:
            if args.replay:
                backend = bulk.ReplayBackend(args.replay)
            elif args.dry_run:
                pool = bulk.make_pool(jobs)
                backend = bulk.ModelBackend(args.arch, pool)
            else:
                backend = bulk.GpuBackend()
            ops = select(args.forms or ([self.group] if self.group else None), backend.available_ops())
            outside = [o for o in ops if not self.covers(o)]
            if outside:
                raise ValueError(f"--forms {outside[0]}: not of --family {self.name}")
            if pool is None and jobs > 1 and not args.replay:
                pool = bulk.make_pool(jobs)
            info = dict(backend.info, arch=backend.arch)
            recorder = bulk.Recorder(args.record, info, args.record_cases) if args.record else None
            progress = bulk.Progress(quiet=args.quiet)
            if not args.json:
                print(_header(info, backend.arch), flush=True)
            elif not args.quiet:          # the report is stdout's: the header goes with the progress
                print(_header(info, backend.arch), file=sys.stderr, flush=True)
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
                    path = recorder.flush(op, {"seed": args.seed, "generator": "fragsim.gpu_check.table.generate"})
                    if path and args.keep is not None:
                        _shrink_recorded(path, args, backend.arch, pool, mismatched=r.mismatches > 0)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)

        total_bad = sum(r.mismatches for r in results)
        probe_bad = [p for p in probes if p.agrees is False]
        report = {"device": info["device"], "cc": info.get("cc"), "arch": backend.arch,
                  "driver": info.get("driver"), "cuda_runtime": info.get("cuda_runtime"),
                  "cuda_driver_api": info.get("cuda_driver_api"), "nvrtc": info.get("nvrtc"),
                  "date": info.get("date"), "seconds": round(time.time() - t0, 1),
                  "results": [r.json() for r in results],
                  "probes": [p.json() for p in probes], "overlapping_stores": overlaps,
                  "recorded": recorder.paths if recorder else [],
                  "mismatches": total_bad + len(probe_bad)}
        return Report(report, self._text(report, results, probes, overlaps, args), total_bad + len(probe_bad))

    def _text(self, report: dict[str, Any], results: list, probes: list, overlaps: list,
              args: argparse.Namespace) -> str:
        from . import bulk

        lines = ["", _table(results)]
        if probes:
            lines.append("\nprobes (one dot product repeated in all outputs; D[0,0] shown):")
            for p in probes:
                extra = "" if p.agrees is None else f"  fragsim {p.model} {'ok' if p.agrees else 'MISMATCH'}"
                flag = "" if p.uniform else "  (outputs differ across the tile!)"
                lines.append(f"  {p.op:<36} {p.name:<70} {p.got}{extra}{flag}")
        if overlaps:
            lines.append("\noverlapping stores (undefined in PTX; fragsim follows the order the H200 showed):")
            for o in overlaps:
                lanes = f"  winning lanes {o['winning_lanes']}" if "winning_lanes" in o else ""
                lines.append(f"  {o['op']:<22} {o['probe']:<32} fragsim order "
                             f"{'agrees' if o['fragsim_order_agrees'] else 'differs'}{lanes}")
        for r in results:
            if r.first:
                lines.append(f"\nfirst mismatches of {r.ptx}:")
                lines += [bulk.format_detail(d) for d in r.first]
        if report["recorded"]:
            lines.append(f"\nrecorded {len(report['recorded'])} corpus file(s) under {args.record}")
        lines.append("\n" + self.summarize(report))
        return "\n".join(lines)

    def summarize(self, report: dict[str, Any]) -> str:
        results = report["results"]
        total_bad = sum(r["mismatches"] for r in results)
        probe_bad = sum(p["agrees"] is False for p in report["probes"])
        uncompared = sum(not r["compared"] for r in results)
        cases = sum(r["cases"] for r in results)
        return (f"{cases:,} cases, {total_bad:,} mismatches"
                + (f", {probe_bad} probe mismatches" if probe_bad else "")
                + (f"; {uncompared} op(s) not compared" if uncompared else "")
                + f"  ({report['seconds']:.1f} s)")


def _shrink_recorded(path: str, args: argparse.Namespace, arch: str, pool: Any, mismatched: bool) -> None:
    """Rewrite one recorded corpus as its --keep subset; cases that mismatched stay (found again
    by running the model on the recorded cases, only when the check saw any)."""
    import numpy as np

    from . import bulk
    from .. import corpus

    c = corpus.load(path)
    always = None
    if mismatched:
        inp = c.inputs()
        always = np.flatnonzero(bulk.mismatching(c.outputs(), bulk.model_outputs(c.op, inp, arch, pool)))
    command = (f"fragsim gpu-check --record DIR --record-cases {args.record_cases} --keep {args.keep} "
               f"--seed {args.seed}" + (" --probes" if args.probes else ""))
    corpus.write(os.path.dirname(path), corpus.shrink(c, args.keep, seed=args.seed, always=always, command=command))


MMA = TableFamily("mma", "the mma.sync forms of the instruction table", "mma")
SHARED = TableFamily("shared", "ldmatrix, stmatrix, ld/st.shared and cp.async", "shared")
BOTH = TableFamily("mma and shared", "the instruction table's mma forms and shared-memory ops", None)
FAMILIES = {"mma": MMA, "shared": SHARED}
