"""Shared-memory traffic of whole kernels under Nsight Compute: ``run.totals`` and ``run.shared``
(``fragsim.ptx.traffic``) against the H100's counters, kernel by kernel and PTX line by PTX line.

    python -m fragsim.gpu_check.ptx.traffic measure --out DIR      # on the GPU machine: build, profile, record
    python -m fragsim.gpu_check.ptx.traffic compare DIR            # fragsim vs the record, on any machine

``measure`` needs CuPy, ptxas, nvdisasm and ncu.  The launches (``plan``): every file of every
kernel of the PTX corpus (``ptx_kernels.KERNELS``, its first shape and seed, the whole grid) and
every kernel of ``traffic_kernels.CASES`` (one access pattern each).  For each:

1. the PTX gets a ``.loc 1 L 0`` before the instruction of line ``L`` (its own ``.loc``/``.file``
   removed, ``.file 1 "ptx"`` added) and its entry a name of its own, ``fs<i>__<name>`` (never
   demangled, so Nsight Compute prints and filters it as written); ``ptxas -lineinfo`` (``-g`` for
   the ``-G`` builds) builds it
   (at the PTX's own ``.version``, or the newest older one ptxas takes) and ``nvdisasm -g`` gives
   every SASS instruction with the PTX line it comes from;
2. one process (``launch DIR``) loads every cubin and launches each kernel once, its buffers as
   ``ptx_kernels`` builds them (device addresses recorded: cp.async's bank model reads them), under
   one ``ncu --clock-control none --cache-control none`` run collecting the whole-kernel counters
   (``METRICS``) and the source counters (``--section SourceCounters``) into one report;
3. per launch the details page (the counters) and the source page at SASS granularity
   (``--page source --print-source sass --csv``) are imported from the report.

The record ``DIR/ptx_ncu.npz`` (kind "ptx-ncu") keeps, per launch, the plan entry, the buffers'
addresses, every counter, and the source page and the nvdisasm text as they were printed: they are
parsed when compared, so a parsing fix needs no new measurement.  ``compare`` runs each launch
through ``fragsim.run_kernel(report=True)`` with the buffers at the recorded addresses and reports
every difference: whole-kernel counters (``run.totals``, and cp.async's wavefronts: the shared
total less op_misc, op_ld and op_st), and per PTX line the executions, wavefronts and ideal
wavefronts of the line's shared-memory SASS instructions against fragsim's rows, where ptxas keeps
one SASS shared-memory instruction of the matching kind for the line (or several copies of it,
summed); lines where it merges or splits differently are listed, not compared.
tests/test_ptx_traffic_replay.py replays the record in CI.

Missing CuPy, ptxas, nvdisasm, ncu or a GPU: one line on stderr and exit code 2.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from fragsim.ptx import ast as A
from fragsim.ptx.parse import parse
from fragsim.ptx.traffic import (ATOM_CONFLICTS, ATOM_INST, ATOM_WAVEFRONTS, GMMA_WAVEFRONTS, INST_METRICS,
                                 LD_CONFLICTS, LD_WAVEFRONTS, LDGSTS_CONFLICTS, MISC_WAVEFRONTS, SHARED_WAVEFRONTS,
                                 ST_CONFLICTS, ST_WAVEFRONTS)

from . import kernels as PK
from ..family import RunnerFamily
from .. import record, runner
from . import traffic_kernels as TK
from ..banks.probe import NcuUnavailable
from ..banks.ncu import COUNTERS, OP_MISC_WAVEFRONTS, find_ncu, ncu_version, parse_ncu_csv

RECORD = "ptx_ncu.npz"
RECORD_KIND = "ptx-ncu"
#: the whole-kernel counters read: the table's (ld, st, ldgsts wavefronts and conflicts, executed
#: instructions per kind), op_misc, atomics, and the shared-memory totals
METRICS = tuple(dict.fromkeys([m for pair in COUNTERS.values() for m in pair] + [OP_MISC_WAVEFRONTS]
                              + list(INST_METRICS.values())
                              + [ATOM_INST, ATOM_WAVEFRONTS, ATOM_CONFLICTS, GMMA_WAVEFRONTS,
                                 "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_gmma.sum",
                                 "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                                 "smsp__inst_executed_op_generic_ld.sum", "smsp__inst_executed_op_generic_st.sum",
                                 "smsp__inst_executed.sum"]))
#: the counters run.totals states and the record is compared on
COMPARED = (SHARED_WAVEFRONTS, LD_WAVEFRONTS, ST_WAVEFRONTS, MISC_WAVEFRONTS, LD_CONFLICTS, ST_CONFLICTS,
            LDGSTS_CONFLICTS, *INST_METRICS.values(), ATOM_INST, ATOM_WAVEFRONTS, ATOM_CONFLICTS, GMMA_WAVEFRONTS)
#: counters that hold op_misc: the barrier part of fragsim's figure is the most the hardware counts
#: (``SharedReport.barrier_misc``), so these compare as a range
BARRIER_BOUND = (SHARED_WAVEFRONTS, MISC_WAVEFRONTS)
#: counters a -G build's helper functions (atomics, shuffles, ptxas -g's MEMBAR before each EXIT)
#: change without a PTX instruction of their own: not compared for -G builds
DEBUG_UNCOMPARED = (SHARED_WAVEFRONTS, MISC_WAVEFRONTS, ATOM_INST, ATOM_WAVEFRONTS, ATOM_CONFLICTS)
#: counters an atomic that ptxas makes a compare-and-swap loop (LDS, ATOMS.CAST.SPIN, a branch back)
#: changes by its trips: not compared for a launch with such a row (``SharedRow.modelled`` False)
CAS_UNCOMPARED = (SHARED_WAVEFRONTS, MISC_WAVEFRONTS, LD_WAVEFRONTS, LD_CONFLICTS, INST_METRICS["ld"], ATOM_INST,
                  ATOM_WAVEFRONTS, ATOM_CONFLICTS)
#: the ``.file`` the rewritten PTX names: nvdisasm's line annotations of this file are PTX lines
LINE_FILE = "ptx"
#: SASS opcodes of each row kind of the report (generic ld/st compile to LD/ST)
SASS_OF = {"ld": ("LDS",), "st": ("STS",), "ldsm": ("LDSM",), "stsm": ("STSM",), "ldgsts": ("LDGSTS",),
           "atom": ("ATOMS",), "wgmma": ("HGMMA", "IGMMA", "QGMMA", "BGMMA")}
SASS_GENERIC = {"ld": ("LD",), "st": ("ST",), "atom": ("ATOM",)}
SHARED_SASS = {"LDS", "STS", "LDSM", "STSM", "LDGSTS", "ATOMS"}
WGMMA_SASS = SASS_OF["wgmma"]
#: SASS with an op_misc cost of its own (fragsim.ptx.traffic.MISC_PER_*) -> the PTX opcodes fragsim
#: counts it for; one on a line of any other instruction is ptxas's own (REDUX of a warp-aggregated
#: atom.global.min/max, a -G build's MEMBAR): the comparison takes its executions from the source
#: page and adds them to fragsim's op_misc
MISC_SASS = {"SHFL": ("shfl",), "REDUX": ("redux",), "MEMBAR": ("membar", "fence"), "WARPSYNC": ()}
#: the PTX opcodes on whose lines ptxas's WARPSYNC costs no op_misc: a shfl.sync's or an ldmatrix's
#: (traffic2/shfl_warp0_only, ldmatrix_warp0_only, warpsync_divergent).  Elsewhere (after an
#: mbarrier try_wait loop, before elect.sync or bar.sync) a warp may wait at it, and it costs up to
#: one per warp execution: it joins the range part (tma_wgmma 4 of 4, cutlass_wgmma_tma 6 of 8,
#: cutlass_wgmma_sm90 and tma_bulk every one)
WARPSYNC_FREE_ON = ("shfl", "ldmatrix")
#: source-page columns, as metric names or as the labels Nsight Compute prints by default
COLUMNS = {"inst": ("inst_executed", "Instructions Executed", "Warp Instructions Executed"),
           "wavefronts": ("memory_l1_wavefronts_shared", "L1 Wavefronts Shared"),
           "ideal": ("memory_l1_wavefronts_shared_ideal", "L1 Wavefronts Shared Ideal")}
#: ptxas's never-executed padding instruction (``@!PT LDS RZ, [RZ]`` in cp.async kernels)
NEVER = "@!PT"


# ---------------------------------------------------------------------------------------------
# the plan

@dataclass(frozen=True)
class Item:
    """One launch: ``kind`` "corpus" (``kernel`` of ptx_kernels on ``file``) or "generated" (a case of
    traffic_kernels, ``kernel`` its name); ``name``: the entry's name in the cubin."""

    index: int
    kind: str
    kernel: str
    file: str

    @property
    def id(self) -> str:
        if self.kind == "corpus":
            return f"{self.kernel}/{self.file}"
        batch = TK.BY_NAME[self.kernel].batch
        return f"traffic{batch if batch > 1 else ''}/{self.kernel}"

    @property
    def name(self) -> str:
        return f"fs{self.index}__{self.entry().name}"

    def text(self) -> str:
        return PK.module_text(self.file) if self.kind == "corpus" else TK.BY_NAME[self.kernel].ptx()

    def entry(self) -> A.Function:
        if self.kind == "corpus":
            return PK.entry_of(self.file, PK.BY_NAME[self.kernel].entry)
        return parse(self.text()).entries[TK.BY_NAME[self.kernel].entry]

    def launch(self) -> PK.Launch:
        if self.kind == "corpus":
            k = PK.BY_NAME[self.kernel]
            return k.build(k.shapes[0], k.seeds[0])
        c = TK.BY_NAME[self.kernel]
        return PK.Launch(PK.dims(1), PK.dims(c.block), 0, TK.buffers(threads=c.block), ["in", "out"], ("out",))


