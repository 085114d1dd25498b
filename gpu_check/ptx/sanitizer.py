"""The kernels of fragsim's checks (``run_kernel(check=...)``) under NVIDIA's compute-sanitizer on a GPU:
does the sanitizer see a bug in each buggy kernel and none in its correct twin, where fragsim does?

    python -m fragsim.gpu_check.ptx.sanitizer measure --out DIR [--jobs 8] [--timeout 20]
    python -m fragsim.gpu_check.ptx.sanitizer compare DIR         # on any machine: the table

``CASES`` are the kernels of ``tests/data/ptx/src/checks/*.cu`` (committed as PTX in
``tests/data/ptx/checks/``): each buggy kernel (``*_bug``: the kind of finding its line marked
``// BUG <kind>`` must give) and its correct twin (``*_ok``), with the launch both are run with on
the CPU (``tests/test_ptx_checks.py``) and here.  ``CORPUS`` adds kernels of the PTX corpus with
the kinds fragsim finds in them (bugs of theirs by the PTX ISA, docs/kernel-bugs.md; the others
come out clean).

``measure`` (CuPy, compute-sanitizer and a GPU) launches every case once per tool, each in its own
process (``compute-sanitizer --tool T python -m fragsim.gpu_check.ptx.sanitizer one NAME``: a memory
error leaves the CUDA context unusable, a deadlock hangs until ``--timeout``), ``--jobs`` at a time,
and records what each printed: ``DIR/ptx_sanitizer.json``.  Each buffer is its own ``cudaMalloc`` of
its exact size (CuPy's memory pool, which rounds to 512 bytes, is off): memcheck bounds an access by
the allocation it lies in, so it sees a read past a pooled buffer only past the pool's block.  Tools:
memcheck (out of bounds, misaligned), racecheck (shared-memory hazards, INFO level included: a write
of the same value is reported as INFO), synccheck (barriers and warp synchronisation).  ``compare``
classifies each output (``classify``) and prints, per case, fragsim's findings, what each tool said,
and ``!`` where a tool said other than what fragsim's findings imply (``expected``);
``tests/test_ptx_checks_sanitizer.py`` replays the record and gives the reason of each ``!``.

Missing CuPy, compute-sanitizer or a GPU: one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: The sanitizer tools run for every case.
TOOLS = ("memcheck", "racecheck", "synccheck")
#: The tool that sees each kind of finding (none for the kinds no tool checks).
TOOL_OF = {"out_of_bounds": "memcheck", "misaligned": "memcheck", "race": "racecheck",
           "cp_async_in_flight": "racecheck", "divergent": "synccheck", "deadlock": "synccheck"}
#: Options of each tool.
OPTIONS = {"memcheck": ["--print-limit", "20", "--show-backtrace", "no"],
           "racecheck": ["--racecheck-detect-level", "info", "--print-limit", "20", "--show-backtrace", "no"],
           "synccheck": ["--print-limit", "20", "--show-backtrace", "no"]}
#: The prefix of every line compute-sanitizer prints (the launched program's own lines have none).
PREFIX = "========="
#: Characters of a tool's output kept in the record.
KEEP = 20_000


def checks_dir() -> Path:
    """tests/data/ptx/checks of the clone this module runs from, or of the current directory's."""
    for root in (Path(__file__).resolve().parents[2], Path.cwd()):
        d = root / "tests" / "data" / "ptx" / "checks"
        if d.is_dir():
            return d
    raise ValueError("ptx_sanitizer needs tests/data/ptx/checks of a clone of fragsim's repository")


Args = Callable[[np.random.Generator], list]


