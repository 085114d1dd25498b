"""CUDA source for the GPU cross-check, generated from the instruction table.

One kernel per instruction: every lane reads its own input registers (or its address,
and the shared-memory tile) from global memory, runs the one instruction as inline PTX,
and writes its output registers (or the tile) back.  Nothing here knows a fragment
layout: registers in, registers out, so the hardware checks fragsim's layouts too.
One warp per case, ``WARPS_PER_BLOCK`` warps per block, a grid over the cases.

The asm operand lists come from the table: ``form.nregs(op)`` registers per operand,
``form.ptx`` as the instruction.  The same source compiles with NVRTC (CuPy) and with
``nvcc -cubin``; an instruction is left out below its entry's minimum compute capability.

Kernel arguments (all arrays C-contiguous, one row per case):

- mma:        A (n,32,nA) u32, B (n,32,nB) u32, C (n,32,nC) u32 -> D (n,32,nD) u32
- ldmatrix:   SMEM (n,TILE) u8, ADDR (n,32) u32 -> OUT (n,32,num) u32
- stmatrix:   SMEM (n,TILE) u8, ADDR (n,32) u32, REGS (n,32,num) u32 -> SMEM_OUT (n,TILE) u8
- ld.shared:  SMEM, ADDR, MASK (n,) u32 -> OUT (n,32,nregs) u32   (one element a register; inactive lanes write 0)
- st.shared:  SMEM, ADDR, MASK, VALS (n,32,nregs) u32 -> SMEM_OUT
- cp.async:   SMEM, ADDR, MASK, SRC (n,32,16) u8 (first nbytes used) -> SMEM_OUT

ADDR holds byte offsets into the case's tile of ``TILE_BYTES`` bytes; the last argument
is the number of cases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fragsim.instructions import FORMS, lookup, parse_shared_op
from fragsim.instructions import SHARED_OPS as TABLE

from .prelude import unit


# Every shared-memory variant the cross-check covers: the table's, in its order.
SHARED_OPS = tuple(TABLE)
LDMATRIX_OPS = tuple(n for n, e in TABLE.items() if e.family == "ldmatrix")
STMATRIX_OPS = tuple(n for n, e in TABLE.items() if e.family == "stmatrix")
LD_OPS = tuple(n for n, e in TABLE.items() if e.family == "ld.shared")
ST_OPS = tuple(n for n, e in TABLE.items() if e.family == "st.shared")
CP_ASYNC_OPS = tuple(n for n, e in TABLE.items() if e.family == "cp.async")


@dataclass(frozen=True)
class Kernel:
    name: str        # C identifier of the __global__ function
    op: str          # fragsim's spelling: an mma form name or a shared-op name
    kind: str        # "mma" | "ldsm" | "stsm" | "ld" | "st" | "ldgsts"
    ptx: str         # the PTX instruction as written in the asm
    sass: str        # the SASS mnemonic the instruction must compile to (HMMA, LDSM, ...)
    min_cc: int      # lowest compute capability (major*10 + minor) that has it
    source: str      # the kernel's CUDA text

    def nregs_out(self) -> int:
        return _nregs_out(self)


def _ident(s: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", s).strip("_")


def _regs(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def _brace(ops: list[str]) -> str:
    return "{" + ", ".join(ops) + "}"


def mma_kernel(form) -> Kernel:
    form = lookup(form)
    n = {op: form.nregs(op) for op in "ABCD"}
    w = {op: form.words_per_elem(op) for op in "ABCD"}
    name = "fs_mma_" + _ident(form.name)
    # asm operand numbering: D outputs first, then A, B, C inputs; one operand per PTX register
    # (an f64 register is a double made of two words, low word first: pure bit moves).
    idx = 0
    pos = {}
    for op in "DABC":
        pos[op] = [f"%{idx + i}" for i in range(n[op] // w[op])]
        idx += n[op] // w[op]
    asm = f"{form.ptx} {_brace(pos['D'])}, {_brace(pos['A'])}, {_brace(pos['B'])}, {_brace(pos['C'])};"

    def operand(op, i):
        x = op.lower()
        return f'"r"({x}[{i}])' if w[op] == 1 else f'"d"(__hiloint2double({x}[{2 * i + 1}], {x}[{2 * i}]))'

    outs = ", ".join(f'"=r"(d{i})' if w["D"] == 1 else f'"=d"(d{i})' for i in range(n["D"] // w["D"]))
    ins = ", ".join(operand(op, i) for op in "ABC" for i in range(n[op] // w[op]))
    if w["D"] == 1:
        decl = f"unsigned {', '.join(_regs('d', n['D']))};"
        store = "".join(f"  d[{i}] = d{i};\n" for i in range(n["D"]))
    else:
        decl = f"double {', '.join(_regs('d', n['D'] // 2))};"
        store = "".join(f"  d[{2 * i}] = (unsigned)__double2loint(d{i});\n  d[{2 * i + 1}] = (unsigned)__double2hiint(d{i});\n"
                        for i in range(n["D"] // 2))
    src = f"""\
