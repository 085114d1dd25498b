"""Bulk cross-check: many cases per instruction, hardware against fragsim, bit for bit.

``check(backend, ops, cases, ...)`` generates inputs in chunks (seeded; mma inputs in
worker processes), runs each chunk on the backend (the GPU, a recorded corpus, or —
in a dry run — fragsim itself), runs the same chunk through fragsim's models, and
counts the cases whose outputs differ in any bit.  It can record what the hardware
said (``Recorder``) and run the named probe cases of the arithmetic reference.

Backends:
- ``GpuBackend``    the table's kernels on the GPU (CuPy, NVRTC through ``compile.nvrtc``)
- ``ReplayBackend`` the inputs and outputs of recorded corpora (no GPU needed)
- ``ModelBackend``  fragsim standing in for the GPU: checks the pipeline, not the model
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import fragsim
from fragsim.facts.arch import DEFAULT_ARCH, arch_for_cc, get_arch
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions import FORMS, lookup, parse_shared_op

from .. import compile, corpus, runner
from . import generate as G
from .. import kernels as K
from ..prelude import THREADS_PER_BLOCK, TILE_BYTES, WARPS_PER_BLOCK

DEFAULT_CHUNK = 1 << 16
SHARED_LOOP_PART = 4096      # cases per worker task for per-case shared-memory models


def canonical(op: str) -> str:
    return K.kernel_for(op).op


# ---------------------------------------------------------------------------------------
# fragsim's side

def _case_tiles(inp):
    return inp["tiles"][inp["tile_idx"]]


def _loop_shared(op, tiles, addrs, mask, payload):
    """Per-case model of a store (or masked load): one fragsim call per warp."""
    sop = parse_shared_op(op)
    n = addrs.shape[0]
    if sop.kind == "ld":
        out = np.zeros((n, WARP_LANES, sop.nregs), np.uint32)
        for i in range(n):
            out[i] = fragsim.ld_shared(tiles[i], addrs[i], sop.bytes_per_addr, int(mask[i]), sop.element_bytes)
        return out
    res = tiles.copy()
    for i in range(n):
        sm = res[i]
        if sop.kind == "stsm":
            fragsim.stmatrix(sm, addrs[i], payload[i], sop.num, sop.trans)
        elif sop.kind == "st":
            fragsim.st_shared(sm, addrs[i], payload[i], sop.bytes_per_addr, int(mask[i]), sop.element_bytes)
        else:
            fragsim.cp_async(sm, addrs[i], payload[i][:, :sop.bytes_per_addr], sop.bytes_per_addr, int(mask[i]),
                             level=sop.level)
    return res


def _parallel_loop(op, tiles, addrs, mask, payload, pool):
    n = addrs.shape[0]
    if pool is None or n <= SHARED_LOOP_PART:
        return _loop_shared(op, tiles, addrs, mask, payload)
    futs = []
    for s in range(0, n, SHARED_LOOP_PART):
        e = min(n, s + SHARED_LOOP_PART)
        futs.append(pool.submit(_loop_shared, op, tiles[s:e], addrs[s:e], mask[s:e],
                                None if payload is None else payload[s:e]))
    return np.concatenate([f.result() for f in futs])


def _side_by_side(load, tiles: np.ndarray, addrs: np.ndarray) -> np.ndarray:
    """A full-warp load of every case at once: as many cases' tiles side by side as one CTA's shared
    memory holds, each case's addresses moved to its tile."""
    per = max(1, get_arch(DEFAULT_ARCH).smem_per_cta // TILE_BYTES)
    parts = []
    for s in range(0, max(len(tiles), 1), per):     # no cases: one empty load, for the output's shape
        t = tiles[s:s + per]
        parts.append(load(t.reshape(-1), addrs[s:s + per] + (np.arange(len(t), dtype=np.int64) * TILE_BYTES)[:, None]))
    return np.concatenate(parts)


def model_outputs(op: str, inp: dict, arch: str, pool=None) -> dict:
    """What fragsim says the instruction produces for these inputs."""
    k = K.kernel_for(op)
    if k.kind == "mma":
        return {"d": np.asarray(fragsim.mma(k.op, inp["a"], inp["b"], inp["c"], arch=arch), np.uint32)}
    sop = parse_shared_op(k.op)
    n = inp["addrs"].shape[0]
    tiles = _case_tiles(inp)
    addrs = inp["addrs"].astype(np.int64)
    if sop.kind == "ldsm":
        return {"out": _side_by_side(lambda smem, a: fragsim.ldmatrix(smem, a, sop.num, sop.trans), tiles, addrs)}
    if sop.kind == "ld":
        out = np.zeros((n, WARP_LANES, sop.nregs), np.uint32)
        full = inp["mask"] == G.FULL_WARP
        if full.any():
            fi = np.flatnonzero(full)
            out[fi] = _side_by_side(lambda smem, a: fragsim.ld_shared(smem, a, sop.bytes_per_addr,
                                                                      element_bytes=sop.element_bytes),
                                    tiles[fi], addrs[fi])
        pi = np.flatnonzero(~full)
        if pi.size:
            out[pi] = _parallel_loop(k.op, tiles[pi], addrs[pi], inp["mask"][pi], None, pool)
        return {"out": out}
    payload = {"stsm": "regs", "st": "vals", "ldgsts": "src"}[sop.kind]
    return {"smem_out": _parallel_loop(k.op, tiles, addrs, inp["mask"], inp[payload], pool)}


def mismatching(hw: dict, exp: dict) -> np.ndarray:
    """Bool (n,): cases whose outputs differ in any bit."""
    key = next(iter(exp))
    a, b = np.asarray(hw[key]), np.asarray(exp[key])
    if a.shape != b.shape:
        raise ValueError(f"output shapes differ: hardware {a.shape}, model {b.shape}")
    return (a != b).reshape(a.shape[0], -1).any(axis=1)


# ---------------------------------------------------------------------------------------
# mismatch details

def _hex(v, bits):
    return f"{int(v):#0{bits // 4 + 2}x}"


def describe(op: str, inp: dict, hw: dict, exp: dict, i: int, case_no: int) -> dict:
    """A JSON-able account of case ``i`` (number ``case_no`` in the run): the first output
    element that differs, the inputs that feed it, expected (fragsim) and got (GPU)."""
    k = K.kernel_for(op)
    tag = inp["tag_names"][int(inp["tag"][i])] if "tag" in inp else ""
    if k.kind == "mma":
        form = lookup(k.op)
        fa, fb, fc, fd = (form.fmt(x) for x in "ABCD")
        got = fragsim.unpack(form, "D", hw["d"][i])
        want = fragsim.unpack(form, "D", exp["d"][i])
        A = fragsim.unpack(form, "A", inp["a"][i])
        B = fragsim.unpack(form, "B", inp["b"][i])
        Cm = fragsim.unpack(form, "C", inp["c"][i])
        diff = np.argwhere(got != want)
        r, c = (int(x) for x in diff[0])
        lane, reg, half = (int(x[r, c]) for x in form.owner("D"))
        return {"op": k.op, "case": case_no, "class": tag, "row": r, "col": c,
                "lane": lane, "reg": reg, "half": half, "differing_outputs": int(diff.shape[0]),
                "a_row": [_hex(x, fa.storage_bits) for x in A[r]],
                "b_col": [_hex(x, fb.storage_bits) for x in B[:, c]],
                "c": _hex(Cm[r, c], fc.storage_bits),
                "expected": _hex(want[r, c], fd.storage_bits), "got": _hex(got[r, c], fd.storage_bits)}
    addrs = [int(x) for x in inp["addrs"][i]]
    base = {"op": k.op, "case": case_no, "class": tag, "addrs": addrs, "mask": _hex(inp["mask"][i], WARP_LANES)}
    if "out" in exp:
        g, w = hw["out"][i], exp["out"][i]
        lane, reg = (int(x) for x in np.argwhere(g != w)[0])
        base.update(lane=lane, reg=reg, expected=_hex(w[lane, reg], 32), got=_hex(g[lane, reg], 32),
                    differing_words=int((g != w).sum()))
        return base
    g, w = hw["smem_out"][i], exp["smem_out"][i]
    off = int(np.argwhere(g != w)[0][0])
    before = inp["tiles"][inp["tile_idx"][i]][off]
    base.update(byte=off, before=_hex(before, 8), expected=_hex(w[off], 8), got=_hex(g[off], 8),
                differing_bytes=int((g != w).sum()))
    return base


def format_detail(d: dict) -> str:
    head = f"  {d['op']} case {d['case']:,} ({d['class']})"
    if "row" in d:
        return (f"{head}: D[{d['row']},{d['col']}] (lane {d['lane']} reg {d['reg']} half {d['half']}), "
                f"{d['differing_outputs']} outputs differ\n"
                f"    A row {d['row']}: {' '.join(d['a_row'])}\n"
                f"    B col {d['col']}: {' '.join(d['b_col'])}\n"
                f"    C = {d['c']}   expected (fragsim) {d['expected']}   got (GPU) {d['got']}")
    if "lane" in d:
        return (f"{head}: lane {d['lane']} reg {d['reg']}: expected {d['expected']} got {d['got']} "
                f"({d['differing_words']} words differ)\n    addrs {d['addrs']} mask {d['mask']}")
    return (f"{head}: byte {d['byte']:#x} (was {d['before']}): expected {d['expected']} got {d['got']} "
            f"({d['differing_bytes']} bytes differ)\n    addrs {d['addrs']} mask {d['mask']}")


# ---------------------------------------------------------------------------------------
# recording

class Recorder:
    """Keeps the first ``max_cases`` cases of each op (and every mismatching case) and
    writes one corpus file per op."""

    def __init__(self, directory: str, info: dict, max_cases: int = 20000):
        self.directory = directory
        self.info = info
        self.max_cases = max_cases
        self.inputs: dict[str, list] = {}
        self.outputs: dict[str, list] = {}
        self.kept: dict[str, int] = {}
        self.paths: list[str] = []

    def add(self, op: str, inp: dict, hw: dict, bad=None, force=False):
        op = canonical(op)
        n = len(inp["tag"])
        room = max(0, self.max_cases - self.kept.get(op, 0))
        take = np.arange(n) < (n if force else room)
        if bad is not None:
            take |= bad
        idx = np.flatnonzero(take)
        if not idx.size:
            return
        self.inputs.setdefault(op, []).append(corpus.subset(inp, idx))
        self.outputs.setdefault(op, []).append(corpus.subset(hw, idx))
        self.kept[op] = self.kept.get(op, 0) + int(idx.size)

    def flush(self, op: str, extra_meta=None):
        op = canonical(op)
        if op not in self.inputs:
            return None
        path = corpus.save(self.directory, op, corpus.concat(self.inputs.pop(op)), corpus.concat(self.outputs.pop(op)),
                      self.info, extra_meta)
        self.paths.append(path)
        return path


# ---------------------------------------------------------------------------------------
# backends

class GpuBackend:
    """The table's kernels on device 0, one warp per case: ``run(op, inputs) -> outputs`` with the
    array conventions of ``kernels.py`` and ``generate.py``.  Compiles the kernels of ``ops`` (default:
    every op the device has, each entry's ``min_cc``) with NVRTC; ``GpuUnavailable`` in one line when
    CuPy, a driver, a GPU or NVRTC is missing."""

    def __init__(self, ops: Sequence[str] | None = None):
        cp = runner.import_cupy()
        self.cp = cp
        self.info = runner.device_info(cp)
        cc = self.info["cc_int"]
        self.arch = arch_for_cc(cc // 10, cc % 10, self.info["device"])
        self.info["arch"] = self.arch
        available = K.all_ops(cc)
        ops = available if ops is None else ops
        missing = [K.kernel_for(o) for o in ops if K.kernel_for(o).op not in available]
        if missing:
            raise ValueError(f"{self.info['device']} (compute capability {self.info['cc']}) lacks "
                             + ", ".join(f"{k.op} (needs {k.min_cc // 10}.{k.min_cc % 10})" for k in missing))
        self.kernels = {k.op: k for k in K.kernels(cc, ops)}
        fns = compile.nvrtc(K.module_source(cc, list(self.kernels)), [k.name for k in self.kernels.values()],
                            f"the kernels for compute capability {self.info['cc']}", cp)
        self.functions = {op: fns[k.name] for op, k in self.kernels.items()}

    def available_ops(self) -> list[str]:
        return K.all_ops(self.info["cc_int"])

    def _launch(self, op: str, n: int, *args: Any) -> None:
        blocks = (n + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK
        self.functions[op]((blocks,), (THREADS_PER_BLOCK,), args + (np.int64(n),))

    def run(self, op: str, inp: dict) -> dict:
        cp = self.cp
        k = self.kernels[K.kernel_for(op).op]
        if k.kind == "mma":
            a, b, c = (cp.asarray(np.ascontiguousarray(inp[x], dtype=np.uint32)) for x in "abc")
            n = a.shape[0]
            d = cp.empty((n, WARP_LANES, k.nregs_out()), dtype=cp.uint32)
            if n:
                self._launch(k.op, n, a, b, c, d)
            return {"d": cp.asnumpy(d)}
        n = inp["addrs"].shape[0]
        smem = cp.asarray(np.ascontiguousarray(inp["tiles"][inp["tile_idx"]]))
        addrs = cp.asarray(np.ascontiguousarray(inp["addrs"], dtype=np.uint32))
        if k.kind in ("ldsm", "ld"):
            out = cp.zeros((n, WARP_LANES, k.nregs_out()), dtype=cp.uint32)
            if n:
                if k.kind == "ldsm":
                    self._launch(k.op, n, smem, addrs, out)
                else:
                    mask = cp.asarray(np.ascontiguousarray(inp["mask"], dtype=np.uint32))
                    self._launch(k.op, n, smem, addrs, mask, out)
            return {"out": cp.asnumpy(out)}
        smem_out = cp.empty((n, TILE_BYTES), dtype=cp.uint8)
        if n:
            if k.kind == "stsm":
                regs = cp.asarray(np.ascontiguousarray(inp["regs"], dtype=np.uint32))
                self._launch(k.op, n, smem, addrs, regs, smem_out)
            else:
                mask = cp.asarray(np.ascontiguousarray(inp["mask"], dtype=np.uint32))
                payload = inp["vals"] if k.kind == "st" else inp["src"]
                pay = cp.asarray(np.ascontiguousarray(payload))
                self._launch(k.op, n, smem, addrs, mask, pay, smem_out)
        return {"smem_out": cp.asnumpy(smem_out)}


class ModelBackend:
    """fragsim in place of the GPU (dry run): every case agrees by construction."""

    def __init__(self, arch=DEFAULT_ARCH, pool=None):
        row = get_arch(arch)
        self.arch = row.name
        self.cc = row.cc
        self.pool = pool
        self.info = {"device": "fragsim dry run (no GPU: the model stands in for the hardware)",
                     "cc": f"{row.cc // 10}.{row.cc % 10}", "arch": row.name, "driver": "-",
                     "cuda_runtime": "-", "cuda_driver_api": "-", "nvrtc": "-", "date": _now()}

    def available_ops(self):
        return K.all_ops(self.cc)

    def run(self, op, inp):
        return model_outputs(op, inp, self.arch, self.pool)


class ReplayBackend:
    """Recorded corpora as the hardware: inputs and outputs come from the files."""

    def __init__(self, directory: str):
        paths = corpus.find(directory)
        if not paths:
            raise ValueError(f"no corpus files (*.npz) under {directory}")
        self.corpora: dict[str, list[corpus.Corpus]] = {}
        for p in paths:
            c = corpus.load(p)
            self.corpora.setdefault(canonical(c.op), []).append(c)
        first = next(iter(self.corpora.values()))[0]
        self.info = {k: first.meta.get(k, "-") for k in ("device", "cc", "arch", "driver", "cuda_runtime",
                                                          "cuda_driver_api", "nvrtc", "date")}
        devices = sorted({c.meta.get("device", "-") for cs in self.corpora.values() for c in cs})
        self.info["device"] = f"replay of {directory} ({', '.join(devices)})"
        archs = {c.arch for cs in self.corpora.values() for c in cs}
        if len(archs) != 1:
            raise ValueError(f"corpora under {directory} mix architectures ({', '.join(sorted(archs))}); "
                             f"replay one architecture at a time")
        self.arch = archs.pop()

    def available_ops(self):
        """The recorded ops, in the instruction table's order."""
        order = {op: i for i, op in enumerate(list(FORMS) + list(K.SHARED_OPS))}
        return sorted(self.corpora, key=lambda op: order.get(op, len(order)))

    def count(self, op, cases):
        """How many of ``cases`` the recordings of ``op`` hold."""
        return min(cases, sum(len(c) for c in self.corpora.get(canonical(op), [])))

    def batches(self, op, cases, chunk):
        done = 0
        for c in self.corpora.get(canonical(op), []):
            n = min(len(c), cases - done)
            for s in range(0, n, chunk):
                part = c.take(np.arange(s, min(n, s + chunk)))
                yield part.inputs(), part.outputs()
            done += n
            if done >= cases:
                return


def _now():
    import datetime
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# ---------------------------------------------------------------------------------------
# the run

@dataclass
class OpResult:
    op: str
    ptx: str
    cases: int = 0
    mismatches: int = 0
    seconds: float = 0.0
    t_generate: float = 0.0
    t_device: float = 0.0
    t_model: float = 0.0
    compared: bool = True
    note: str = ""
    first: list = field(default_factory=list)

    def json(self) -> dict:
        return {"op": self.op, "ptx": self.ptx, "cases": self.cases, "mismatches": self.mismatches,
                "compared": self.compared, "note": self.note, "seconds": round(self.seconds, 2),
                "seconds_generate": round(self.t_generate, 2), "seconds_device": round(self.t_device, 2),
                "seconds_model": round(self.t_model, 2), "first_mismatches": self.first}


def _gen(op: str, n: int, seed) -> dict:
    rng = np.random.default_rng(seed)
    k = K.kernel_for(op)
    if k.kind == "mma":
        return G.mma_inputs(k.op, n, rng)
    return G.shared_inputs(k.op, n, rng)


def _chunks(n, chunk):
    return [(s, min(n, s + chunk) - s) for s in range(0, n, chunk)]


def _generated_batches(op, cases, chunk, seed, pool, prefetch=4):
    """Inputs chunk by chunk; each chunk has its own child seed, so results do not depend
    on the chunking into workers.  Generation runs ``prefetch`` chunks ahead in ``pool``."""
    plan = _chunks(cases, chunk)
    seeds = np.random.SeedSequence([seed, sum(map(ord, canonical(op)))]).spawn(len(plan))
    if pool is None:
        for (_, size), s in zip(plan, seeds):
            yield _gen(op, size, s)
        return
    futs = []
    for (_, size), s in zip(plan, seeds):
        futs.append(pool.submit(_gen, op, size, s))
        if len(futs) > prefetch:
            yield futs.pop(0).result()
    for f in futs:
        yield f.result()


class Progress:
    def __init__(self, stream=None, quiet=False):
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.last = 0.0
        self.shown: tuple | None = None     # (op, cases, mismatches) of the last line written

    def update(self, op, done, total, bad, t0, final=False):
        """A line for ``op`` at most every 0.5 s on a terminal (10 s otherwise), and its last one; a
        final count already shown (an op done in one chunk) is not shown again: on a terminal the
        line is ended, elsewhere nothing is written."""
        if self.quiet:
            return
        now = time.time()
        if not final and now - self.last < (0.5 if self.tty else 10.0):
            return
        self.last = now
        again = final and self.shown == (op, done, bad)
        self.shown = (op, done, bad)
        msg = f"{op}: {done:,}/{total:,} cases, {bad:,} mismatches, {now - t0:.1f} s"
        if self.tty:
            self.stream.write("\n" if again else "\r" + msg + ("\n" if final else ""))
        elif not again:
            self.stream.write(msg + "\n")
        self.stream.flush()


def check_op(backend, op, cases, *, seed=0, chunk=DEFAULT_CHUNK, pool=None, recorder=None,
             record_only=False, details=5, progress=None) -> OpResult:
    k = K.kernel_for(op)
    res = OpResult(k.op, k.ptx)
    t0 = time.time()
    compare = not record_only
    if record_only:
        res.note = "recorded, not compared"
    res.compared = compare
    if isinstance(backend, ReplayBackend):
        source = backend.batches(op, cases, chunk)
        cases = backend.count(op, cases)
    else:
        def gen_then_run():
            for inp in _generated_batches(op, cases, chunk, seed, pool):
                t = time.time()
                hw = backend.run(op, inp)
                res.t_device += time.time() - t
                yield inp, hw
        source = gen_then_run()
    t_wait = 0.0
    while True:
        t = time.time()
        try:
            inp, hw = next(source)
        except StopIteration:
            break
        t_wait += time.time() - t
        n = len(inp["tag"])
        bad = None
        if compare:
            t = time.time()
            exp = model_outputs(op, inp, backend.arch, pool)
            res.t_model += time.time() - t
            bad = mismatching(hw, exp)
            for i in np.flatnonzero(bad)[: max(0, details - len(res.first))]:
                res.first.append(describe(op, inp, hw, exp, int(i), res.cases + int(i)))
            res.mismatches += int(bad.sum())
        if recorder is not None:
            recorder.add(op, inp, hw, bad)
        res.cases += n
        if progress:
            progress.update(k.op, res.cases, cases, res.mismatches, t0)
    res.seconds = time.time() - t0
    res.t_generate = max(0.0, t_wait - res.t_device)
    if progress:
        progress.update(k.op, res.cases, cases, res.mismatches, t0, final=True)
    return res


# ---------------------------------------------------------------------------------------
# probes

@dataclass
class ProbeResult:
    op: str
    name: str
    got: str
    uniform: bool
    model: str = ""
    agrees: object = None   # True / False / None (no model)

    def json(self):
        return {"op": self.op, "probe": self.name, "got": self.got, "all_outputs_equal": self.uniform,
                "fragsim": self.model, "agrees": self.agrees}


def run_probes(backend, op, *, record_only=False, recorder=None) -> list[ProbeResult]:
    """The named probe cases of an mma form; each repeats one dot product in all outputs."""
    k = K.kernel_for(op)
    if k.kind != "mma":
        return []
    form = lookup(k.op)
    inp = G.probe_inputs(form)
    hw = backend.run(k.op, inp)
    exp = None
    if not record_only:
        exp = model_outputs(k.op, inp, backend.arch)
    if recorder is not None:
        recorder.add(k.op, inp, hw, force=True)
    bits = form.fmt("D").storage_bits
    out = []
    for i, name in enumerate(inp["tag_names"]):
        D = fragsim.unpack(form, "D", hw["d"][i])
        r = ProbeResult(k.op, name, _hex(D[0, 0], bits), bool((D == D[0, 0]).all()))
        if exp is not None:
            E = fragsim.unpack(form, "D", exp["d"][i])
            r.model = _hex(E[0, 0], bits)
            r.agrees = bool((E == D).all())
        out.append(r)
    return out


def run_overlap_probes(backend, op, seed=0) -> list[dict]:
    """Stores where lanes write the same bytes (PTX: undefined which wins): does the
    hardware follow fragsim's documented order?  Reported, never counted as mismatches."""
    k = K.kernel_for(op)
    if k.kind not in ("stsm", "st", "ldgsts"):
        return []
    inp = G.overlap_store_probes(k.op, np.random.default_rng(seed))
    hw = backend.run(k.op, inp)
    exp = model_outputs(k.op, inp, backend.arch)
    out = []
    bad = mismatching(hw, exp)
    for i in range(len(inp["tag"])):
        name = inp["tag_names"][int(inp["tag"][i])]
        row = {"op": k.op, "probe": name, "fragsim_order_agrees": not bool(bad[i])}
        if k.kind in ("st", "ldgsts") and name == "overlap: all lanes one address":
            a0 = int(inp["addrs"][i][0])
            sop = parse_shared_op(k.op)
            unit = sop.bytes_per_addr
            landed = hw["smem_out"][i][a0:a0 + unit]
            if k.kind == "st":
                data = G.store_bytes(sop, inp["vals"][i])
            else:
                data = inp["src"][i][:, :unit]
            m = int(inp["mask"][i])
            lanes = [lane for lane in range(WARP_LANES) if (m >> lane) & 1 and (data[lane] == landed).all()]
            row["winning_lanes"] = lanes
        out.append(row)
    return out


def make_pool(jobs: int):
    if jobs <= 1:
        return None
    return ProcessPoolExecutor(max_workers=jobs, mp_context=mp.get_context("spawn"))


def default_jobs() -> int:
    return max(1, min(8, (os.cpu_count() or 2) // 2))
