"""``fragsim.run_kernel``: launch a kernel's PTX on the CPU, as CuPy would launch it on a GPU.

    run = fragsim.run_kernel("gemm.ptx", "gemm_bf16", grid=(2, 2), block=128, dynamic_smem=61440,
                             args=[A, Bt, D, 256, 256, 512])    # D now holds what the GPU would write

``args`` gives one value per ``.param`` of the entry, in order: a NumPy array is a global buffer
(placed at a device address, passed as that address, written back in place after the run), a
``Buffer`` pins the address, a number becomes the parameter's type (``.u32``, ``.f32`` ...), and a
``.b8 [N]`` parameter (a struct passed by value) takes ``N`` bytes or a NumPy scalar/array of ``N``
bytes; a ``fragsim.TensorMap`` goes to a ``CUtensorMap`` parameter (``__grid_constant__``, ``.b8 [128]``),
and ``(TensorMap, array)`` places the array, a global buffer, at the map's base address as well.
"""

from __future__ import annotations

import numbers
import os
import re
from dataclasses import dataclass, field

import numpy as np

from fragsim.facts.arch import DEFAULT_ARCH, arch_for_cc, get_arch
from fragsim.facts.hardware import WARP_LANES
from fragsim.facts.mbarrier import TENSORMAP_BYTES

from . import ast as A
from .machine import MAX_STEPS, execute
from .memory import Buffer, GlobalMemory
from .program import Compiler, Program, init_bytes
from .state import Geometry, State
from .traffic import SharedReport, Traffic, ptx_text_lines
from .types import TYPES

#: Threads of one CTA at most (every architecture fragsim models).
MAX_THREADS_PER_CTA = 1024
#: Local memory a thread may have, every compute capability from 2.0 on (CUDA C++ Programming Guide,
#: "Technical Specifications per Compute Capability": maximum amount of local memory per thread).
MAX_LOCAL_BYTES_PER_THREAD = 512 * 1024
#: Thread slots one run may hold (registers are arrays over them): a whole 1024^3 GEMM's grid fits.
MAX_THREADS = 1 << 20
#: .local memory one run holds, all its threads together (each thread's is its own array row).
MAX_LOCAL_BYTES_PER_RUN = 1 << 31


