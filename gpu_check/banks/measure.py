"""Measure shared-memory wavefronts and bank conflicts with Nsight Compute, one instruction at a time.

A probe program (``probe.cu``, one kernel per shared-memory instruction) launches one
warp per address set; each launch runs exactly one ``LDSM``/``STSM``/``LDS``/``STS``/``LDGSTS``
(``cuobjdump -sass`` checks this before anything is measured).  ``ncu --clock-control none`` reads
the wavefront and bank-conflict counters of every launch; the address sets, masks and counters are
written to a compact ``.npz`` record that ``tests/test_banks_hw_replay.py`` replays against
``fragsim.bank_conflicts``.

The probe program is ``probe``, the address sets ``cases`` (and ``cp_async_cases``, the
cp.async families of the H100 study), the ncu invocation ``ncu``; this module holds the
records, the measurement run and the comparison.

    python -m fragsim.gpu_check.banks.measure measure --record DIR [--seed N] [--budget SECONDS] [--ops OP ...]
    python -m fragsim.gpu_check.banks.measure measure --record DIR --cp-family systematic|pairs|validate
        [--seed 0] [--cache-control all] [--max-cases N]   # cp.async only: cp_async_cases' families
    python -m fragsim.gpu_check.banks.measure compare RECORD.npz     # model vs a record, on any machine
    fragsim conflicts --ncu-measure --record DIR                  # the same, from the CLI

Nsight Compute missing, or unable to read the counters: one line on stderr and exit code 2.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from typing import Any

import numpy as np

from fragsim.instructions.shared_ops import parse_shared_op

from .. import compile, record
from .cases import LANE, cases_for, write_case_file
from .cp_async_cases import FAMILIES as CP_FAMILIES
from .probe import OPS, SMEM_BYTES, NcuUnavailable, build_probe, check_sass, kernel_name
from .ncu import SASS_WAVEFRONTS, available_metrics, figures, find_ncu, metrics, ncu_version, run_ncu

# What each launch reads: the table's counters and the shared-memory totals (ncu.metrics); ncu's
# SASS-instrumented estimate is slow to collect (measured in the first record only).  Those the device
# lacks are skipped.
METRICS = metrics(totals=True)
SASS_METRICS = (SASS_WAVEFRONTS,)
RECORD_KIND = "ncu-banks"


# ---------------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------------

def save_record(path: str, meta: dict, ops, labels, addrs, masks, srcs, values: dict) -> None:
    """A record of kind "ncu-banks": per launch its op (index into ``ops``), label, lane addresses, mask,
    cp.async source offsets, and ``m_<metric>``: each metric's values (``meta["metrics"]`` lists them)."""
    record.save(path, RECORD_KIND, dict(meta, metrics=list(values)),
                {"ops": np.array(OPS), "op": np.asarray(ops, np.int16), "label": np.array(labels),
                 "addrs": np.asarray(addrs, np.int32), "mask": np.asarray(masks, np.uint32),
                 "src": np.asarray(srcs, np.int32),
                 **{f"m_{k}": np.asarray(v, np.int32) for k, v in values.items()}})


# Records made before the probe printed its source buffer's address: the buffer followed the probe's
# 512-byte output buffer, at a 2 MiB-aligned allocation (the cp.async line-class hash fitted to the
# H100 two-line probes needs exactly this base, and it reproduces every such record).
UNRECORDED_SRC_BASE = 512


def load_record(path: str) -> dict:
    """A record, with ``src`` as absolute global addresses (int64): the recorded offsets into the
    probe's source buffer plus the buffer's address (``meta["src_base"]``)."""
    meta, arrays = record.load(path, (RECORD_KIND,))
    rec: dict[str, Any] = {**arrays, "meta": meta}
    if "src" not in rec:  # the first record: every cp.async lane copied from src + 16 * lane
        rec["src"] = np.broadcast_to(LANE.astype(np.int32) * 16, rec["addrs"].shape).copy()
    rec["src"] = rec["src"].astype(np.int64) + int(rec["meta"].get("src_base", UNRECORDED_SRC_BASE))
    rec["metrics"] = {k[2:]: rec.pop(k) for k in list(rec) if k.startswith("m_")}
    return rec


