"""Running Nsight Compute on the probe and reading its CSV."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess

from .ncu_probe import NcuUnavailable

def find_ncu() -> str:
    ncu = shutil.which("ncu")
    if not ncu:
        raise NcuUnavailable("Nsight Compute (ncu) not found on PATH; install it or add it to PATH")
    return ncu


def available_metrics(ncu: str) -> set | None:
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
    by_id = {}
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