def plan(forms: list[str] | None = None) -> list[Item]:
    """Every corpus file of every kernel, then every generated case (``forms``: only ids containing one)."""
    raw = [("corpus", k.name, f) for k in PK.KERNELS for f in k.files]
    raw += [("generated", c.name, c.entry + ".ptx") for c in TK.CASES]
    items = [Item(i, kind, kernel, file) for i, (kind, kernel, file) in enumerate(raw)]
    if forms:
        items = [it for it in items if any(f in it.id for f in forms)]
        if not items:
            raise ValueError(f"--forms {' '.join(forms)}: no launch of ptx_ncu contains any of these")
    return items


def item_of(entry: dict[str, Any]) -> Item:
    return Item(entry["index"], entry["kind"], entry["kernel"], entry["file"])


# ---------------------------------------------------------------------------------------------
# PTX lines into the line table

def instruction_lines(module: A.Module) -> set[int]:
    return {ins.line for f in module.functions.values() if f.defined for ins in f.body if isinstance(ins, A.Instr)}


def with_ptx_lines(text: str, entry: str, name: str) -> str:
    """The PTX with a ``.loc`` naming each instruction's own line (in the ``.file`` LINE_FILE), its
    own ``.loc``/``.file`` directives removed, and the entry ``entry`` renamed ``name``."""
    lines = instruction_lines(parse(text))
    out = []
    for i, line in enumerate(text.split("\n"), 1):
        if re.match(r"\s*\.(loc|file)\s", line):
            continue
        if i in lines:
            out.append(f"\t.loc\t1 {i} 0")
        out.append(line)
    body, n = re.subn(rf"(\.entry\s+){re.escape(entry)}(\s*\()", rf"\g<1>{name}\g<2>", "\n".join(out), count=1)
    if n != 1:
        raise ValueError(f"no .entry {entry} in the PTX")
    return body + f'\n\t.file\t1 "{LINE_FILE}"\n'


