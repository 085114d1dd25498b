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
sets at each limit, every byte a load or store moves, and probes of the run-time rules (one process
each, since a fault ends the CUDA context).  Where the H100 (driver 580, CUDA 13.0) does what no
document says, the rule below says *measured*: fitted on the even-numbered cases of the recording
tests/data/tma/run1, checked on its odd ones, validated by tests/data/tma/run2 (docs/tma.md).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["TmaType", "TMA_TYPES", "SWIZZLES", "INTERLEAVES", "OOB_FILLS", "SWIZZLE_CHUNK", "SWIZZLE_LINE",
           "MAX_RANK", "MIN_INTERLEAVED_RANK", "MAX_GLOBAL_DIM", "GLOBAL_STRIDE_LIMIT", "MAX_BOX_DIM",
           "MAX_ELEMENT_STRIDE", "GLOBAL_ALIGN", "BOX_INNER_ALIGN", "SMEM_ALIGN", "BOX_START_ALIGN",
           "BULK_ALIGN", "COORD_BITS", "MAX_BOX_BYTES", "OOB_NAN_HALF", "TF32_DROPPED_BITS", "TF32_NAN",
           "STORE_CHUNK", "oob_nan"]


@dataclass(frozen=True)
class TmaType:
    """A ``CUtensorMapDataType``: fragsim's name, the driver's enum value, bytes per element, and
    whether it is a floating-point type (only those take the NaN out-of-bound fill, *driver*)."""

    name: str
    enum: int
    bytes: int
    float: bool


#: The element types of a tiled tensor map by fragsim's name (``CU_TENSOR_MAP_DATA_TYPE_*``, *driver*).
#: The packed sub-byte types (16U4_ALIGN8B, 16U4_ALIGN16B, 16U6_ALIGN16B) are not modelled.
TMA_TYPES: dict[str, TmaType] = {t.name: t for t in (
    TmaType("u8", 0, 1, False), TmaType("u16", 1, 2, False), TmaType("u32", 2, 4, False),
    TmaType("s32", 3, 4, False), TmaType("u64", 4, 8, False), TmaType("s64", 5, 8, False),
    TmaType("f16", 6, 2, True), TmaType("f32", 7, 4, True), TmaType("f64", 8, 8, True),
    TmaType("bf16", 9, 2, True), TmaType("f32.ftz", 10, 4, True),
    TmaType("tf32", 11, 4, True), TmaType("tf32.ftz", 12, 4, True),
)}

#: Swizzle modes of sm_90 (``CU_TENSOR_MAP_SWIZZLE_*``): name -> (enum, span in bytes).  A mode XORs
#: the 16-byte chunk index (shared address bits 4..) with the 128-byte line index (bits 7..) over
#: log2(span / 16) bits, on the absolute shared address: CuTe's ``Swizzle<B,4,3>``; the pattern
#: repeats every span * 8 bytes (*PTX* 5.5.7; *guide*: 256, 512, 1024 bytes).  The 128B_ATOM_*
#: modes are sm_100's.  A box row (the box's inner dimension) narrower than the span still takes a
#: whole span in shared memory -- the swizzle permutes the chunks of span-wide rows -- so rows lie
#: ``max(inner bytes, span)`` apart and a load leaves the bytes between them unwritten (*measured*:
#: every swizzled load and store of the recording).
SWIZZLES: dict[str, tuple[int, int]] = {"none": (0, 0), "32B": (1, 32), "64B": (2, 64), "128B": (3, 128)}
#: Bytes kept whole by every swizzle mode (the chunk the XOR moves; *guide*: "granularity"), and the
#: line whose index is XORed in: the base offset of a destination is (dst / 128) % 8 (*PTX* 5.5.7).
SWIZZLE_CHUNK = 16
SWIZZLE_LINE = 128

