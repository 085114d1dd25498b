"""CUDA source of the wgmma cross-check, generated from the wgmma table (fragsim/instructions/wgmma.py).

One kernel per (form, A source, imm-scale-a, imm-scale-b, imm-trans-a, imm-trans-b); one warpgroup
(one CTA of 128 threads) per case.  Nothing in a kernel knows a layout: each case brings the raw
shared-memory image, the two 64-bit descriptors (start addresses relative to the image), A's
registers (A from registers), the C registers and scale-d; the kernel copies the image into
shared memory, makes the stores visible to the async proxy (fence.proxy.async.shared::cta), adds
the shared window's address to the descriptors' start fields, runs the one wgmma between
wgmma.fence and commit_group / wait_group 0, and writes the D registers back.

Kernel arguments (C-contiguous, one row per case):
    IMG (n, S) u8, S (int, a multiple of 16, <= SMEM_BYTES), DESC (n, 2) u64 (A, B),
    AREG (n, 128, 4) u32, CREG (n, 128, nD) u32, SCALE_D (n,) i32 -> DREG (n, 128, nD) u32,
    BASE (1,) u32: the shared address of the image's byte 0 (must be 1024-byte aligned).
Shared memory past S (up to SMEM_BYTES) is zeroed, so that a wrong descriptor reading outside
the image reads zeros, never another case's bytes or a fault.
"""

from __future__ import annotations

from dataclasses import dataclass

from fragsim.instructions.wgmma import THREADS, lookup_wgmma

from ..prelude import unit

SMEM_BYTES = 48 * 1024
NVCC_FLAGS = ("-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-O3", "-std=c++17")


@dataclass(frozen=True)
class Variant:
    form: str
    a_src: str = "smem"        # "smem" (descriptor) | "reg"
    scale_a: int = 1
    scale_b: int = 1
    trans_a: bool = False
    trans_b: bool = False

    @property
    def name(self) -> str:
        f = self.form.replace(".", "_")
        return (f"wg_{f}_{self.a_src}_{'n' if self.scale_a < 0 else 'p'}{'n' if self.scale_b < 0 else 'p'}"
                f"_{int(self.trans_a)}{int(self.trans_b)}")

    @classmethod
    def parse(cls, name: str) -> "Variant":
        """The variant whose kernel is called ``name`` (wg_<form>_<src>_<scales>_<trans>)."""
        parts = name[3:].split("_")
        form, src, sc, tr = ".".join(parts[:-3]), parts[-3], parts[-2], parts[-1]
        return cls(form, src, -1 if sc[0] == "n" else 1, -1 if sc[1] == "n" else 1, tr[0] == "1", tr[1] == "1")

    def check(self) -> "Variant":
        f = lookup_wgmma(self.form)
        if self.a_src not in ("smem", "reg"):
            raise ValueError(f"{self.name}: a_src must be 'smem' or 'reg'")
        if (self.scale_a, self.scale_b) != (1, 1) and not f.scale_ab:
            raise ValueError(f"{self.name}: {f.name} has no imm-scale-a/b")
        if (self.trans_a or self.trans_b) and not f.trans:
            raise ValueError(f"{self.name}: {f.name} has no imm-trans-a/b")
        if self.trans_a and self.a_src == "reg":
            raise ValueError(f"{self.name}: no imm-trans-a with A in registers")
        return self


def kernel_source(v: Variant) -> str:
    v.check()
    f = lookup_wgmma(v.form)
    nd = f.nregs("D")
    f32 = f.types["D"] == "f32"
    ctype = "float" if f32 else "unsigned"
    load = "__uint_as_float" if f32 else ""
    store = "__float_as_uint" if f32 else ""
    cons = "+f" if f32 else "+r"
    dlist = ", ".join(f"%{i}" for i in range(nd))
    outs = ", ".join(f'"{cons}"(d[{i}])' for i in range(nd))
    ins = []
    if v.a_src == "reg":
        a_op = "{" + ", ".join(f"%{nd + i}" for i in range(4)) + "}"
        ins += [f'"r"(a[{i}])' for i in range(4)]
    else:
        a_op = f"%{nd}"
        ins.append('"l"(da)')
    b_idx = nd + len(ins)
    ins += ['"l"(db)', '"r"(sd)']
    sd_idx = b_idx + 1
    imms = []
    if f.scale_ab:
        imms += [str(v.scale_a), str(v.scale_b)]
    if f.trans:
        if v.a_src == "smem":
            imms.append(str(int(v.trans_a)))
        imms.append(str(int(v.trans_b)))
    imm = "".join(", " + x for x in imms)
    return f"""
extern "C" __global__ void __launch_bounds__({THREADS}) {v.name}(
    const unsigned char* __restrict__ img, int S, const unsigned long long* __restrict__ desc,
    const unsigned* __restrict__ areg, const unsigned* __restrict__ creg, const int* __restrict__ scale_d,
    unsigned* __restrict__ dreg, unsigned* __restrict__ base_out) {{
  extern __shared__ __align__(1024) unsigned char sm[];
  const long long cs = blockIdx.x;
  const int t = threadIdx.x;
  const uint4* src = reinterpret_cast<const uint4*>(img + cs * (long long)S);
  uint4* dst = reinterpret_cast<uint4*>(sm);
  for (int i = t; i < {SMEM_BYTES // 16}; i += {THREADS}) dst[i] = i < S / 16 ? src[i] : make_uint4(0, 0, 0, 0);
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  const unsigned base = fs_smem_addr(sm);
  if (cs == 0 && t == 0) base_out[0] = base;
  const unsigned long long da = fs_rebase(desc[2 * cs], base), db = fs_rebase(desc[2 * cs + 1], base);
  (void)da;
  unsigned a[4];
  for (int i = 0; i < 4; ++i) a[i] = {f"areg[(cs * {THREADS} + t) * 4 + i]" if v.a_src == "reg" else "0"};
  (void)a;
  {ctype} d[{nd}];
  const unsigned* c = creg + (cs * {THREADS} + t) * {nd};
#pragma unroll
  for (int i = 0; i < {nd}; ++i) d[i] = {load}(c[i]);
  const int sd = scale_d[cs];
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  asm volatile("{{\\n .reg .pred p;\\n setp.ne.b32 p, %{sd_idx}, 0;\\n"
               " {f.ptx} {{{dlist}}}, {a_op}, %{b_idx}, p{imm};\\n}}"
               : {outs} : {", ".join(ins)} : "memory");
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  unsigned* o = dreg + (cs * {THREADS} + t) * {nd};
#pragma unroll
  for (int i = 0; i < {nd}; ++i) o[i] = {store}(d[i]);
}}
"""


def module_source(variants) -> str:
    return unit(*(kernel_source(v) for v in variants))
