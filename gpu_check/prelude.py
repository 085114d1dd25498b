"""The one CUDA prelude of gpu_check's kernels, generated from fragsim's facts.

Every generated translation unit (the table's kernels, movmatrix, wgmma, the check program, the
access-set kernels, the Nsight Compute probe) starts with ``PRELUDE``: the warp size, the per-warp
tile of the table's kernels, the shared and global addresses of a pointer, the case/lane prologue
and tile copies of one-warp-per-case kernels, and the wgmma descriptor's start-address field --
its position read off ``MatrixDescriptor.encode``, so the CUDA cannot disagree with the Python.
It holds only macros and inline device functions, so a kernel that uses none of it compiles to the
same code; it builds with NVRTC and with nvcc.
"""

from __future__ import annotations

from fragsim.facts.hardware import WARP_LANES
from fragsim.layout.descriptor import ADDRESS_LIMIT, MatrixDescriptor

#: Shared-memory tile of one case (one warp) of the table's kernels, in bytes.
TILE_BYTES = 1024
#: Warps per block of the one-warp-per-case kernels.
WARPS_PER_BLOCK = 4
THREADS_PER_BLOCK = WARP_LANES * WARPS_PER_BLOCK


def descriptor_start_field() -> tuple[int, int]:
    """(shift, mask) of the wgmma descriptor's start-address field: the field's low bits hold
    ``start >> shift``, ``mask`` covers them; read off ``MatrixDescriptor.encode``."""
    top = ADDRESS_LIMIT // 2          # the highest address bit a descriptor keeps
    code = MatrixDescriptor(start_address=top, leading_byte_offset=0, stride_byte_offset=0).encode()
    shift = top.bit_length() - code.bit_length()
    return shift, (ADDRESS_LIMIT >> shift) - 1


_SHIFT, _MASK = descriptor_start_field()

PRELUDE = f"""\
// fragsim gpu_check prelude (gpu_check/prelude.py), generated from fragsim's facts.
#define FS_LANES {WARP_LANES}
#define FS_TILE {TILE_BYTES}
#define FS_WARPS {WARPS_PER_BLOCK}
// wgmma matrix descriptor: bits 0.. hold the start address >> FS_DESC_SHIFT (MatrixDescriptor.encode)
#define FS_DESC_SHIFT {_SHIFT}
#define FS_DESC_MASK {_MASK:#x}ull

// The 32-bit shared-window address of a generic pointer into shared memory.
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

// A descriptor whose start address is relative to a shared window, moved to the window at `base`.
__device__ __forceinline__ unsigned long long fs_rebase(unsigned long long d, unsigned base) {{
  const unsigned long long f = ((d & FS_DESC_MASK) + (base >> FS_DESC_SHIFT)) & FS_DESC_MASK;
  return (d & ~FS_DESC_MASK) | f;
}}

// This warp's case index (return past the last case) and its lane.
#define FS_CASE(n) \\
  const long long w = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / FS_LANES; \\
  const unsigned lane = threadIdx.x % FS_LANES; \\
  if (w >= (n)) return;

// The warp's tile: copied in from global memory, one word per lane at a time.
#define FS_TILE_IN(SMEM) \\
  __shared__ __align__(128) unsigned char fs_tiles[FS_WARPS][FS_TILE]; \\
  unsigned char* tile = fs_tiles[threadIdx.x / FS_LANES]; \\
  {{ const unsigned* src = (const unsigned*)((SMEM) + w * FS_TILE); \\
     unsigned* dst = (unsigned*)tile; \\
     for (int i = lane; i < FS_TILE / 4; i += FS_LANES) dst[i] = src[i]; }} \\
  __syncwarp();

#define FS_TILE_OUT(SMEM_OUT) \\
  __syncwarp(); \\
  {{ const unsigned* src = (const unsigned*)tile; \\
     unsigned* dst = (unsigned*)((SMEM_OUT) + w * FS_TILE); \\
     for (int i = lane; i < FS_TILE / 4; i += FS_LANES) dst[i] = src[i]; }}
"""


def unit(*parts: str) -> str:
    """A CUDA translation unit: the prelude, then ``parts``."""
    return PRELUDE + "\n" + "\n".join(parts)