# ---------------------------------------------------------------------------------------------
# building: ptxas and nvdisasm

def _ptxas_arch(text: str, cc: int) -> str:
    target = next((ln.split()[1] for ln in text.splitlines() if ln.strip().startswith(".target")), "sm_90")
    return f"sm_{cc}" + ("a" if target.rstrip(",").endswith("a") else "")


def _debug_flags(text: str) -> list[str]:
    """ptxas's line-table flag: ``-g`` for a ``.target ..., debug`` module (nvcc -G assembles it so),
    else ``-lineinfo``."""
    target = next((ln for ln in text.splitlines() if ln.strip().startswith(".target")), "")
    return ["-g"] if "debug" in target else ["-lineinfo"]


def build(items: list[Item], work: str, cc: int, say) -> dict[int, str]:
    """Each item's cubin ``work/build/<i>.cubin`` and its ``nvdisasm -g`` text ``<i>.sass``; per item
    that failed, why (index -> message)."""
    from ..compile import tool
    ptxas = (PK.ptxas_candidates() or [tool("ptxas", NcuUnavailable)])[-1]
    nvdisasm = tool("nvdisasm", NcuUnavailable)
    folder = os.path.join(work, "build")
    os.makedirs(folder, exist_ok=True)
    failed: dict[int, str] = {}

    def one(it: Item) -> None:
        text = with_ptx_lines(it.text(), it.entry().name, it.name)
        base = os.path.join(folder, str(it.index))
        arch = _ptxas_arch(text, cc)
        old = re.search(r"^\.version\s+(\S+)", text, re.M)
        versions = [None] + [v for v in PK.PTX_VERSIONS if old and float(v) < float(old.group(1))]
        err = ""
        for v in versions:
            src = text if v is None or old is None else text[:old.start(1)] + v + text[old.end(1):]
            Path(base + ".ptx").write_text(src)
            r = subprocess.run([ptxas, f"-arch={arch}", *_debug_flags(text), "-o", base + ".cubin", base + ".ptx"],
                               capture_output=True, text=True)
            if r.returncode == 0:
                break
            err = runner.one_line(r.stderr or r.stdout)
        else:
            failed[it.index] = f"ptxas: {err}"
            return
        r = subprocess.run([nvdisasm, "-g", "-c", base + ".cubin"], capture_output=True, text=True)
        if r.returncode:
            failed[it.index] = f"nvdisasm: {runner.one_line(r.stderr)}"
            return
        Path(base + ".sass").write_text(r.stdout)

    with concurrent.futures.ThreadPoolExecutor(max(1, min(16, (os.cpu_count() or 2)))) as pool:
        list(pool.map(one, items))
    say(f"built {len(items) - len(failed)} of {len(items)} kernels with {ptxas}"
        + "".join(f"\n  {i}: {m}" for i, m in failed.items()))
    return failed


# ---------------------------------------------------------------------------------------------
# the launch process (runs under ncu)

