"""``check_tma_wgmma``: does each wgmma k-step read, through its descriptor, the elements the TMA wrote?

The TMA side is ``fragsim.tma.box_layout``: every element of each box (its global coordinates) at the
shared address the copy writes it to, swizzle applied on the absolute address; a later box overwrites
an earlier one.  The wgmma side is ``fragsim.layout.descriptor.operand_addresses``: the address each
(row, k) element of the operand is read from.  The operand the kernel intends is a window of the
tensor: rows along M (A) or N (B) and columns along K, from ``at``; K-major when K is the map's
innermost dimension, MN-major when M/N is.  Where the two disagree, the fix is looked for on both
sides -- the descriptor (``check_wgmma``'s own search: every swizzle mode and base offset, start,
LBO, SBO and the k-step advance from the addresses of a few elements) and the tensor map (its swizzle
mode) -- and every fix named is verified by running this check again with it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from fragsim import validate
from fragsim.facts.hardware import MATRIX_ROW_BYTES, MATRIX_ROWS
from fragsim.facts.smem import smem_limit, smem_per_cta
from fragsim.facts.tma import COORD_BITS
from fragsim.layout.descriptor import ADDRESS_LIMIT, MAJORS, SWIZZLE_BYTES, MatrixDescriptor, check_shape, operand_addresses
from .report import Finding
from .wgmma import WgmmaMismatch, WgmmaReport, _diagnose, _fix, _step_descriptors, parse_form

__all__ = ["check_tma_wgmma", "TmaWgmmaReport", "TmaWgmmaMismatch"]

#: The swizzle pattern repeats every 8 swizzle rows (1024 bytes for 128B).
PATTERN_ROWS = 8
#: Bytes of working arrays per box element and coordinate (int64 coords, addresses, owners, copies).
_BYTES_PER_ELEMENT = 16
_COORD_MIN, _COORD_MAX = -(1 << (COORD_BITS - 1)), (1 << (COORD_BITS - 1)) - 1


@dataclass(frozen=True)
class TmaWgmmaMismatch(WgmmaMismatch):
    """Element ``element`` = (row, k) of the operand at k-step ``step`` (in core matrix ``core``:
    row group, 16-byte chunk of K or K-group) is read from ``address``, where the TMA wrote the tensor
    element ``got`` (global coordinates, innermost first; None: ``why`` says what is there), instead
    of ``want``.  ``check_wgmma``'s record with ``core`` added (keyword-only) and global coordinates."""

    core: tuple = field(kw_only=True)

    _NOTHING = ""

    @staticmethod
    def _place(e) -> str:
        return f"global {e}"

    def _where(self) -> str:
        return f" (core matrix {self.core[0]},{self.core[1]})"

    def _extra(self) -> dict:
        return {"core_matrix": list(self.core)}


@dataclass
class TmaWgmmaReport(WgmmaReport):
    """``check_wgmma``'s report (``ok``, ``mismatches``, ``findings``/``diagnosis``, ``fix``: one
    verified descriptor per k-step or None) plus ``tma_fix``: a tensor map with which the user's
    descriptors read the operand right (verified), or None; ``loads``: the (coords, dst) of each box."""

    tma_fix: object = None
    loads: list = field(default_factory=list)

    _CHECK, _RIGHT, _WRONG = "tma_wgmma", "are read where the TMA wrote them", "are not the ones the TMA wrote there"

    def _json(self) -> dict:
        return {**super()._json(), "loads": [{"coords": list(c), "dst": a} for c, a in self.loads],
                "tma_fix": None if self.tma_fix is None else repr(self.tma_fix)}


# -- shared memory as the TMA leaves it --------------------------------------------------------------

@dataclass(frozen=True)
class _Smem:
    """Who owns each byte after the loads: ``owner`` (index into ``coords``, -1: not written) and
    ``byte`` (the byte of that element); ``coords`` (n, rank) of every box element, in load order."""

    owner: np.ndarray
    byte: np.ndarray
    coords: np.ndarray
    address: np.ndarray


