"""The tma family: ``cuTensorMapEncodeTiled`` and tiled ``cp.async.bulk.tensor`` on the GPU against
``fragsim.TensorMap`` / ``tma_load`` / ``tma_store``, byte for byte.

Cases (cases.py's ``make_cases``, seeded by --seed; --cases N loads, N // 8 stores, N // 2 encodes):

- *load*: a random valid argument set -- every dtype, rank 1-5, box sizes, padded and permuted strides,
  the four swizzle modes, element strides (``element_strides[0]`` too, which the driver ignores),
  both fill modes, boxes across every edge (negative coordinates, past the end, wholly outside, near
  the int32 limits), destinations at every 128-byte offset of the 1024-byte swizzle pattern, bases at
  every 16-byte offset -- encoded by the real driver and loaded once into shared memory whose bytes
  all come back (gpu_check/tma/device.py); a few interleaved (16B, 32B) maps are recorded for the day
  they are modelled;
- *store*: the same for ``tma_store`` (non-negative coordinates, boxes past the upper edges);
- *encode*: an argument set with one parameter set at or past a limit of the driver's rules (or none):
  whether the driver refuses it, against whether ``TensorMap`` does;
- *probes* (cases.PROBES): what the model refuses at run time (a box start not 16-byte aligned, a
  destination not 128-byte aligned, a store at negative coordinates ...): each may fault, which ends
  the process that ran it, so a worker runs the cases and the next one starts after a fault.

fragsim's side (``compare``): the map refused by both or by neither; a fault where the model refuses;
otherwise the whole shared region (every byte, unwritten ones included) or the whole tensor after a
store and the guard bytes after it, equal, and a load's mbarrier completed by exactly the bytes
fragsim counts (device.py says how the kernel checks that).  ``--record DIR`` writes
DIR/tma.npz (record.py's format, kind "tma"): every case and result, the digest of every dump and
the dumps themselves up to ``KEEP_BYTES``; ``--replay DIR`` regenerates the inputs from the seeds
and compares every byte again (with the dump where kept, else with its digest;
tests/test_tma_replay.py).  The report also lists what each probe did and the bits of the NaN fill
the GPU wrote per dtype.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from fragsim.facts.arch import arch_for_cc
from fragsim.facts.tma import TMA_TYPES
from fragsim.tma import box_layout

from .. import compile, record, runner
from ..family import RunnerFamily, Say
from ..family import say as say_for
from .cases import PROBES, inputs, make_cases, model_load, model_store, region_bytes, tensor_map, tx_bytes
from .device import NVCC_FLAGS, source, work

KIND = "tma"
FILE = "tma.npz"
#: Bytes of dumps a recording keeps whole (the rest: digests), smallest cases first.
KEEP_BYTES = 3 << 20
#: Seconds a worker may go without finishing a case (its start-up included) before it counts as hung.
STALL_SECONDS = 60
#: Faults (each costs a new worker, ~2 s) after which the cases left are not run.
MAX_FAULTS = 40


def digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:32]


def _refusal(f) -> str:
    try:
        f()
    except (ValueError, TypeError) as e:
        return str(e)
    return ""


def compare(case: dict[str, Any], result: dict[str, Any], dump: np.ndarray | None) -> dict[str, Any]:
    """fragsim against what the GPU did in one case: {"verdict": "match" | "mismatch" | "not modelled",
    "detail"}.  ``dump``: the bytes that came back (None: only the result's digest is known)."""
    out = {"verdict": "match", "detail": ""}
    if result["status"] == "not run":
        return {"verdict": "not run", "detail": result.get("error", "")}
    base = result.get("base", 0)
    map_refusal = _refusal(lambda: tensor_map(case, base))
    gpu = result["status"]
    if case["kind"] == "encode" or gpu == "refused":
        refused = gpu == "refused"
        if refused != bool(map_refusal):
            out["verdict"] = "mismatch"
            out["detail"] = (f"the driver refuses the map (CUresult {result.get('code')}); fragsim accepts it" if refused
                             else f"the driver encodes the map; fragsim refuses it: {map_refusal}")
        return out
    if map_refusal:
        return {"verdict": "mismatch", "detail": f"the driver encodes the map; fragsim refuses it: {map_refusal}"}
    if case["interleave"] != "none":
        return {"verdict": "not modelled", "detail": f"interleave={case['interleave']!r} is not modelled (tma_load refuses "
                                                     f"interleaved maps): GPU {gpu}"}
    tensor, image = inputs(case)
    mine: np.ndarray | None = None
    try:
        mine = (model_load(case, base, tensor, region_bytes(case)) if case["kind"] == "load"
                else model_store(case, base, tensor, image, result.get("guard", 0)))  # type: ignore[arg-type]
        refusal = ""
    except (ValueError, TypeError) as e:
        refusal = str(e)
    if gpu in ("fault", "crash", "hang"):
        if not refusal:
            return {"verdict": "mismatch", "detail": f"the GPU stopped ({gpu}: {result.get('error', '')}); fragsim "
                                                     "runs the case"}
        return out
    if refusal:
        return {"verdict": "mismatch", "detail": f"the GPU ran the case ({gpu}); fragsim refuses it: {refusal}"}
    assert mine is not None
    if gpu == "timeout":
        return {"verdict": "mismatch", "detail": f"the mbarrier never completed: the copy did not bring the {tx_bytes(case)} "
                                                 f"bytes fragsim counts (mbarrier state {result.get('mbarrier', 0):#x})"}
    if result.get("tx_exact") is False:      # recordings before the check have no such key
        return {"verdict": "mismatch", "detail": f"the copy completed more than the {tx_bytes(case)} bytes fragsim counts "
                                                 "(the mbarrier's next phase saw a non-zero tx-count)"}
    if dump is not None:
        bad = np.flatnonzero(dump != mine) if dump.size == mine.size else np.array([min(dump.size, mine.size)])
        if bad.size:
            i = int(bad[0])
            what = "shared byte" if case["kind"] == "load" else "tensor byte"
            got = f"GPU {int(dump[i]):#04x}, fragsim {int(mine[i]):#04x}" if i < min(dump.size, mine.size) else "sizes differ"
            return {"verdict": "mismatch", "detail": f"{bad.size} bytes differ, first {what} {i}: {got}"}
        return out
    if digest(mine) != result["digest"]:
        return {"verdict": "mismatch", "detail": "the bytes' digest differs from the GPU's"}
    return out


def _nan_bits(case: dict[str, Any], result: dict[str, Any], dump: np.ndarray) -> int | None:
    """The bits the GPU wrote for the first out-of-bound element of a NaN-filled load (None: none)."""
    if case["kind"] != "load" or case["oob_fill"] != "nan" or result["status"] != "ok" or case["interleave"] != "none":
        return None
    try:
        box = box_layout(tensor_map(case, result["base"]), case["coords"], case["dst"])
    except ValueError:
        return None
    out = np.flatnonzero(~box.in_bounds)
    if not out.size:
        return None
    a, e = int(box.shared_address[out[0]]), TMA_TYPES[case["dtype"]].bytes
    return int.from_bytes(dump[a:a + e].tobytes(), "little") if a + e <= dump.size else None


def case_id(i: int, case: dict[str, Any]) -> str:
    tail = f" [{case['label']}]" if case["label"] else ""
    return (f"#{i} {case['kind']} {case['dtype']} dims {case['dims']} strides {case['strides']} box {case['box']} "
            f"es {case['es']} {case['swizzle']} {case['oob_fill']} coords {case['coords']} dst {case['dst']}{tail}")


def verdicts(cases: list[dict[str, Any]], results: list[dict[str, Any]], dumps: dict[int, np.ndarray],
             say: Say) -> dict[str, Any]:
    """Compare every case; the report's figures."""
    per: dict[str, dict[str, int]] = {}
    problems: list[dict[str, str]] = []
    probes: list[dict[str, str]] = []
    nan_bits: dict[str, set[int]] = {}
    for i, (case, res) in enumerate(zip(cases, results)):
        dump = dumps.get(i)
        v = compare(case, res, dump)
        kind = "probe" if case["label"].startswith("probe") else case["kind"]
        d = per.setdefault(kind, {"match": 0, "mismatch": 0, "not modelled": 0, "not run": 0})
        d[v["verdict"]] += 1
        if v["verdict"] == "mismatch":
            problems.append({"case": case_id(i, case), "detail": v["detail"]})
            say(f"  mismatch {case_id(i, case)}: {v['detail']}")
        if kind == "probe":
            probes.append({"probe": case["label"][len("probe: "):], "gpu": res["status"] + (
                f" ({res['error']})" if res.get("error") else ""), "fragsim": v["verdict"]})
        if dump is not None:
            bits = _nan_bits(case, res, dump)
            if bits is not None:
                nan_bits.setdefault(case["dtype"], set()).add(bits)
    counted = sum(d["match"] + d["mismatch"] for d in per.values())
    return {"cases": counted, "mismatches": sum(d["mismatch"] for d in per.values()),
            "not_modelled": sum(d["not modelled"] for d in per.values()),
            "not_run": sum(d["not run"] for d in per.values()), "kinds": per, "problems": problems,
            "probes": probes, "nan_fill_bits": {k: sorted(f"{b:#x}" for b in v) for k, v in sorted(nan_bits.items())}}


# -- running the cases ---------------------------------------------------------------------------------

def spawn(cases_path: str, cubin: str, out_dir: str, start: int) -> int:
    """One worker process from case ``start``: its exit code (-1 when it stalled: killed)."""
    cmd = [sys.executable, "-m", "fragsim.gpu_check.tma.device", "worker", cases_path, cubin, out_dir, str(start)]
    results = os.path.join(out_dir, "results.jsonl")
    proc = subprocess.Popen(cmd)
    last, since = -1, time.monotonic()
    while proc.poll() is None:
        time.sleep(0.2)
        size = os.path.getsize(results) if os.path.exists(results) else 0
        if size != last:
            last, since = size, time.monotonic()
        elif time.monotonic() - since > STALL_SECONDS:
            proc.kill()
            proc.wait()
            return -1
    return proc.returncode


def run_all(cases: list[dict[str, Any]], cubin: str, work_dir: str, say: Say,
            launcher: Any = None) -> tuple[list[dict[str, Any]], dict[int, np.ndarray]]:
    """Every case through workers (``launcher(cases_path, cubin, out_dir, start)`` -> exit code), a new
    worker after each fault; (results in case order, the bytes of each case that brought some)."""
    launcher = launcher or spawn
    cases_path = os.path.join(work_dir, "cases.json")
    with open(cases_path, "w") as f:
        json.dump(cases, f)
    got: dict[int, dict[str, Any]] = {}
    start = faults = 0
    while start < len(cases):
        rc = launcher(cases_path, cubin, work_dir, start)
        got = _read_results(work_dir)
        nxt = max(got, default=-1) + 1
        if rc == 3:
            say(f"  case {nxt - 1} faulted ({got[nxt - 1].get('error', '')[:120]}); a new worker goes on")
        elif rc != 0 and nxt < len(cases):
            # the worker died on case nxt without a word: it counts as crashed (or hung)
            got[nxt] = {"i": nxt, "status": "hang" if rc == -1 else "crash", "error": f"worker exit code {rc}"}
            _append(work_dir, got[nxt])
            say(f"  case {nxt}: the worker {'hung' if rc == -1 else f'exited with code {rc}'}; a new worker goes on")
            nxt += 1
        if nxt <= start:
            raise runner.GpuUnavailable(f"the tma worker made no progress from case {start} (exit code {rc})")
        faults += rc != 0
        if faults >= MAX_FAULTS and nxt < len(cases):
            say(f"  {faults} faults: the {len(cases) - nxt} cases left are not run")
            for i in range(nxt, len(cases)):
                got[i] = {"i": i, "status": "not run", "error": f"{faults} faults before it"}
            break
        start = nxt
    dumps: dict[int, np.ndarray] = {}
    path = os.path.join(work_dir, "dumps.bin")
    raw = np.fromfile(path, np.uint8) if os.path.exists(path) else np.zeros(0, np.uint8)
    for i, r in got.items():
        if "dump" in r:
            at, n = r.pop("dump")
            dumps[i] = raw[at:at + n]
            r["digest"] = digest(dumps[i])
    return [got[i] for i in range(len(cases))], dumps


def _read_results(work_dir: str) -> dict[int, dict[str, Any]]:
    path = os.path.join(work_dir, "results.jsonl")
    out: dict[int, dict[str, Any]] = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                if line.strip():
                    r = json.loads(line)
                    out[r["i"]] = r
    return out


def _append(work_dir: str, r: dict[str, Any]) -> None:
    with open(os.path.join(work_dir, "results.jsonl"), "a") as f:
        f.write(json.dumps(r) + "\n")


def in_process(cases_path: str, cubin: str, out_dir: str, start: int) -> int:
    """A launcher that runs the worker in this process (the model standing in for the GPU; tests)."""
    from .device import GpuDevice, ModelDevice
    with open(cases_path) as f:
        cases = json.load(f)
    return work(cases, ModelDevice() if cubin == "--dry-run" else GpuDevice(cubin), out_dir, start)


# -- the recording -------------------------------------------------------------------------------------

def save(folder: str, cases: list[dict[str, Any]], results: list[dict[str, Any]], dumps: dict[int, np.ndarray],
         meta: dict[str, Any]) -> str:
    """DIR/tma.npz: every case and result (digests), and the dumps, smallest first, up to KEEP_BYTES."""
    arrays, kept = {}, 0
    for i in sorted(dumps, key=lambda k: dumps[k].size):
        if kept + dumps[i].size > KEEP_BYTES:
            break
        arrays[f"dump/{i}"] = dumps[i]
        kept += dumps[i].size
    return record.save(os.path.join(folder, FILE), KIND, dict(meta, cases=cases, results=results), arrays)


def load(path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[int, np.ndarray], dict[str, Any]]:
    meta, arrays = record.load(path, (KIND,))
    dumps = {int(k.split("/")[1]): v for k, v in arrays.items() if k.startswith("dump/")}
    return meta["cases"], meta["results"], dumps, meta


def select(cases: list[dict[str, Any]], n: int) -> list[int]:
    """Indices of the cases --cases N keeps, as a run of N makes them: the first N loads, N // 8 stores,
    N // 2 encodes, and the probes."""
    quota = {"load": n, "store": n // 8, "encode": n // 2}
    seen = dict.fromkeys(quota, 0)
    out = []
    for i, c in enumerate(cases):
        if c["label"].startswith("probe"):
            out.append(i)
        elif seen[c["kind"]] < quota[c["kind"]]:
            seen[c["kind"]] += 1
            out.append(i)
    return out


# -- the family ----------------------------------------------------------------------------------------

class TmaFamily(RunnerFamily):
    name = "tma"
    summary = ("cuTensorMapEncodeTiled and tiled cp.async.bulk.tensor loads/stores vs fragsim.TensorMap / "
               "tma_load / tma_store, every byte, plus fault probes (needs nvcc and an sm_90 GPU; --cases: loads, "
               "default 4,000; stores N/8, encodes N/2)")
    default_cases = 4000
    options = frozenset({"cases", "seed", "record", "replay", "dry_run", "quiet", "json", "json_file"})
    replay_expects = f"a folder with the {FILE} that --family tma --record wrote"

    def validate(self, args: argparse.Namespace) -> None:
        super().validate(args)
        if args.dry_run and args.replay:
            raise ValueError("--dry-run and --replay exclude each other")

    def device(self) -> dict[str, Any]:
        info = super().device()
        if info.get("cc_int", 0) < 90:
            raise runner.GpuUnavailable(f"tma needs an sm_90 GPU (the Tensor Memory Accelerator); {info['device']} "
                                        f"is compute capability {info.get('cc', '-')}")
        if shutil.which("nvcc") is None:
            raise runner.GpuUnavailable("nvcc is not on PATH; the tma check compiles its kernels with nvcc for sm_90a")
        return info

    def run(self, args: argparse.Namespace):
        if args.dry_run:
            t0 = time.time()
            info = {"device": "fragsim (--dry-run)", "cc": "9.0", "cc_int": 90}
            return self._report({"device": info["device"], "cc": info["cc"]} | self.check(args, info, say_for(args)), t0)
        return super().run(args)

    def source(self, cc: int) -> str:
        return source()

    def compile(self, info: dict[str, Any]) -> Any:
        out = os.path.join(tempfile.mkdtemp(prefix="fragsim_tma_"), "tma.cubin")
        return compile.nvcc([(self.source(info["cc_int"]), out)], NVCC_FLAGS, "the tma kernels for sm_90a")[0]

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        cases = make_cases(args.cases, args.seed)
        say(f"tma: {len(cases):,} cases ({args.cases:,} loads, {args.cases // 8:,} stores, {args.cases // 2:,} "
            f"encodes, {len(PROBES)} probes) on {info['device']}")
        cubin = "--dry-run" if args.dry_run else self.compile(info)
        work_dir = tempfile.mkdtemp(prefix="fragsim_tma_run_")
        try:
            results, dumps = run_all(cases, cubin, work_dir, say)
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)
            if not args.dry_run:
                shutil.rmtree(os.path.dirname(cubin), ignore_errors=True)
        if args.record:               # what the GPU said is kept before fragsim's turn
            meta = dict(info, seed=args.seed, loads=args.cases,
                        command=f"fragsim gpu-check --family tma --cases {args.cases} --seed {args.seed} --record DIR")
            if "cc_int" in info and not args.dry_run:
                meta["arch"] = arch_for_cc(info["cc_int"] // 10, info["cc_int"] % 10, info["device"])
            save(args.record, cases, results, dumps, meta)
        return verdicts(cases, results, dumps, say)

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        path = os.path.join(args.replay, FILE)
        if not os.path.isfile(path):
            raise ValueError(f"--replay {args.replay}: no {FILE} there; expected {self.replay_expects}")
        cases, results, dumps, _ = load(path)
        keep = select(cases, args.cases)
        return verdicts([cases[i] for i in keep], [results[i] for i in keep],
                        {j: dumps[i] for j, i in enumerate(keep) if i in dumps}, say)

    def summarize(self, report: dict[str, Any]) -> str:
        lines = [super().summarize(report)]
        for kind, d in report.get("kinds", {}).items():
            lines.append(f"  {kind}: {d['match']:,} match, {d['mismatch']:,} mismatch"
                         + "".join(f", {d[k]:,} {k}" for k in ("not modelled", "not run") if d[k]))
        for p in report.get("probes", []):
            gpu = p["gpu"] if len(p["gpu"]) <= 100 else p["gpu"][:97] + "..."
            lines.append(f"  probe {p['probe']}: GPU {gpu}; fragsim {p['fragsim']}")
        for dtype, bits in report.get("nan_fill_bits", {}).items():
            lines.append(f"  NaN fill of {dtype}: {', '.join(bits)}")
        for p in report.get("problems", [])[:20]:
            lines.append(f"  mismatch {p['case']}: {p['detail']}")
        return "\n".join(lines)


FAMILIES = {"tma": TmaFamily()}
