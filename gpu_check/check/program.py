"""The user's instructions, as they are, on the GPU: the program behind ``fragsim check --gpu``.

One kernel runs a whole program in one warp per block, one block per tag pass: it copies the
pass's initial shared memory in (the tagged tile, dynamic shared memory as large as the program
needs), then runs the instructions in order -- each with its 32 lane addresses, its active lanes and
its payload (registers a store writes, bytes a copy brings) -- and writes every load's registers
and the final shared memory out.  Each instruction is the asm statement gpu_check emits for its
table entry (``kernels.shared_asm``); ``__syncwarp`` orders one instruction's shared-memory effects
before the next, and each cp.async waits for its group.

Arrays (C-contiguous): SMEM (P, size) u8, OPS (n,) i32 (index into the kernel's op list), ADDR (n, 32)
u32 byte offsets from the start of dynamic shared memory, MASK (n,) u32, PAY (P, n, 32, 4) u32,
SRC (P, n, 32, 16) u8 -> OUT (P, n, 32, 4) u32, SMEM_OUT (P, size) u8.
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.arch import arch_for_cc
from fragsim.facts.hardware import WARP_LANES

from ..kernels import shared_asm
from ..prelude import unit
from .. import compile
from ..runner import device_info, import_cupy

#: Dynamic shared memory a kernel gets without opting in (CUDA C++ Programming Guide).
DEFAULT_DYNAMIC_SMEM = 48 * 1024
MAX_REGS = 4
MAX_COPY = 16


def program_source(ops) -> str:
    """CUDA source of ``fs_check_program`` for the shared-memory entries ``ops`` (in case order)."""
    cases = []
    for k, op in enumerate(ops):
        regs = [f"r{i}" for i in range(op.nregs)]
        if op.kind in ("ldsm", "ld"):
            call = shared_asm(op, "addr", regs=regs)
        elif op.kind in ("stsm", "st"):
            call = shared_asm(op, "addr", vals=[f"v[{i}]" for i in range(op.nregs)])
        else:
            call = (shared_asm(op, "addr", src="g") + ' asm volatile("cp.async.commit_group;" ::: "memory");'
                    ' asm volatile("cp.async.wait_group 0;" ::: "memory");')
        if op.kind not in ("ldsm", "stsm"):       # .sync.aligned instructions run on every lane
            call = f"if (on) {{ {call} }}"
        cases.append(f"      case {k}: {{ {call} break; }}  // {op.ptx}")
    body = "\n".join(cases)
    return unit(f"""extern "C" __global__ void fs_check_program(const unsigned char* __restrict__ SMEM,
    const int* __restrict__ OPS, const unsigned* __restrict__ ADDR, const unsigned* __restrict__ MASK,
    const unsigned* __restrict__ PAY, const unsigned char* __restrict__ SRC, unsigned* __restrict__ OUT,
    unsigned char* __restrict__ SMEM_OUT, int n, int size) {{
  extern __shared__ __align__(1024) unsigned char fs_smem[];
  const unsigned lane = threadIdx.x % FS_LANES;
  const long long p = blockIdx.x;
  {{ const unsigned* src = (const unsigned*)(SMEM + p * size);
     unsigned* dst = (unsigned*)fs_smem;
     for (int i = lane; i < size / 4; i += FS_LANES) dst[i] = src[i]; }}
  __syncwarp();
  const unsigned base = fs_smem_addr(fs_smem);
  for (int i = 0; i < n; ++i) {{
    const long long slot = (p * n + i) * FS_LANES + lane;
    const unsigned addr = base + ADDR[i * FS_LANES + lane];
    const bool on = (MASK[i] >> lane) & 1u;
    const unsigned* v = PAY + slot * {MAX_REGS};
    const unsigned long long g = fs_global_addr(SRC + slot * {MAX_COPY});
    unsigned r0 = 0u, r1 = 0u, r2 = 0u, r3 = 0u;
    switch (OPS[i]) {{
{body}
      default: break;
    }}
    __syncwarp();
    unsigned* o = OUT + slot * {MAX_REGS};
    o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3;
    (void)v; (void)g; (void)on;
  }}
  __syncwarp();
  {{ const unsigned* src = (const unsigned*)fs_smem;
     unsigned* dst = (unsigned*)(SMEM_OUT + p * size);
     for (int i = lane; i < size / 4; i += FS_LANES) dst[i] = src[i]; }}
}}
""")


def _split(op) -> bool:
    """ld/st.shared vectors of 8/16-bit elements: one element a register on the GPU, while the checker
    (fragsim.check.machine) moves a lane's bytes as packed 32-bit words."""
    return op.kind in ("ld", "st") and op.element_bytes < min(op.bytes_per_addr, 4)


