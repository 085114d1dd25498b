"""CUDA source for the GPU cross-check, generated from the instruction table.

One kernel per instruction: every lane reads its own input registers (or its address,
and the shared-memory tile) from global memory, runs the one instruction as inline PTX,
and writes its output registers (or the tile) back.  Nothing here knows a fragment
layout: registers in, registers out, so the hardware checks fragsim's layouts too.
One warp per case, ``WARPS_PER_BLOCK`` warps per block, a grid over the cases.

The asm operand lists come from the table: ``form.nregs(op)`` registers per operand,
``form.ptx`` as the instruction.  The same source compiles with NVRTC (CuPy) and with
``nvcc -cubin``; stmatrix needs sm_90 and is left out below compute capability 9.0.

Kernel arguments (all arrays C-contiguous, one row per case):

- mma:        A (n,32,nA) u32, B (n,32,nB) u32, C (n,32,nC) u32 -> D (n,32,nD) u32
- ldmatrix:   SMEM (n,TILE) u8, ADDR (n,32) u32 -> OUT (n,32,num) u32
- stmatrix:   SMEM (n,TILE) u8, ADDR (n,32) u32, REGS (n,32,num) u32 -> SMEM_OUT (n,TILE) u8
- ld.shared:  SMEM, ADDR, MASK (n,) u32 -> OUT (n,32,nw) u32      (inactive lanes write 0)
- st.shared:  SMEM, ADDR, MASK, VALS (n,32,nw) u32 -> SMEM_OUT
- cp.async:   SMEM, ADDR, MASK, SRC (n,32,16) u8 (first nbytes used) -> SMEM_OUT

ADDR holds byte offsets into the case's tile of ``TILE_BYTES`` bytes; the last argument
is the number of cases.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fragsim.instructions import FORMS, lookup, parse_shared_op

TILE_BYTES = 1024          # shared-memory tile per warp (per case)
WARPS_PER_BLOCK = 4
THREADS_PER_BLOCK = 32 * WARPS_PER_BLOCK

# Every shared-memory variant the cross-check covers, in fragsim's spelling.
LDMATRIX_OPS = tuple(f"ldmatrix.x{n}{t}" for n in (1, 2, 4) for t in ("", ".trans"))
STMATRIX_OPS = tuple(f"stmatrix.x{n}{t}" for n in (1, 2, 4) for t in ("", ".trans"))
LD_OPS = ("ld.shared.u8", "ld.shared.u16", "ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32")
ST_OPS = ("st.shared.u8", "st.shared.u16", "st.shared.b32", "st.shared.v2.b32", "st.shared.v4.b32")
CP_ASYNC_OPS = ("cp.async.ca.4", "cp.async.ca.8", "cp.async.ca.16", "cp.async.cg.16")
SHARED_OPS = LDMATRIX_OPS + STMATRIX_OPS + LD_OPS + ST_OPS + CP_ASYNC_OPS


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


PRELUDE = f"""\
// fragsim gpu_check kernels: generated from the instruction table (gpu_check/kernels.py).
#define FS_TILE {TILE_BYTES}
#define FS_WARPS {WARPS_PER_BLOCK}

__device__ __forceinline__ unsigned fs_smem_addr(const void* p) {{
  unsigned r;
  asm("{{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }}" : "=r"(r) : "l"(p));
  return r;
}}

__device__ __forceinline__ unsigned long long fs_global_addr(const void* p) {{
  unsigned long long r;
  asm("cvta.to.global.u64 %0, %1;" : "=l"(r) : "l"(p));
  return r;
}}

// This warp's case index (or -1 past the end) and its lane.
#define FS_CASE(n) \\
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; \\
  const unsigned lane = threadIdx.x & 31u; \\
  if (w >= (n)) return;

// The warp's tile: copied in from global memory, one 32-byte slice per lane.
#define FS_TILE_IN(SMEM) \\
  __shared__ __align__(128) unsigned char fs_tiles[FS_WARPS][FS_TILE]; \\
  unsigned char* tile = fs_tiles[threadIdx.x >> 5]; \\
  {{ const unsigned* src = (const unsigned*)((SMEM) + w * FS_TILE); \\
     unsigned* dst = (unsigned*)tile; \\
     for (int i = lane; i < FS_TILE / 4; i += 32) dst[i] = src[i]; }} \\
  __syncwarp();

