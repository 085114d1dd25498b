"""Warp-collective instructions: ``shfl.sync``, ``vote.sync``, ``match.sync``, ``redux.sync`` and
``elect.sync``, over whole warps at once.

Every Semantic here has ``warp=True``: ``fn(mask, *sources)`` gets ``(warps, 32)`` arrays in lane
order and ``mask``, the lanes that execute the instruction (active and in the member mask; the
machine also passes the ``membermask`` operand as the last source, which the functions need not
read).  Lanes outside ``mask`` hold zeros in the sources and their results are ignored.  A
predicate source written ``!a`` arrives negated.

What the H100 does where the PTX ISA leaves it open (measured: gpu_check family ``ptx_int``):

- ``shfl.sync`` whose computed source lane j is in range but does not execute the instruction (it
  exited, or diverged away): PTX leaves the value undefined; the H100 gives 0, whatever the lane's
  register holds, and so does fragsim (the machine passes zeros there); ``p`` says only whether j
  was in range.
- ``elect.sync`` elects the lowest lane of ``mask``.

Not here: ``activemask`` (the machine's own: the bits of the active lanes), the ``%lanemask_*``
special registers (machine), ``shfl``/``vote`` without ``.sync`` (ptxas refuses them for sm_70 and
later), ``redux.sync`` on ``.f32`` (``.abs``/``.NaN``: sm_100a and later, refused).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from fragsim.facts.hardware import WARP_LANES

from . import Semantic, Spec

_LANES = np.arange(WARP_LANES, dtype=np.int64)
#: lane -> its bit in a 32-bit lane mask
_BITS = np.left_shift(np.uint32(1), np.arange(WARP_LANES, dtype=np.uint32))
#: shfl's c operand: the clamp value in bits 4..0, the segment mask in bits 12..8
_LANE_FIELD = WARP_LANES - 1
_SEGMASK_SHIFT = 8


def _ballot(bits: np.ndarray) -> np.ndarray:
    """(warps,) uint32 whose bit i is ``bits[:, i]``."""
    return np.bitwise_or.reduce(np.where(bits, _BITS, np.uint32(0)), axis=-1)


def _broadcast(x: np.ndarray) -> np.ndarray:
    return np.broadcast_to(x[..., None], (*x.shape, WARP_LANES)).copy()


def _shfl_fn(mode: str, with_pred: bool) -> Callable[..., tuple]:
    def fn(mask, a, b, c, membermask):
        lane = _LANES
        bval = (b & np.uint32(_LANE_FIELD)).astype(np.int64)
        cval = (c & np.uint32(_LANE_FIELD)).astype(np.int64)
        seg = ((c >> np.uint32(_SEGMASK_SHIFT)) & np.uint32(_LANE_FIELD)).astype(np.int64)
        max_lane = (lane & seg) | (cval & ~seg)
        min_lane = lane & seg
        if mode == "up":
            j = lane - bval
            ok = j >= max_lane
        elif mode == "down":
            j = lane + bval
            ok = j <= max_lane
        elif mode == "bfly":
            j = lane ^ bval
            ok = j <= max_lane
        else:
            j = min_lane | (bval & ~seg)
            ok = j <= max_lane
        j = np.where(ok, j, lane)
        d = np.take_along_axis(a, j, axis=-1)
        return (d, ok) if with_pred else (d,)
    return fn


def shfl(spec: Spec) -> Semantic:
    mode = str(spec.slot("mode"))
    pred = spec.ndst == 2
    return Semantic(_shfl_fn(mode, pred), ("b32", "pred") if pred else ("b32",), ("b32",) * 4, warp=True)


def resolve_vote(spec: Spec) -> Semantic:
    mode, typ = str(spec.slot("mode", "ballot")), spec.types[-1]

    def fn(mask, a, membermask):
        on = a & mask
        if mode == "ballot":
            return (_broadcast(_ballot(on)),)
        if mode == "all":
            r = ~(mask & ~a).any(axis=-1)
        elif mode == "any":
            r = on.any(axis=-1)
        else:
            r = ~on.any(axis=-1) | ~(mask & ~a).any(axis=-1)
        return (_broadcast(r),)
    return Semantic(fn, (typ,), ("pred", "b32"), warp=True)


def resolve_match(spec: Spec) -> Semantic:
    mode, typ = ("all" if spec.has("all") else "any"), spec.types[-1]
    pred = spec.ndst == 2

    def fn(mask, a, membermask):
        same = (a[..., :, None] == a[..., None, :]) & mask[..., None, :]      # [lane, other lane]
        if mode == "any":
            return (np.bitwise_or.reduce(np.where(same, _BITS, np.uint32(0)), axis=-1),)
        uniform = (same | ~mask[..., None, :] | ~mask[..., :, None]).all(axis=(-2, -1))
        d = _broadcast(np.where(uniform, _ballot(mask), np.uint32(0)))
        return (d, _broadcast(uniform)) if pred else (d,)
    return Semantic(fn, ("b32", "pred") if pred else ("b32",), (typ, "b32"), warp=True)


def redux(spec: Spec) -> Semantic:
    op, typ = spec.slot("op"), spec.types[-1]

    def fn(mask, a, membermask):
        if op == "add":
            r = np.where(mask, a, np.uint32(0)).sum(axis=-1, dtype=np.uint64).astype(np.uint32)
        elif op in ("min", "max"):
            v = a.view(np.int32).astype(np.int64) if typ == "s32" else a.astype(np.int64)
            fill = np.iinfo(np.int64).max if op == "min" else np.iinfo(np.int64).min
            v = np.where(mask, v, fill)
            r = (v.min(axis=-1) if op == "min" else v.max(axis=-1)).astype(np.uint32)
        else:
            ufunc = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
            neutral = np.uint32(0xFFFFFFFF) if op == "and" else np.uint32(0)
            r = ufunc.reduce(np.where(mask, a, neutral), axis=-1)
        return (_broadcast(r),)
    return Semantic(fn, (typ,), (typ, "b32"), warp=True)


def elect(spec: Spec) -> Semantic:

    def fn(mask, membermask):
        leader = np.where(mask.any(axis=-1), mask.argmax(axis=-1), 0).astype(np.uint32)
        return _broadcast(leader), mask & (_LANES == leader[..., None])
    return Semantic(fn, ("b32", "pred"), ("b32",), warp=True)
