"""What a tiled TMA copy moves, byte for byte: ``tma_load`` (``cp.async.bulk.tensor.Nd.shared::cluster
.global.tile``), ``tma_store`` (``cp.async.bulk.tensor.Nd.global.shared::cta.tile``) and ``bulk_copy``
(``cp.async.bulk``, no tensor map).

The box starts at ``coords`` (innermost first, signed 32-bit, as in PTX) and takes ``tmap.smem_box``
elements along each dimension, every ``traversal_strides[i]``-th one.  In shared memory it is dense,
innermost first, from ``dst``; the swizzle then moves each 16-byte chunk by the bits of its ABSOLUTE
shared address (``Swizzle<B,4,3>``: chunk index bits 4.. XOR line index bits 7..), so a destination
that is 128-byte aligned but not aligned to the pattern (1024 bytes for 128B) starts the pattern at
row (dst / 128) % 8, as the PTX ISA's "swizzle base offset" says.  Elements outside the tensor
(a coordinate < 0 or >= its dimension) are written as zeros, or with ``oob_fill="nan"`` as the
dtype's canonical NaN (``fragsim.facts.tma.oob_nan``); a store skips them.

``box_layout`` gives the same placement as arrays (each element's global coordinates, whether it is
inside the tensor, its global byte offset and its shared address), for pictures and checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fragsim.facts.tma import (BOX_START_ALIGN, BULK_ALIGN, COORD_BITS, SMEM_ALIGN, SWIZZLE_CHUNK, SWIZZLE_LINE,
                               SWIZZLES, oob_nan)
from fragsim.facts.smem import beyond_smem, smem_limit, smem_per_cta
from fragsim.layout.swizzle import Swizzle
from fragsim.sim.smem import check_smem
from fragsim.validate import integer, show

from .tensormap import TensorMap

__all__ = ["BoxLayout", "box_layout", "tma_swizzle", "tma_load", "tma_store", "bulk_copy"]

_COORD_MIN, _COORD_MAX = -(1 << (COORD_BITS - 1)), (1 << (COORD_BITS - 1)) - 1
#: Byte offsets past this are refused before any int64 arithmetic could overflow (no array is that large).
MAX_OFFSET = 1 << 62


def tma_swizzle(mode: str) -> Swizzle | None:
    """The swizzle a mode applies to shared addresses: ``Swizzle<B,4,3>`` with 2^B = span / 16
    (32B -> Swizzle<1,4,3>, 64B -> <2,4,3>, 128B -> <3,4,3>); None for "none"."""
    span = SWIZZLES[mode][1]
    if not span:
        return None
    m = SWIZZLE_CHUNK.bit_length() - 1
    return Swizzle((span // SWIZZLE_CHUNK).bit_length() - 1, m, SWIZZLE_LINE.bit_length() - 1 - m)


@dataclass(frozen=True)
class BoxLayout:
    """Where each element of one box goes, in shared-memory order (innermost fastest), ``n`` elements:
    ``coords`` int64 (n, rank) its global coordinates (innermost first); ``in_bounds`` bool (n,);
    ``global_offset`` int64 (n,) its byte offset from the map's base (meaningful where in bounds);
    ``shared_address`` int64 (n,) the shared address of its first byte, swizzle applied; ``extent``
    the bytes from the base that the elements inside the tensor reach (0: none is inside)."""

    tmap: TensorMap
    start: tuple[int, ...]
    dst: int
    coords: np.ndarray
    in_bounds: np.ndarray
    global_offset: np.ndarray
    shared_address: np.ndarray
    extent: int


def _tensor_map(tmap, fn: str) -> TensorMap:
    if not isinstance(tmap, TensorMap):
        raise TypeError(f"{fn}: tmap must be a fragsim.TensorMap, got {show(tmap)}")
    return tmap


def _coords(coords, tmap: TensorMap, fn: str) -> tuple[int, ...]:
    if isinstance(coords, (str, bytes)) or not hasattr(coords, "__len__"):
        raise TypeError(f"{fn}: coords must be a sequence of {tmap.rank} integers (the box start, innermost "
                        f"first), got {show(coords)}")
    if len(coords) != tmap.rank:
        raise ValueError(f"{fn}: coords has {len(coords)} values; the rank-{tmap.rank} map needs {tmap.rank} "
                         "(innermost first)")
    out = []
    for i, c in enumerate(coords):
        v = integer(c, f"{fn}: coords[{i}]")
        if not _COORD_MIN <= v <= _COORD_MAX:
            raise ValueError(f"{fn}: coords[{i}] = {v} is not a signed 32-bit coordinate (PTX's tensorCoords are .s32)")
        out.append(v)
    return tuple(out)


def box_layout(tmap: TensorMap, coords, dst: int = 0) -> BoxLayout:
    """The placement of the box at ``coords`` whose shared image starts at ``dst`` (see ``BoxLayout``);
    refuses what a copy refuses at run time (interleaved maps, a box start not 16-byte aligned, a
    destination not 128-byte aligned)."""
    fn = "box_layout"
    tmap = _tensor_map(tmap, fn)
    return _layout(tmap, _coords(coords, tmap, fn), _dst(dst, fn, "dst"), fn)


def _dst(dst, fn: str, name: str) -> int:
    d = integer(dst, f"{fn}: {name}")
    far = beyond_smem(d, 1, f"{fn}: {name} = shared address")
    if far:
        raise ValueError(far)
    if d < 0 or d % SMEM_ALIGN:
        raise ValueError(f"{fn}: {name} = {d:#x} must be a {SMEM_ALIGN}-byte aligned shared address (the CUDA "
                         "programming guide's alignment rule for bulk tensor copies)")
    return d


def _layout(tmap: TensorMap, start: tuple[int, ...], dst: int, fn: str) -> BoxLayout:
    if tmap.interleave != "none":
        raise ValueError(f"{fn}: interleave={tmap.interleave!r} maps are not modelled (the shared-memory layout "
                         "of interleaved boxes is not documented); use interleave='none'")
    e = tmap.element_bytes
    if (start[0] * e) % BOX_START_ALIGN:
        raise ValueError(f"{fn}: coords[0] = {start[0]} starts the box {(start[0] * e) % BOX_START_ALIGN} bytes "
                         f"past a {BOX_START_ALIGN}-byte boundary ({tmap.dtype}: {e} bytes an element); the box's "
                         f"global address must be {BOX_START_ALIGN}-byte aligned (PTX ISA, Bounding Box), so "
                         f"coords[0] must be a multiple of {BOX_START_ALIGN // e}")
    if tmap.box_bytes > smem_per_cta():
        raise ValueError(f"{fn}: the box is {tmap.box_bytes} bytes (smem_box {tmap.smem_box}); more than "
                         f"{smem_limit()}")
    counts, steps, rank = tmap.smem_box, tmap.traversal_strides, tmap.rank
    strides = (e,) + tmap.global_strides

    def axis(v: np.ndarray, i: int) -> np.ndarray:     # dimension i is axis rank-1-i (innermost fastest)
        return v.reshape([-1 if ax == rank - 1 - i else 1 for ax in range(rank)])

    shape = counts[::-1]
    inside = np.ones(shape, bool)
    offset = np.zeros(shape, np.int64)
    coords, empty, reach = [], False, e
    for i in range(rank):
        g = start[i] + np.arange(counts[i], dtype=np.int64) * steps[i]
        ok = (g >= 0) & (g < tmap.global_dims[i])
        inside = inside & axis(ok, i)
        coords.append(np.broadcast_to(axis(g, i), shape).ravel())
        if not ok.any():
            empty = True                 # no element lies inside the tensor: nothing is read
        elif not empty:
            # the inside elements are a product of each dimension's: the farthest one's end, in Python ints
            lo, hi = int(g[ok].min()), int(g[ok].max())
            reach += hi * strides[i]
            if reach < MAX_OFFSET:       # each dimension's offsets then fit int64 too
                offset = offset + axis(np.clip(g, lo, hi) * strides[i], i)
    extent = 0 if empty else reach
    if extent >= MAX_OFFSET:
        raise ValueError(f"{fn}: the box's elements inside the tensor reach byte {extent} from the base; no array "
                         "holds that much")
    linear = dst + np.arange(int(np.prod(shape)), dtype=np.int64) * e
    swz = tma_swizzle(tmap.swizzle)
    address = linear if swz is None else swz(linear)
    return BoxLayout(tmap, start, dst, np.stack(coords, axis=1), inside.ravel(), offset.ravel(), address, extent)


def _global_bytes(tensor, fn: str, write: bool) -> np.ndarray:
    if not isinstance(tensor, np.ndarray):
        raise TypeError(f"{fn}: tensor must be a NumPy array (the global bytes from the map's base), got "
                        f"{show(tensor)}")
    if not tensor.flags.c_contiguous:
        raise ValueError(f"{fn}: tensor must be C-contiguous (its bytes in memory order, as the GPU holds them); "
                         "pass np.ascontiguousarray(tensor)")
    if write and not tensor.flags.writeable:
        raise ValueError(f"{fn}: tensor is read-only; a store writes into it in place")
    return tensor.reshape(-1).view(np.uint8)


def _reach(box: BoxLayout, nbytes: int, fn: str) -> None:
    """Every element inside the tensor must lie inside the array that holds it."""
    if box.extent <= nbytes:
        return
    past = box.in_bounds & (box.global_offset + box.tmap.element_bytes > nbytes)
    if past.any():
        i = int(np.argmax(past))
        raise ValueError(f"{fn}: tensor has {nbytes} bytes, but element {tuple(int(c) for c in box.coords[i])} of "
                         f"the box (inside global_dims {box.tmap.global_dims}) ends at byte "
                         f"{int(box.global_offset[i]) + box.tmap.element_bytes}; pass the tensor's whole extent "
                         "from the map's base")


def _smem_reach(box: BoxLayout, smem: np.ndarray, fn: str, name: str) -> None:
    top = int(box.shared_address.max()) + box.tmap.element_bytes if box.shared_address.size else 0
    if top > smem.size:
        raise ValueError(f"{fn}: the box's {box.tmap.box_bytes} bytes from {name} = {box.dst:#x} reach shared address "
                         f"{top - 1:#x}, past the {smem.size} bytes of smem")


def _bytes_of(box: BoxLayout) -> tuple[np.ndarray, np.ndarray]:
    """(byte indices in the tensor of the in-bounds elements, byte addresses in shared memory of all)."""
    lanes = np.arange(box.tmap.element_bytes, dtype=np.int64)
    return (box.global_offset[box.in_bounds, None] + lanes), (box.shared_address[:, None] + lanes)


def tma_load(tmap: TensorMap, tensor, coords, smem, dst: int) -> None:
    """Write into ``smem`` (1-D uint8, in place) the bytes a tiled ``cp.async.bulk.tensor`` load writes:
    the box of ``tmap`` at ``coords`` (innermost first), read from ``tensor`` (a C-contiguous NumPy
    array whose first byte is at ``tmap.base``), laid out from shared address ``dst``, swizzled on the
    absolute address, out-of-bound elements filled.  ``tmap.box_bytes`` bytes are written."""
    fn = "tma_load"
    tmap = _tensor_map(tmap, fn)
    start = _coords(coords, tmap, fn)
    box = _layout(tmap, start, _dst(dst, fn, "dst"), fn)
    mem = check_smem(smem, stores=True)
    src = _global_bytes(tensor, fn, write=False)
    _reach(box, src.size, fn)
    _smem_reach(box, mem, fn, "dst")
    e = tmap.element_bytes
    fill = oob_nan(tmap.dtype) if tmap.oob_fill == "nan" else 0
    values = np.empty((box.in_bounds.size, e), np.uint8)
    values[:] = np.frombuffer(fill.to_bytes(e, "little"), np.uint8)
    gidx, sidx = _bytes_of(box)
    values[box.in_bounds] = src[gidx]
    mem[sidx] = values


def tma_store(tmap: TensorMap, tensor, coords, smem, src: int) -> None:
    """Write into ``tensor`` (in place) what a tiled ``cp.async.bulk.tensor`` store writes: the box
    of ``tmap`` at ``coords``, read from ``smem`` at shared address ``src`` through the swizzle (the
    reverse of ``tma_load``); elements outside the tensor are not written.  A store's coordinates
    must be non-negative (PTX ISA, restrictions on the .global.shared::cta direction)."""
    fn = "tma_store"
    tmap = _tensor_map(tmap, fn)
    start = _coords(coords, tmap, fn)
    neg = [i for i, c in enumerate(start) if c < 0]
    if neg:
        raise ValueError(f"{fn}: coords[{neg[0]}] = {start[neg[0]]}: a store's box must start at non-negative "
                         "coordinates (PTX ISA: tensorCoords of the .global.shared::cta direction)")
    box = _layout(tmap, start, _dst(src, fn, "src"), fn)
    mem = check_smem(smem)
    out = _global_bytes(tensor, fn, write=True)
    _reach(box, out.size, fn)
    _smem_reach(box, mem, fn, "src")
    gidx, sidx = _bytes_of(box)
    out[gidx] = mem[sidx[box.in_bounds]]


def bulk_copy(dst_mem, dst: int, src_mem, src: int, size: int) -> None:
    """``cp.async.bulk``: copy ``size`` bytes from byte ``src`` of ``src_mem`` to byte ``dst`` of ``dst_mem``
    (NumPy arrays, C-contiguous; ``dst_mem`` written in place).  Both addresses must be 16-byte aligned
    and ``size`` a multiple of 16 (PTX ISA, cp.async.bulk); the ranges must lie inside the arrays."""
    fn = "bulk_copy"
    out = _global_bytes(dst_mem, fn, write=True)
    inp = _global_bytes(src_mem, fn, write=False)
    n = integer(size, f"{fn}: size")
    if n < 0 or n % BULK_ALIGN:
        raise ValueError(f"{fn}: size = {n} must be a non-negative multiple of {BULK_ALIGN} bytes (PTX ISA, cp.async.bulk)")
    at = {}
    for name, v, mem in (("dst", dst, out), ("src", src, inp)):
        a = at[name] = integer(v, f"{fn}: {name}")
        if a < 0 or a % BULK_ALIGN:
            raise ValueError(f"{fn}: {name} = {a:#x} must be a {BULK_ALIGN}-byte aligned address (PTX ISA, cp.async.bulk)")
        if a + n > mem.size:
            raise ValueError(f"{fn}: {name} = {a:#x} + size {n} reaches past the {mem.size} bytes of {name}_mem")
    out[at["dst"]:at["dst"] + n] = inp[at["src"]:at["src"] + n].copy()