#define FS_TILE_OUT(SMEM_OUT) \\
  __syncwarp(); \\
  {{ const unsigned* src = (const unsigned*)tile; \\
     unsigned* dst = (unsigned*)((SMEM_OUT) + w * FS_TILE); \\
     for (int i = lane; i < FS_TILE / 4; i += 32) dst[i] = src[i]; }}
"""


def _ident(s: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", s).strip("_")


def _regs(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{i}" for i in range(n)]


def _brace(ops: list[str]) -> str:
    return "{" + ", ".join(ops) + "}"


def mma_kernel(form) -> Kernel:
    form = lookup(form)
    n = {op: form.nregs(op) for op in "ABCD"}
    name = "fs_mma_" + _ident(form.name)
    # asm operand numbering: D outputs first, then A, B, C inputs.
    idx = 0
    pos = {}
    for op in "DABC":
        pos[op] = [f"%{idx + i}" for i in range(n[op])]
        idx += n[op]
    asm = f"{form.ptx} {_brace(pos['D'])}, {_brace(pos['A'])}, {_brace(pos['B'])}, {_brace(pos['C'])};"
    outs = ", ".join(f'"=r"({r})' for r in _regs("d", n["D"]))
    ins = ", ".join(f'"r"({op.lower()}[{i}])' for op in "ABC" for i in range(n[op]))
    src = f"""\
extern "C" __global__ void {name}(const unsigned* __restrict__ A, const unsigned* __restrict__ B,
    const unsigned* __restrict__ C, unsigned* __restrict__ D, long long n) {{
  FS_CASE(n)
  const unsigned* a = A + (w * 32 + lane) * {n['A']};
  const unsigned* b = B + (w * 32 + lane) * {n['B']};
  const unsigned* c = C + (w * 32 + lane) * {n['C']};
  unsigned {', '.join(_regs('d', n['D']))};
  asm volatile("{asm}"
      : {outs}
      : {ins});
  unsigned* d = D + (w * 32 + lane) * {n['D']};
{''.join(f'  d[{i}] = d{i};' + chr(10) for i in range(n['D']))}}}
"""
    return Kernel(name, form.name, "mma", form.ptx, "HMMA", 80, src)


def _shared_kernel(opname: str) -> Kernel:
    op = parse_shared_op(opname)
    name = "fs_" + _ident(op.name)
    if op.kind in ("ldsm", "stsm"):
        num = op.num
        regs = _regs("r", num)
        if op.kind == "ldsm":
            ptx = op.ptx
            asm = f"{ptx} {_brace([f'%{i}' for i in range(num)])}, [%{num}];"
            src = f"""\
extern "C" __global__ void {name}(const unsigned char* __restrict__ SMEM,
    const unsigned* __restrict__ ADDR, unsigned* __restrict__ OUT, long long n) {{
  FS_CASE(n)
  FS_TILE_IN(SMEM)
  const unsigned addr = fs_smem_addr(tile) + ADDR[w * 32 + lane];
  unsigned {', '.join(regs)};
  asm volatile("{asm}"
      : {', '.join(f'"=r"({r})' for r in regs)}
      : "r"(addr) : "memory");
  unsigned* o = OUT + (w * 32 + lane) * {num};
{''.join(f'  o[{i}] = r{i};' + chr(10) for i in range(num))}}}
"""
            return Kernel(name, op.name, "ldsm", ptx, "LDSM", 75, src)
        ptx = op.ptx
        asm = f"{ptx} [%0], {_brace([f'%{i + 1}' for i in range(num)])};"
        src = f"""\
extern "C" __global__ void {name}(const unsigned char* __restrict__ SMEM,
    const unsigned* __restrict__ ADDR, const unsigned* __restrict__ REGS,
    unsigned char* __restrict__ SMEM_OUT, long long n) {{
  FS_CASE(n)
  FS_TILE_IN(SMEM)
  const unsigned addr = fs_smem_addr(tile) + ADDR[w * 32 + lane];
  const unsigned* r = REGS + (w * 32 + lane) * {num};
  asm volatile("{asm}"
      :: "r"(addr), {', '.join(f'"r"(r[{i}])' for i in range(num))} : "memory");
  FS_TILE_OUT(SMEM_OUT)
}}
"""
        return Kernel(name, op.name, "stsm", ptx, "STSM", 90, src)

    nw = max(1, op.bytes_per_addr // 4)
    if op.kind == "ld":
        ptx = op.name
        outs = [f"%{i}" for i in range(nw)]
        asm = f"{ptx} {outs[0] if nw == 1 else _brace(outs)}, [%{nw}];"
        regs = _regs("r", nw)
        src = f"""\
