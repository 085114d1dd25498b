"""The GPU side of the tma family: the CUDA kernels, ``cuTensorMapEncodeTiled`` through ctypes, and the
worker process that runs cases one by one.

One case is one launch of one CTA: it fills a 1024-byte aligned shared region with a known pattern
(``sentinel``), initialises an mbarrier, issues one ``cp.async.bulk.tensor`` load (``arrive.expect_tx``
with the model's byte count, then a ``try_wait.parity`` loop with a clock timeout, so too few bytes
show as a timeout instead of a hang) and copies the whole region out; then it arrives once more, with
no expect_tx, and waits for the barrier's next phase, which completes only if the copy's complete_tx
left the tx-count at zero -- more bytes than the model counts would have gone on counting into that
phase -- so the count is checked exactly.  A store case fills the region with an image, issues one
tensor store, waits for its bulk group, and the tensor comes back with ``STORE_GUARD`` bytes after
it (filled with ``sentinel`` before the store), so a write past the tensor shows.  The tensor map of each case is
encoded by the real ``cuTensorMapEncodeTiled`` (libcuda through ctypes) and passed as a
``__grid_constant__`` parameter.

A fault (an illegal instruction or address) ends the CUDA context, so cases run in a worker process
(``python -m fragsim.gpu_check.tma.device worker CASES CUBIN OUT START``) that appends each result to
OUT/results.jsonl (bytes to OUT/dumps.bin) as it goes and exits after a fault; the parent
(gpu_check/tma/family.py) starts the next worker after the faulting case.  ``ModelDevice`` stands in for
the GPU (``--dry-run``): fragsim answers, a refusal plays a fault.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import sys
from typing import Any

import numpy as np

from fragsim.facts.tma import INTERLEAVES, OOB_FILLS, SWIZZLES, TMA_TYPES

from ..prelude import unit
from .cases import SENTINEL, STORE_GUARD, model_load, model_store, run_case, sentinel, tensor_map

#: Clock cycles a load waits for its mbarrier before it reports a timeout (~75 ms at 1.8 GHz), and
#: for the next phase that checks the count exactly (~2 ms).
TIMEOUT_CYCLES = 1 << 27
TX_CHECK_CYCLES = 1 << 22
#: Threads of the one CTA a case runs.
THREADS = 128
#: Alignment of the shared region every case works in (the 128B swizzle's pattern: 1024 bytes).
REGION_ALIGN = 1024
#: Global scratch a worker places tensors and images in.
POOL_BYTES = 64 << 20
#: cudaDevAttrMaxSharedMemoryPerBlockOptin, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
OPTIN_ATTR, MAX_DYNAMIC_ATTR = 97, 8
NAMES = ("fs_tma_load", "fs_tma_store")
CUDA_SUCCESS = 0
CUDA_ERROR_INVALID_VALUE = 1


def _copy_asm(rank: int, store: bool) -> str:
    regs = ", ".join(f'"r"(c[{i}])' for i in range(rank))
    if store:
        coords = ", ".join(f"%{i + 2}" for i in range(rank))
        return (f'asm volatile("cp.async.bulk.tensor.{rank}d.global.shared::cta.tile.bulk_group [%0, {{{coords}}}], '
                f'[%1];" :: "l"(map), "r"(s), {regs} : "memory");')
    coords = ", ".join(f"%{i + 3}" for i in range(rank))
    return (f'asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes '
            f'[%0], [%1, {{{coords}}}], [%2];" :: "r"(s), "l"(map), "r"(bar), {regs} : "memory");')


def _switch(store: bool) -> str:
    return "\n".join(f"      case {r}: {_copy_asm(r, store)} break;" for r in range(1, 6))


KERNELS = f"""
// the tma family (gpu_check/tma/device.py): one tensor-map load or store per launch
struct __align__(64) FsTensorMap {{ unsigned long long w[16]; }};

__device__ __forceinline__ unsigned char fs_sentinel(unsigned k) {{
  return (unsigned char)({SENTINEL[0]}u + {SENTINEL[1]}u * k);
}}

// The shared region: the first {REGION_ALIGN}-byte aligned address of the dynamic shared memory.
#define FS_REGION \\
  extern __shared__ __align__({REGION_ALIGN}) unsigned char fs_dyn[]; \\
  const unsigned fs_raw = fs_smem_addr(fs_dyn); \\
  const unsigned base = (fs_raw + {REGION_ALIGN - 1}u) & ~{REGION_ALIGN - 1}u; \\
  unsigned char* region = fs_dyn + (base - fs_raw);

