"""``TensorMap``: a tiled tensor map, with the arguments and refusals of ``cuTensorMapEncodeTiled``.

A tensor map describes a tensor in global memory (element type, dimensions, byte strides, base
address) and the box one ``cp.async.bulk.tensor`` copies (box dimensions, element strides, swizzle,
interleave, out-of-bound fill).  Dimensions are listed innermost first, as the driver and PTX list
them: ``global_dims[0]`` is the contiguous one.  ``global_strides`` are the byte strides of
dimensions 1.. (rank - 1 values; the innermost stride is the element size), exactly as
``cuTensorMapEncodeTiled`` takes them.  Every rule of that function (fragsim/facts/tma.py cites
them) is checked here, and a refusal is one ValueError/TypeError naming the parameter and the rule.

What one load writes to shared memory is ``smem_box``: the elements taken along each dimension
(``ceil(box_dims[i] / element_strides[i])``; all of ``box_dims[0]`` without interleave, where
``element_strides[0]`` is ignored), innermost first; ``box_bytes`` of them -- the byte count a
``complete_tx`` gives the mbarrier.  Box rows lie ``smem_pitch`` bytes apart (a row narrower than the
swizzle span takes a whole span), ``smem_bytes`` in all.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from fragsim.facts.tma import (BOX_INNER_ALIGN, GLOBAL_ALIGN, GLOBAL_STRIDE_LIMIT, INTERLEAVES, MAX_BOX_BYTES,
                               MAX_BOX_DIM, MAX_ELEMENT_STRIDE, MAX_GLOBAL_DIM, MAX_RANK, MIN_INTERLEAVED_RANK,
                               OOB_FILLS, SWIZZLES, TMA_TYPES, TmaType)
from fragsim.validate import show

__all__ = ["TensorMap"]

WHO = "TensorMap"
#: globalAddress is a 64-bit pointer.
ADDRESS_LIMIT = 1 << 64


def _ints(value, name: str) -> tuple[int, ...]:
    """A list, tuple, range or 1-D array of Python/NumPy integers (not bools, not floats) as a tuple."""
    if not (isinstance(value, (list, tuple, range)) or isinstance(value, np.ndarray) and value.ndim == 1):
        raise TypeError(f"{WHO}: {name} must be a sequence of integers (a list, tuple or 1-D array), got "
                        f"{show(value)}")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{WHO}: {name}[{i}] must be an integer, got {show(v)}")
        out.append(int(v))
    return tuple(out)


def _name(value, name: str, choices) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{WHO}: {name} must be one of {', '.join(map(repr, choices))}, got {show(value)}")
    if value not in choices:
        low = {c.lower(): c for c in choices}
        hint = f" (did you mean {low[value.lower()]!r}?)" if value.lower() in low else ""
        raise ValueError(f"{WHO}: {name} must be one of {', '.join(map(repr, choices))}, got {value!r}{hint}")
    return value


def _dtype(value) -> TmaType:
    if not isinstance(value, str):
        raise TypeError(f"{WHO}: dtype must be a name such as 'bf16' (one of {', '.join(TMA_TYPES)}), "
                        f"got {show(value)}")
    key = value.strip().lstrip(".").lower()
    if key not in TMA_TYPES:
        raise ValueError(f"{WHO}: dtype {value!r} is not a tensor-map data type; expected one of "
                         f"{', '.join(TMA_TYPES)} (the packed sub-byte types are not modelled)")
    return TMA_TYPES[key]


@dataclass(frozen=True, init=False)
class TensorMap:
    """``TensorMap(dtype, global_dims, global_strides, box_dims, element_strides=None, interleave="none",
    swizzle="none", oob_fill="zero", base=0)``: ``cuTensorMapEncodeTiled``'s arguments, innermost
    dimension first.

    ``dtype``: u8, u16, u32, s32, u64, s64, f16, bf16, f32, f64, tf32, f32.ftz, tf32.ftz;
    ``global_dims``: elements per dimension (1..2^32, rank 1..5); ``global_strides``: bytes between
    consecutive indices of dimensions 1.. (rank - 1 values, multiples of 16, below 2^40);
    ``box_dims``: the box, 1..256 elements per dimension, at most 228 KB in all; ``element_strides``:
    1..8 (default all 1);
    ``interleave``: "none", "16B", "32B"; ``swizzle``: "none", "32B", "64B", "128B"; ``oob_fill``:
    "zero" or "nan" (floating-point types only); ``base``: the global address of element 0.
    """

    dtype: str
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]
    box_dims: tuple[int, ...]
    element_strides: tuple[int, ...]
    interleave: str
    swizzle: str
    oob_fill: str
    base: int

    def __init__(self, dtype, global_dims, global_strides, box_dims, element_strides=None, interleave="none",
                 swizzle="none", oob_fill="zero", base=0):
        t = _dtype(dtype)
        dims = _ints(global_dims, "global_dims")
        strides = _ints(global_strides, "global_strides")
        box = _ints(box_dims, "box_dims")
        es = (1,) * len(box) if element_strides is None else _ints(element_strides, "element_strides")
        inter = _name(interleave, "interleave", INTERLEAVES)
        swz = _name(swizzle, "swizzle", SWIZZLES)
        fill = _name(oob_fill, "oob_fill", OOB_FILLS)
        if isinstance(base, (bool, np.bool_)) or not isinstance(base, numbers.Integral):
            raise TypeError(f"{WHO}: base must be an integer (the global address of the tensor), got {show(base)}")
        base = int(base)
        _check(t, dims, strides, box, es, inter, swz, fill, base)
        for k, v in (("dtype", t.name), ("global_dims", dims), ("global_strides", strides), ("box_dims", box),
                     ("element_strides", es), ("interleave", inter), ("swizzle", swz), ("oob_fill", fill),
                     ("base", base)):
            object.__setattr__(self, k, v)

    # -- what a copy moves -------------------------------------------------------------------------
    @property
    def rank(self) -> int:
        return len(self.global_dims)

    @property
    def element_bytes(self) -> int:
        return TMA_TYPES[self.dtype].bytes

    @property
    def traversal_strides(self) -> tuple[int, ...]:
        """The element strides the box is walked with: ``element_strides``, but 1 along dimension 0
        without interleave (the driver ignores ``element_strides[0]`` there)."""
        if self.interleave == "none":
            return (1,) + self.element_strides[1:]
        return self.element_strides

    @property
    def smem_box(self) -> tuple[int, ...]:
        """Elements one copy moves along each dimension (innermost first): ceil(box / stride)."""
        return tuple(-(-b // s) for b, s in zip(self.box_dims, self.traversal_strides))

    @property
    def box_bytes(self) -> int:
        """Bytes one copy writes to shared memory (out-of-bound elements included): the mbarrier's
        complete_tx count."""
        return math.prod(self.smem_box) * self.element_bytes

    @property
    def swizzle_span(self) -> int:
        """Bytes of one swizzle row (32, 64, 128; 0 without swizzle)."""
        return SWIZZLES[self.swizzle][1]

    @property
    def smem_pitch(self) -> int:
        """Bytes from one box row to the next in shared memory: the row's bytes, or the swizzle span
        when the row is narrower (fragsim/facts/tma.py, SWIZZLES)."""
        return max(self.smem_box[0] * self.element_bytes, self.swizzle_span)

    @property
    def smem_bytes(self) -> int:
        """Bytes of shared memory one copy spans from its destination: rows x ``smem_pitch``."""
        return math.prod(self.smem_box[1:]) * self.smem_pitch

    def __repr__(self) -> str:
        extra = "".join(f", {k}={getattr(self, k)!r}" for k, d in (("element_strides", (1,) * self.rank),
                                                                    ("interleave", "none"), ("swizzle", "none"),
                                                                    ("oob_fill", "zero"))
                        if getattr(self, k) != d) + (f", base={self.base:#x}" if self.base else "")
        return (f"TensorMap({self.dtype!r}, global_dims={self.global_dims}, global_strides={self.global_strides}, "
                f"box_dims={self.box_dims}{extra})")


def _check(t: TmaType, dims, strides, box, es, inter: str, swz: str, fill: str, base: int) -> None:
    """cuTensorMapEncodeTiled's requirements, in the order its documentation lists them."""
    rank = len(dims)
    if not 1 <= rank <= MAX_RANK:
        raise ValueError(f"{WHO}: global_dims has {rank} dimensions; the rank (tensorRank) must be 1..{MAX_RANK}")
    if inter != "none" and rank < MIN_INTERLEAVED_RANK:
        raise ValueError(f"{WHO}: interleave={inter!r} needs rank >= {MIN_INTERLEAVED_RANK} (tensorRank), "
                         f"got {rank} dimensions")
    for name, seq, want in (("global_strides", strides, rank - 1), ("box_dims", box, rank),
                            ("element_strides", es, rank)):
        if len(seq) != want:
            what = ("the byte strides of dimensions 1..rank-1; the innermost stride is the element size"
                    if name == "global_strides" else "one per dimension")
            raise ValueError(f"{WHO}: {name} has {len(seq)} values, rank {rank} needs {want} ({what})")
    align = INTERLEAVES["32B"][1] if inter == "32B" else GLOBAL_ALIGN
    if not 0 <= base < ADDRESS_LIMIT:
        raise ValueError(f"{WHO}: base {base} must be a 64-bit global address, 0 <= base < 2^64 (globalAddress)")
    if base % align:
        why = " with interleave='32B'" if inter == "32B" else ""
        raise ValueError(f"{WHO}: base {base:#x} must be {align}-byte aligned{why} (globalAddress)")
    for i, d in enumerate(dims):
        if not 1 <= d <= MAX_GLOBAL_DIM:
            raise ValueError(f"{WHO}: global_dims[{i}] = {d} must be 1..2^32 elements (globalDim)")
    for i, s in enumerate(strides):
        if s % align or not 0 <= s < GLOBAL_STRIDE_LIMIT:
            why = " with interleave='32B'" if inter == "32B" else ""
            raise ValueError(f"{WHO}: global_strides[{i}] = {s} (the stride of dimension {i + 1}) must be a "
                             f"multiple of {align} bytes{why}, 0 <= stride < 2^40 (globalStrides)")
    for i, b in enumerate(box):
        if not 1 <= b <= MAX_BOX_DIM:
            raise ValueError(f"{WHO}: box_dims[{i}] = {b} must be 1..{MAX_BOX_DIM} elements (boxDim)")
    inner = box[0] * t.bytes
    if inter == "none" and inner % BOX_INNER_ALIGN:
        raise ValueError(f"{WHO}: box_dims[0] = {box[0]} {t.name} elements is {inner} bytes; without interleave "
                         f"the box's inner dimension must be a multiple of {BOX_INNER_ALIGN} bytes (boxDim[0] * "
                         "element size)")
    for i, s in enumerate(es):
        if not 1 <= s <= MAX_ELEMENT_STRIDE:
            raise ValueError(f"{WHO}: element_strides[{i}] = {s} must be 1..{MAX_ELEMENT_STRIDE} (elementStrides)")
    counted = math.prod(b // s for b, s in zip(box, es)) * t.bytes
    if counted > MAX_BOX_BYTES:
        raise ValueError(f"{WHO}: the box is {counted} bytes as the driver counts it (box_dims[i] // "
                         f"element_strides[i] elements per dimension, element_strides[0] included); it must fit "
                         f"one SM's {MAX_BOX_BYTES} bytes (228 KB) of shared memory")
    span = SWIZZLES[swz][1]
    if inter == "none" and span and inner > span:
        raise ValueError(f"{WHO}: swizzle={swz!r} takes a box whose inner dimension is at most {span} bytes; "
                         f"box_dims[0] = {box[0]} {t.name} elements is {inner} bytes")
    if fill == "nan" and not t.float:
        raise ValueError(f"{WHO}: oob_fill='nan' needs a floating-point dtype; {t.name} is an integer type "
                         "(use oob_fill='zero')")
