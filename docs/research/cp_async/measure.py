"""Measure cp.async (LDGSTS) wavefronts and bank conflicts with Nsight Compute, one launch per case.

Self-contained (NumPy only) copy of the parts of gpu_check/ncu_banks.py that cp.async needs, so a
run does not depend on code being edited elsewhere.  Each launch is one warp running exactly one
LDGSTS (checked in the SASS); ``ncu --clock-control none`` reads the counters per launch.

    python3 research/cp_async/measure.py OUT_DIR [--seconds 110] [--tag run1] [--seed 0]
        [--cache-all N]   # also measure the first N cases of each .ca op with --cache-control all

Writes OUT_DIR/cp_async_<tag>.npz (the record format of fragsim.gpu_check.ncu_banks.save_record),
OUT_DIR/cp_async_<tag>_cacheall.npz, the raw ncu CSV (gzipped), the SASS and a log.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cases import OPS, SMEM_BYTES, cases, priority_order  # noqa: E402

SRC_BYTES = 4 << 20  # global source buffer; its address is printed and kept as meta["src_base"]

# metric base names wanted: the two the model predicts (shared wavefronts, less op_misc/ld/st, and
# ldgsts bank conflicts) and context on the global side of the copy
WANT = {
    "l1tex__data_pipe_lsu_wavefronts_mem_shared": "wf_shared",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_misc": "wf_op_misc",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld": "wf_ld",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st": "wf_st",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts": "bc_ldgsts",
    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared": "bc_shared",
    "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts": "wf_ldgsts",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts": "t_sectors_ldgsts",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts": "t_requests_ldgsts",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_lookup_hit": "t_sectors_ldgsts_hit",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_lookup_miss": "t_sectors_ldgsts_miss",
    "smsp__inst_executed_op_ldgsts": "inst_ldgsts",
}
SHARED_OPCODES = {"LDS", "STS", "LDSM", "STSM", "LDGSTS", "ATOMS", "LD", "ST", "ATOM", "RED", "LDSU"}


def kernel_name(op: str) -> str:
    return "probe_" + re.sub(r"[^a-z0-9]+", "_", op)


def kernel(op: str) -> str:
    _, _, level, size = op.split(".")
    return (f'extern "C" __global__ void __launch_bounds__(32) {kernel_name(op)}'
            "(const unsigned* __restrict__ c, unsigned* __restrict__ out, const unsigned char* __restrict__ src) {\n"
            "    __shared__ __align__(1024) unsigned char smem[SMEM_BYTES];\n"
            "    const unsigned lane = threadIdx.x;\n"
            "    const unsigned a = (unsigned)__cvta_generic_to_shared(smem) + c[lane];\n"
            "    const unsigned mask = c[32];\n"
            "    if ((mask >> lane) & 1u) {\n"
            f'        asm volatile("cp.async.{level}.shared.global [%0], [%1], {size};" '
            ':: "r"(a), "l"(src + c[33 + lane]) : "memory");\n'
            '        asm volatile("cp.async.wait_all;" ::: "memory");\n'
            "    }\n    (void)out;\n}\n")


def build(work: str) -> str:
    src = open(os.path.join(HERE, "probe_template.cu")).read()
    src = (src.replace("@SMEM_BYTES@", str(SMEM_BYTES)).replace("@SRC_BYTES@", str(SRC_BYTES)).replace("@KERNELS@", "\n".join(kernel(o) for o in OPS))
           .replace("@TABLE@", ", ".join(kernel_name(o) for o in OPS)))
    cu, exe = os.path.join(work, "probe.cu"), os.path.join(work, "probe")
    open(cu, "w").write(src)
    r = subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-o", exe, cu], capture_output=True, text=True)
    if r.returncode:
        sys.exit("nvcc failed: " + r.stderr[-2000:])
    return exe


def check_sass(text: str):
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)(?:\.[A-Z0-9_.]+)?\b", line)
        if m and cur is not None and (m.group(1) or "").strip() != "@!PT":
            cur.append(m.group(2))
    for op in OPS:
        shared = [o for o in funcs.get(kernel_name(op), []) if o in SHARED_OPCODES]
        if shared != ["LDGSTS"]:
            sys.exit(f"SASS check: {kernel_name(op)} holds {shared}, want exactly one LDGSTS")


def write_cases(path: str, per_op: dict):
    with open(path, "wb") as f:
        f.write(np.uint32(len(per_op)).tobytes())
        for op, cs in per_op.items():
            arr = np.zeros((len(cs), 65), np.uint32)
            for i, (_, a, m, s) in enumerate(cs):
                arr[i, :32], arr[i, 32], arr[i, 33:] = a, m, s
            f.write(np.array([OPS.index(op), len(cs)], np.uint32).tobytes())
            f.write(arr.tobytes())


def parse_csv(text: str) -> list:
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines)))) if lines else []
    by_id, order = {}, []
    for r in rows:
        if "Metric Name" not in r:
            continue
        if r["ID"] not in by_id:
            by_id[r["ID"]] = (r.get("Kernel Name") or r.get("Function Name") or "", {})
            order.append(r["ID"])
        try:
            by_id[r["ID"]][1][r["Metric Name"]] = float((r.get("Metric Value") or "").replace(",", ""))
        except ValueError:
            pass
    return [by_id[k] for k in sorted(order, key=int)]


SRC_BASE: list = []


def run(exe, per_op, metrics, seconds, cache, work, tag, log):
    case_file = os.path.join(work, f"cases_{tag}.bin")
    write_cases(case_file, per_op)
    csv_path = os.path.join(work, f"ncu_{tag}.csv")
    cmd = ["ncu", "--clock-control", "none", "--cache-control", cache, "--csv", "--print-units", "base",
           "-k", "regex:^probe_", "--metrics", ",".join(metrics), "--log-file", csv_path,
           exe, case_file, ",".join(str(OPS.index(o)) for o in per_op), f"{seconds:.1f}"]
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    launched = {int(a): int(b) for a, b in re.findall(r"^launched (\d+) (\d+)$", r.stdout, flags=re.M)}
    base = re.findall(r"^src_base (\d+)$", r.stdout, flags=re.M)
    if base:
        SRC_BASE.append(int(base[0]))
    text = open(csv_path).read() if os.path.exists(csv_path) else ""
    log(f"[{tag}] ncu exit {r.returncode}, launched {launched}, {time.time() - t0:.1f}s")
    if r.returncode or not launched:
        log((r.stderr + r.stdout)[-3000:])
    results = parse_csv(text)
    rows = []
    pos = 0
    for op in per_op:
        n = launched.get(OPS.index(op), 0)
        got = results[pos:pos + n]
        pos += n
        if len(got) != n or any(k.split("(")[0].strip() != kernel_name(op) for k, _ in got):
            log(f"[{tag}] {op}: expected {n} launches, parsed {len(got)}; dropped")
            continue
        for c, (_, vals) in zip(per_op[op][:n], got):
            rows.append((op, c, vals))
    return rows, text


def save(path, meta, rows, metrics):
    short = {m: WANT[m.split(".")[0]] for m in metrics}
    np.savez_compressed(
        path, meta=np.array(json.dumps(meta)), ops=np.array(OPS),
        op=np.array([OPS.index(o) for o, _, _ in rows], np.int16),
        label=np.array([c[0] for _, c, _ in rows]),
        addrs=np.array([c[1] for _, c, _ in rows], np.int32).reshape(-1, 32),
        mask=np.array([c[2] for _, c, _ in rows], np.uint32),
        src=np.array([c[3] for _, c, _ in rows], np.int32).reshape(-1, 32),
        **{f"m_{short[m]}": np.array([int(v.get(m, -1)) for _, _, v in rows], np.int32) for m in metrics})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--seconds", type=float, default=110.0, help="per op (cg gets a fifth)")
    p.add_argument("--tag", default="run1")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cg-cases", type=int, default=90)
    p.add_argument("--cache-all", type=int, default=0)
    p.add_argument("--cache-all-seconds", type=float, default=20.0)
    p.add_argument("--family", default="cases", help="cases (systematic) or pairs (two-line probes)")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    logf = open(os.path.join(a.out, f"log_{a.tag}.txt"), "a")

    def log(*x):
        s = " ".join(str(y) for y in x)
        print(s, flush=True)
        logf.write(s + "\n")
        logf.flush()

    work = tempfile.mkdtemp(prefix="cp_async_")
    t0 = time.time()
    dev = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
    ver = subprocess.run(["ncu", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    log(f"device: {dev}; ncu: {ver}")
    exe = build(work)
    sass = subprocess.run(["cuobjdump", "-sass", exe], capture_output=True, text=True).stdout
    check_sass(sass)
    with gzip.open(os.path.join(a.out, f"sass_{a.tag}.txt.gz"), "wt") as f:
        f.write(sass)
    log(f"built + SASS checked (one LDGSTS per kernel) in {time.time() - t0:.1f}s")
    q = subprocess.run(["ncu", "--query-metrics"], capture_output=True, text=True).stdout
    avail = set(re.findall(r"^\s*([a-z0-9]+__[a-z0-9_]+)", q, flags=re.M))
    metrics = [f"{m}.sum" for m in WANT if m in avail or not avail]
    log(f"metrics: {[WANT[m.split('.')[0]] for m in metrics]}; missing: {[v for k, v in WANT.items() if avail and k not in avail]}")
    per_op = {}
    for op in OPS:
        if a.family == "validate":
            import validate_cases
            per_op[op] = validate_cases.cases(op, a.seed)
            continue
        if a.family == "pairs":
            import pairs
            per_op[op] = pairs.cases(op, a.seed) if ".ca." in op else []
            continue
        cs = priority_order(cases(op, a.seed))
        per_op[op] = cs[: a.cg_cases] if ".cg." in op else cs
    # cg is always 0 on the counters: a short slot is enough; the probe takes one budget per op,
    # so cg runs in its own invocation
    meta = {"device": dev, "ncu": ver, "date": time.strftime("%Y-%m-%d"), "seed": a.seed, "tag": a.tag,
            "smem_bytes": SMEM_BYTES, "clock_control": "none"}
    ca = {o: c for o, c in per_op.items() if ".ca." in o}
    rows, text = run(exe, ca, metrics, a.seconds, "none", work, a.tag, log)
    rows_cg, text_cg = [], ""
    if per_op["cp.async.cg.16"]:
        rows_cg, text_cg = run(exe, {"cp.async.cg.16": per_op["cp.async.cg.16"]}, metrics, a.seconds / 5, "none",
                               work, a.tag + "_cg", log)
    if SRC_BASE:
        meta["src_base"] = SRC_BASE[0]
        log(f"source buffer at {SRC_BASE[0]:#x} (all runs: {[hex(b) for b in SRC_BASE]})")
    save(os.path.join(a.out, f"cp_async_{a.tag}.npz"), dict(meta, cache_control="none"), rows + rows_cg, metrics)
    with gzip.open(os.path.join(a.out, f"ncu_{a.tag}.csv.gz"), "wt") as f:
        f.write(text + "\n# ---- cg\n" + text_cg)
    log(f"saved {len(rows) + len(rows_cg)} launches; {time.time() - t0:.1f}s so far")
    if a.cache_all:
        sub = {o: c[: a.cache_all] for o, c in ca.items()}
        rows2, text2 = run(exe, sub, metrics, a.cache_all_seconds, "all", work, a.tag + "_cacheall", log)
        save(os.path.join(a.out, f"cp_async_{a.tag}_cacheall.npz"), dict(meta, cache_control="all"), rows2, metrics)
        log(f"saved {len(rows2)} cache-control-all launches; {time.time() - t0:.1f}s total")
    # quick table: measured figures per op and family
    by = {}
    for op, c, v in rows + rows_cg:
        wf = v.get(metrics[0], -1) - v.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_misc.sum", 0)
        by.setdefault((op, c[0].split()[0]), []).append(wf)
    for k in sorted(by):
        log(k, len(by[k]), "wf mean", round(float(np.mean(by[k])), 2))


if __name__ == "__main__":
    main()
