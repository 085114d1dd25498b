"""Facts of the Tensor Memory Accelerator (TMA): ``cuTensorMapEncodeTiled``'s arguments and limits, and
the rules a tiled ``cp.async.bulk.tensor`` / ``cp.async.bulk`` applies when it runs.

Sources, cited by the short names used below:

- *driver*: CUDA Driver API, "Tensor Map Object Management", ``cuTensorMapEncodeTiled`` (cuda.h of
  CUDA 13.0 carries the same text) -- the encoding rules and the enums;
- *PTX*: PTX ISA 9.x, 5.5 "Tensors" (bounding box, traversal stride, out-of-bound access, swizzling
  modes) and 9.7.9 ``cp.async.bulk`` / ``cp.async.bulk.tensor`` (their restrictions);
- *guide*: CUDA C++ Programming Guide, "Asynchronous Data Copies using the Tensor Memory Accelerator",
  Table "Alignment requirements for multi-dimensional bulk tensor asynchronous copy operations in
  Compute Capability 9.0" and Table "Requirements and properties of the different swizzle patterns".

gpu_check's ``tma`` family checks every rule here against the GPU: the driver's verdict on argument
sets at each limit, and probes of the run-time rules (one process each, since a fault ends the CUDA
context).
"""

from __future__ import annotations

from dataclasses import dataclass

from .formats import FORMATS

__all__ = ["TmaType", "TMA_TYPES", "SWIZZLES", "INTERLEAVES", "OOB_FILLS", "SWIZZLE_CHUNK", "SWIZZLE_LINE",
           "MAX_RANK", "MIN_INTERLEAVED_RANK", "MAX_GLOBAL_DIM", "GLOBAL_STRIDE_LIMIT", "MAX_BOX_DIM",
           "MAX_ELEMENT_STRIDE", "GLOBAL_ALIGN", "BOX_INNER_ALIGN", "SMEM_ALIGN", "BOX_START_ALIGN",
           "BULK_ALIGN", "COORD_BITS", "oob_nan"]


@dataclass(frozen=True)
class TmaType:
    """A ``CUtensorMapDataType``: fragsim's name, the driver's enum value, bytes per element, and
    whether it is a floating-point type (only those take the NaN out-of-bound fill, *driver*)."""

    name: str
    enum: int
    bytes: int
    float: bool
    #: the number format whose canonical NaN the NaN fill writes (None: integer type)
    nan_format: str | None = None


#: The element types of a tiled tensor map by fragsim's name (``CU_TENSOR_MAP_DATA_TYPE_*``, *driver*).
#: The packed sub-byte types (16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B) are not modelled.
TMA_TYPES: dict[str, TmaType] = {t.name: t for t in (
    TmaType("u8", 0, 1, False), TmaType("u16", 1, 2, False), TmaType("u32", 2, 4, False),
    TmaType("s32", 3, 4, False), TmaType("u64", 4, 8, False), TmaType("s64", 5, 8, False),
    TmaType("f16", 6, 2, True, "f16"), TmaType("f32", 7, 4, True, "f32"), TmaType("f64", 8, 8, True, "f64"),
    TmaType("bf16", 9, 2, True, "bf16"), TmaType("f32.ftz", 10, 4, True, "f32"),
    TmaType("tf32", 11, 4, True, "tf32"), TmaType("tf32.ftz", 12, 4, True, "tf32"),
)}

#: Swizzle modes of sm_90 (``CU_TENSOR_MAP_SWIZZLE_*``): name -> (enum, span in bytes).  A mode XORs
#: the 16-byte chunk index (shared address bits 4..) with the 128-byte line index (bits 7..) over
#: log2(span / 16) bits, on the absolute shared address: CuTe's ``Swizzle<B,4,3>``; the pattern
#: repeats every span * 8 bytes (*PTX* 5.5.7; *guide*: 256, 512, 1024 bytes).  The 128B_ATOM_* modes
#: are sm_100's.
SWIZZLES: dict[str, tuple[int, int]] = {"none": (0, 0), "32B": (1, 32), "64B": (2, 64), "128B": (3, 128)}
#: Bytes kept whole by every swizzle mode (the chunk the XOR moves; *guide*: "granularity"), and the
#: line whose index is XORed in: the base offset of a destination is (dst / 128) % 8 (*PTX* 5.5.7).
SWIZZLE_CHUNK = 16
SWIZZLE_LINE = 128

#: Interleaved layouts (``CU_TENSOR_MAP_INTERLEAVE_*``): name -> (enum, slice bytes) (*PTX* 5.5.6).
INTERLEAVES: dict[str, tuple[int, int]] = {"none": (0, 0), "16B": (1, 16), "32B": (2, 32)}

#: Out-of-bound fill (``CU_TENSOR_MAP_FLOAT_OOB_FILL_*``): zeros, or the "OOB-NaN" (*PTX* 5.5.3.3)
#: that NAN_REQUEST_ZERO_FMA names.
OOB_FILLS: dict[str, int] = {"zero": 0, "nan": 1}

# -- encoding limits (*driver*) -------------------------------------------------------------------
#: tensorRank: 1..5; 3..5 when interleaved.
MAX_RANK = 5
MIN_INTERLEAVED_RANK = 3
#: globalDim: 1..2^32 elements.
MAX_GLOBAL_DIM = 1 << 32
#: globalStrides: multiples of GLOBAL_ALIGN (of INTERLEAVES["32B"] bytes with 32-byte interleave),
#: below 2^40 bytes.
GLOBAL_STRIDE_LIMIT = 1 << 40
#: globalAddress alignment: 16 bytes (32 with 32-byte interleave); the strides' too.
GLOBAL_ALIGN = 16
#: boxDim: 1..256 elements; without interleave boxDim[0] * element bytes is a multiple of 16.
MAX_BOX_DIM = 256
BOX_INNER_ALIGN = 16
#: elementStrides: 1..8 (elementStrides[0] is ignored without interleave).
MAX_ELEMENT_STRIDE = 8

# -- the copy at run time -------------------------------------------------------------------------
#: The shared-memory destination (or source) of a tiled copy: 128-byte aligned (*guide*, Table of
#: alignment requirements; the swizzle's base offset is (dst / 128) % 8, *PTX* 5.5.7).
SMEM_ALIGN = 128
#: The box's start in global memory: its innermost coordinate times the element size is a multiple of
#: 16 bytes (*PTX* 5.5.3.1: "The address of the bounding Box must also be aligned to 16 bytes"; a fault
#: on the H100, issue 24 reports; the tma family's probes record it).
BOX_START_ALIGN = 16
#: Tensor coordinates are .s32 (*PTX*, cp.async.bulk.tensor).
COORD_BITS = 32
#: cp.async.bulk (non-tensor): both addresses 16-byte aligned, size a multiple of 16 (*PTX*).
BULK_ALIGN = 16


def oob_nan(dtype: str) -> int:
    """The bits the NaN fill writes for a floating-point ``dtype``: its format's canonical NaN (all
    ones but the sign: 0x7FFF, 0x7FFFFFFF, ...)."""
    fmt = TMA_TYPES[dtype].nan_format
    if fmt is None:
        raise ValueError(f"{dtype} is an integer type: it has no NaN fill")
    return FORMATS[fmt].canonical_nan