extern "C" __global__ void __launch_bounds__({THREADS}) fs_tma_load(
    const __grid_constant__ FsTensorMap tm, int rank, int c0, int c1, int c2, int c3, int c4,
    unsigned dst, unsigned tx, unsigned nbytes, unsigned char* out, unsigned long long* status) {{
  FS_REGION
  __shared__ __align__(8) unsigned long long fs_bar;
  const unsigned bar = fs_smem_addr(&fs_bar);
  const int c[5] = {{c0, c1, c2, c3, c4}};
  for (unsigned k = threadIdx.x; k < nbytes; k += blockDim.x) region[k] = fs_sentinel(k);
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar) : "memory");
  // the pattern and the barrier's initialisation, visible to the async proxy before the copy
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(tx) : "memory");
    const unsigned long long map = reinterpret_cast<unsigned long long>(&tm);
    const unsigned s = base + dst;
    switch (rank) {{
{_switch(False)}
    }}
  }}
  const long long t0 = clock64();
  unsigned done = 0;
  long long waited = 0;
  while (!done && waited < {TIMEOUT_CYCLES}ll) {{
    asm volatile("{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }}"
                 : "=r"(done) : "r"(bar) : "memory");
    waited = clock64() - t0;
  }}
  __syncthreads();
  for (unsigned k = threadIdx.x; k < nbytes; k += blockDim.x) out[k] = region[k];
  if (threadIdx.x == 0) {{
    status[0] = done ? 1ull : 2ull;
    status[1] = (unsigned long long)waited;
    __nanosleep(2000);                       // late complete_tx (more bytes than expected) shows here
    status[2] = *(volatile unsigned long long*)&fs_bar;
    // phase 1: one arrival, no expect_tx; it completes only at tx-count 0, i.e. if no byte past the
    // expected count was counted into it
    unsigned exact = 0;
    if (done) {{
      asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
      const long long t1 = clock64();
      while (!exact && clock64() - t1 < {TX_CHECK_CYCLES}ll) {{
        asm volatile("{{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 1; selp.u32 %0, 1, 0, p; }}"
                     : "=r"(exact) : "r"(bar) : "memory");
      }}
    }}
    status[3] = exact ? 1ull : 2ull;
  }}
}}

extern "C" __global__ void __launch_bounds__({THREADS}) fs_tma_store(
    const __grid_constant__ FsTensorMap tm, int rank, int c0, int c1, int c2, int c3, int c4,
    unsigned src, unsigned nbytes, const unsigned char* image, unsigned long long* status) {{
  FS_REGION
  const int c[5] = {{c0, c1, c2, c3, c4}};
  for (unsigned k = threadIdx.x; k < nbytes; k += blockDim.x) region[k] = image[k];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {{
    const unsigned long long map = reinterpret_cast<unsigned long long>(&tm);
    const unsigned s = base + src;
    switch (rank) {{
{_switch(True)}
    }}
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
    status[0] = 1ull;
  }}
}}
"""


def source() -> str:
    return unit(KERNELS)


NVCC_FLAGS = ("-gencode=arch=compute_90a,code=sm_90a", "-cubin", "-O2", "-std=c++17")


# -- the driver ------------------------------------------------------------------------------------

class Driver:
    """libcuda's ``cuTensorMapEncodeTiled`` (ctypes): ``encode(case, base)`` -> (CUresult, 128 bytes)."""

    def __init__(self) -> None:
        name = ctypes.util.find_library("cuda") or "libcuda.so.1"
        self.lib = ctypes.CDLL(name)
        self.lib.cuInit(0)
        f = self.lib.cuTensorMapEncodeTiled
        f.restype = ctypes.c_int
        u64p, u32p = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
        f.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p, u32p, u32p,
                      ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
        self.fn = f
        self.buf = (ctypes.c_ubyte * 256)()

    def encode(self, case: dict[str, Any], base: int) -> tuple[int, bytes]:
        def arr(kind, values):
            values = list(values) or [0]         # rank 0 / 1: a valid pointer to nothing used
            return (kind * len(values))(*values)
        addr = (ctypes.addressof(self.buf) + 63) & ~63          # the map must be 64-byte aligned
        r = self.fn(addr, TMA_TYPES[case["dtype"]].enum, len(case["dims"]), base, arr(ctypes.c_uint64, case["dims"]),
                    arr(ctypes.c_uint64, case["strides"]), arr(ctypes.c_uint32, case["box"]),
                    arr(ctypes.c_uint32, case["es"]), INTERLEAVES[case["interleave"]][0], SWIZZLES[case["swizzle"]][0],
                    0, OOB_FILLS[case["oob_fill"]])
        return int(r), ctypes.string_at(addr, 128)