def measure(record_dir: str, seed: int = 1, n_random: int = 220, budget: float = 300.0,
            structured: bool = True, arch: str = "native", ops=OPS, verbose=True,
            cp_sources: bool = True, cp_weight: float = 3.0, sass: bool = False, cp_family: str | None = None,
            cache_control: str = "none", max_cases: int | None = None) -> str:
    """Build, check and run the probe under ncu; write ``record_dir/ncu_banks_<seed>.npz``.

    ``cp_family`` (a name in ``cp_async_cases.FAMILIES``) measures the cp.async ops only, on that
    family's cases (record ``ncu_banks_cp_async_<family>_<seed>.npz``); ``cache_control`` is ncu's
    ``--cache-control`` (``all`` flushes the caches before each launch; the name gains
    ``_cache_all``); ``max_cases`` keeps the first cases of each op.
    """
    if cp_family is not None and cp_family not in CP_FAMILIES:
        raise ValueError(f"cp_family {cp_family!r}: expected one of {', '.join(CP_FAMILIES)}")
    if cache_control not in ("none", "all"):
        raise ValueError(f"cache_control {cache_control!r}: expected 'none' or 'all'")
    if max_cases is not None and max_cases < 1:
        raise ValueError(f"max_cases {max_cases}: expected a positive number of cases per op")
    say = print if verbose else (lambda *a, **k: None)
    stem = f"cp_async_{cp_family}_{seed}" if cp_family else str(seed)
    stem += "_cache_all" if cache_control == "all" else ""
    ncu = find_ncu()
    os.makedirs(record_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="fragsim_ncu_banks_")
    t0 = time.time()
    exe = build_probe(work, arch)
    try:
        sass_text = compile.sass(exe, NcuUnavailable)
    except NcuUnavailable as e:
        say(f"warning: {e}; SASS not checked (the instruction counters still are)")
    else:
        check_sass(sass_text, OPS)
        with open(os.path.join(record_dir, f"probe_sass_{stem}.txt"), "w") as f:
            f.write(sass_text)
        say(f"SASS check passed: one shared instruction per kernel ({len(OPS)} kernels)")
    say(f"probe built in {time.time() - t0:.1f}s")
    avail = available_metrics(ncu)
    names = [m for m in METRICS + (SASS_METRICS if sass else ()) if avail is None or m.split(".")[0] in avail]
    if avail:
        with open(os.path.join(record_dir, "metrics_available.txt"), "w") as f:
            f.write("\n".join(sorted(n for n in avail if re.search(r"shared|ldgsts|bank|lsu|ldsm|stsm", n))))
    say(f"metrics ({len(names)}): {', '.join(names)}")
    skipped = [m for m in METRICS if m not in names]
    if skipped:
        say(f"not on this device: {', '.join(skipped)}")
    if cp_family:
        per_op = {op: CP_FAMILIES[cp_family](op, seed) for op in ops if parse_shared_op(op).kind == "ldgsts"}
    else:
        per_op = {op: cases_for(op, seed, n_random, structured, cp_sources) for op in ops}
    per_op = {op: cs[:max_cases] for op, cs in per_op.items() if cs}
    if not per_op:
        raise ValueError(f"ops {tuple(ops)}: no cases to measure (--cp-family needs cp.async ops)")
    ops = tuple(per_op)
    case_file = os.path.join(work, "cases.bin")
    write_case_file(case_file, per_op)
    groups: dict[str, list[str]] = {}
    for op in ops:
        groups.setdefault(parse_shared_op(op).kind, []).append(op)
    weight = {op: (cp_weight if parse_shared_op(op).kind == "ldgsts" else 1.0) for op in ops}
    unit = budget / sum(weight.values())
    rec_ops: list[int] = []
    labels: list[str] = []
    addrs: list = []
    masks: list[int] = []
    srcs: list = []
    values: dict[str, list[int]] = {m: [] for m in names}
    failures = []
    src_base = None
    for kind, gops in groups.items():
        t1 = time.time()
        ids = [OPS.index(op) for op in gops]
        try:
            launched, results, base = run_ncu(ncu, exe, case_file, ids, unit * weight[gops[0]], names, work,
                                              kind, cache_control)
        except NcuUnavailable as e:
            if not rec_ops and kind == next(iter(groups)):
                raise  # the first group failing means ncu itself does not work here
            failures.append(f"{kind}: {e}")
            say(f"[{kind}] FAILED: {e}")
            continue
        if kind == "ldgsts":  # the buffer's address differs from run to run: keep the one cp.async read
            src_base = base
        pos = 0
        for op in gops:
            n = launched.get(OPS.index(op), 0)
            got = results[pos:pos + n]
            pos += n
            if len(got) != n or any(k.split("(")[0].strip() != kernel_name(op) for k, _ in got):
                failures.append(f"{op}: expected {n} profiled launches of {kernel_name(op)}, got "
                                f"{len(got)} ({sorted(set(k for k, _ in got))[:3]})")
                say(failures[-1])
                continue
            for (label, a, m, src), (_, vals) in zip(per_op[op][:n], got):
                srcs.append(src)
                rec_ops.append(OPS.index(op))
                labels.append(label)
                addrs.append(a)
                masks.append(m)
                for name in names:
                    values[name].append(int(vals.get(name, -1)))
            say(f"{op:20s} {n:4d} launches measured")
        say(f"[{kind}] {sum(launched.values())} launches in {time.time() - t1:.1f}s")
    import gzip
    with gzip.open(os.path.join(record_dir, f"ncu_raw_{stem}.csv.gz"), "wt") as f:
        for kind in groups:
            pth = os.path.join(work, f"ncu_{kind}.csv")
            if os.path.exists(pth):
                f.write(f"# ---- {kind}\n" + open(pth).read())
    meta = {"seed": seed, "failures": failures, "device": _device_name(), "ncu": ncu_version(ncu), "smem_bytes": SMEM_BYTES,
            "date": time.strftime("%Y-%m-%d"),
            "structured": structured, "n_random": n_random, "cp_sources": cp_sources,
            "cp_family": cp_family, "cache_control": cache_control}
    if src_base is not None:
        meta["src_base"] = src_base
    path = os.path.join(record_dir, f"ncu_banks_{stem}.npz")
    save_record(path, meta, rec_ops, labels, np.array(addrs), masks, np.array(srcs), values)
    say(f"wrote {path} ({len(rec_ops)} measurements)")
    return path