@dataclass(frozen=True)
class Case:
    """One kernel of the checks: ``file`` (tests/data/ptx/checks/<file>.<arch>.ptx), ``kind`` (the
    finding of its BUG line; None for a correct twin), one CTA of ``block`` threads, ``smem`` bytes of
    dynamic shared memory, ``args(rng)``, ``check`` (run_kernel's; "uninitialized" needs opting in)
    , ``sm80`` (also built for sm_80) and ``ok`` (the correct twin, where the names do not say it)."""

    name: str
    file: str
    kind: str | None
    block: int
    args: Args
    smem: int = 0
    check: str = "continue"
    sm80: bool = True
    ok: str | None = None

    def ptx(self, arch: str = "sm90a") -> Path:
        return checks_dir() / f"{self.file}.{arch}.ptx"


def _f32(n: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(n).astype(np.float32)


def _zeros(n: int, dtype=np.float32) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: np.zeros(n, dtype)


def _ints(n: int, dtype=np.int32) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.integers(0, 1000, n).astype(dtype)


def _bf16(n: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: (rng.standard_normal(n).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _f16(n: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(n).astype(np.float16).view(np.uint16)


def _words(part) -> Callable[[np.random.Generator], np.ndarray]:
    """16-bit elements as the 32-bit registers that hold two each."""
    return lambda rng: part(rng).view(np.uint32)


def _args(*parts) -> Args:
    return lambda rng: [p(rng) if callable(p) else p for p in parts]


def _pair(stem: str, file: str, kind: str, block: int, args: Args, **kw) -> list[Case]:
    return [Case(f"{stem}_bug", file, kind, block, args, **kw), Case(f"{stem}_ok", file, None, block, args, **kw)]


CASES: list[Case] = [
    *_pair("oob_global", "memory", "out_of_bounds", 64, _args(_f32(32), _zeros(64), np.int32(32))),
    *_pair("oob_shared", "memory", "out_of_bounds", 64, _args(_zeros(64)), smem=64 * 4),
    *_pair("misaligned_global", "memory", "misaligned", 32, _args(_f32(4 * 32 + 4), _zeros(4 * 32))),
    *_pair("ldmatrix_misaligned", "memory", "misaligned", 32, _args(_zeros(32, np.uint32))),
    *_pair("cp_async_misaligned", "memory", "misaligned", 32, _args(_ints(4 * 32), _zeros(4 * 32, np.int32))),
    *_pair("race_raw", "race", "race", 64, _args(_zeros(64))),
    *_pair("race_war", "race", "race", 64, _args(_f32(3 * 64), _zeros(64), np.int32(3))),
    *_pair("race_warp", "race", "race", 32, _args(_zeros(32))),
    *_pair("race_waw", "race", "race", 64, _args(_zeros(64, np.int32))),
    *_pair("cp_async_early", "cp_async", "cp_async_in_flight", 64, _args(_ints(4 * 64), _zeros(4 * 64, np.int32))),
    *_pair("cp_async_barrier", "cp_async", "race", 64, _args(_ints(4 * 64), _zeros(4 * 64, np.int32))),
    *_pair("mma_partial", "sync", "divergent", 32, _args(_words(_f16(32 * 8)), _words(_f16(32 * 4)), _zeros(32 * 4))),
    *_pair("shfl_mask", "sync", "divergent", 32, _args(_zeros(32, np.int32))),
    *_pair("bar_divergent", "sync", "divergent", 64, _args(_zeros(64, np.int32))),
    *_pair("syncwarp_partial", "sync", "divergent", 32, _args(_zeros(32, np.int32))),
    *_pair("deadlock", "deadlock", "deadlock", 64, _args(_zeros(64, np.int32))),
    *_pair("uninit", "uninit", "uninitialized", 32, _args(_zeros(32)), check="continue,uninitialized"),
    Case("wgmma_ok", "wgmma", None, 128, _args(_bf16(64 * 16), _bf16(8 * 16), _zeros(640)), sm80=False),
    *[Case(f"wgmma_{k}_bug", "wgmma", kind, 128, _args(_bf16(64 * 16), _bf16(8 * 16), _zeros(640)), sm80=False)
      for k, kind in (("acc", "wgmma_in_flight"), ("smem", "wgmma_in_flight"), ("fence", "wgmma_fence"),
                      ("desc", "out_of_bounds"), ("bits", "invalid_descriptor"), ("proxy", "proxy_fence"),
                      ("race", "race"))],
    Case("bulk_ok", "mbarrier", None, 64, _args(_f32(256), _zeros(64)), sm80=False),
    *[Case(f"bulk_{k}_bug", "mbarrier", kind, 64, _args(_f32(256), _zeros(64)), sm80=False, ok="bulk_ok")
      for k, kind in (("early", "cp_async_in_flight"), ("parity", "deadlock"), ("tx", "deadlock"))],
    Case("bulk_store_ok", "mbarrier", None, 64, _args(_f32(64), _zeros(64)), sm80=False),
    Case("bulk_store_proxy_bug", "mbarrier", "proxy_fence", 64, _args(_f32(64), _zeros(64)), sm80=False,
         ok="bulk_store_ok"),
]
BY_NAME = {c.name: c for c in CASES}
#: Kernels of the PTX corpus (gpu_check ptx_kernels' names; shape 0, first seed) run under every tool,
#: with the kinds fragsim finds in them (tests/test_ptx_checks.py keeps these so): CuTe's wgmma_sm90
#: tutorial reads other threads' cp.async data with wgmma after cp_async_wait<0>() and no
#: __syncthreads(); nvcc moves wgmma_desc.cu's zeroing of the accumulators after wgmma.fence; the TMA
#: kernels are clean.
CORPUS: dict[str, tuple[str, ...]] = {
    "cutlass_wgmma_sm90_tn": ("race",), "cutlass_wgmma_sm90_nt": ("race",), "wgmma_desc": ("wgmma_fence",),
    "tma_wgmma": (), "tma_bulk": (), "cutlass_wgmma_tma_sm90_tn": ()}


def twin(c: Case) -> Case | None:
    """The correct kernel of a buggy one (wgmma's bugs share wgmma_ok)."""
    if c.kind is None:
        return None
    return BY_NAME.get(c.ok or c.name[:-4] + "_ok") or BY_NAME.get(c.file + "_ok")


def marked_lines(c: Case) -> set[int]:
    """The CUDA lines of ``c``'s source marked ``// BUG <kind>`` inside its kernel."""
    src = (checks_dir().parent / "src" / "checks" / f"{c.file}.cu").read_text().splitlines()
    start = next(i for i, ln in enumerate(src) if re.search(rf"\b{c.name}\(", ln))
    out = set()
    for i in range(start + 1, len(src)):
        if src[i].startswith('extern "C"'):
            break
        if f"// BUG {c.kind}" in src[i]:
            out.add(i + 1)
    return out


def run_cpu(c: Case, arch: str = "sm90a", seed: int = 0, check: str | None = None):
    """``fragsim.run_kernel`` of the case (its own ``check`` unless given); returns the Run."""
    from fragsim.ptx.run import run_kernel
    args = c.args(np.random.default_rng(seed))
    return run_kernel(str(c.ptx(arch)), c.name, grid=1, block=c.block, args=args, dynamic_smem=c.smem,
                      check=c.check if check is None else check)


# ------------------------------------------------------------------------------------------ the GPU

def one(name: str) -> None:
    """Launch one case (or ``corpus:<kernel>``) on the GPU and wait for it: what runs under the tool."""
    from .. import runner
    cp = runner.import_cupy()
    cp.cuda.set_allocator(None)         # one cudaMalloc of its exact size per buffer (the module docstring)
    if name.startswith("corpus:"):
        from . import kernels as P
        kernel = name.split(":", 1)[1]
        k = next(x for x in P.cases() if x.kernel == kernel and x.shape == 0 and x.ctas is None)
        P.Device(cp, runner.device_info(cp)).run(k, k.launch())
        print(f"{name}: done")
        return
    c = BY_NAME[name]
    fn = cp.RawModule(path=str(c.ptx())).get_function(c.name)
    args = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in c.args(np.random.default_rng(0))]
    fn((1,), (c.block,), tuple(args), shared_mem=c.smem)
    cp.cuda.runtime.deviceSynchronize()
    print(f"{name}: done")


def sanitizer() -> str | None:
    """compute-sanitizer on PATH, or in the CUDA toolkit ($CUDA_HOME, /usr/local/cuda)."""
    found = shutil.which("compute-sanitizer")
    for home in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        path = Path(home) / "bin" / "compute-sanitizer"
        if not found and home and path.is_file():
            found = str(path)
    return found


def _launch(name: str, tool: str, timeout: float) -> dict:
    cmd = [str(sanitizer()), "--tool", tool, *OPTIONS[tool], sys.executable, "-m",
           "fragsim.gpu_check.ptx.sanitizer", "one", name]
    t = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out, rc, hung = r.stdout + r.stderr, r.returncode, False
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, hung = None, True
    return {"case": name, "tool": tool, "rc": rc, "timed_out": hung, "seconds": round(time.time() - t, 2),
            "output": out[-KEEP:]}


def measure(out: Path, jobs: int, timeout: float, only: list[str] | None) -> int:
    tool = sanitizer()
    if tool is None:
        sys.stderr.write("ptx_sanitizer: no compute-sanitizer on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin\n")
        return 2
    from .. import runner
    try:
        cupy = runner.import_cupy()
        cupy.zeros(1)
        gpu = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    except Exception as e:             # no CuPy or no GPU
        sys.stderr.write(f"ptx_sanitizer: no GPU through CuPy ({type(e).__name__}: {e})\n")
        return 2
    version = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout.strip()
    plan = [(c.name, t) for c in CASES for t in TOOLS] + [(f"corpus:{k}", t) for k in CORPUS for t in TOOLS]
    if only:
        plan = [p for p in plan if any(o in p[0] for o in only)]
    runs = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        for r in pool.map(lambda p: _launch(p[0], p[1], timeout), plan):
            runs.append(r)
            print(f"{r['case']:28s} {r['tool']:10s} {'hung' if r['timed_out'] else r['rc']!s:5s} "
                  f"{summary(r['output'])}", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "ptx_sanitizer.json"
    path.write_text(json.dumps({"kind": "ptx-sanitizer", "gpu": gpu, "compute_sanitizer": version,
                                "date": time.strftime("%Y-%m-%d"), "allocation": "exact", "runs": runs}, indent=1))
    print(f"wrote {path}")
    return 0


# ----------------------------------------------------------------------------------- reading records

def summary(output: str) -> str:
    m = re.search(r"ERROR SUMMARY: (\d+) errors?", output)
    return m.group(0) if m else "(no summary)"


def classify(tool: str, output: str) -> dict[str, int]:
    """What a tool's output reports, counted: memcheck "out_of_bounds" or "misaligned" (an error record
    whose lines say "misaligned"), racecheck "race" (ERROR or WARNING level) or "race_info" (INFO: a
    write of the same value), synccheck "divergent" (a barrier or warp-synchronisation error).  Only
    the sanitizer's own lines (``PREFIX``) are read: the launched program prints "<case>: done", and
    a case named "misaligned_..." is no finding."""
    out: dict[str, int] = {}
    record: str | None = None

    def close() -> None:
        if record is not None:
            out[record] = out.get(record, 0) + 1

    for ln in output.splitlines():
        if not ln.startswith(PREFIX):
            continue
        s = ln.strip("= \t")
        low = s.lower()
        if tool == "memcheck":
            if low.startswith(("invalid __", "misaligned", "warp misaligned", "warp illegal", "out of range")):
                close()
                record = "misaligned" if "misaligned" in low else "out_of_bounds"
            elif record is not None and "misaligned" in low:
                record = "misaligned"
        elif tool == "racecheck" and "race reported" in low:
            level = "race_info" if low.startswith("info") else "race"
            out[level] = out.get(level, 0) + 1
        elif tool == "synccheck" and ("barrier error" in low or "divergent thread" in low or "invalid arguments" in low):
            out["divergent"] = out.get("divergent", 0) + 1
    close()
    return out


def load(record: Path) -> dict:
    path = record / "ptx_sanitizer.json" if record.is_dir() else record
    data = json.loads(path.read_text())
    if data.get("kind") != "ptx-sanitizer":
        raise ValueError(f"{path}: not a ptx_sanitizer record")
    return data


def fragsim_kinds(case: str) -> tuple[str, ...]:
    """The kinds of finding fragsim gives for a case of the record (a ``CASES`` name or ``corpus:<kernel>``)."""
    if case.startswith("corpus:"):
        return CORPUS[case.split(":", 1)[1]]
    kind = BY_NAME[case].kind
    return (kind,) if kind else ()


def expected(kinds: tuple[str, ...], tool: str) -> set[str]:
    """What ``tool`` would report (``classify``'s words) for a kernel where fragsim finds ``kinds``, were
    the tool to check everything fragsim checks: the tool of each kind (``TOOL_OF``: racecheck says
    "race" for a cp.async read early), and a hang under every tool for a deadlock."""
    out = set()
    for k in kinds:
        if k == "deadlock":
            out.add("hang")
        elif TOOL_OF.get(k) == tool:
            out.add("race" if tool == "racecheck" else k)
    return out


def said(row: dict, tool: str) -> set[str]:
    """What ``tool`` reported for a row of ``table`` (racecheck's INFO level, a write of the same value,
    aside)."""
    return set(row["tools"][tool]) - {"race_info"}


def table(data: dict) -> list[dict]:
    """Per case: fragsim's kinds and, per tool, what the sanitizer reported (``classify``)."""
    rows: dict[str, dict] = {}
    for r in data["runs"]:
        row = rows.setdefault(r["case"], {"case": r["case"], "fragsim": fragsim_kinds(r["case"]), "tools": {}})
        row["tools"][r["tool"]] = {"hang": 1} if r["timed_out"] else classify(r["tool"], r["output"])
    return list(rows.values())


def compare(record: Path) -> int:
    data = load(record)
    print(f"{data['gpu']}, {data['compute_sanitizer'].splitlines()[-1] if data['compute_sanitizer'] else ''}"
          f" ({data.get('allocation', 'CuPy memory pool')} allocation); ! where a tool said other than fragsim's "
          "findings imply")
    for row in table(data):
        cells = []
        for tool, v in row["tools"].items():
            mark = "!" if said(row, tool) != expected(row["fragsim"], tool) else " "
            cells.append(f"{mark}{tool}: {', '.join(f'{k} x{n}' for k, n in v.items()) or '-'}")
        print(f"{row['case']:33s} fragsim {', '.join(row['fragsim']) or '-':20s} {'; '.join(cells)}")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fragsim.gpu_check.ptx.sanitizer", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="run every case under every tool on this machine's GPU")
    m.add_argument("--out", required=True, help="folder for the record (ptx_sanitizer.json)")
    m.add_argument("--jobs", type=int, default=8, help="sanitizer processes at once (default 8)")
    m.add_argument("--timeout", type=float, default=20.0, help="seconds before a launch counts as hung (default 20)")
    m.add_argument("--only", nargs="+", help="only cases whose name contains one of these")
    o = sub.add_parser("one", help="(internal) launch one case")
    o.add_argument("name")
    c = sub.add_parser("compare", help="print the record as a table")
    c.add_argument("record")
    args = p.parse_args(argv)
    if args.command == "measure":
        return measure(Path(args.out), args.jobs, args.timeout, args.only)
    if args.command == "one":
        one(args.name)
        return 0
    return compare(Path(args.record))


if __name__ == "__main__":
    raise SystemExit(main())
