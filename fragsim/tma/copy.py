"""What a tiled TMA copy moves, byte for byte: ``tma_load`` (``cp.async.bulk.tensor.Nd.shared::cluster
.global.tile``), ``tma_store`` (``cp.async.bulk.tensor.Nd.global.shared::cta.tile``) and ``bulk_copy``
(``cp.async.bulk``, no tensor map).

The box starts at ``coords`` (innermost first, signed 32-bit, as in PTX) and takes ``tmap.smem_box``
elements along each dimension, every ``traversal_strides[i]``-th one.  In shared memory it lies
innermost first from ``dst``, its rows ``tmap.smem_pitch`` bytes apart (a row narrower than the
swizzle span takes a whole span; the bytes between are not written); the swizzle then moves each
16-byte chunk by the bits of its ABSOLUTE shared address (``Swizzle<B,4,3>``: chunk index bits 4..
XOR line index bits 7..), so a destination that is 128-byte aligned but not aligned to the pattern
(1024 bytes for 128B) starts the pattern at row (dst / 128) % 8, as the PTX ISA's "swizzle base
offset" says.  A load writes elements outside the tensor (a coordinate < 0 or >= its dimension) as
zeros, or with ``oob_fill="nan"`` as ``fragsim.facts.tma.oob_nan``, and rounds tf32 elements to
tf32; a store writes the elements inside the tensor and, along the inner dimension, the rest of the
last 16-byte chunk of each row (``STORE_CHUNK``).  fragsim/facts/tma.py says which of these rules the
H100 recording, not a document, established.

``box_layout`` gives the same placement as arrays (each element's global coordinates, whether it is
inside the tensor, whether a store writes it, its global byte offset and its shared address), for
pictures and checks; ``load_values`` the bytes a load writes for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fragsim.facts.tma import (BOX_START_ALIGN, BULK_ALIGN, COORD_BITS, SMEM_ALIGN, STORE_CHUNK, SWIZZLE_CHUNK,
                               SWIZZLE_LINE, SWIZZLES, TF32_DROPPED_BITS, TF32_NAN, oob_nan)
from fragsim.facts.smem import beyond_smem, smem_limit, smem_per_cta
from fragsim.layout.swizzle import Swizzle
from fragsim.sim.smem import check_smem
from fragsim.validate import integer, show

from .tensormap import TensorMap

__all__ = ["BoxLayout", "box_layout", "load_values", "tma_swizzle", "tma_load", "tma_store", "bulk_copy"]

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
    ``stored`` bool (n,) whether a store writes it (in bounds, or past ``global_dims[0]`` in a row's
    last 16-byte chunk); ``global_offset`` int64 (n,) its byte offset from the map's base (meaningful
    where stored or in bounds); ``shared_address`` int64 (n,) the shared address of its first byte,
    rows ``smem_pitch`` apart, swizzle applied; ``extent`` and ``store_extent`` the bytes from the base
    that the elements inside the tensor, and those a store writes, reach (0: none)."""

    tmap: TensorMap
    start: tuple[int, ...]
    dst: int
    coords: np.ndarray
    in_bounds: np.ndarray
    stored: np.ndarray
    global_offset: np.ndarray
    shared_address: np.ndarray
    extent: int
    store_extent: int


def _tensor_map(tmap, fn: str) -> TensorMap:
    if not isinstance(tmap, TensorMap):
        raise TypeError(f"{fn}: tmap must be a fragsim.TensorMap, got {show(tmap)}")
    return tmap