def _device_name() -> str:
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip().splitlines()[0]
    except Exception:  # pragma: no cover - informational only
        return "unknown"


# ---------------------------------------------------------------------------------------------
# model vs record
# ---------------------------------------------------------------------------------------------

def measured_figures(rec: dict, i: int | None = None):
    """(wavefronts, conflicts) as the counters of the op's kind report them, for every row."""
    counter = np.array([parse_shared_op(str(o)).counter for o in rec["ops"]])[rec["op"]]
    wf = np.full(len(rec["op"]), -1, np.int64)
    bc = np.full(len(rec["op"]), -1, np.int64)
    for c in np.unique(counter):
        sel = counter == c
        w, b = figures(rec["metrics"], str(c))     # cp.async: less the probe's commit/wait in op_misc
        wf[sel], bc[sel] = w[sel], b[sel]
    return wf, bc


def compare(path: str, verbose=True) -> dict:
    """Model vs every measurement of a record: {op: (cases, wavefront mismatches, conflict mismatches)}."""
    from fragsim.banks import bank_conflicts_batch

    rec = load_record(path)
    wf, bc = measured_figures(rec)
    summary = {}
    for k, op in enumerate(rec["ops"]):
        sel = np.flatnonzero(rec["op"] == k)
        if not sel.size:
            continue
        is_cp = str(op).startswith("cp.async")
        r = bank_conflicts_batch(str(op), rec["addrs"][sel], rec["mask"][sel],
                                 rec["src"][sel] if is_cp else None)
        ex = r.exact
        bad_w = int(((r.wavefronts != wf[sel]) & ex).sum())
        bad_c = int(((r.conflicts != bc[sel]) & ex).sum())
        outside = int((~ex).sum())
        odd_w = int(((r.wavefronts != wf[sel]) & ~ex).sum())
        summary[str(op)] = (int(sel.size), bad_w, bad_c, outside, odd_w)
        if verbose:
            extra = f"  | {outside} outside the exact domain, {odd_w} of them differ" if outside else ""
            print(f"{op:20s} {sel.size:5d} cases  wavefront mismatches {bad_w:4d}  conflict mismatches {bad_c:4d}{extra}")
    return summary


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive whole number")
    return int(text)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fragsim.gpu_check.banks.measure", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="measure every op under ncu and write a record")
    m.add_argument("--record", required=True, help="folder for the .npz record")
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--random", type=int, default=220, help="random address sets per op")
    m.add_argument("--budget", type=float, default=300.0, help="seconds of profiling, split over the ops")
    m.add_argument("--no-structured", action="store_true", help="random address sets only")
    m.add_argument("--arch", default="native")
    m.add_argument("--sass", action="store_true", help="also collect ncu's SASS-instrumented wavefront estimate (slow)")
    m.add_argument("--cp-weight", type=float, default=3.0, help="time share of each cp.async op relative to others")
    m.add_argument("--cp-family", choices=tuple(CP_FAMILIES),
                   help="measure the cp.async ops only, on this family of fragsim.gpu_check.banks.cp_async_cases")
    m.add_argument("--cache-control", choices=("none", "all"), default="none",
                   help="ncu --cache-control: all flushes the caches before each launch")
    m.add_argument("--max-cases", type=_positive, help="at most this many cases per op (the first ones)")
    m.add_argument("--ops", nargs="+", metavar="OP",
                   help="measure these instructions only (any PTX spelling: ld.shared.v4.u8 ...); default every one")
    c = sub.add_parser("compare", help="model vs a record")
    c.add_argument("record")
    args = p.parse_args(argv)
    try:
        if args.cmd == "measure":
            ops = OPS if args.ops is None else tuple(dict.fromkeys(parse_shared_op(o).name for o in args.ops))
            measure(args.record, args.seed, args.random, args.budget, not args.no_structured, args.arch, ops=ops,
                    cp_weight=args.cp_weight, sass=args.sass, cp_family=args.cp_family,
                    cache_control=args.cache_control, max_cases=args.max_cases)
        else:
            compare(args.record)
    except (NcuUnavailable, ValueError) as e:
        sys.stderr.write(f"ncu_banks: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
