"""Nsight Compute: the metrics gpu_check reads, running ncu on the probe, and reading its CSV.

The metrics that count an instruction (its counter group's wavefronts and bank conflicts, its kind's
executed instructions) are read from the instruction table's entries (``SharedOp.metrics``,
``SharedOp.ncu_inst_metric``); the few others are named here, once.
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
from collections.abc import Mapping

import numpy as np

from fragsim.instructions import SHARED_OPS

from .probe import NcuUnavailable

#: counter group ("ld", "st", "ldgsts") -> (wavefronts, bank conflicts), from the table's entries.  cp.async's
#: wavefronts have no op_ metric of their own: its "wavefronts" metric is the shared-memory total.
COUNTERS = {op.counter: op.metrics for op in SHARED_OPS.values()}
#: executed-instruction counter of each kind ("ldsm", "stsm", "ld", "st", "ldgsts"), from the table's entries
INSTRUCTIONS = {op.kind: op.ncu_inst_metric for op in SHARED_OPS.values()}
#: the commit/wait and barrier bookkeeping, which the shared-memory total counts besides cp.async
OP_MISC_WAVEFRONTS = "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_misc.sum"
#: totals over every op: bank conflicts, bank reads and writes (context for a record, not compared)
SHARED_CONFLICTS = "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"
BANK_ACCESSES = ("l1tex__data_bank_reads.sum", "l1tex__data_bank_writes.sum")
#: ncu's own SASS-instrumented estimate of the shared wavefronts (slow to collect)
SASS_WAVEFRONTS = "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum"


def metrics(totals: bool = False) -> tuple[str, ...]:
    """What a measurement reads: every counter group's wavefronts and conflicts, op_misc, every kind's
    executed instructions; with ``totals`` the shared-memory totals too."""
    names = [m for pair in COUNTERS.values() for m in pair] + [OP_MISC_WAVEFRONTS] + list(INSTRUCTIONS.values())
    if totals:
        names += [SHARED_CONFLICTS, *BANK_ACCESSES]
    return tuple(dict.fromkeys(names))


def figures(values: Mapping[str, np.ndarray], counter: str) -> tuple[np.ndarray, np.ndarray]:
    """(wavefronts, bank conflicts) of counter group ``counter`` from a record's metric values (arrays over
    launches).  cp.async's wavefronts are the shared total less op_misc, op_ld and op_st; a metric the
    record lacks reads -1."""
    def get(name: str) -> np.ndarray:
        any_values = next(iter(values.values()))
        return np.asarray(values[name], np.int64) if name in values else np.full(len(any_values), -1, np.int64)

    wf, bc = COUNTERS[counter]
    if counter == "ldgsts":
        wavefronts = get(wf) - get(OP_MISC_WAVEFRONTS) - get(COUNTERS["ld"][0]) - get(COUNTERS["st"][0])
        return wavefronts, get(bc)
    return get(wf), get(bc)

def find_ncu() -> str:
    ncu = shutil.which("ncu")
    if not ncu:
        raise NcuUnavailable("Nsight Compute (ncu) not found on PATH; install it or add it to PATH")
    return ncu


def ncu_version(ncu: str) -> str:
    try:
        r = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=30)
        return r.stdout.strip().splitlines()[-1]
    except Exception:  # informational only
        return "unknown"


def available_metrics(ncu: str) -> set[str] | None:
    try:
        r = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = set(re.findall(r"^\s*([a-z0-9]+__[a-z0-9_]+)", r.stdout, flags=re.M))
    return names or None


def parse_ncu_csv(text: str) -> list:
    """ncu ``--csv`` (details page) -> [(kernel name, {metric: value}), ...] in launch order."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        return []
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    by_id: dict[str, tuple[str, dict[str, float]]] = {}
    order = []
    for r in rows:
        if "Metric Name" not in r:
            continue
        key = r["ID"]
        if key not in by_id:
            by_id[key] = (r.get("Kernel Name") or r.get("Function Name") or "", {})
            order.append(key)
        v = (r.get("Metric Value") or "").replace(",", "").strip()
        try:
            val = float(v)
        except ValueError:
            continue
        by_id[key][1][r["Metric Name"]] = val
    return [by_id[k] for k in sorted(order, key=lambda s: int(s))]


_PERM = ("ERR_NVGPUCTRPERM", "permission", "not supported", "Failed to profile", "No kernels were profiled")


def run_ncu(ncu: str, exe: str, case_file: str, op_ids, seconds_per_op: float, metrics, workdir: str, tag: str,
            cache_control: str = "none"):
    """Profile the probe; (launches per op id, [(kernel, {metric: value})] in launch order, the
    device address of the probe's cp.async source buffer)."""
    log = os.path.join(workdir, f"ncu_{tag}.csv")
    cmd = [ncu, "--clock-control", "none", "--cache-control", cache_control, "--csv", "--print-units", "base",
           "-k", "regex:^probe_", "--metrics", ",".join(metrics), "--log-file", log,
           exe, case_file, ",".join(str(i) for i in op_ids), f"{seconds_per_op:.1f}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    text = open(log).read() if os.path.exists(log) else ""
    launched, src_base = parse_probe_stdout(r.stdout)
    if r.returncode != 0 or not launched or src_base is None:
        tail = (r.stderr + r.stdout + text).strip().splitlines()[-5:]
        raise NcuUnavailable(f"ncu failed (exit {r.returncode}): {' | '.join(tail)}")
    results = parse_ncu_csv(text)
    if not results:
        msg = next((ln for ln in text.splitlines() if any(p in ln for p in _PERM)), text.strip()[-300:])
        raise NcuUnavailable(f"ncu could not read the performance counters: {msg}")
    return launched, results, src_base


def parse_probe_stdout(text: str):
    """The probe's own lines among ncu's: ({op id: launches}, source buffer address or None)."""
    launched = {int(a): int(b) for a, b in re.findall(r"^launched (\d+) (\d+)$", text, flags=re.M)}
    base = re.search(r"^src_base (\d+)$", text, flags=re.M)
    return launched, int(base.group(1)) if base else None