def _coords(coords, tmap: TensorMap, fn: str) -> tuple[int, ...]:
    if not (isinstance(coords, (list, tuple)) or isinstance(coords, np.ndarray) and coords.ndim == 1):
        raise TypeError(f"{fn}: coords must be a sequence of {tmap.rank} integers (the box start, innermost "
                        f"first: a list, tuple or 1-D array), got {show(coords)}")
    if len(coords) != tmap.rank:
        raise ValueError(f"{fn}: coords has {len(coords)} values; tmap has rank {tmap.rank}, so it needs {tmap.rank} "
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
        raise ValueError(f"{fn}: tmap has interleave={tmap.interleave!r}: interleaved maps are not modelled (the "
                         "shared-memory layout of interleaved boxes is not documented); use interleave='none'")
    e = tmap.element_bytes
    if (start[0] * e) % BOX_START_ALIGN:
        raise ValueError(f"{fn}: coords[0] = {start[0]} starts the box {(start[0] * e) % BOX_START_ALIGN} bytes "
                         f"past a {BOX_START_ALIGN}-byte boundary ({tmap.dtype}: {e} bytes an element); the box's "
                         f"global address must be {BOX_START_ALIGN}-byte aligned (PTX ISA, Bounding Box), so "
                         f"coords[0] must be a multiple of {BOX_START_ALIGN // e}")
    if tmap.smem_bytes > smem_per_cta():
        raise ValueError(f"{fn}: the box spans {tmap.smem_bytes} bytes of shared memory (smem_box {tmap.smem_box}, "
                         f"rows {tmap.smem_pitch} bytes apart); more than {smem_limit()}")
    counts, steps, rank = tmap.smem_box, tmap.traversal_strides, tmap.rank
    strides = (e,) + tmap.global_strides
    # a store's reach along dimension 0: the tensor's row rounded up to whole 16-byte chunks
    store_dim0 = -(-tmap.global_dims[0] * e // STORE_CHUNK) * STORE_CHUNK // e

    def axis(v: np.ndarray, i: int) -> np.ndarray:     # dimension i is axis rank-1-i (innermost fastest)
        return v.reshape([-1 if ax == rank - 1 - i else 1 for ax in range(rank)])

    shape = counts[::-1]
    inside = np.ones(shape, bool)
    stored = np.ones(shape, bool)
    offset = np.zeros(shape, np.int64)
    coords, reach = [], {"in": e, "store": e}
    for i in range(rank):
        g = start[i] + np.arange(counts[i], dtype=np.int64) * steps[i]
        ok = (g >= 0) & (g < tmap.global_dims[i])
        st = (g >= 0) & (g < store_dim0) if i == 0 else ok
        inside = inside & axis(ok, i)
        stored = stored & axis(st, i)
        coords.append(np.broadcast_to(axis(g, i), shape).ravel())
        for key, m in (("in", ok), ("store", st)):
            # the reached elements are a product of each dimension's: the farthest one's end, in Python ints
            reach[key] = reach[key] + int(g[m].max()) * strides[i] if m.any() and reach[key] else 0
        if st.any() and 0 < reach["store"] < MAX_OFFSET:      # each dimension's offsets then fit int64 too
            offset = offset + axis(np.clip(g, int(g[st].min()), int(g[st].max())) * strides[i], i)
    for key in reach:
        if reach[key] >= MAX_OFFSET:
            raise ValueError(f"{fn}: the box's elements inside the tensor reach byte {reach[key]} from the base; no "
                             "array holds that much")
    row, col = np.divmod(np.arange(int(np.prod(shape)), dtype=np.int64), counts[0])
    linear = dst + row * tmap.smem_pitch + col * e
    swz = tma_swizzle(tmap.swizzle)
    address = linear if swz is None else swz(linear)
    return BoxLayout(tmap, start, dst, np.stack(coords, axis=1), inside.ravel(), stored.ravel(), offset.ravel(),
                     address, reach["in"], reach["store"])


def load_values(box: BoxLayout, inside: np.ndarray) -> np.ndarray:
    """The bytes a load writes for each element of ``box``, (n, element_bytes) uint8: ``inside`` -- the
    global bytes of the elements inside the tensor, (in_bounds.sum(), element_bytes) uint8 -- as the copy
    converts them (a tf32 map's rounded to tf32), and the out-of-bound fill elsewhere."""
    tmap = box.tmap
    e = tmap.element_bytes
    fill = oob_nan(tmap.dtype) if tmap.oob_fill == "nan" else 0
    values = np.empty((box.in_bounds.size, e), np.uint8)
    values[:] = np.frombuffer(fill.to_bytes(e, "little"), np.uint8)
    values[box.in_bounds] = _round_tf32(inside) if tmap.dtype.startswith("tf32") else inside
    return values


def _round_tf32(values: np.ndarray) -> np.ndarray:
    """f32 words (m, 4) uint8 rounded to tf32 as a load does (fragsim/facts/tma.py, TF32_DROPPED_BITS):
    nearest even on the dropped bits, a NaN to ``TF32_NAN``, an infinity kept."""
    w = np.ascontiguousarray(values).view("<u4").reshape(-1)
    low = np.uint32((1 << TF32_DROPPED_BITS) - 1)
    half_minus_one = np.uint32((1 << (TF32_DROPPED_BITS - 1)) - 1)
    odd = (w >> np.uint32(TF32_DROPPED_BITS)) & np.uint32(1)
    rounded = (w + half_minus_one + odd) & ~low
    exp_all_ones = np.uint32(0x7F800000)
    mag = w & np.uint32(0x7FFFFFFF)
    out = np.where(mag > exp_all_ones, np.uint32(TF32_NAN), np.where(mag == exp_all_ones, w, rounded))
    return out.astype("<u4").view(np.uint8).reshape(values.shape)


def _global_bytes(tensor, fn: str, write: bool, name: str = "tensor") -> np.ndarray:
    """The bytes of a C-contiguous numeric array (the memory a copy reads or writes), as a uint8 view."""
    what = "the global bytes from the map's base" if name == "tensor" else "its bytes"
    if not isinstance(tensor, np.ndarray):
        raise TypeError(f"{fn}: {name} must be a NumPy array ({what}), got {show(tensor)}")
    if tensor.dtype.kind not in "biuf":
        raise TypeError(f"{fn}: {name} must hold numbers ({what}), got dtype {tensor.dtype}")
    if not tensor.flags.c_contiguous:
        raise ValueError(f"{fn}: {name} must be C-contiguous (its bytes in memory order, as the GPU holds them); "
                         f"pass np.ascontiguousarray({name})")
    if write and not tensor.flags.writeable:
        raise ValueError(f"{fn}: {name} is read-only; a store writes into it in place")
    return tensor.reshape(-1).view(np.uint8)


def _reach(box: BoxLayout, which: np.ndarray, extent: int, nbytes: int, fn: str, what: str) -> None:
    """Every element the copy reads or writes (``which``) must lie inside the array that holds the tensor."""
    if extent <= nbytes:
        return
    past = which & (box.global_offset + box.tmap.element_bytes > nbytes)
    if past.any():
        i = int(np.argmax(past))
        raise ValueError(f"{fn}: tensor has {nbytes} bytes, but element {tuple(int(c) for c in box.coords[i])} of "
                         f"the box ({what}) ends at byte {int(box.global_offset[i]) + box.tmap.element_bytes}; pass "
                         "the tensor's whole extent from the map's base")


def _smem_reach(box: BoxLayout, smem: np.ndarray, fn: str, name: str) -> None:
    top = int(box.shared_address.max()) + box.tmap.element_bytes if box.shared_address.size else 0
    if top > smem.size:
        raise ValueError(f"{fn}: the box's {box.tmap.smem_bytes} bytes from {name} = {box.dst:#x} reach shared address "
                         f"{top - 1:#x}, past the {smem.size} bytes of smem")


def _lanes(box: BoxLayout) -> np.ndarray:
    return np.arange(box.tmap.element_bytes, dtype=np.int64)


def tma_load(tmap: TensorMap, tensor, coords, smem, dst: int) -> None:
    """Write into ``smem`` (1-D uint8, in place) the bytes a tiled ``cp.async.bulk.tensor`` load writes:
    the box of ``tmap`` at ``coords`` (innermost first), read from ``tensor`` (a C-contiguous NumPy
    array whose first byte is at ``tmap.base``), its rows ``tmap.smem_pitch`` apart from shared address
    ``dst``, swizzled on the absolute address, out-of-bound elements filled, tf32 elements rounded.
    ``tmap.box_bytes`` bytes are written; the bytes between narrow rows are left as they are."""
    fn = "tma_load"
    tmap = _tensor_map(tmap, fn)
    start = _coords(coords, tmap, fn)
    box = _layout(tmap, start, _dst(dst, fn, "dst"), fn)
    mem = check_smem(smem, stores=True)
    src = _global_bytes(tensor, fn, write=False)
    _reach(box, box.in_bounds, box.extent, src.size, fn, f"inside global_dims {tmap.global_dims}")
    _smem_reach(box, mem, fn, "dst")
    lanes = _lanes(box)
    inside = src[box.global_offset[box.in_bounds, None] + lanes]
    mem[box.shared_address[:, None] + lanes] = load_values(box, inside)


def tma_store(tmap: TensorMap, tensor, coords, smem, src: int) -> None:
    """Write into ``tensor`` (in place) what a tiled ``cp.async.bulk.tensor`` store writes: the box
    of ``tmap`` at ``coords``, read from ``smem`` at shared address ``src`` through the swizzle (the
    reverse of ``tma_load``, bytes unchanged): the elements inside the tensor, and past
    ``global_dims[0]`` the rest of each row's last 16-byte chunk (``BoxLayout.stored``).  A store's
    coordinates must be non-negative (PTX ISA, restrictions on the .global.shared::cta direction)."""
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
    _reach(box, box.stored, box.store_extent, out.size, fn, "a store writes the 16-byte chunks of the tensor's "
           "rows whole")
    _smem_reach(box, mem, fn, "src")
    lanes = _lanes(box)
    out[box.global_offset[box.stored, None] + lanes] = mem[box.shared_address[box.stored, None] + lanes]


def bulk_copy(dst_mem, dst: int, src_mem, src: int, size: int) -> None:
    """``cp.async.bulk``: copy ``size`` bytes from byte ``src`` of ``src_mem`` to byte ``dst`` of ``dst_mem``
    (NumPy arrays, C-contiguous; ``dst_mem`` written in place).  Both addresses must be 16-byte aligned
    and ``size`` a multiple of 16 (PTX ISA, cp.async.bulk); the ranges must lie inside the arrays."""
    fn = "bulk_copy"
    out = _global_bytes(dst_mem, fn, write=True, name="dst_mem")
    inp = _global_bytes(src_mem, fn, write=False, name="src_mem")
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