def _smem(tmap, loads) -> _Smem:
    from fragsim.tma import box_layout

    boxes = [box_layout(tmap, c, d) for c, d in loads]
    coords = np.concatenate([b.coords for b in boxes])
    address = np.concatenate([b.shared_address for b in boxes])
    e = tmap.element_bytes
    top = int(address.max()) + e
    owner = np.full(top, -1, np.int64)
    byte = np.zeros(top, np.int64)
    lanes = np.arange(e, dtype=np.int64)
    # in load order: a later box's bytes replace an earlier one's (fancy assignment keeps the last write)
    owner[(address[:, None] + lanes).ravel()] = np.repeat(np.arange(address.size), e)
    byte[(address[:, None] + lanes).ravel()] = np.tile(lanes, address.size)
    return _Smem(owner, byte, coords, address)


@dataclass(frozen=True)
class _Problem:
    """Everything but the descriptors and the map: what the kernel intends."""

    op: str
    rows: int
    k: int
    bits: int
    major: str
    dims: tuple           # (MN dimension, K dimension) of the tensor
    at: tuple             # global coordinates of the operand's element (0, 0) at k-step 0
    steps: int

    def wanted(self, step: int) -> np.ndarray:
        """(rows, k, rank) global coordinates of the operand's elements at k-step ``step``."""
        c = np.broadcast_to(np.asarray(self.at, np.int64), (self.rows, self.k, len(self.at))).copy()
        mn, kd = self.dims
        c[..., mn] += np.arange(self.rows)[:, None]
        c[..., kd] += step * self.k + np.arange(self.k)[None, :]
        return c