class Fault(RuntimeError):
    """The GPU (or the model standing in) stopped the case: the context is gone."""


class GpuDevice:
    """Cases on device 0 through CuPy's driver bindings."""

    def __init__(self, cubin: str) -> None:
        from ..runner import import_cupy
        cp = self.cp = import_cupy()
        cp.zeros(1)                                  # a current context before the driver calls
        drv = cp.cuda.driver
        self.driver = Driver()
        module = drv.moduleLoadData(open(cubin, "rb").read())
        self.fns = {n: drv.moduleGetFunction(module, n) for n in NAMES}
        self.optin = int(cp.cuda.runtime.deviceGetAttribute(OPTIN_ATTR, 0))
        for fn in self.fns.values():
            drv.funcSetAttribute(fn, MAX_DYNAMIC_ATTR, self.optin - REGION_ALIGN)
        self.pool = cp.cuda.alloc(POOL_BYTES)
        self.scratch = cp.cuda.alloc(POOL_BYTES // 4)
        self.status = cp.zeros(4, cp.uint64)
        self.base0 = (int(self.pool.ptr) + REGION_ALIGN - 1) & ~(REGION_ALIGN - 1)

    def base(self, case: dict[str, Any]) -> int:
        return self.base0 + case["base_offset"]

    def _h2d(self, ptr: int, a: np.ndarray) -> None:
        a = np.ascontiguousarray(a)
        self.cp.cuda.runtime.memcpy(ptr, a.ctypes.data, a.nbytes, 1)

    def _d2h(self, ptr: int, n: int) -> np.ndarray:
        out = np.empty(n, np.uint8)
        self.cp.cuda.runtime.memcpy(out.ctypes.data, ptr, n, 2)
        return out

    def encode(self, case: dict[str, Any]) -> int:
        return self.driver.encode(case, self.base(case))[0]

    def _launch(self, name: str, tmap: bytes, case: dict[str, Any], tail: list[tuple[Any, Any]], smem: int) -> None:
        c = list(case["coords"]) + [0] * (5 - len(case["coords"]))
        args: list[tuple[Any, Any]] = [(ctypes.c_int32, len(case["coords"]))] + [(ctypes.c_int32, v) for v in c] + tail
        holders = [(ctypes.c_ubyte * 128).from_buffer_copy(tmap)] + [kind(v) for kind, v in args]
        ptrs = (ctypes.c_void_p * len(holders))(*[ctypes.addressof(h) for h in holders])
        drv = self.cp.cuda.driver
        drv.launchKernel(self.fns[name], 1, 1, 1, THREADS, 1, 1, smem + REGION_ALIGN, 0, ctypes.addressof(ptrs), 0)
        try:
            self.cp.cuda.runtime.deviceSynchronize()
        except Exception as e:                     # an illegal instruction / address: the context is gone
            raise Fault(" ".join(str(e).split())[:300]) from None

    def load(self, case: dict[str, Any], tensor: np.ndarray, tx: int, nbytes: int) -> dict[str, Any]:
        base = self.base(case)
        self._h2d(base, tensor)
        code, tmap = self.driver.encode(case, base)
        if code != CUDA_SUCCESS:
            return {"status": "refused", "code": code, "base": base}
        out = self.scratch.ptr
        self.status.fill(0)
        self._launch("fs_tma_load", tmap, case, [(ctypes.c_uint32, case["dst"]), (ctypes.c_uint32, tx),
                                                 (ctypes.c_uint32, nbytes), (ctypes.c_uint64, int(out)),
                                                 (ctypes.c_uint64, int(self.status.data.ptr))], nbytes)
        st = self.cp.asnumpy(self.status)
        return {"status": "ok" if st[0] == 1 else "timeout", "code": code, "base": base, "cycles": int(st[1]),
                "mbarrier": int(st[2]), "tx_exact": bool(st[3] == 1), "bytes": self._d2h(int(out), nbytes)}

    def store(self, case: dict[str, Any], tensor: np.ndarray, image: np.ndarray) -> dict[str, Any]:
        base = self.base(case)
        self._h2d(base, np.concatenate([tensor, sentinel(STORE_GUARD)]))
        code, tmap = self.driver.encode(case, base)
        if code != CUDA_SUCCESS:
            return {"status": "refused", "code": code, "base": base}
        self._h2d(int(self.scratch.ptr), image)
        self.status.fill(0)
        self._launch("fs_tma_store", tmap, case, [(ctypes.c_uint32, case["dst"]), (ctypes.c_uint32, image.size),
                                                  (ctypes.c_uint64, int(self.scratch.ptr)),
                                                  (ctypes.c_uint64, int(self.status.data.ptr))], image.size)
        return {"status": "ok", "code": code, "base": base, "guard": STORE_GUARD,
                "bytes": self._d2h(base, tensor.size + STORE_GUARD)}


class ModelDevice:
    """fragsim in the GPU's place (--dry-run): the pipeline, not the model, is what that checks."""

    BASE = 0x7F0000000000

    def base(self, case: dict[str, Any]) -> int:
        return self.BASE + case["base_offset"]

    def encode(self, case: dict[str, Any]) -> int:
        try:
            tensor_map(case, self.base(case))
        except (ValueError, TypeError):
            return CUDA_ERROR_INVALID_VALUE
        return CUDA_SUCCESS

    def load(self, case: dict[str, Any], tensor: np.ndarray, tx: int, nbytes: int) -> dict[str, Any]:
        base = self.base(case)
        if self.encode(case):
            return {"status": "refused", "code": CUDA_ERROR_INVALID_VALUE, "base": base}
        if case["interleave"] != "none":        # not modelled: its comparison says so, whatever comes back
            return {"status": "ok", "code": CUDA_SUCCESS, "base": base, "cycles": 0, "mbarrier": 0, "tx_exact": True,
                    "bytes": sentinel(nbytes)}
        try:
            region = model_load(case, base, tensor, nbytes)
        except (ValueError, TypeError) as e:
            raise Fault(f"fragsim refuses it: {e}") from None
        return {"status": "ok", "code": CUDA_SUCCESS, "base": base, "cycles": 0, "mbarrier": 0, "tx_exact": True,
                "bytes": region}

    def store(self, case: dict[str, Any], tensor: np.ndarray, image: np.ndarray) -> dict[str, Any]:
        base = self.base(case)
        if self.encode(case):
            return {"status": "refused", "code": CUDA_ERROR_INVALID_VALUE, "base": base}
        try:
            out = model_store(case, base, tensor, image, STORE_GUARD)
        except (ValueError, TypeError) as e:
            raise Fault(f"fragsim refuses it: {e}") from None
        return {"status": "ok", "code": CUDA_SUCCESS, "base": base, "guard": STORE_GUARD, "bytes": out}


def work(cases: list[dict[str, Any]], device: Any, out_dir: str, start: int) -> int:
    """Run ``cases[start:]`` on ``device``, appending each result to out_dir; 3 after a fault (the
    faulting case recorded), 0 when all ran."""
    with open(os.path.join(out_dir, "results.jsonl"), "a") as res, open(os.path.join(out_dir, "dumps.bin"), "ab") as dumps:
        for i in range(start, len(cases)):
            case = cases[i]
            try:
                r = run_case(case, device)
            except Fault as e:
                res.write(json.dumps({"i": i, "status": "fault", "error": str(e)}) + "\n")
                res.flush()
                return 3
            raw = r.pop("bytes", None)
            if raw is not None:
                dumps.seek(0, os.SEEK_END)
                r["dump"] = [dumps.tell(), int(raw.size)]
                dumps.write(raw.tobytes())
                dumps.flush()
            res.write(json.dumps({"i": i, **r}) + "\n")
            res.flush()
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 5 or argv[0] != "worker":
        sys.stderr.write("usage: python -m fragsim.gpu_check.tma.device worker CASES.json CUBIN|--dry-run OUT START\n")
        return 2
    _, cases_path, cubin, out_dir, start = argv
    with open(cases_path) as f:
        cases = json.load(f)
    device = ModelDevice() if cubin == "--dry-run" else GpuDevice(cubin)
    rc = work(cases, device, out_dir, int(start))
    if rc:          # after a fault: no clean-up through a dead CUDA context
        sys.stdout.flush()
        os._exit(rc)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
