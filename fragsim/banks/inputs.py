"""Checks of the bank model's inputs (addresses, masks, cp.async sources), shared by both paths."""

from __future__ import annotations

import numpy as np

from fragsim.validate import array, element_units_hint, hex_int
from fragsim.facts.hardware import WARP_LANES
from fragsim.facts.smem import beyond_smem, smem_per_cta
from fragsim.instructions.shared_op import SharedOp
from fragsim.ranges import format_ranges
from fragsim.sim.smem import lane_mask

FULL_MASK = (1 << WARP_LANES) - 1
LANES = np.arange(WARP_LANES)


def active_lanes(o: SharedOp, mask) -> np.ndarray:
    """mask -> bool (32,) of the lanes that take part (lanes past the address lanes never do)."""
    bits = lane_mask(mask)
    if o.kind in ("ldsm", "stsm") and not bits[: o.address_lanes].all():
        raise ValueError(f"mask: {o.name} is .sync.aligned, every lane of the warp executes it "
                         f"(lanes {format_ranges(np.flatnonzero(~bits[:o.address_lanes]))} are masked off)")
    return bits & (LANES < o.address_lanes)


def batch_masks(o: SharedOp, mask, n: int) -> np.ndarray:
    """mask -> uint32 (n,) bit masks: None, one int, (n,) ints, (32,) or (n, 32) booleans."""
    m: np.ndarray                               # each branch below builds it its own way
    if mask is None:
        m = np.full(n, FULL_MASK, np.uint32)
    else:
        arr = array(mask, "mask")
        if arr.dtype == bool:
            if arr.shape == (WARP_LANES,):
                arr = np.broadcast_to(arr, (n, WARP_LANES))
            if arr.shape != (n, WARP_LANES):
                raise ValueError(f"mask of booleans must be shaped (32,) or ({n}, 32), got {arr.shape}")
            m = (arr.astype(np.uint64) << LANES.astype(np.uint64)).sum(-1).astype(np.uint32)
        elif arr.dtype.kind in "ui":
            if arr.ndim > 1 or (arr.ndim == 1 and arr.shape != (n,)):
                raise ValueError(f"mask of ints must be one int or shaped ({n},), got {arr.shape}")
            bad = (arr > FULL_MASK) | ((arr < 0) if arr.dtype.kind == "i" else False)
            if np.any(bad):   # checked before one int is spread over the batch: an empty batch too
                i = int(np.flatnonzero(bad.reshape(-1))[0])
                where = "" if arr.ndim == 0 else f"instruction {i}: "
                raise ValueError(f"{where}mask {hex_int(arr.reshape(-1)[i])} does not fit in 32 bits (bit i = lane i)")
            if arr.ndim == 0:
                arr = np.full(n, arr)
            m = arr.astype(np.uint32)
        else:
            raise TypeError(f"mask must be ints (bit i = lane i) or booleans, got dtype {arr.dtype}")
    if o.kind in ("ldsm", "stsm"):
        need = np.uint32((1 << o.address_lanes) - 1)
        bad = (m & need) != need
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"instruction {i}: mask: {o.name} is .sync.aligned, every lane of the warp "
                             f"executes it (mask {int(m[i]):#010x})")
    return m


def integer_array(x, name: str, what: str) -> np.ndarray:
    a = array(x, name)
    if a.dtype.kind not in "ui":
        raise TypeError(f"{name} must be integer {what}, got dtype {a.dtype}"
                        + (" (floats are not addresses)" if a.dtype.kind == "f" else ""))
    return a


def address_problem(o: SharedOp, v: int) -> str:
    """What is wrong with one lane's shared-memory address ("" if nothing): the rule of both paths."""
    if v < 0:
        return f"{o.what} {v} is negative"
    if v >> 32:
        return f"{o.what} {v:#x} does not fit in 32 bits"
    if v % o.bytes_per_addr:
        return f"{o.what} {v:#x} is not {o.bytes_per_addr}-byte aligned"
    return beyond_smem(v, o.bytes_per_addr, o.what)


def check_batch_extent(o: SharedOp, a: np.ndarray, m: np.ndarray) -> None:
    """Batch (n, 32) int64 addresses, (n,) uint32 masks: the first active lane whose bytes pass one
    CTA's shared memory is refused (the kernel checks sign, 32 bits and alignment)."""
    over = a > smem_per_cta() - o.bytes_per_addr
    if not over.any():
        return
    active = ((m[:, None] >> LANES.astype(np.uint32)) & 1).astype(bool) & (LANES < o.address_lanes)
    bad = over & active
    if bad.any():
        i, lane = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"instruction {i}, lane {lane}: {address_problem(o, int(a[i, lane]))}")


def check_addrs(o: SharedOp, addrs, active) -> np.ndarray:
    """Shared-memory byte offsets of one instruction (32,): non-negative, 32-bit, aligned."""
    a = integer_array(addrs, "addrs", "byte offsets into shared memory")
    if a.shape != (WARP_LANES,):
        raise ValueError(f"addrs must hold 32 byte offsets (one per lane, shape (32,) or (n, 32)), got shape {a.shape}")
    for lane in np.flatnonzero(active):
        problem = address_problem(o, int(a[lane]))
        if problem:
            hint = element_units_hint(a[active], o.bytes_per_addr) if "aligned" in problem else ""
            raise ValueError(f"lane {lane}: {problem}{hint}")
    return np.where(active, a, 0).astype(np.int64)


def check_src(o: SharedOp, src, active) -> np.ndarray:
    """cp.async global source byte addresses (32,); default: lane l copies from l * size."""
    if src is None:
        return LANES.astype(np.int64) * o.bytes_per_addr
    s = integer_array(src, "src", "global byte addresses")
    if s.shape != (WARP_LANES,):
        raise ValueError(f"src must hold 32 global byte addresses (one per lane, shape (32,)), got shape {s.shape}")
    for lane in np.flatnonzero(active):
        v = int(s[lane])
        if v < 0 or v % o.bytes_per_addr or v >> 62:
            raise ValueError(f"lane {lane}: cp.async source address {hex_int(v)} is not a non-negative multiple "
                             f"of {o.bytes_per_addr} below 2**62")
    return np.where(active, s, 0).astype(np.int64)


def no_src_unless_cp_async(o: SharedOp, src) -> None:
    if src is not None and o.kind != "ldgsts":
        raise ValueError(f"src: only cp.async reads global memory; {o.name} takes no source addresses")