extern "C" __global__ void {name}(const unsigned char* __restrict__ SMEM,
    const unsigned* __restrict__ ADDR, const unsigned* __restrict__ MASK,
    unsigned* __restrict__ OUT, long long n) {{
  FS_CASE(n)
  FS_TILE_IN(SMEM)
  const unsigned addr = fs_smem_addr(tile) + ADDR[w * 32 + lane];
  unsigned {', '.join(f'{r} = 0u' for r in regs)};
  if ((MASK[w] >> lane) & 1u) {{
    asm volatile("{asm}"
        : {', '.join(f'"=r"({r})' for r in regs)}
        : "r"(addr) : "memory");
  }}
  unsigned* o = OUT + (w * 32 + lane) * {nw};
{''.join(f'  o[{i}] = r{i};' + chr(10) for i in range(nw))}}}
"""
        return Kernel(name, op.name, "ld", ptx, "LDS", 70, src)
    if op.kind == "st":
        ptx = op.name
        ins = [f"%{i + 1}" for i in range(nw)]
        asm = f"{ptx} [%0], {ins[0] if nw == 1 else _brace(ins)};"
        src = f"""\
extern "C" __global__ void {name}(const unsigned char* __restrict__ SMEM,
    const unsigned* __restrict__ ADDR, const unsigned* __restrict__ MASK,
    const unsigned* __restrict__ VALS, unsigned char* __restrict__ SMEM_OUT, long long n) {{
  FS_CASE(n)
  FS_TILE_IN(SMEM)
  const unsigned addr = fs_smem_addr(tile) + ADDR[w * 32 + lane];
  const unsigned* v = VALS + (w * 32 + lane) * {nw};
  if ((MASK[w] >> lane) & 1u) {{
    asm volatile("{asm}"
        :: "r"(addr), {', '.join(f'"r"(v[{i}])' for i in range(nw))} : "memory");
  }}
  FS_TILE_OUT(SMEM_OUT)
}}
"""
        return Kernel(name, op.name, "st", ptx, "STS", 70, src)
    # cp.async
    level = op.name.split(".")[2]
    size = op.bytes_per_addr
    ptx = f"cp.async.{level}.shared.global"
    asm = f"{ptx} [%0], [%1], {size};"
    src = f"""\
extern "C" __global__ void {name}(const unsigned char* __restrict__ SMEM,
    const unsigned* __restrict__ ADDR, const unsigned* __restrict__ MASK,
    const unsigned char* __restrict__ SRC, unsigned char* __restrict__ SMEM_OUT, long long n) {{
  FS_CASE(n)
  FS_TILE_IN(SMEM)
  const unsigned addr = fs_smem_addr(tile) + ADDR[w * 32 + lane];
  const unsigned long long g = fs_global_addr(SRC + (w * 32 + lane) * 16);
  if ((MASK[w] >> lane) & 1u) {{
    asm volatile("{asm}" :: "r"(addr), "l"(g) : "memory");
  }}
  asm volatile("cp.async.commit_group;" ::: "memory");
  asm volatile("cp.async.wait_group 0;" ::: "memory");
  FS_TILE_OUT(SMEM_OUT)
}}
"""
    return Kernel(name, op.name, "ldgsts", f"{ptx} ..., {size}", "LDGSTS", 80, src)


def _nregs_out(k: Kernel) -> int:
    if k.kind == "mma":
        return FORMS[k.op].nregs("D")
    op = parse_shared_op(k.op)
    if op.kind == "ldsm":
        return op.num
    return max(1, op.bytes_per_addr // 4)


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
    too_new = [k.op for k in ks if k.min_cc > cc]
    if too_new:
        raise ValueError(f"compute capability {cc // 10}.{cc % 10} lacks {', '.join(too_new)} "
                         f"(stmatrix needs 9.0)")
    return ks


def module_source(cc: int = 90, ops=None) -> str:
    """One CUDA translation unit holding the kernels of ``ops`` (default: all for ``cc``)."""
    return PRELUDE + "\n" + "\n".join(k.source for k in kernels(cc, ops))