@dataclass
class Run:
    """What a run did: the kernel, its launch, the steps it took, and its buffers (already written back
    into the arrays passed in)."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    ctas: list[tuple[int, int, int]]
    steps: int
    buffers: list[Buffer] = field(repr=False)
    program: Program = field(repr=False)
    #: PTX lines of .approx instructions run as IEEE stand-ins (approx="ieee"): not the hardware's bits
    approximate: list[int] = field(default_factory=list)
    #: kernel bugs found (``check=``; None without checks): a list of ``fragsim.ptx.checks.Issue``,
    #: one per warp (a race: per warp and pair of PTX lines)
    issues: list | None = field(default=None, repr=False)
    #: shared-memory traffic per instruction (``report=True``; None otherwise): fragsim.ptx.traffic
    shared: SharedReport | None = field(default=None, repr=False)
    #: the shared-memory races among the issues, one ``fragsim.ptx.checks.Race`` per pair of lines (CUDA
    #: lines where the PTX has .loc) with its accesses counted, those between warps first (``check=``)
    races: list | None = field(default=None, repr=False)
    #: the run accessed shared memory (without ``check=``, its races were not looked for)
    shared_accessed: bool = field(default=False, repr=False)

    @property
    def totals(self) -> dict[str, int] | None:
        """The run's shared-memory counters under Nsight Compute's metric names (``report=True``)."""
        return None if self.shared is None else self.shared.totals


class _SharedWatch:
    """Notes whether an unchecked run accesses shared memory (``Run.shared_accessed``), then stops
    watching: the rest of the run pays nothing for it."""

    batch_mma = True            # needs no mma events: consecutive mma.sync still run as one call

    def __init__(self):
        self.accessed = False

    def _seen(self, s, e) -> None:
        self.accessed = True
        s.attach(o for o in s.observers if o is not self)

    on_shared_access = on_bulk_issue = on_bulk_read = on_wgmma = _seen


def launch_dims(value, name: str) -> tuple[int, int, int]:
    """A grid or block (``name`` says which, for errors) as (x, y, z): an int or 1-3 positive ints."""
    if isinstance(value, (numbers.Integral,)) and not isinstance(value, bool):
        value = (int(value),)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3:
        raise TypeError(f"{name} must be an int or 1-3 ints (x, y, z), got {value!r}")
    out = []
    for v in value:
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{name} must be positive integers, got {value!r}")
        out.append(int(v))
    return tuple(out + [1] * (3 - len(out)))  # type: ignore[return-value]


def _cta(c, g: tuple[int, int, int]) -> tuple[int, int, int]:
    """A CTA as (x, y, z) (missing components 0) or its linear index (x fastest)."""
    if isinstance(c, (tuple, list)) and 1 <= len(c) <= 3 and all(
            isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in c):
        c3 = tuple(int(v) for v in c) + (0,) * (3 - len(c))
    elif isinstance(c, numbers.Integral) and not isinstance(c, bool):
        lin = int(c)
        c3 = (lin % g[0], lin // g[0] % g[1], lin // (g[0] * g[1])) if 0 <= lin < g[0] * g[1] * g[2] else (-1, 0, 0)
    else:
        raise TypeError(f"ctas: each CTA is (x, y, z) or a linear index, got {c!r}")
    if not all(0 <= v < n for v, n in zip(c3, g)):
        raise ValueError(f"ctas: {c!r} is not a CTA of grid {g}")
    return c3  # type: ignore[return-value]


#: file names that are CUDA C++ sources (named where PTX is expected)
CUDA_SOURCES = (".cu", ".cuh", ".cpp", ".cc", ".cxx")


def load_module(ptx, ptx_path: str | None = None) -> A.Module:
    """``ptx`` (PTX text, the path of a .ptx file, or a parsed module) as a parsed module, the
    instructions of inline-asm statements placed on each statement's first CUDA line where the
    ``.file`` source is readable (``inline_asm.first_lines``; ``ptx_path``: the PTX file's path when
    ``ptx`` is its text, whose folder is searched for the source too)."""
    from .inline_asm import first_lines
    if isinstance(ptx, A.Module):
        return first_lines(ptx, ptx_path)
    if isinstance(ptx, os.PathLike) or (isinstance(ptx, str) and "\n" not in ptx and ptx.endswith(".ptx")):
        ptx_path = os.fspath(ptx)
    return first_lines(_parse_module(ptx), ptx_path)


def _parse_module(ptx) -> A.Module:
    from .parse import parse
    name = os.fspath(ptx) if isinstance(ptx, (str, os.PathLike)) else ""
    if "\n" not in name and name.lower().endswith(CUDA_SOURCES):
        stem = os.path.splitext(os.path.basename(name))[0]
        raise ValueError(f"ptx: {name} is CUDA C++ source, not PTX: compile it to PTX first, e.g. "
                         f"nvcc -arch=sm_90a -lineinfo -ptx {name} -o {stem}.ptx (the -lineinfo maps the traffic "
                         f"report and the checks back to its lines), and run {stem}.ptx")
    if isinstance(ptx, os.PathLike) or (isinstance(ptx, str) and "\n" not in ptx and ptx.endswith(".ptx")):
        path = os.fspath(ptx)
        try:
            with open(path) as f:
                text = f.read()
        except OSError as e:
            raise ValueError(f"ptx: cannot read {path}: {e.strerror or e}") from None
        return parse(text)
    if not isinstance(ptx, str):
        raise TypeError(f"ptx must be PTX text or the path of a .ptx file, got {type(ptx).__name__}")
    return parse(ptx)


def find_entry(module: A.Module, kernel) -> A.Function:
    """The ``.entry`` named ``kernel`` (or a plain C++ name inside one mangled name; None: the only one)."""
    entries = module.entries
    if kernel is None:
        if len(entries) != 1:
            raise ValueError(f"kernel: the module has {len(entries)} entries ({', '.join(entries) or 'none'}); name one")
        return next(iter(entries.values()))
    if not isinstance(kernel, str):
        raise TypeError(f"kernel must be the name of an .entry, got {type(kernel).__name__}")
    if kernel in entries:
        return entries[kernel]
    near = [n for n in entries if kernel in n]       # a plain C++ name inside its mangled name
    if len(near) == 1:
        return entries[near[0]]
    raise ValueError(f"kernel {kernel!r}: no such .entry; the module has {', '.join(entries) or 'none'}")


def _is_tensor_map(value) -> bool:
    from fragsim.tma import TensorMap
    return isinstance(value, TensorMap)


def _place_tensor(p: A.Param, tmap, tensor, buffers: list[Buffer]):
    """``(TensorMap, array or Buffer)``: the tensor is a global buffer at the map's base address (written
    back after the run, as any buffer); the parameter gets the map."""
    if tmap.base == 0:
        raise ValueError(f"parameter {p.name}: give the TensorMap the device address to place its tensor at "
                         "(base=...: a 16-byte aligned address such as 0x7f8000000000)")
    if isinstance(tensor, Buffer):
        if tensor.address is None:
            tensor.address = tmap.base
        if tensor.address != tmap.base:
            raise ValueError(f"parameter {p.name}: the Buffer is pinned at {tensor.address:#x}, the TensorMap's base is "
                             f"{tmap.base:#x}")
        buf = tensor
    elif isinstance(tensor, np.ndarray):
        buf = Buffer(tensor, address=tmap.base, name=p.name)
    else:
        raise TypeError(f"parameter {p.name}: (TensorMap, tensor) takes the tensor as a NumPy array or a Buffer, got "
                        f"{type(tensor).__name__}")
    if not any(b.array is buf.array and b.address == buf.address for b in buffers):
        buffers.append(buf)
    return tmap


def _param_bytes(p: A.Param, value, buffers: list[Buffer]) -> bytes:
    """The bytes of one kernel argument."""
    t = TYPES.get(p.type)
    if p.count is not None or (t is not None and t.bits == 8 and p.type == "b8"):
        n = (t.bytes if t else 1) * (p.count or 1)
        if isinstance(value, tuple) and len(value) == 2 and _is_tensor_map(value[0]):
            value = _place_tensor(p, *value, buffers)
        if _is_tensor_map(value):
            # a CUtensorMap (__grid_constant__): fragsim's encoding of the map, opaque to the kernel
            from .semantics.bulk import tensormap_bytes
            if n < TENSORMAP_BYTES:
                raise TypeError(f"parameter {p.name} (.{p.type} [{p.count}]) takes {n} bytes; a TensorMap is a "
                                f"CUtensorMap parameter of {TENSORMAP_BYTES} bytes or more")
            return tensormap_bytes(value).ljust(n, b"\0")
        if isinstance(value, (bytes, bytearray)):
            data = bytes(value)
        elif isinstance(value, (np.ndarray, np.generic)):
            data = np.ascontiguousarray(value).tobytes()
        else:
            raise TypeError(f"parameter {p.name} (.{p.type} [{p.count}]) takes {n} bytes or a NumPy value of "
                            f"{n} bytes, got {type(value).__name__}")
        if len(data) != n:
            raise ValueError(f"parameter {p.name} (.{p.type} [{p.count}]) takes {n} bytes, got {len(data)}")
        return data
    if t is None:
        raise ValueError(f"parameter {p.name}: type .{p.type} is not modelled")
    if _is_tensor_map(value):
        raise TypeError(f"parameter {p.name} is .{p.type}; a TensorMap goes to a CUtensorMap parameter (.param .align 64 "
                        f".b8 name[{TENSORMAP_BYTES}])")
    if isinstance(value, (np.ndarray, Buffer)):
        if t.bits != 64:
            raise TypeError(f"parameter {p.name} is .{p.type}; an array is passed as a 64-bit address")
        b = value if isinstance(value, Buffer) else Buffer(value, name=p.name)
        if not b.name:
            b.name = p.name
        buffers.append(b)
        return b"\0" * 8          # the address is written once every buffer is placed
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"parameter {p.name} (.{p.type}): got a bool")
    if t.kind == "f":
        if not isinstance(value, (numbers.Real, np.floating)):
            raise TypeError(f"parameter {p.name} (.{p.type}) takes a number, got {type(value).__name__}")
        return np.array(value, {16: np.float16, 32: np.float32, 64: np.float64}[t.bits]).tobytes()
    if not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"parameter {p.name} (.{p.type}) takes an integer, got {type(value).__name__}")
    v = int(value)
    lo, hi = (-(1 << (t.bits - 1)), 1 << t.bits) if t.kind != "u" else (0, 1 << t.bits)
    if not lo <= v < hi:
        raise ValueError(f"parameter {p.name} (.{p.type}): {v} does not fit")
    return (v & ((1 << t.bits) - 1)).to_bytes(t.bytes, "little")


def _dims3(values: tuple) -> tuple[int, int, int]:
    v = [int(x) for x in values] + [1, 1, 1]
    return v[0], v[1], v[2]


def _local_size(L, offset: int) -> int:
    """The bytes of the .local variable at ``offset`` (to the next one's offset, or the end)."""
    later = [o for o in L.local.values() if o > offset]
    return (min(later) if later else L.local_bytes) - offset


def _check_launch(entry: A.Function, grid: tuple, block: tuple) -> None:
    """The launch facts the kernel states, held to the launch as the GPU holds them: ``.reqntid`` is
    the block exactly, ``.maxntid`` bounds its threads, ``.reqnctapercluster`` must divide the grid."""
    d = entry.directives
    if "reqntid" in d and _dims3(d["reqntid"]) != tuple(block):
        raise ValueError(f"{entry.name} declares .reqntid {', '.join(map(str, d['reqntid']))}: the block must be "
                         f"{_dims3(d['reqntid'])}, got {tuple(block)} (the GPU refuses the launch)")
    if "maxntid" in d:
        most = int(np.prod(_dims3(d["maxntid"])))
        if int(np.prod(block)) > most:
            raise ValueError(f"{entry.name} declares .maxntid {', '.join(map(str, d['maxntid']))}: at most {most} "
                             f"threads per CTA, the block {tuple(block)} has {int(np.prod(block))} (the GPU refuses "
                             f"the launch)")
    if "reqnctapercluster" in d:
        c = _dims3(d["reqnctapercluster"])
        if any(gi % ci for gi, ci in zip(grid, c)):
            raise ValueError(f"{entry.name} declares .reqnctapercluster {', '.join(map(str, d['reqnctapercluster']))}:"
                             f" the grid {tuple(grid)} is not a whole number of clusters of {c} (the GPU refuses "
                             f"the launch)")


def target_arch(module: A.Module, arch=None):
    """The architecture row a run computes with: ``arch`` where given, else the GPU the PTX's
    ``.target`` names (``sm_90a`` -> sm_90, ``sm_86`` -> the Ampere row; ``fragsim.facts.arch``).
    An ``arch`` older than the target is an error: that GPU refuses the module."""
    targets = [t for t in module.target if re.fullmatch(r"sm_\d+[af]?", t)]
    cc = int(re.sub(r"\D", "", targets[0])) if targets else None
    if arch is None:
        if cc is None:
            return get_arch(DEFAULT_ARCH)
        return get_arch(arch_for_cc(cc // 10, cc % 10, f".target {targets[0]}"))
    row = get_arch(arch)
    if cc is not None and row.cc < cc:
        raise ValueError(f"arch={row.name}: the PTX's .target {targets[0]} needs compute capability "
                         f"{cc // 10}.{cc % 10} or newer (a {row.name} GPU refuses the module); leave arch out to run "
                         f"it as its target")
    return row


def run_kernel(ptx, kernel=None, grid=1, block=1, args=(), dynamic_smem=0, arch=None, ctas=None,
               check=False, max_steps=MAX_STEPS, approx=None, observers=(), report=False) -> Run:
    """Run ``kernel`` of ``ptx`` (text, a path, or a parsed module) for the CTAs ``ctas`` of ``grid`` (all
    by default) with ``block`` threads each; arrays in ``args`` are written back in place.

    ``arch``: the GPU whose arithmetic the run computes (``"sm_80"``, ``"sm_90"``, aliases); by default
    the PTX's ``.target`` (``target_arch``).  ``approx``: None runs the MUFU forms with the hardware's bits
    (``fragsim.approx``); "ieee" runs every MUFU form
    as an IEEE stand-in and lists their lines in ``Run.approximate``.  ``observers``: objects told
    about the run's events (``fragsim.ptx.observe``: their ``on_<kind>`` methods; one that names no
    event kind is a TypeError).  ``check``: look for kernel bugs while running
    (``fragsim.ptx.checks``): True/"stop" stops at the first with a ``KernelIssue``, "continue" lists
    them all in ``Run.issues`` (the shared-memory races also in ``Run.races``, one per pair of lines);
    add "uninitialized" (``"continue,uninitialized"``) for reads of shared memory nothing wrote.
    ``report``: collect the shared-memory traffic per instruction into ``Run.shared`` and
    ``Run.totals`` (``fragsim.ptx.traffic``)."""
    if approx not in (None, "ieee"):
        raise ValueError(f"approx must be None or 'ieee', got {approx!r}")
    if not isinstance(report, bool):
        raise TypeError(f"report must be True or False, got {report!r}")
    from .checks import options
    checking = options(check)
    module = load_module(ptx)
    entry = find_entry(module, kernel)
    g, b = launch_dims(grid, "grid"), launch_dims(block, "block")
    threads = b[0] * b[1] * b[2]
    if threads > MAX_THREADS_PER_CTA:
        raise ValueError(f"block {b}: {threads} threads, more than {MAX_THREADS_PER_CTA} per CTA")
    _check_launch(entry, g, b)
    warps = -(-threads // WARP_LANES)
    if ctas is None:
        # the size first: a grid of 2**40 CTAs is refused before a list of them is made
        total = g[0] * g[1] * g[2] * warps * WARP_LANES
        if total > MAX_THREADS:
            raise ValueError(f"grid {g} x block {b}: {total:,} thread slots, more than {MAX_THREADS:,} in one run; "
                             "run a subset of the CTAs with ctas=")
        chosen = [(x, y, z) for z in range(g[2]) for y in range(g[1]) for x in range(g[0])]
    else:
        if not isinstance(ctas, (list, tuple)) or len(ctas) * warps * WARP_LANES > MAX_THREADS:
            raise ValueError(f"ctas: a list of at most {MAX_THREADS // (warps * WARP_LANES):,} CTAs of {b}, "
                             f"got {type(ctas).__name__ if not isinstance(ctas, (list, tuple)) else len(ctas)}")
        chosen = [_cta(c, g) for c in ctas]
        if not chosen:
            raise ValueError("ctas: give at least one CTA")
    geometry = Geometry(g, b, chosen)
    if geometry.slots > MAX_THREADS:
        raise ValueError(f"{len(chosen)} CTAs of {threads} threads: {geometry.slots} thread slots, more than "
                         f"{MAX_THREADS} in one run; run a subset with ctas=")
    row = target_arch(module, arch)
    if isinstance(dynamic_smem, bool) or not isinstance(dynamic_smem, numbers.Integral) or dynamic_smem < 0:
        raise ValueError(f"dynamic_smem must be a non-negative integer, got {dynamic_smem!r}")
    program = Compiler(module, entry, row, approx=approx).compile()
    L = program.layout
    smem_bytes = (L.shared[L.dynamic_name] if L.dynamic_name else L.shared_static) + int(dynamic_smem)
    if smem_bytes > row.smem_per_cta:
        base = smem_bytes - int(dynamic_smem)
        fits = (f"at most dynamic_smem={row.smem_per_cta - base} fits" if base < row.smem_per_cta else
                "its static shared memory alone is too much")
        raise ValueError(f"{entry.name}: {smem_bytes} bytes of shared memory ({base} static and alignment + "
                         f"dynamic_smem={dynamic_smem}), more than {row.name}'s {row.smem_per_cta} per CTA; {fits}")
    if L.local_bytes > MAX_LOCAL_BYTES_PER_THREAD:
        big = max(L.local.items(), key=lambda kv: _local_size(L, kv[1]))[0]
        raise ValueError(f"{entry.name}: {L.local_bytes:,} bytes of .local memory per thread ({big.split('::')[-1]} "
                         f"the largest), more than the {MAX_LOCAL_BYTES_PER_THREAD:,} a GPU thread may have")
    if geometry.slots * L.local_bytes > MAX_LOCAL_BYTES_PER_RUN:
        raise ValueError(f"{entry.name}: {L.local_bytes:,} bytes of .local memory for each of {geometry.slots:,} "
                         f"thread slots, more than the {MAX_LOCAL_BYTES_PER_RUN:,} one run holds; run a subset of the "
                         f"CTAs with ctas=")
    args = list(args)
    if len(args) != len(entry.params):
        raise ValueError(f"{entry.name} takes {len(entry.params)} parameter(s) "
                         f"({', '.join('.' + p.type + ' ' + p.name for p in entry.params)}), got {len(args)} args")
    buffers: list[Buffer] = []
    pieces: list[tuple[A.Param, bytes, Buffer | None]] = []
    labels: dict[int, str] = {}               # a buffer -> how findings name it
    for k, (p, v) in enumerate(zip(entry.params, args)):
        before = len(buffers)
        # a pointer parameter's buffer gets its address written (a tensor map's tensor does not)
        pieces.append((p, _param_bytes(p, v, buffers), buffers[before] if len(buffers) > before and p.count is None
                       else None))
        if len(buffers) > before:
            labels[id(buffers[before])] = f"args[{k}]"
    globals_ = {}
    for name, v in L.globals.items():
        arr = np.frombuffer(init_bytes(v), np.uint8).copy()
        buf = Buffer(arr, name=name)
        buffers.append(buf)
        globals_[name] = buf
    gmem = GlobalMemory(buffers)
    params = np.zeros(L.kernel_param_bytes, np.uint8)
    for p, data, pbuf in pieces:
        off = L.kernel_params[p.name]
        if pbuf is not None:
            data = int(pbuf.address or 0).to_bytes(8, "little")
        params[off:off + len(data)] = np.frombuffer(data, np.uint8)
    n = geometry.slots
    state = State(geometry, gmem, smem=np.zeros((len(chosen), smem_bytes), np.uint8),
                  lmem=np.zeros((n, L.local_bytes), np.uint8), params=params,
                  cmem=np.frombuffer(bytes(L.const_bytes), np.uint8).copy(),
                  pmem=np.zeros((n, L.thread_param_bytes), np.uint8),
                  global_vars={k: int(b_.address or 0) for k, b_ in globals_.items()}, program=program)
    state.declare_all(program.registers)
    checker = None
    if checking is not None:
        from .checks import Checker
        checker = Checker(program, state, row, stop=checking[0], uninitialized=checking[1], labels=labels)
        checker.install()
    traffic = Traffic(module, program) if report else None
    watch = _SharedWatch() if checker is None and smem_bytes else None
    if checker is not None:
        state.checker = checker
    state.attach(((checker,) if checker is not None else ()) + tuple(observers)
                 + ((traffic,) if traffic is not None else ()) + ((watch,) if watch is not None else ()))
    steps = execute(program, state, max_steps=max_steps)
    run = Run(entry.name, g, b, chosen, steps, buffers, program, approximate=program.approximate)
    run.shared_accessed = checker.accessed if checker is not None else watch is not None and watch.accessed
    if checker is not None:
        run.issues, run.races = checker.issues, checker.races()
    if traffic is not None:
        run.shared = traffic.report(run, *ptx_text_lines(ptx), smem_bytes=smem_bytes)
    return run