extern "C" __global__ void {name}(const unsigned* __restrict__ A, const unsigned* __restrict__ B,
    const unsigned* __restrict__ C, unsigned* __restrict__ D, long long n) {{
  FS_CASE(n)
  const unsigned* a = A + (w * FS_LANES + lane) * {n['A']};
  const unsigned* b = B + (w * FS_LANES + lane) * {n['B']};
  const unsigned* c = C + (w * FS_LANES + lane) * {n['C']};
  {decl}
  asm volatile("{asm}"
      : {outs}
      : {ins});
  unsigned* d = D + (w * FS_LANES + lane) * {n['D']};
{store}}}
"""
    return Kernel(name, form.name, "mma", form.ptx, form.sass, form.min_cc, src)


def shared_asm(op, addr: str, regs=None, vals=None, src: str | None = None) -> str:
    """The ``asm volatile`` statement of one shared-memory instruction (its entry's PTX text): loads
    write ``regs`` (C lvalues), stores read ``vals`` (C expressions), cp.async copies from the
    global address ``src``; ``addr`` is the 32-bit shared address.  The cross-check kernels here and
    the Nsight Compute probe (banks/probe.py) both emit it."""
    if op.kind in ("ldsm", "ld"):
        asm = op.asm(f"%{op.nregs}", [f"%{i}" for i in range(op.nregs)])
        outs = ", ".join(f'"=r"({r})' for r in regs)
        return f'asm volatile("{asm}" : {outs} : "r"({addr}) : "memory");'
    if op.kind in ("stsm", "st"):
        asm = op.asm("%0", [f"%{i + 1}" for i in range(op.nregs)])
        ins = ", ".join(f'"r"({v})' for v in vals)
        return f'asm volatile("{asm}" :: "r"({addr}), {ins} : "memory");'
    return f'asm volatile("{op.asm("%0", src="%1")}" :: "r"({addr}), "l"({src}) : "memory");'


def _shared_kernel(opname) -> Kernel:
    op = parse_shared_op(opname)
    name = "fs_" + _ident(op.name)
    regs = _regs("r", op.nregs)
    masked = op.kind not in ("ldsm", "stsm")   # .sync.aligned instructions run on every lane
    mask_arg = "const unsigned* __restrict__ MASK,\n    " if masked else ""
    head = (f'extern "C" __global__ void {name}(const unsigned char* __restrict__ SMEM,\n'
            f"    const unsigned* __restrict__ ADDR, {mask_arg}")
    setup = ("  FS_CASE(n)\n  FS_TILE_IN(SMEM)\n"
             "  const unsigned addr = fs_smem_addr(tile) + ADDR[w * FS_LANES + lane];\n")

    def guarded(stmt: str) -> str:
        return f"  if ((MASK[w] >> lane) & 1u) {{\n    {stmt}\n  }}\n" if masked else f"  {stmt}\n"

    if op.kind in ("ldsm", "ld"):
        call = shared_asm(op, "addr", regs=regs)
        src = (head + "unsigned* __restrict__ OUT, long long n) {\n" + setup
               + f"  unsigned {', '.join(f'{r} = 0u' for r in regs)};\n" + guarded(call)
               + f"  unsigned* o = OUT + (w * FS_LANES + lane) * {op.nregs};\n"
               + "".join(f"  o[{i}] = r{i};\n" for i in range(op.nregs)) + "}\n")
    elif op.kind in ("stsm", "st"):
        payload = "REGS" if op.kind == "stsm" else "VALS"
        call = shared_asm(op, "addr", vals=[f"v[{i}]" for i in range(op.nregs)])
        src = (head + f"const unsigned* __restrict__ {payload}, unsigned char* __restrict__ SMEM_OUT, "
               "long long n) {\n" + setup + f"  const unsigned* v = {payload} + (w * FS_LANES + lane) * {op.nregs};\n"
               + guarded(call) + "  FS_TILE_OUT(SMEM_OUT)\n}\n")
    else:  # cp.async: the lane's 16-byte slot of SRC holds the bytes it copies
        call = shared_asm(op, "addr", src="g")
        src = (head + "const unsigned char* __restrict__ SRC, unsigned char* __restrict__ SMEM_OUT, long long n) {\n"
               + setup + "  const unsigned long long g = fs_global_addr(SRC + (w * FS_LANES + lane) * 16);\n"
               + guarded(call)
               + '  asm volatile("cp.async.commit_group;" ::: "memory");\n'
               + '  asm volatile("cp.async.wait_group 0;" ::: "memory");\n'
               + "  FS_TILE_OUT(SMEM_OUT)\n}\n")
    return Kernel(name, op.name, op.kind, op.ptx, op.sass, op.min_cc, src)


def register_kernel(op) -> Kernel:
    """The kernel of a register-to-register instruction (``fragsim.instructions.REGISTER_OPS``):
    A (n,32,1) u32 -> D (n,32,1) u32, one source and one destination register per lane."""
    name = "fs_" + _ident(op.name)
    src = f"""\
extern "C" __global__ void {name}(const unsigned* __restrict__ A, unsigned* __restrict__ D, long long n) {{
  FS_CASE(n)
  unsigned d;
  asm volatile("{op.ptx} %0, %1;" : "=r"(d) : "r"(A[w * FS_LANES + lane]));
  D[w * FS_LANES + lane] = d;
}}
"""
    return Kernel(name, op.name, op.kind, op.ptx, op.sass, op.min_cc, src)


def _nregs_out(k: Kernel) -> int:
    return FORMS[k.op].nregs("D") if k.kind == "mma" else parse_shared_op(k.op).nregs


def kernel_for(op: str) -> Kernel:
    """The kernel of one mma form (any PTX spelling) or one shared-memory op."""
    try:
        return mma_kernel(lookup(op))
    except (ValueError, TypeError):
        pass
    return _shared_kernel(op)


def all_ops(cc: int = 90) -> list[str]:
    """Every op the cross-check covers on compute capability ``cc`` (e.g. 80, 90)."""
    ops = list(FORMS) + list(SHARED_OPS)
    return [o for o in ops if kernel_for(o).min_cc <= cc]


def kernels(cc: int = 90, ops=None) -> list[Kernel]:
    ks = [kernel_for(o) for o in (all_ops(cc) if ops is None else ops)]
    too_new = [k for k in ks if k.min_cc > cc]
    if too_new:
        raise ValueError(f"compute capability {cc // 10}.{cc % 10} lacks "
                         + ", ".join(f"{k.op} (needs {k.min_cc // 10}.{k.min_cc % 10})" for k in too_new))
    return ks


def module_source(cc: int = 90, ops=None) -> str:
    """One CUDA translation unit holding the kernels of ``ops`` (default: all for ``cc``)."""
    return unit(*(k.source for k in kernels(cc, ops)))