def launch(work: str) -> None:
    """Launch every built item of ``work/plan.json`` once; write ``work/launched.json`` (the buffers'
    device addresses, or why a launch failed)."""
    import ctypes
    cp = runner.import_cupy()
    drv = cp.cuda.driver
    cp.zeros(1)
    with open(os.path.join(work, "plan.json")) as f:
        entries = json.load(f)
    done = []
    driver: list[Any] = []          # cuTensorMapEncodeTiled (gpu_check/tma/device.py), at the first tensor map

    def encode(m: PK.MapArg, address: int) -> bytes:
        if not driver:
            from ..tma.device import Driver
            driver.append(Driver())
        code, data = driver[0].encode(m.case(), address)
        if code:
            raise ValueError(f"cuTensorMapEncodeTiled refused {m} at {address:#x}: CUresult {code}")
        return data
    for e in entries:
        if e.get("error"):
            done.append({"index": e["index"], "error": e["error"]})
            continue
        it = item_of(e)
        try:
            handle = drv.moduleLoadData(Path(os.path.join(work, "build", f"{it.index}.cubin")).read_bytes())
            fn = drv.moduleGetFunction(handle, it.name)
            g = it.launch()
            if g.smem > 48 * 1024:
                drv.funcSetAttribute(fn, getattr(drv, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES", 8), g.smem)
            dev = {k: cp.asarray(v) for k, v in g.buffers.items()}
            pointers = {k: int(v.data.ptr) for k, v in dev.items()}
            params = it.entry().params
            raw = [PK.param_bytes(p.type, p.count, a, pointers, f"{it.id} parameter {k}", encode)
                   for k, (p, a) in enumerate(zip(params, g.args))]
            holders = [(ctypes.c_char * len(b)).from_buffer_copy(b) for b in raw]
            ptrs = (ctypes.c_void_p * max(1, len(holders)))(*[ctypes.addressof(h) for h in holders])
            drv.launchKernel(fn, *g.grid, *g.block, g.smem, 0, ctypes.addressof(ptrs), 0)
            cp.cuda.runtime.deviceSynchronize()
            done.append({"index": it.index, "pointers": pointers})
        except Exception as ex:          # a launch the GPU refused: recorded, the others go on
            done.append({"index": it.index, "error": f"launch: {type(ex).__name__}: {runner.one_line(ex)}"})
    with open(os.path.join(work, "launched.json"), "w") as f:
        json.dump(done, f)


# ---------------------------------------------------------------------------------------------
# measure

def _device() -> tuple[dict[str, Any], int]:
    """The GPU and its compute capability, from nvidia-smi (no CUDA context here: the kernels run in
    the process ncu starts)."""
    from ..banks.access import _device as device
    info, arch = device()
    return info, int(arch[3:])


def _ncu(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True)


def measure(out: str, forms: list[str] | None = None, say=print) -> str:
    """Build, profile and record every launch of the plan into ``out/ptx_ncu.npz``; returns its path.
    The build, the plan and Nsight Compute's report stay in a work folder (its path is printed)."""
    t0 = time.time()
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="fragsim-ptx-ncu-")
    say(f"work folder (cubins, SASS, the ncu report): {work}")
    ncu = find_ncu()
    info, cc = _device()
    if cc < 90:
        raise NcuUnavailable(f"ptx_ncu needs an sm_90 GPU (the corpus's sm_90a kernels); {info['device']} has "
                             f"compute capability {cc / 10}")
    items = plan(forms)
    failed = build(items, work, cc, say)
    entries: list[dict[str, Any]] = [{"index": it.index, "kind": it.kind, "kernel": it.kernel, "file": it.file, "id": it.id,
                "name": it.name, "error": failed.get(it.index, "")} for it in items]
    with open(os.path.join(work, "plan.json"), "w") as f:
        json.dump(entries, f)
    rep = os.path.join(work, "ptx_ncu")
    avail = _available(ncu)
    names = [m for m in METRICS if avail is None or m.split(".")[0] in avail]
    base = [ncu, "--clock-control", "none", "--cache-control", "none", "-k", r"regex:^fs[0-9]+__", "-f", "-o", rep,
            "--metrics", ",".join(names)]
    launcher = [sys.executable, "-m", "fragsim.gpu_check.ptx.traffic", "launch", work]
    source_counters = True
    r = _ncu(base + ["--section", "SourceCounters"] + launcher)
    if r.returncode != 0:           # an ncu without that section: the counters alone
        say(f"ncu with --section SourceCounters failed ({runner.one_line(r.stderr + r.stdout)}); again without")
        source_counters = False
        r = _ncu(base + launcher)
    if r.returncode != 0 or not os.path.exists(rep + ".ncu-rep"):
        tail = (r.stderr + r.stdout).strip().splitlines()[-6:]
        raise NcuUnavailable(f"ncu failed (exit {r.returncode}): {' | '.join(tail)}")
    say(f"profiled in {time.time() - t0:.0f} s")
    if not os.path.exists(os.path.join(work, "launched.json")):      # the launch process died under ncu
        tail = (r.stderr + r.stdout).strip().splitlines()[-6:]
        raise NcuUnavailable(f"the launch process wrote nothing: {' | '.join(tail)}")
    with open(os.path.join(work, "launched.json")) as f:
        launched = {x["index"]: x for x in json.load(f)}
    details = _ncu([ncu, "-i", rep + ".ncu-rep", "--csv", "--print-units", "base", "--page", "details"])
    results: dict[int, dict[str, float]] = {}          # plan index -> the launch's counters
    for kname, vals in parse_ncu_csv(details.stdout):
        found = re.match(r"fs(\d+)__", kname.strip())
        if found:
            results[int(found.group(1))] = vals
    ok = [e for e in entries if not launched.get(e["index"], {}).get("error") and not e["error"]]

    page = [ncu, "-i", rep + ".ncu-rep", "--page", "source", "--csv", "--print-source", "sass"]

    def source(e: dict[str, Any]) -> str:
        if not source_counters:
            return ""
        r = _ncu(page + ["-k", f"regex:^fs{e['index']}__"])
        return r.stdout if r.returncode == 0 else f"ERROR {runner.one_line(r.stderr + r.stdout)}"

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        pages = dict(zip([e["index"] for e in ok], pool.map(source, ok)))
    if pages and all(p.startswith("ERROR") for p in pages.values()):
        # an ncu whose import takes no kernel filter: every page holds every kernel (source_rows finds its own)
        r = _ncu(page)
        say(f"the source page per kernel failed ({next(iter(pages.values()))[6:200]}); the whole report's: "
            f"{'ok' if r.returncode == 0 else runner.one_line(r.stderr)}")
        if r.returncode == 0:
            pages = dict.fromkeys(pages, r.stdout)
    for e in entries:
        got = launched.get(e["index"], {})
        e["error"] = e["error"] or got.get("error", "") or ("" if e["index"] in results else "not profiled by ncu")
        e["pointers"] = got.get("pointers", {})
    arrays: dict[str, np.ndarray] = {}
    for m in names:
        arrays[f"m_{m}"] = np.array([int(results.get(e["index"], {}).get(m, -1)) for e in entries], np.int64)
    for e in entries:
        i = e["index"]
        arrays[f"source_{i}"] = _bytes(pages.get(i, ""))
        sass = os.path.join(work, "build", f"{i}.sass")
        arrays[f"sass_{i}"] = _bytes(Path(sass).read_text() if os.path.exists(sass) else "")
    meta = {"device": info, "ncu": ncu_version(ncu), "date": time.strftime("%Y-%m-%d"), "plan": entries,
            "metrics": names, "source_counters": source_counters,
            "command": "python -m fragsim.gpu_check.ptx.traffic measure --out DIR"}
    path = record.save(os.path.join(out, RECORD), RECORD_KIND, meta, arrays)
    say(f"wrote {path}: {sum(not e['error'] for e in entries)} of {len(entries)} launches measured, "
        f"{time.time() - t0:.0f} s")
    return path


def _available(ncu: str) -> set[str] | None:
    from ..banks.ncu import available_metrics
    return available_metrics(ncu)


def _bytes(text: str) -> np.ndarray:
    return np.frombuffer(text.encode(), np.uint8)


# ---------------------------------------------------------------------------------------------
# reading the record

def load(path: str) -> dict[str, Any]:
    """A record: {"meta", "metrics": {metric: (launches,)}, "source": {index: text}, "sass": {index: text}}."""
    meta, arrays = record.load(path, (RECORD_KIND,))
    text = {k: bytes(v).decode() for k, v in arrays.items() if k.startswith(("source_", "sass_"))}
    return {"meta": meta, "metrics": {k[2:]: v for k, v in arrays.items() if k.startswith("m_")},
            "source": {int(k[7:]): v for k, v in text.items() if k.startswith("source_")},
            "sass": {int(k[5:]): v for k, v in text.items() if k.startswith("sass_")}}


@dataclass
class Sass:
    """One SASS instruction: byte offset in its function, text, PTX line (0: none)."""

    offset: int
    text: str
    line: int

    @property
    def opcode(self) -> str:
        """The mnemonic without modifiers or predicate ("LDS", "LDSM", "LDGSTS" ...)."""
        m = re.match(r"(?:@!?U?P[T0-9]+\s+)?([A-Z][A-Z0-9_]*)", self.text)
        return m.group(1) if m else ""

    @property
    def never(self) -> bool:
        return self.text.startswith(NEVER)


def sass_functions(text: str) -> dict[str, list[Sass]]:
    """``nvdisasm -g`` text -> every function's instructions with their PTX lines (the annotations of
    LINE_FILE: ``//## File "ptx", line N``), in the order nvdisasm prints the functions."""
    out: dict[str, list[Sass]] = {}
    cur: list[Sass] | None = None
    line = 0
    for raw in text.splitlines():
        m = re.match(r"\s*\.text\.(\S+):", raw)
        if m:
            cur = out.setdefault(m.group(1), [])
            line = 0
            continue
        if cur is None:
            continue
        m = re.search(r'//##\s+File\s+"([^"]*)",\s+line\s+(\d+)', raw)
        if m:
            if m.group(1) == LINE_FILE or m.group(1).endswith("/" + LINE_FILE):
                line = int(m.group(2))
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", raw)
        if m:
            cur.append(Sass(int(m.group(1), 16), m.group(2).strip(), line))
    return out


def sass_lines(text: str, function: str) -> list[Sass]:
    """The instructions of ``function`` (``sass_functions``)."""
    return sass_functions(text).get(function, [])


@dataclass
class SourceRow:
    """One SASS row of Nsight Compute's source page: address, text, the counters (-1: absent) and the
    address space the page names ("Shared", "Global", "Local"; "" where it names none)."""

    address: int
    text: str
    inst: int
    wavefronts: int
    ideal: int
    space: str = ""


def source_rows(text: str, name: str | None = None) -> list[SourceRow]:
    """``ncu --page source --print-source sass --csv`` -> its SASS rows (a header row naming an
    "Address" and a "Source" column, metric columns by name or label).  A page of several kernels
    (``fs<i>__...`` each named in a row of its own before its rows): those of kernel ``name``."""
    rows: list[SourceRow] = []
    cols: dict[str, int] = {}
    parsed = list(csv.reader(io.StringIO(text)))
    named = [i for i, row in enumerate(parsed) if any(re.match(r"fs\d+__", c.strip()) for c in row)]
    if name is not None and len({c.strip() for i in named for c in parsed[i] if re.match(r"fs\d+__", c.strip())}) > 1:
        mine = [i for i in named if any(c.strip().startswith(name) for c in parsed[i])]
        start = mine[0] if mine else len(parsed)
        stop = next((i for i in named if i > start and not any(c.strip().startswith(name) for c in parsed[i])),
                    len(parsed))
        heads = [i for i, row in enumerate(parsed[:start]) if "Address" in [c.strip().lstrip("#").strip() for c in row]]
        parsed = [parsed[h] for h in heads[-1:]] + parsed[start:stop]
    for row in parsed:
        names = [c.strip().lstrip("#").strip() for c in row]
        if "Address" in names and "Source" in names:
            cols = {"address": names.index("Address"), "source": names.index("Source")}
            for key, spellings in COLUMNS.items():
                cols[key] = next((names.index(s) for s in spellings if s in names), -1)
            cols["space"] = names.index("Address Space") if "Address Space" in names else -1
            continue
        if not cols or len(row) <= max(cols.values()):
            continue
        a = row[cols["address"]].strip()
        if not re.fullmatch(r"(0x)?[0-9a-fA-F]+", a):
            continue
        space = row[cols["space"]].strip() if cols["space"] >= 0 else ""
        rows.append(SourceRow(int(a, 16), row[cols["source"]].strip(), _number(row, cols["inst"]),
                              _number(row, cols["wavefronts"]), _number(row, cols["ideal"]),
                              "" if space == "-" else space))
    return rows


def _number(row: list[str], k: int) -> int:
    """Column ``k`` of a CSV row as an integer (-1: no such column, or not a number)."""
    try:
        return int(round(float(row[k].replace(",", "")))) if k >= 0 and row[k].strip() else -1
    except ValueError:
        return -1


def _mnemonic(text: str) -> str:
    return Sass(0, text, 0).opcode


def page_rows(functions: dict[str, list[Sass]], rows: list[SourceRow], entry: str) -> tuple[dict, str]:
    """The source page's row of each SASS instruction: {(function, offset): row}, and a note when they
    do not match.  A page holds the kernel and every function it calls (a -G build's helpers), each a
    run of consecutive addresses, in an order of its own: each run goes to the function of its length
    whose mnemonics it repeats (the entry first)."""
    runs: list[list[SourceRow]] = []
    for r in rows:
        if runs and r.address == runs[-1][-1].address + 16:
            runs[-1].append(r)
        else:
            runs.append([r])
    out: dict[tuple[str, int], SourceRow] = {}
    free = [entry] + [f for f in functions if f != entry]
    for run in runs:
        ops = [_mnemonic(r.text) for r in run]
        fn = next((f for f in free if len(functions.get(f, ())) == len(run)
                   and [s.opcode for s in functions[f]] == ops), None)
        if fn is None:
            return out, (f"a run of {len(run)} source-page rows at {run[0].address:#x} matches no function of the "
                         f"SASS ({', '.join(f'{len(v)}' for v in functions.values())} instructions)")
        free.remove(fn)
        base = run[0].address
        for r in run:
            out[(fn, r.address - base)] = r
    return out, ""


@dataclass
class LineFigures:
    """A PTX line's shared-memory SASS instructions as Nsight Compute counted them; ``idle``: the
    executions of copies that moved no data (no wavefront)."""

    sass: list[Sass] = field(default_factory=list)
    inst: int = 0
    wavefronts: int = 0
    ideal: int = 0
    idle: int = 0


def _touches_shared(s: Sass, r: SourceRow | None) -> bool:
    if s.never:
        return False
    if s.opcode in SHARED_SASS or s.opcode in WGMMA_SASS:
        return True
    return s.opcode in ("LD", "ST", "ATOM") and (r is None or r.space in ("", "Shared"))


def hardware_lines(functions: dict[str, list[Sass]], rows: list[SourceRow], entry: str,
                   ) -> tuple[dict[int, LineFigures], dict, str]:
    """Per PTX line, its shared-memory SASS instructions (never-executed ones left out; a generic
    LD/ST/ATOM only where the page names the shared space) with their source-page counters; the
    page's row of every SASS instruction; a note when the page and the SASS disagree."""
    by, note = page_rows(functions, rows, entry) if rows else ({}, "")
    on_page = {fn for fn, _ in by} or {entry}
    out: dict[int, LineFigures] = {}
    for fn, sass in functions.items():
        if fn not in on_page:
            continue
        for s in sass:
            r = by.get((fn, s.offset))
            if not _touches_shared(s, r):
                continue
            f = out.setdefault(s.line, LineFigures())
            f.sass.append(s)
            if r is not None:
                f.inst += max(r.inst, 0)
                f.wavefronts += max(r.wavefronts, 0)
                f.ideal += max(r.ideal, 0)
                if r.inst > 0 and r.wavefronts == 0:
                    f.idle += r.inst
    return out, by, note


@dataclass
class Comparison:
    """One launch: ``totals`` [(metric, fragsim, ncu)] that differ; per PTX line compared, the
    (line, what, fragsim, ncu) that differ; the lines not compared, and why; ``adjusted``: what the
    comparison took from the SASS because the PTX does not show it [(what, executions)]."""

    id: str
    totals: list[tuple[str, int, int]] = field(default_factory=list)
    lines: list[tuple[int, str, int, int]] = field(default_factory=list)
    compared: int = 0
    not_compared: list[tuple[int, str]] = field(default_factory=list)
    adjusted: list[tuple[str, int]] = field(default_factory=list)
    waits: int = 0          # of ``adjusted``: WARPSYNC executions, op_misc the hardware may not count
    note: str = ""
    error: str = ""


def run_fragsim(it: Item, pointers: dict[str, int]):
    """``run_kernel(report=True)`` of the launch, its buffers (and tensor maps' tensors) at the recorded
    device addresses."""
    from fragsim.ptx.memory import Buffer
    from fragsim.ptx.run import run_kernel
    g = it.launch()
    maps = [a.buffer for a in g.args if isinstance(a, PK.MapArg)]
    at = {**{b: PK.PIN + i * PK.PIN_SLOT for i, b in enumerate(maps)}, **pointers}
    bufs = {k: Buffer(v.copy(), address=at.get(k)) for k, v in g.buffers.items()}
    passed = {a for a in g.args if isinstance(a, str)}

    def arg(a):
        if isinstance(a, PK.MapArg):      # a tensor map over the buffer at its device address
            tm = a.tensor_map(at[a.buffer])
            return tm if a.buffer in passed else (tm, bufs[a.buffer].data)
        return bufs[a] if isinstance(a, str) else a
    args = [arg(a) for a in g.args]
    ptx = str(PK.corpus() / it.file) if it.kind == "corpus" else TK.BY_NAME[it.kernel].ptx()
    return run_kernel(ptx, it.entry().name, grid=g.grid, block=g.block, args=args, dynamic_smem=g.smem, report=True)


def _ptx_instructions(it: Item) -> dict[int, A.Instr]:
    module = parse(it.text())
    return {ins.line: ins for f in module.functions.values() if f.defined for ins in f.body
            if isinstance(ins, A.Instr)}


def compare_one(rec: dict[str, Any], k: int) -> Comparison:
    """Launch ``k`` of the record (its position in the plan) against fragsim."""
    e = rec["meta"]["plan"][k]
    it = item_of(e)
    c = Comparison(it.id)
    if e["error"]:
        c.error = e["error"]
        return c
    run = run_fragsim(it, e["pointers"])
    assert run.shared is not None and run.totals is not None
    want = dict(run.totals)
    functions = sass_functions(rec["sass"].get(e["index"], ""))
    page = rec["source"].get(e["index"], "")
    if not functions.get(e["name"]) or not page or page.startswith("ERROR"):
        c.note = "no per-instruction data: " + (page[:200] if page.startswith("ERROR") else "no source page or SASS")
    else:
        _compare_lines(c, run, it, functions, page, e["name"], want)
    skip: tuple[str, ...] = DEBUG_UNCOMPARED if ".G." in it.file else ()
    if any(not r.modelled for r in run.shared):
        skip = skip + CAS_UNCOMPARED
        c.note = (c.note + "; " if c.note else "") + "a compare-and-swap loop: its counters not compared"
    _compare_totals(c, rec["metrics"], k, want, run.shared.barrier_misc + c.waits, skip)
    return c


def _compare_lines(c: Comparison, run, it: Item, functions: dict[str, list[Sass]], page: str, name: str,
                   want: dict[str, int]) -> None:
    """Per PTX line against the source page; what the SASS shows that the PTX does not goes into ``want``
    (the totals expected) and ``c.adjusted``."""
    hw, by, c.note = hardware_lines(functions, source_rows(page, name), name)
    on_page = {fn for fn, _ in by}              # the module's other kernels are not this launch's
    functions = {fn: ss for fn, ss in functions.items() if fn in on_page}
    ptx = _ptx_instructions(it)
    misc = 0
    for fn, sass in functions.items():          # op_misc SASS that no PTX instruction of its line explains
        for s in sass:
            r = by.get((fn, s.offset))
            if s.opcode not in MISC_SASS or s.never or r is None or r.inst <= 0:
                continue
            ins = ptx.get(s.line)
            if ins is not None and ins.opcode in MISC_SASS[s.opcode]:
                continue
            if s.opcode == "WARPSYNC" and ins is not None and ins.opcode in WARPSYNC_FREE_ON:
                continue
            misc += r.inst
            c.waits += r.inst if s.opcode == "WARPSYNC" else 0
            c.adjusted.append((f"{s.opcode} at PTX line {s.line}" + (f" ({ins.opcode})" if ins else ""), r.inst))
    rows: dict[int, list] = {}
    for r in run.shared:
        if r.kind != "wgmma":
            rows.setdefault(r.line, []).append(r)
    for line in sorted(set(rows) | set(hw)):
        mine, theirs = rows.get(line, []), hw.get(line, LineFigures())
        theirs_data = [s for s in theirs.sass if s.opcode not in WGMMA_SASS]
        ops = {s.opcode for s in theirs_data}
        if not mine:
            if theirs_data and theirs.inst > 0 and ops:
                c.lines.append((line, f"{'/'.join(sorted(ops))} executed, fragsim has no access", 0, theirs.inst))
            continue
        kinds = {(r.kind, r.generic) for r in mine}
        if len(kinds) != 1 or not theirs_data:
            c.not_compared.append((line, f"fragsim {sorted(k for k, _ in kinds)}, SASS {sorted(ops) or 'none'}"))
            continue
        kind, generic = kinds.pop()
        if not ops <= set((SASS_GENERIC if generic else SASS_OF).get(kind, ())):
            c.not_compared.append((line, f"fragsim {kind}, SASS {sorted(ops)}"))
            continue
        f = _figures(theirs_data, by, functions)
        c.compared += 1
        ex = sum(r.executions for r in mine)
        if ex != f.inst and len(theirs_data) > 1 and 0 < f.inst - ex <= f.idle:
            # ptxas split the line into copies; those that ran with no lane on are idle executions
            d = f.inst - ex
            c.adjusted.append((f"{d} idle execution(s) of ptxas's copies of PTX line {line}", d))
            metric = ATOM_INST if kind == "atom" else INST_METRICS.get(kind)
            if metric and not generic:
                want[metric] += d
            misc += d
        elif ex != f.inst:
            c.lines.append((line, "executions", ex, f.inst))
        if any(not r.modelled for r in mine):
            c.not_compared.append((line, "an atomic ptxas makes a compare-and-swap loop (LDS, ATOMS.CAST.SPIN): "
                                         "its trips depend on the lanes' contention"))
            continue
        if any(r.entry is not None and not r.entry.counted for r in mine):
            c.not_compared.append((line, "cp.async.cg wavefronts: the source page shows Nsight Compute's "
                                         "SASS-instrumented estimate; the hardware counts none (the totals check it)"))
            continue
        for what, a, b in (("wavefronts", sum(r.wavefronts for r in mine), f.wavefronts),
                           ("ideal", sum(r.ideal for r in mine), f.ideal)):
            if a != b:
                c.lines.append((line, what, a, b))
    _compare_wgmma(c, run, functions, by)
    want[MISC_WAVEFRONTS] += misc
    want[SHARED_WAVEFRONTS] += misc


def _figures(sass: list[Sass], by: dict, functions: dict[str, list[Sass]]) -> LineFigures:
    """The page's figures summed over ``sass`` (instructions of any function)."""
    f = LineFigures(sass=sass)
    where = {id(s): fn for fn, ss in functions.items() for s in ss}
    for s in sass:
        r = by.get((where[id(s)], s.offset))
        if r is None:
            continue
        f.inst += max(r.inst, 0)
        f.wavefronts += max(r.wavefronts, 0)
        f.ideal += max(r.ideal, 0)
        if r.inst > 0 and r.wavefronts == 0:
            f.idle += r.inst
    return f


def _compare_wgmma(c: Comparison, run, functions: dict[str, list[Sass]], by: dict) -> None:
    """wgmma rows against the HGMMA (and kin) instructions in order: ptxas keeps the wgmma.mma_async
    of the PTX in their order, but gives some the .loc of a neighbour (an add, a fence)."""
    mine = [r for r in run.shared if r.kind == "wgmma"]
    if not mine:
        return
    theirs = [(fn, s) for fn, ss in functions.items() for s in ss if s.opcode in WGMMA_SASS]
    if len(theirs) != len(mine):
        c.not_compared += [(r.line, f"wgmma: {len(mine)} in the PTX, {len(theirs)} HGMMA in the SASS") for r in mine]
        return
    for r, (fn, s) in zip(mine, theirs):
        p = by.get((fn, s.offset))
        if p is None:
            continue
        c.compared += 1
        for what, a, b in (("executions", r.executions, p.inst), ("wavefronts", r.wavefronts, p.wavefronts),
                           ("ideal", r.ideal, p.ideal)):
            if a != b:
                c.lines.append((r.line, f"wgmma {what} (SASS {s.offset:#x})", a, b))


def _compare_totals(c: Comparison, m: dict[str, np.ndarray], k: int, want: dict[str, int], barrier: int,
                    skip: tuple[str, ...]) -> None:
    def got(metric: str) -> int:
        return int(m[metric][k]) if metric in m and m[metric][k] >= 0 else -1

    for metric in COMPARED:
        n = got(metric)
        if n < 0 or metric in skip:
            continue
        a = want[metric]
        if metric in BARRIER_BOUND and barrier:
            if not a - barrier <= n <= a:
                c.totals.append((f"{metric} (fragsim: {a - barrier:,} to {a:,})", a, n))
        elif a != n:
            c.totals.append((metric, a, n))
    # cp.async has no wavefront counter: the shared total less every other op's
    rest = [got(x) for x in (SHARED_WAVEFRONTS, MISC_WAVEFRONTS, LD_WAVEFRONTS, ST_WAVEFRONTS)]
    if min(rest) < 0 or SHARED_WAVEFRONTS in skip:
        return
    ncu = rest[0] - sum(rest[1:]) - max(got(ATOM_WAVEFRONTS), 0)
    mine = want[SHARED_WAVEFRONTS] - want[MISC_WAVEFRONTS] - want[LD_WAVEFRONTS] - want[ST_WAVEFRONTS] \
        - want[ATOM_WAVEFRONTS]
    what = "ldgsts + gmma wavefronts (shared total - op_misc - op_ld - op_st - op_atom)"
    if got(GMMA_WAVEFRONTS) >= 0:
        ncu -= got(GMMA_WAVEFRONTS)
        mine -= want[GMMA_WAVEFRONTS]
        what = "ldgsts wavefronts (shared total - op_misc - op_ld - op_st - op_atom - op_gmma)"
    if abs(mine - ncu) > barrier:      # the total and op_misc come from different replays: each its own barrier part
        c.totals.append((what + (f" (fragsim: {mine - barrier:,} to {mine + barrier:,})" if barrier else ""), mine, ncu))


def compare(folder: str, forms: list[str] | None = None, say=print, cases: int | None = None) -> list[Comparison]:
    """Every launch of ``folder``'s record against fragsim (``forms``: ids containing one of them;
    ``cases``: the first that many)."""
    path = folder if folder.endswith(".npz") else os.path.join(folder, RECORD)
    rec = load(path)
    out: list[Comparison] = []
    for k, e in enumerate(rec["meta"]["plan"]):
        if forms and not any(f in e["id"] for f in forms):
            continue
        if cases is not None and len(out) >= cases:
            break
        c = compare_one(rec, k)
        out.append(c)
        state = ("not measured: " + c.error) if c.error else (
            "agrees" if not c.totals and not c.lines else "differs")
        say(f"{c.id}: {state}; {c.compared} line(s) compared, {len(c.not_compared)} not" + (f" ({c.note})" if c.note else ""))
        for metric, a, b in c.totals:
            say(f"  {metric}: fragsim {a:,}, ncu {b:,}")
        for line, what, a, b in c.lines:
            say(f"  PTX line {line} {what}: fragsim {a:,}, ncu {b:,}")
        for line, why in c.not_compared:
            say(f"  PTX line {line} not compared: {why}")
        for what, n in c.adjusted:
            say(f"  from the SASS: {what}: {n:,}")
    return out


# ---------------------------------------------------------------------------------------------
# the family (``fragsim gpu-check --family ptx_ncu``)

class PtxNcuFamily(RunnerFamily):
    name = "ptx_ncu"
    summary = ("shared-memory traffic of whole kernels (the PTX corpus and one-pattern kernels) under Nsight "
               "Compute vs fragsim's run.totals and run.shared, per kernel and per PTX line (--cases: the first N)")
    default_cases = 10_000
    options = frozenset({"cases", "forms", "record", "replay", "quiet", "json", "json_file"})
    replay_expects = f"a folder with the {RECORD} that --family ptx_ncu --record wrote"

    def source(self, cc: int) -> str:
        """The one-pattern kernels (the corpus's PTX is the committed one)."""
        return TK.module_source()

    def compile(self, info: dict[str, Any]) -> Any:
        return None

    def check(self, args: argparse.Namespace, info: dict[str, Any], say) -> dict[str, Any]:
        folder = args.record or tempfile.mkdtemp(prefix="fragsim-ptx-ncu-")
        try:
            measure(folder, args.forms, say)
        except NcuUnavailable as e:
            raise runner.GpuUnavailable(str(e)) from None
        return self._summary(compare(folder, args.forms, say, args.cases))

    def replay_cases(self, args: argparse.Namespace, say) -> dict[str, Any]:
        path = os.path.join(args.replay, RECORD)
        if not os.path.isfile(path):
            raise ValueError(f"--replay {args.replay}: no {RECORD} there; expected {self.replay_expects}")
        return self._summary(compare(args.replay, args.forms, say, args.cases))

    @staticmethod
    def _summary(cs: list[Comparison]) -> dict[str, Any]:
        measured = [c for c in cs if not c.error]
        return {"cases": len(measured), "mismatches": sum(bool(c.totals or c.lines) for c in measured),
                "lines_compared": sum(c.compared for c in measured), "not_measured": len(cs) - len(measured)}


FAMILIES = {"ptx_ncu": PtxNcuFamily()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fragsim.gpu_check.ptx.traffic", description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="build, profile under ncu and record every launch, then compare")
    m.add_argument("--out", required=True, help="folder for the record (ptx_ncu.npz)")
    m.add_argument("--forms", nargs="+", help="only launches whose id contains one of these")
    la = sub.add_parser("launch", help="(run under ncu by measure) launch every built kernel once")
    la.add_argument("work", help="the work folder measure made")
    c = sub.add_parser("compare", help="fragsim vs a record")
    c.add_argument("record", help="the record's folder (or the .npz)")
    c.add_argument("--forms", nargs="+")
    args = p.parse_args(argv)
    try:
        if args.cmd == "measure":
            measure(args.out, args.forms)
            compare(args.out, args.forms)
        elif args.cmd == "launch":
            launch(args.work)
        else:
            compare(args.record, args.forms)
    except (NcuUnavailable, runner.GpuUnavailable) as e:
        sys.stderr.write(f"ptx_ncu: {e}\n")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