#: Interleaved layouts (``CU_TENSOR_MAP_INTERLEAVE_*``): name -> (enum, slice bytes) (*PTX* 5.5.6).
#: The *driver* text says "When interleave is CU_TENSOR_MAP_INTERLEAVE_32B, swizzle must be
#: CU_TENSOR_MAP_SWIZZLE_32B", but the 580 driver encodes 32-byte interleave with every swizzle
#: (*measured*: 24 encode cases of run1 with 128B, 74 of run2 with each mode), so TensorMap does not.
INTERLEAVES: dict[str, tuple[int, int]] = {"none": (0, 0), "16B": (1, 16), "32B": (2, 32)}

#: Out-of-bound fill (``CU_TENSOR_MAP_FLOAT_OOB_FILL_*``): zeros, or the "OOB-NaN" (*PTX* 5.5.3.3)
#: that NAN_REQUEST_ZERO_FMA names.
OOB_FILLS: dict[str, int] = {"zero": 0, "nan": 1}
#: The "special NaN constant" of the NaN fill (*driver*) is this 16-bit word in every half-word of the
#: element, whatever the dtype: 0x7FF7 (f16, bf16), 0x7FF77FF7 (f32, tf32), 0x7FF77FF77FF77FF7 (f64) --
#: a NaN in each format, not its canonical one (*measured*: every NaN-filled element of the recording).
OOB_NAN_HALF = 0x7FF7

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
#: The box the driver encodes fits one SM's shared memory (228 KB on sm_90), counted as the driver
#: counts it: prod(boxDim[i] / elementStrides[i]) elements in integer division -- rounded down, and
#: elementStrides[0] included, unlike the copy (ceil, elementStrides[0] ignored) -- so a box whose
#: boxDim[0] is below elementStrides[0] counts 0 bytes and passes whatever its size.  Not in the
#: *driver* text; *measured* (tests/data/tma/run1 and run2): every map up to 233,472 bytes encoded,
#: every one of 237,568 bytes or more refused (CUresult 1), maps that elementStrides[0] brought under
#: encoded, and two of 1.3 MB and 242 MB whose boxDim[0] < elementStrides[0] encoded.  Fitted on
#: run1's even cases alone it was the mbarrier's tx-count range (2^20 bytes), which run1's odd cases
#: refuted; refitted on run1 (ceil), run2 -- the validation run -- refuted the rounding; this rule
#: fits both runs and awaits its own validation (docs/tma.md).
MAX_BOX_BYTES = 228 * 1024
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
#: A load of a tf32 (or tf32.ftz) map rounds every element to tf32: the low 13 bits of the f32 word
#: rounded to nearest even (a carry may reach the exponent, up to infinity), a NaN becomes tf32's
#: canonical NaN ``TF32_NAN`` (sign cleared), an infinity stays; a store moves the bytes unchanged, as
#: both directions do for every other dtype (f32.ftz and tf32.ftz flush nothing) (*PTX* 5.5.1 lists
#: .tf32 "rounded to nearest even"; *measured*: every tf32 load and store of run1 and run2, 679 ties).
TF32_DROPPED_BITS = 13
TF32_NAN = 0x7FFFE000
#: A store writes every 16-byte chunk of a box row whole when the chunk starts inside the tensor's
#: inner dimension: elements past globalDim[0] in the last chunk of a row are written too (into the
#: row's padding), the chunks beyond are not; along the other dimensions exactly the elements inside
#: the tensor are written.  A load fills exactly the elements outside the tensor (*measured*: every
#: store and load of the recording).
STORE_CHUNK = 16


def oob_nan(dtype: str) -> int:
    """The bits the NaN fill writes for a floating-point ``dtype``: ``OOB_NAN_HALF`` in every half-word
    (0x7FF7, 0x7FF77FF7, 0x7FF77FF77FF77FF7)."""
    t = TMA_TYPES[dtype]
    if not t.float:
        raise ValueError(f"{dtype} is an integer type: it has no NaN fill")
    return int.from_bytes(OOB_NAN_HALF.to_bytes(2, "little") * (t.bytes // 2), "little")