def _run(tmap, loads, descs, p: _Problem, major: str | None = None):
    """(mismatches, steps_ok, wants): ``wants[s]`` the addresses where the TMA left the elements of
    k-step s (-1 where it left none), for the descriptor search."""
    major = major or p.major
    sm = _smem(tmap, loads)
    rank = sm.coords.shape[1]
    alive = sm.owner[sm.address] == np.arange(sm.address.size)
    mism, steps_ok, wants = [], [], []
    wanted = [p.wanted(s) for s in range(p.steps)]
    held = sm.coords[alive]
    # one key per distinct coordinate tuple (its rank among them all): no product of the spans to overflow
    _, key = np.unique(np.concatenate([held] + [w.reshape(-1, rank) for w in wanted]), axis=0, return_inverse=True)
    key = key.reshape(-1)
    order = np.argsort(key[:len(held)], kind="stable")
    skeys, saddr = key[:len(held)][order], sm.address[alive][order]
    wkeys = np.split(key[len(held):], p.steps)
    eb = p.bits // 8
    for s, d in enumerate(descs):
        want_c = wanted[s]
        wk = wkeys[s]
        i = np.clip(np.searchsorted(skeys, wk), 0, max(len(skeys) - 1, 0))
        found = skeys[i] == wk if len(skeys) else np.zeros(wk.shape, bool)
        wants.append(np.where(found, saddr[i] if len(saddr) else -1, -1).reshape(p.rows, p.k))
        got = operand_addresses(d, rows=p.rows, k=p.k, elem_bits=p.bits, major=major)
        inside = got < sm.owner.size
        own = np.where(inside, sm.owner[np.minimum(got, sm.owner.size - 1)], -1)
        byte = np.where(inside, sm.byte[np.minimum(got, sm.owner.size - 1)], 0)
        got_c = sm.coords[np.maximum(own, 0)]
        bad = (own < 0) | (byte != 0) | (got_c != want_c).any(-1)
        steps_ok.append(not bad.any())
        for r, kk in np.argwhere(bad):
            o, b = int(own[r, kk]), int(byte[r, kk])
            core = (int(r) // MATRIX_ROWS, int(kk) * eb // MATRIX_ROW_BYTES) if major == "K" else \
                (int(r) * eb // MATRIX_ROW_BYTES, int(kk) // MATRIX_ROWS)
            why = "" if o >= 0 and b == 0 else \
                "nothing the TMA wrote" if o < 0 else f"byte {b} of global {_tup(sm.coords[o])} (not an element boundary)"
            mism.append(TmaWgmmaMismatch(s, (int(r), int(kk)), _tup(want_c[r, kk]),
                                         _tup(got_c[r, kk]) if not why else None, int(got[r, kk]), p.op, why,
                                         core=core))
    return mism, steps_ok, wants


def _tup(c) -> tuple:
    return tuple(int(x) for x in c)


# -- the check ---------------------------------------------------------------------------------------

def _tensor_map(tmap):
    from fragsim.tma import TensorMap

    if not isinstance(tmap, TensorMap):
        raise TypeError(f"check_tma_wgmma: tmap must be a fragsim.TensorMap, got {validate.show(tmap)}")
    return tmap


def _loads(tmap, dst, coords, boxes) -> list:
    if boxes is not None:
        if dst is not None or coords is not None:
            raise ValueError("check_tma_wgmma: give dst (and coords) for one box, or boxes=[(coords, dst), ...], "
                             "not both")
        if not isinstance(boxes, (list, tuple)) or not boxes:
            raise TypeError(f"check_tma_wgmma: boxes must be a non-empty list of (coords, dst) pairs, got "
                            f"{validate.show(boxes)}")
        out = []
        for i, b in enumerate(boxes):
            if not isinstance(b, (list, tuple)) or len(b) != 2:
                raise TypeError(f"check_tma_wgmma: boxes[{i}] must be a (coords, dst) pair, got {validate.show(b)}")
            out.append((b[0], b[1]))
    else:
        if dst is None:
            raise TypeError("check_tma_wgmma: dst (the box's shared address) or boxes=[(coords, dst), ...] is required")
        out = [((0,) * tmap.rank if coords is None else coords, dst)]
    # what the boxes' layouts and shared-memory owners take, per element: refused before the first is made
    n = math.prod(tmap.smem_box)
    validate.working_memory(len(out) * n * _BYTES_PER_ELEMENT * (tmap.rank + 4),
                            f"check_tma_wgmma: {len(out):,} boxes of {n:,} elements",
                            "check fewer boxes at a time")
    from fragsim.tma import box_layout

    checked = []
    for i, (c, d) in enumerate(out):
        try:
            b = box_layout(tmap, c, d)      # the TMA's own refusals (alignment, coords), one line each
        except (ValueError, TypeError) as e:
            raise type(e)(f"check_tma_wgmma: {f'boxes[{i}]: ' if boxes is not None else ''}{e}") from None
        checked.append((b.start, b.dst))
    return checked


def check_tma_wgmma(tmap, form, operand, descriptor, *, dst=None, coords=None, boxes=None, major=None, k_dim=None,
                    at=None, steps=None, advance=None, variables=None) -> TmaWgmmaReport:
    """Does wgmma ``form`` read operand ``operand`` ("A" or "B") through ``descriptor`` from the
    shared memory the TMA loads of ``tmap`` filled?

    ``dst`` (and ``coords``, the box start, default 0): one box at shared address ``dst``; or
    ``boxes=[(coords, dst), ...]``, loaded in that order.  The operand is a window of the tensor, K
    along dimension ``k_dim`` and M (A) or N (B) along the other of dimensions 0 and 1; ``major`` is
    how the wgmma reads it: "K" (imm-trans = 0, the default) or "MN" (imm-trans = 1, 16-bit types).
    ``k_dim`` defaults to the layout ``major`` is right for: 0 (K contiguous) for "K", 1 for "MN".  ``at``: the
    global coordinates (innermost first) of the operand's element (row 0, k 0) at k-step 0 (default:
    the first box's start); k-step s reads K from ``at``'s K + s * K.  ``descriptor``: as
    ``check_wgmma`` takes it (one for all k-steps, a list, a callable of the k-step, a C expression
    in ``k`` and ``variables``, a dict of fields), or one descriptor plus ``advance``: the bytes the
    kernel adds to the start address per k-step.  ``steps``: default every k-step the loaded K
    holds (1 for a single descriptor without ``advance``).
    """
    tm = _tensor_map(tmap)
    info = parse_form(form)
    op = validate.choice(operand.upper() if isinstance(operand, str) else operand, "operand", ("A", "B"))
    major = "K" if major is None else validate.choice(major.upper() if isinstance(major, str) else major, "major",
                                                       MAJORS)
    bits = info.bits(op)
    rows, k = (64 if op == "A" else info.n), info.k
    check_shape(rows, k, bits, major, "check_tma_wgmma")
    if tm.element_bytes * 8 != bits:
        raise ValueError(f"check_tma_wgmma: tmap holds {tm.dtype} ({tm.element_bytes}-byte) elements; operand {op} "
                         f"of form {info.ptx} is .{info.types[op]} ({bits // 8}-byte)")
    if tm.rank < 2:
        raise ValueError(f"check_tma_wgmma: tmap has rank {tm.rank}; an operand needs 2 dimensions (K and M/N)")
    loads = _loads(tm, dst, coords, boxes)
    kd = (0 if major == "K" else 1) if k_dim is None else validate.integer(k_dim, "k_dim", (0, 1))
    dims = (1 - kd, kd)
    start = _at(at, tm.rank) if at is not None else loads[0][0]
    single = not (isinstance(descriptor, (str, list, tuple)) or callable(descriptor)
                  and not isinstance(descriptor, MatrixDescriptor)
                  or isinstance(descriptor, dict) and any(isinstance(v, str) and n != "swizzle"
                                                          for n, v in descriptor.items()))
    if advance is not None:
        advance = validate.integer(advance, "advance", hint="bytes added to the start address per k-step")
        if not -ADDRESS_LIMIT < advance < ADDRESS_LIMIT:      # no k-step but the first would be in a descriptor's reach
            raise ValueError(f"check_tma_wgmma: advance {advance} bytes per k-step is past the {ADDRESS_LIMIT:#x} bytes of "
                             "shared memory a descriptor's start address reaches")
        if not single:
            raise ValueError("check_tma_wgmma: advance goes with one descriptor (that of k-step 0); this descriptor "
                             "already gives every k-step")
    if steps is None:
        if isinstance(descriptor, (list, tuple)):
            steps = len(descriptor)
        elif single and advance is None:
            steps = 1
        else:
            sm = _smem(tm, loads)
            held = int(sm.coords[:, kd].max()) + 1 - start[kd]
            steps = max(held // k, 1)
    steps = validate.integer(steps, "steps", hint="the number of k-steps")
    if steps < 1:
        raise ValueError(f"check_tma_wgmma: steps {steps} must be at least 1")
    if steps * rows * k * bits // 8 > smem_per_cta():
        raise ValueError(f"check_tma_wgmma: steps {steps}: {steps} k-steps of {rows} x {k} .{info.types[op]} read "
                         f"{steps * rows * k * bits // 8:,} bytes of distinct elements, more than {smem_limit()}")
    if isinstance(descriptor, (list, tuple)) and len(descriptor) != steps:
        raise ValueError(f"descriptor: {len(descriptor)} descriptors for {steps} k-steps; give one per k-step")
    if advance is not None:
        d0 = _step_descriptors(descriptor, 1, variables)[0][0]
        try:
            descs = [d0.advance(s * advance) for s in range(steps)]
        except ValueError as e:
            raise ValueError(f"check_tma_wgmma: advance {advance} over {steps} k-steps: {e}") from None
    else:
        descs = _step_descriptors(descriptor, steps, variables)[0]
    p = _Problem(op, rows, k, bits, major, dims, start, steps)

    mism, steps_ok, wants = _run(tm, loads, descs, p)
    ok = all(steps_ok)
    fix, fix_major, tma_fix, findings = (descs, major, None, []) if ok else _diagnosis(tm, loads, descs, p, wants,
                                                                                      info)
    trans = "imm-trans-" + op.lower()
    layout = [f"operand {op}: {rows} x {k} .{info.types[op]} ({major}-major, {trans} = {int(major == 'MN')}) from "
              f"global {start} ({steps} k-step{'s' * (steps > 1)} of {k}; K along dimension {dims[1]}, "
              f"{'M' if op == 'A' else 'N'} along dimension {dims[0]})"]
    layout += [f"TMA box at {_tup(c)} -> shared {validate.hex_int(d)}" for c, d in loads]
    layout += [f"k-step {s}: {desc}" for s, desc in enumerate(descs)]
    title = f"wgmma {info.ptx}: operand {op} read through its descriptor from the TMA boxes of {tm!r}"
    return TmaWgmmaReport(title, ok, steps * rows * k, layout, descs, mism, findings, fix, fix_major, op,
                          steps_ok, tma_fix, loads)


def _at(at, rank) -> tuple:
    if not (isinstance(at, (tuple, list)) and len(at) == rank):
        raise TypeError(f"at must be the global coordinates of the operand's first element, {rank} integers "
                        f"(innermost first), got {validate.show(at)}")
    out = tuple(validate.integer(v, f"at[{i}]") for i, v in enumerate(at))
    for i, v in enumerate(out):
        if not _COORD_MIN <= v <= _COORD_MAX:
            raise ValueError(f"at[{i}] = {v} is outside the tensor coordinates' .s{COORD_BITS} range")
    return out


# -- the diagnosis -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Where:
    """What check_wgmma's sentences say about the tile: here the TMA box's layout."""

    layout_name: str


def _box_name(tm) -> str:
    rowb = tm.smem_box[0] * tm.element_bytes
    swz = "no swizzle" if tm.swizzle == "none" else f"the {tm.swizzle} swizzle"
    return f"the TMA box ({tm.smem_box[0]} x {tm.smem_box[1]} {tm.dtype}, {rowb}-byte rows {tm.smem_pitch} B apart, {swz})"


def _ok(tm, loads, descs, p, major=None) -> bool:
    return all(_run(tm, loads, descs, p, major)[1])


def _diagnosis(tm, loads, descs, p: _Problem, wants, info):
    """(fix, fix_major, tma_fix, findings): each fix verified by running the check with it."""
    out: list[Finding] = []
    missing = [(s, w) for s, w in enumerate(wants) if (w < 0).any()]
    # the descriptor side: check_wgmma's search (every swizzle mode, base offset, LBO, SBO, start, majorness)
    fix, fix_major = (None, p.major) if missing else _fix(descs, wants, p.rows, p.k, p.bits, p.major)
    if fix is not None and not _ok(tm, loads, fix, p, fix_major):
        fix = None                                  # not verified: not offered
    # the map side: the user's descriptors with the map's swizzle mode changed to theirs
    tma_fix = None
    modes = {d.swizzle for d in descs}
    if len(modes) == 1 and tm.swizzle != next(iter(modes)):
        try:
            cand = dataclasses.replace(tm, swizzle=next(iter(modes)))     # TensorMap's own checks again
        except (ValueError, TypeError):
            cand = None
        if cand is not None and _ok(cand, loads, descs, p):
            tma_fix = cand
    op = p.op
    if missing:
        s, w = missing[0]
        r, kk = (int(x) for x in np.argwhere(w < 0)[0])
        out.append(Finding("box coverage", (
            f"k-step {s} needs global {_tup(p.wanted(s)[r, kk])} ({op}[{r},{kk}]), which no box left in shared "
            f"memory (not loaded, or overwritten by a later box: a box spans {tm.smem_bytes} bytes, rows "
            f"{tm.smem_pitch} B apart); load every element the k-steps read, each box clear of the others")))
    d0 = descs[0]
    tswz = tm.swizzle
    if tswz != d0.swizzle and (fix is None or fix[0].swizzle == tswz) or tma_fix is not None:
        sides = []
        if fix is not None and fix[0].swizzle == tswz:
            sides.append(f"swizzle={tswz!r} in the descriptor")
        if tma_fix is not None:
            sides.append(f"swizzle={tma_fix.swizzle!r} in the tensor map")
        out.append(Finding("swizzle differs", (
            f"swizzle modes differ: the TMA writes the box with swizzle {tswz!r} (the tensor map), the descriptor "
            f"reads it with {d0.swizzle!r}" + (f"; fix: {' or '.join(sides)} (verified)" if sides else ""))))
    rowb = tm.smem_box[0] * tm.element_bytes
    if tm.swizzle != "none" and rowb < tm.swizzle_span and p.major == "K" and (fix is None or any(
            f.stride_byte_offset != d.stride_byte_offset for f, d in zip(fix, descs))):
        out.append(Finding("box narrower than swizzle", (
            f"the box's rows are {rowb} bytes, narrower than the {tm.swizzle} swizzle span: the TMA gives each row "
            f"a whole {tm.swizzle_span}-byte line (8 rows = {PATTERN_ROWS * tm.smem_pitch} bytes), not {rowb} bytes; "
            f"read it with the span's SBO, or make the box {tm.swizzle_span // tm.element_bytes} elements wide")))
    if fix is not None and any(f.base_offset != d.base_offset for f, d in zip(fix, descs)):
        pattern = PATTERN_ROWS * SWIZZLE_BYTES[fix[0].swizzle]
        where = ", ".join(validate.hex_int(d) for _, d in loads)
        phase = ", ".join(str((d // 128) % PATTERN_ROWS) for _, d in loads)
        out.append(Finding("alignment", (
            f"the box at {where} is{' not' if any(d % pattern for _, d in loads) else ''} {pattern}-byte aligned "
            f"(the {fix[0].swizzle} pattern's row there: {phase}); the TMA swizzles on the absolute shared address, "
            f"and so does the descriptor with base_offset 0: base_offset={fix[0].base_offset}, not "
            f"{d0.base_offset} (verified)")))
    if fix is not None and fix_major != p.major:
        inner = "K" if p.major == "MN" else ("M" if op == "A" else "N")
        out.append(Finding("K-major vs MN-major", (
            f"the tensor map's dimension 0 (contiguous) is {inner}: the operand is {fix_major}-major, set "
            f"imm-trans-{op.lower()} = {int(fix_major == 'MN')} (verified)")))
    if fix is not None:
        words = _diagnose(descs, fix, fix_major, p.major, info, op, p.bits, p.k, _Where(_box_name(tm)))
        seen = {f.kind for f in out}
        skip = {"majorness"} | ({"swizzle mode"} if "swizzle differs" in seen else set()) | \
            ({"base offset"} if "alignment" in seen else set())
        out += [Finding(f.kind, f.text + (" (verified: the check passes with it)" if f.kind == "fix" else ""))
                for f in words if f.kind not in skip]
    if tma_fix is not None:
        out.append(Finding("tma fix", f"{'or fix' if fix is not None else 'fix'} the map: {tma_fix!r} (verified: the "
                           "check passes with it)"))
    if fix is None and tma_fix is None and not missing:
        out.append(Finding("not canonical", (
            f"no descriptor reads {_box_name(tm)} as this operand, and no swizzle mode of the map makes the "
            "descriptors right: wgmma reads 8-row core matrices of 16 contiguous bytes, rows 16 bytes or one "
            "swizzle row apart")))
    return fix, fix_major, tma_fix, out if out else [Finding("unexplained", "no single fix found")]