def to_elements(op, words: np.ndarray) -> np.ndarray:
    """A lane's bytes as packed words (..., 32, k) -> one element of ``op`` a register (..., 32, nregs)."""
    b = np.ascontiguousarray(words, dtype="<u4").view(np.uint8).reshape(words.shape[:-1] + (-1,))
    e = b[..., :op.bytes_per_addr].reshape(words.shape[:-1] + (op.nregs, op.element_bytes)).astype(np.uint32)
    return (e << (8 * np.arange(op.element_bytes, dtype=np.uint32))).sum(-1, dtype=np.uint32)


def to_words(op, regs: np.ndarray) -> np.ndarray:
    """One element of ``op`` a register (..., 32, nregs) -> the lane's bytes as packed words (..., 32, k)."""
    b = np.ascontiguousarray(regs, dtype="<u4").view(np.uint8).reshape(regs.shape + (4,))[..., :op.element_bytes]
    b = b.reshape(regs.shape[:-1] + (op.bytes_per_addr,))
    pad = -op.bytes_per_addr % 4
    b = np.concatenate([b, np.zeros(b.shape[:-1] + (pad,), np.uint8)], -1)
    return np.ascontiguousarray(b).view("<u4").astype(np.uint32)


class GpuMachine:
    """Runs a check's program on device 0 (CuPy, NVRTC); ``info`` names the device."""

    name = "gpu"

    def __init__(self):
        self.cp = import_cupy()
        self.info = device_info(self.cp)
        cc = self.info["cc_int"]
        self.cc = cc
        self.info["arch"] = arch_for_cc(cc // 10, cc % 10, self.info["device"])
        self._modules: dict = {}

    def _function(self, ops):
        key = tuple(op.name for op in ops)
        if key not in self._modules:
            self._modules[key] = compile.nvrtc(program_source(ops), ["fs_check_program"],
                                               f"the check program for compute capability {self.info['cc']}",
                                               self.cp)["fs_check_program"]
        return self._modules[key]

    def run(self, instrs, smem: np.ndarray, payloads: list) -> tuple[list, np.ndarray]:
        """As ``fragsim.check.machine.Simulator.run``; instructions that cannot run are not sent."""
        from fragsim.check.machine import problem

        cp = self.cp
        npass, size = smem.shape
        sent = [i for i, ins in enumerate(instrs) if problem(ins) is None]
        too_new = sorted({instrs[i].op.name for i in sent if instrs[i].op.min_cc > self.cc})
        if too_new:
            raise ValueError(f"{self.info['device']} (compute capability {self.info['cc']}) lacks "
                             f"{', '.join(too_new)}")
        ops = []
        for i in sent:
            if instrs[i].op not in ops:
                ops.append(instrs[i].op)
        n = len(sent)
        codes = np.array([ops.index(instrs[i].op) for i in sent], np.int32)
        addrs = np.zeros((max(n, 1), WARP_LANES), np.uint32)
        masks = np.zeros(max(n, 1), np.uint32)
        pay = np.zeros((npass, max(n, 1), WARP_LANES, MAX_REGS), np.uint32)
        src = np.zeros((npass, max(n, 1), WARP_LANES, MAX_COPY), np.uint8)
        for j, i in enumerate(sent):
            ins = instrs[i]
            addrs[j] = np.where(ins.address_lanes, ins.addrs, 0)
            masks[j] = int(np.sum(ins.mask.astype(np.int64) << np.arange(WARP_LANES)))
            p = payloads[i]
            if p is not None and ins.op.family == "cp.async":
                src[:, j, :, :p.shape[-1]] = p
            elif p is not None:
                p = to_elements(ins.op, p) if _split(ins.op) else p
                pay[:, j, :, :p.shape[-1]] = p
        out = cp.zeros((npass, max(n, 1), WARP_LANES, MAX_REGS), dtype=cp.uint32)
        mem_out = cp.zeros((npass, size), dtype=cp.uint8)
        if n:
            f = self._function(ops)
            if size > DEFAULT_DYNAMIC_SMEM:
                f.max_dynamic_shared_size_bytes = size
            f((npass,), (WARP_LANES,), (cp.asarray(np.ascontiguousarray(smem)), cp.asarray(codes), cp.asarray(addrs),
                                      cp.asarray(masks), cp.asarray(pay), cp.asarray(src), out, mem_out,
                                      np.int32(n), np.int32(size)), shared_mem=size)
            cp.cuda.runtime.deviceSynchronize()
            got, mem = cp.asnumpy(out), cp.asnumpy(mem_out)
        else:
            got, mem = cp.asnumpy(out), smem.copy()
        outs: list = [None] * len(instrs)
        for j, i in enumerate(sent):
            ins = instrs[i]
            if ins.op.kind in ("ldsm", "ld"):
                regs = got[:, j, :, :ins.op.nregs]
                outs[i] = to_words(ins.op, regs) if _split(ins.op) else regs.copy()
        return outs, mem
