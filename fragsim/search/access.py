"""Access sets: the shared-memory instructions a CTA issues against one tile.

An access set lists warp instructions, grouped by purpose ("copy", "A", "C store" ...).  Each
instruction records, per lane, *which element* of the tile its address points at and *which
elements* its registers (or its copy) move -- elements, not addresses.  ``group.addresses(tile)``
lays them out in any candidate layout of the same matrix; that is what the swizzle search
varies, and the round trip (``fragsim.search.swizzle_search.round_trip``) checks the data through the simulator.

Presets, for any warp count, warp tile and number of k-steps:

* ``mma_operand(tile, form, "A" | "B", ...)``: the A or B fragments of ``form`` read by
  ``ldmatrix`` (``.x4`` by default; ``.trans`` where the tile stores the 8x8 matrices transposed:
  B from a K x N tile) or by plain ``ld.shared`` of whole registers.
* ``copy(tile, "cp.async.ca.16" | "st.shared.v4.b32" ...)``: a global -> shared copy of whole
  lines, thread t of the CTA copying chunk ``t + pass * threads`` in line-major order (the usual
  CUTLASS mapping).  cp.async's global source is a row-major matrix at ``global_base`` (128-byte
  aligned) with ``global_pitch`` bytes between lines: the bank model charges source lines.
* ``epilogue(tile, form, ...)``: C fragments stored with ``stmatrix`` or ``st.shared``, then read
  back as ``ld.shared.v4`` rows for the global write.

From the user's own address math: ``from_exprs(tile, op, "C expression", variables={"warp":
range(4), "k": range(2)})``; the elements are read back through ``tile`` (the layout the code is
written for).  For cp.async, ``src`` (an expression too) and ``global_pitch`` say independently
which element each lane copies; where that disagrees with ``tile`` the group says so.

Element numbering: ``row * tile.cols + col`` (``Tile.offset_of``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from fragsim import validate
from fragsim.facts.hardware import BANK_BYTES, SOURCE_LINE_BYTES, WARP_LANES
from fragsim.instructions import FORMS, lookup
from fragsim.instructions.shared_op import SharedOp
from fragsim.instructions.shared_ops import parse_shared_op
from fragsim.layout.tile import Tile
from fragsim.sim.smem import matrix_movement

MAX_CTA_THREADS = 1024          # the most threads a CUDA block has
#: Instances (warp instructions) one address expression may stand for: every combination of its variables.
MAX_INSTANCES = 1 << 16

__all__ = ["AccessGroup", "AccessSet", "mma_operand", "copy", "row_reads", "epilogue", "from_exprs"]

LANES = np.arange(WARP_LANES)
DIMS = {"A": ("mk", "km"), "B": ("kn", "nk"), "C": ("mn", "nm")}


@dataclass(frozen=True, eq=False)
class AccessGroup:
    """``n`` warp instructions of one op against one tile.

    at      int64 (n, 32): element (row-major index) whose first byte each lane's address points at;
            -1 where the lane gives no address (ldmatrix lanes past 8*num, masked lanes)
    elems   int64 (n, 32, E): elements each lane moves, in register byte order (E = bytes / element
            size); -1 where none
    mask    bool (n, 32): active lanes
    src     int64 (n, 32): cp.async global source byte addresses (absolute); None otherwise
    labels  one dict per instruction ({"warp": 0, "k": 1, ...})
    shape   (rows, cols, dtype, order) of the tile the group was built for
    user_addrs  the addresses the user's expressions gave (``from_exprs``), else None
    note    what the group found while being built (e.g. writes that disagree with the tile)
    """

    name: str
    op: SharedOp
    at: np.ndarray
    elems: np.ndarray
    mask: np.ndarray
    labels: tuple
    shape: tuple
    src: np.ndarray | None = None
    user_addrs: np.ndarray | None = None
    note: str = ""
    detail: str = ""
    source: dict = field(default_factory=dict)

    def __len__(self):
        return self.at.shape[0]

    @property
    def role(self) -> str:
        return "write" if self.op.is_store else "read"

    @property
    def address_lanes(self) -> np.ndarray:
        """bool (n, 32): lanes whose address the instruction uses."""
        return self.mask & (self.at >= 0)

    @property
    def width(self) -> int:
        """Bytes one lane's address covers (16 for an ldmatrix row)."""
        return self.op.bytes_per_addr

    def addresses(self, tile: Tile) -> np.ndarray:
        """int64 (n, 32) byte addresses in ``tile``'s layout (0 where a lane gives no address)."""
        a = np.zeros(self.at.shape, np.int64)
        use = self.address_lanes
        a[use] = tile.offset_of(self.at[use])
        return a

    def label(self, i: int) -> str:
        return " ".join(f"{k}={v}" for k, v in self.labels[i].items())

    def describe(self) -> str:
        s = f"{self.name}: {len(self)} x {self.op.name}"
        return s + (f" ({self.detail})" if self.detail else "")


class AccessSet:
    """Groups of warp instructions against one tile, in program order (writes before reads)."""

    def __init__(self, groups=()) -> None:
        gs: list[AccessGroup] = []
        if not isinstance(groups, (AccessGroup, AccessSet, list, tuple)):
            raise TypeError(f"an access set is built from access groups (an AccessGroup, an AccessSet or a list of them: "
                            f"fragsim.access presets or from_exprs), got {validate.show(groups)}")
        for g in groups if not isinstance(groups, (AccessGroup, AccessSet)) else [groups]:
            if isinstance(g, AccessSet):
                gs.extend(g.groups)
            elif isinstance(g, AccessGroup):
                gs.append(g)
            else:
                raise TypeError(f"an access set holds access groups (fragsim.access presets or from_exprs), "
                                f"got {type(g).__name__}")
        self.groups: tuple[AccessGroup, ...] = tuple(gs)

    def __add__(self, other):
        return AccessSet([self, other])

    def __iter__(self):
        return iter(self.groups)

    def __len__(self):
        return sum(len(g) for g in self.groups)

    @property
    def reads(self) -> "AccessSet":
        return AccessSet([g for g in self.groups if g.role == "read"])

    @property
    def writes(self) -> "AccessSet":
        return AccessSet([g for g in self.groups if g.role == "write"])

    def describe(self) -> str:
        return "; ".join(g.describe() for g in self.groups) or "(empty)"

    def __repr__(self):
        return f"AccessSet({self.describe()})"


# ---------------------------------------------------------------------------------------------
# building groups from the elements each lane moves
# ---------------------------------------------------------------------------------------------

def _tile(tile) -> Tile:
    if not isinstance(tile, Tile):
        raise TypeError(f"tile must be a fragsim.Tile, got {type(tile).__name__}")
    return tile.shared_only("an access set")


def _shape(tile: Tile) -> tuple:
    return (tile.rows, tile.cols, tile.dtype, tile.order)


def _rc(tile: Tile, index) -> str:
    r, c = divmod(int(index), tile.cols)
    return f"({r}, {c})"


def _matrix_group(tile: Tile, op: SharedOp, reg_elems: np.ndarray, name, labels, detail):
    """ldmatrix/stmatrix: ``reg_elems`` (n, 32, num, epr) elements held by (lane, register, slot).
    Each 8x8 matrix row starts where the element at its column 0 lives; every byte of every register
    must then sit where its row address and column put it, in ``tile`` (the layout built for)."""
    n = reg_elems.shape[0]
    esize = tile.elem_bytes
    src, col, _ = matrix_movement(op)                  # (32, num, 2): per 16-bit half of a register
    b = np.arange(BANK_BYTES)                              # byte of the register
    half, inner, slot, off = b // 2, b % 2, b // esize, b % esize
    start = (col == 0)                                     # (lane, reg, half) that begin a matrix row
    if np.any(off[::2][None, None, :].repeat(WARP_LANES, 0).repeat(op.num, 1)[start]):
        raise ValueError(f"{op.name} cannot move these {tile.dtype} elements: a matrix row would start in the "
                         f"middle of a {esize}-byte element (ldmatrix/stmatrix .trans moves 16-bit halves; "
                         "32-bit elements cannot be transposed)")
    at = np.full((n, WARP_LANES), -1, np.int64)
    half_elem = reg_elems[:, :, :, (2 * np.arange(2)) // esize]          # (n, 32, num, 2)
    at[:, src[start]] = half_elem[:, start]
    elem_b = reg_elems[:, :, :, slot]                                    # (n, 32, num, 4)
    have = tile.offset_of(elem_b) + off
    want = tile.offset_of(np.maximum(at, 0))[:, src[:, :, half]] + 2 * col[:, :, half] + inner
    bad = have != want
    if bad.any():
        i, lane, reg, byte = (int(x) for x in np.argwhere(bad)[0])
        s = int(src[lane, reg, half[byte]])
        raise ValueError(f"{op.name} cannot move these elements of {tile!r}: lane {lane} register {reg} byte "
                         f"{byte} is element {_rc(tile, elem_b[i, lane, reg, byte])} at "
                         f"{validate.hex_int(have[i, lane, reg, byte])}, but the row that lane {s} addresses puts "
                         f"that byte at {validate.hex_int(want[i, lane, reg, byte])}"
                         + (" (try the .trans form)" if not op.trans else " (try without .trans)"))
    elems = reg_elems.reshape(n, WARP_LANES, -1)
    mask = np.ones((n, WARP_LANES), bool)
    return AccessGroup(name, op, at, elems, mask, tuple(labels), _shape(tile), detail=detail)


def _plain_group(tile: Tile, op: SharedOp, lane_elems: np.ndarray, mask, name, labels, detail,
                 src=None, source=None):
    """ld/st.shared and cp.async: ``lane_elems`` (n, 32, E) consecutive elements from each lane's address."""
    esize = tile.elem_bytes
    if op.bytes_per_addr % esize:
        raise ValueError(f"{op.name} moves {op.bytes_per_addr} bytes per lane, not a whole number of "
                         f"{esize}-byte {tile.dtype} elements")
    n = lane_elems.shape[0]
    mask = np.ones((n, WARP_LANES), bool) if mask is None else mask
    use = mask[:, :, None] & (lane_elems >= 0)
    addr = np.where(use, tile.offset_of(np.maximum(lane_elems, 0)), 0)
    want = addr[:, :, :1] + esize * np.arange(lane_elems.shape[2])
    bad = use & (addr != want)
    if bad.any():
        i, lane, k = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"{op.name} moves {op.bytes_per_addr} contiguous bytes per lane, but lane {lane} of "
                         f"instruction {i} needs elements {_rc(tile, lane_elems[i, lane, 0])} and "
                         f"{_rc(tile, lane_elems[i, lane, k])}, which are not adjacent in {tile!r}")
    at = np.where(mask, lane_elems[:, :, 0], -1)
    return AccessGroup(name, op, at, np.where(mask[:, :, None], lane_elems, -1), mask, tuple(labels),
                       _shape(tile), src=src, detail=detail, source=source or {})


# ---------------------------------------------------------------------------------------------
# presets
# ---------------------------------------------------------------------------------------------

def shape_pair(value, name: str) -> tuple[int, int]:
    """'MxN' or (M, N): two positive integers (warps along M x N, a warp tile)."""
    if isinstance(value, str):
        parts = value.lower().split("x")
        if len(parts) == 2 and all(p.strip().isdigit() for p in parts):
            return int(parts[0]), int(parts[1])
        raise ValueError(f"{name} {value!r}: expected two integers as 'AxB', e.g. 2x2")
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{name} must be a pair (M, N) or 'MxN', got {value!r}")
    a, b = (validate.integer(v, name) for v in value)
    if a < 1 or b < 1:
        raise ValueError(f"{name} must be positive, got {a}x{b}")
    return a, b


def _warps(value) -> tuple[int, int]:
    wm, wn = shape_pair(value, "warps")
    if wm * wn * WARP_LANES > MAX_CTA_THREADS:
        raise ValueError(f"warps {wm}x{wn}: a CTA has at most {MAX_CTA_THREADS // WARP_LANES} warps "
                         f"({MAX_CTA_THREADS} threads)")
    return wm, wn


def _natural(dims: str) -> bool:
    """Tile rows hold the operand's first dimension (A: m, B: k, C: m)."""
    return dims in ("mk", "kn", "mn")


def _extent(tile: Tile, dims: str) -> tuple[int, int]:
    """Operand matrix shape covered by the tile."""
    return (tile.rows, tile.cols) if _natural(dims) else (tile.cols, tile.rows)


def _warp_split(ext: int, parts: int, tile_part, what: str) -> int:
    size = ext // parts if tile_part is None else tile_part
    if size < 1 or size * parts != ext:
        raise ValueError(f"{what}: {parts} warps x {size} must cover the tile's {ext}")
    return size


def _op_for(op, default: str) -> SharedOp:
    return parse_shared_op(default if op is None else op)


def _lane_sequences(frags, form, operand, coords_index):
    """For each lane, the elements of the fragments' registers in order: (32, nregs_total, epr)."""
    rows, cols = form.coords(operand)                      # (32, nregs, epr)
    per = [coords_index(r0 + rows, c0 + cols) for r0, c0 in frags]
    return np.concatenate(per, axis=1)


def _registers_to_instructions(seq, op: SharedOp, what: str):
    """(32, R, epr) register contents -> (I, 32, num, epr) for ldmatrix/stmatrix, or
    (I, 32, E) consecutive elements for plain ld/st."""
    r = seq.shape[1]
    if op.family in ("ldmatrix", "stmatrix"):
        if r % op.num:
            raise ValueError(f"{op.name} moves {op.num} registers per lane, but {what} has {r} registers per "
                             f"lane; use .x{_fit(r)}")
        return seq.reshape(WARP_LANES, r // op.num, op.num, -1).transpose(1, 0, 2, 3)
    flat = seq.reshape(WARP_LANES, -1)                     # elements in register byte order
    per = op.bytes_per_addr * flat.shape[1] // (4 * r)      # elements per instruction
    if per < 1 or flat.shape[1] % per:
        raise ValueError(f"{op.name} moves {op.bytes_per_addr} bytes per lane: {what} holds "
                         f"{4 * r} bytes per lane, which do not split into such pieces")
    return flat.reshape(WARP_LANES, -1, per).transpose(1, 0, 2)


def _fit(r: int) -> int:
    return 4 if r % 4 == 0 else (2 if r % 2 == 0 else 1)


def _build(tile, op: SharedOp, parts, name, labels, detail):
    if op.family in ("ldmatrix", "stmatrix"):
        return _matrix_group(tile, op, np.stack(parts), name, labels, detail)
    return _plain_group(tile, op, np.stack(parts), None, name, labels, detail)


def _with_trans(tile, op_given, default, build):
    """Build with ``default`` (ldmatrix/stmatrix .xN), trying its .trans twin when the user named no
    op and the plain form does not fit the tile; a named op is used as given."""
    op = _op_for(op_given, default)
    try:
        return build(op)
    except ValueError as first:
        if op_given is not None or op.family not in ("ldmatrix", "stmatrix"):
            raise
        try:
            return build(parse_shared_op(op.name + ".trans"))
        except ValueError as second:
            raise (second if "cannot be transposed" in str(second) else first) from None


def mma_operand(tile, form, operand="A", *, warps=(2, 2), warp_tile=None, k_steps=None, op=None,
                dims=None, name=None) -> AccessSet:
    """The A or B fragments of ``form`` that every warp of the CTA reads from ``tile``, k-step by k-step.

    ``warps`` = (warps along M, warps along N), warp w = wm * warps_n + wn; ``warp_tile`` = (WM, WN)
    (default: the tile split evenly); ``k_steps`` (default: the tile's K / the form's k).  ``dims``:
    which tile axis is which ("mk" or "km" for A, "kn" or "nk" for B; default A "mk", B "kn").
    ``op``: ``ldmatrix.x4`` by default (``.x2`` where a k-step's fragments have 2 registers per lane;
    its ``.trans`` form where the tile needs it), or ``ld.shared.b32``/``.v2.b32``/``.v4.b32`` of whole
    registers.  Instructions of one k-step take consecutive fragments (A: m-tiles, B: n-tiles), so
    ``.x4`` reads two B n-tiles at once.
    """
    tile = _tile(tile)
    f = lookup(form)
    if f.groups > 1:   # the presets tile one product per warp
        raise ValueError(f"{f.name} runs {f.groups} independent products per warp (one per quad pair); the presets "
                         f"load the fragments of one-product forms")
    operand = str(operand).upper()
    if operand not in ("A", "B"):
        raise ValueError(f"operand must be 'A' or 'B' (C is written by the epilogue preset), got {operand!r}")
    dims = DIMS[operand][0] if dims is None else dims
    if dims not in DIMS[operand]:
        raise ValueError(f"dims for operand {operand} must be one of {', '.join(DIMS[operand])}, got {dims!r}")
    bits = f.fmt(operand).storage_bits
    if bits not in (8, 16, 32):
        raise ValueError(f"operand {operand} of {f.name} has {bits}-bit elements; the presets move 8-, 16- and "
                         "32-bit elements (whole bytes, at most one per 32-bit register)")
    esize = bits // 8
    if esize != tile.elem_bytes:
        raise ValueError(f"tile holds {tile.elem_bytes}-byte {tile.dtype}, but operand {operand} of {f.name} "
                         f"is {esize}-byte {f.fmt(operand).name}")
    wm, wn = _warps(warps)
    tm, tn = (None, None) if warp_tile is None else shape_pair(warp_tile, "warp_tile")
    fr, fc = f.matrix_shape(operand)
    ext_r, ext_c = _extent(tile, dims)
    m, n, k = f.shape
    if operand == "A":
        span = _warp_split(ext_r, wm, tm, f"warp tile M (tile {dims}: {ext_r} x {ext_c})")
        k_ext, step = ext_c, fr
    else:
        span = _warp_split(ext_c, wn, tn, f"warp tile N (tile {dims}: {ext_r} x {ext_c})")
        k_ext, step = ext_r, fc
    if span % step:
        raise ValueError(f"warp tile {span} along {'M' if operand == 'A' else 'N'} is not a multiple of the "
                         f"fragment's {step}")
    ks_all = k_ext // k
    if ks_all < 1 or k_ext % k:
        raise ValueError(f"the tile's K extent {k_ext} is not a multiple of {f.shape_name}'s k = {k}")
    ks_n = ks_all if k_steps is None else validate.integer(k_steps, "k_steps")
    if not 1 <= ks_n <= ks_all:
        raise ValueError(f"k_steps must be in 1..{ks_all} (the tile's K {k_ext} / k {k}), got {ks_n}")

    def index(r, c):
        return r * tile.cols + c if _natural(dims) else c * tile.cols + r

    parts = []
    for w in range(wm * wn):
        iw = w // wn if operand == "A" else w % wn
        for ks in range(ks_n):
            if operand == "A":
                frags = [(iw * span + t * fr, ks * k) for t in range(span // fr)]
            else:
                frags = [(ks * k, iw * span + t * fc) for t in range(span // fc)]
            seq = _lane_sequences(frags, f, operand, index)
            parts.append((w, ks, seq))
    # .x4 unless one k-step's fragments have fewer registers per lane
    default = f"ldmatrix.x{_fit(parts[0][2].shape[1])}"
    what = f"{operand} of {f.shape_name} at one k-step"

    def build(o: SharedOp):
        if o.is_store:
            raise ValueError(f"op {o.name} writes shared memory; operand reads need ldmatrix or ld.shared")
        instr, labs = [], []
        for w, ks, seq in parts:
            chunks = _registers_to_instructions(seq, o, what)
            for j, ch in enumerate(chunks):
                instr.append(ch)
                labs.append({"warp": w, "k": ks, "i": j})
        detail = (f"{f.shape_name} {operand} ({dims}): {wm * wn} warps x {ks_n} k-steps x "
                  f"{len(instr) // (wm * wn * ks_n)}, {span // step} {'m' if operand == 'A' else 'n'}-tiles per warp")
        return AccessSet([_build(tile, o, instr, name or operand, labs, detail)])

    return _with_trans(tile, op, default, build)


def _chunks(tile: Tile, op: SharedOp, threads: int, what: str):
    """The CTA's thread -> chunk mapping: chunk ``t + pass * threads`` (line-major) for thread t.
    Returns (lane_elems (I, 32, E), mask (I, 32), labels, line/pos of each chunk start)."""
    nb = op.bytes_per_addr
    if tile.line_bytes % nb:
        raise ValueError(f"{what}: a {tile.order} of {tile.line_bytes} bytes does not split into {nb}-byte chunks")
    if threads < 1 or threads % WARP_LANES or threads > MAX_CTA_THREADS:
        raise ValueError(f"threads must be a positive multiple of {WARP_LANES} up to {MAX_CTA_THREADS} (a CTA), "
                         f"got {threads}")
    per_line = tile.line_bytes // nb
    total = tile.lines * per_line
    passes = -(-total // threads)
    e = nb // tile.elem_bytes
    instr, masks, labels, starts = [], [], [], []
    for w in range(threads // WARP_LANES):
        for p in range(passes):
            chunk = p * threads + w * WARP_LANES + LANES
            ok = chunk < total
            if not ok.any():
                continue
            line, pos = np.divmod(np.where(ok, chunk, 0), per_line)
            pos_e = pos * e
            r, c = (line, pos_e) if tile.order == "row" else (pos_e, line)
            first = r * tile.cols + c
            step = 1 if tile.order == "row" else tile.cols
            instr.append(first[:, None] + step * np.arange(e))
            masks.append(ok)
            labels.append({"warp": w, "pass": p})
            starts.append((line, pos * nb))
    return np.stack(instr), np.stack(masks), labels, starts


def copy(tile, op="cp.async.ca.16", *, threads=128, global_pitch=None, global_base=0, name="copy") -> AccessSet:
    """A global -> shared copy of the whole tile: thread t copies the chunk(s) ``t + pass * threads``
    (``op``'s bytes each, line-major), with ``cp.async`` (4/8/16 bytes) or ``st.shared.v4.b32`` of
    registers it loaded.  cp.async reads a row-major global matrix whose line ``i`` starts at
    ``global_base + i * global_pitch`` (default: the tile's line bytes; the base must be 128-byte
    aligned, the start of a source line)."""
    tile = _tile(tile)
    o = parse_shared_op(op)
    if o.family not in ("cp.async", "st.shared"):
        raise ValueError(f"copy writes shared memory with cp.async or st.shared, got {o.name}")
    threads = validate.integer(threads, "threads")
    lane_elems, mask, labels, starts = _chunks(tile, o, threads, "copy")
    src = None
    source: dict = {}
    if o.family == "cp.async":
        gp = tile.line_bytes if global_pitch is None else validate.integer(global_pitch, "global_pitch")
        gb = validate.integer(global_base, "global_base")
        _check_global(tile, o, gp, gb)
        src = np.stack([gb + line * gp + posb for line, posb in starts]).astype(np.int64)
        source = {"global_pitch": gp, "global_base": gb}
    elif global_pitch is not None or global_base:
        raise ValueError(f"global_pitch/global_base describe cp.async's source; {o.name} stores registers")
    detail = f"{threads} threads, {o.bytes_per_addr}-byte chunks"
    if src is not None:
        detail += f", global source pitch {source['global_pitch']} B at {validate.hex_int(source['global_base'])}"
    g = _plain_group(tile, o, lane_elems, mask, name, labels, detail, src=src, source=source)
    return AccessSet([g])


def _check_global(tile: Tile, o: SharedOp, gp: int, gb: int):
    if gp < tile.line_bytes:
        raise ValueError(f"global_pitch {gp} is smaller than a {tile.order} of the tile ({tile.line_bytes} bytes)")
    if gp % o.bytes_per_addr:
        raise ValueError(f"global_pitch {gp} is not a multiple of {o.bytes_per_addr} ({o.name} sources must be aligned)")
    if gb < 0 or gb % SOURCE_LINE_BYTES:
        raise ValueError(f"global_base {validate.hex_int(gb)} must be a non-negative multiple of {SOURCE_LINE_BYTES} "
                         "(the start of a source line)")


def row_reads(tile, op="ld.shared.v4.b32", *, threads=128, name="rows") -> AccessSet:
    """The whole tile read back in chunks (thread t reads chunk ``t + pass * threads``), e.g. before a
    coalesced global write."""
    tile = _tile(tile)
    o = parse_shared_op(op)
    if o.family != "ld.shared":
        raise ValueError(f"row reads use ld.shared, got {o.name}")
    lane_elems, mask, labels, _ = _chunks(tile, o, validate.integer(threads, "threads"), "row reads")
    return AccessSet([_plain_group(tile, o, lane_elems, mask, name, labels,
                                   f"{threads} threads, {o.bytes_per_addr}-byte chunks")])


def _acc_form(form, esize: int):
    """A form of ``form``'s shape whose accumulator elements have ``esize`` bytes (their positions are
    what an epilogue stores: f32 accumulators converted to 16 bits keep the f16 accumulator map)."""
    f = lookup(form)
    if esize not in (2, 4):
        raise ValueError(f"the epilogue stores 16- or 32-bit accumulator elements, not {8 * esize}-bit ones")
    if f.fmt("D").storage_bits // 8 == esize:
        return f
    for g in FORMS.values():
        if g.shape == f.shape and g.fmt("D").storage_bits // 8 == esize:
            return g
    raise ValueError(f"no mma form of shape {f.shape_name} has {esize}-byte accumulators to store")


def epilogue(tile, form, *, warps=(2, 2), warp_tile=None, store_op=None, read_op="ld.shared.v4.b32",
             threads=None, dims="mn", name="C") -> AccessSet:
    """The C tile: every warp stores its accumulator fragments (``stmatrix.x4`` for 16-bit elements,
    ``st.shared.v2.b32`` for 32-bit, or ``store_op``), then the CTA reads the tile back in
    ``read_op`` chunks (thread t reads chunk ``t + pass * threads``)."""
    tile = _tile(tile)
    f = _acc_form(form, tile.elem_bytes)
    if dims not in DIMS["C"]:
        raise ValueError(f"dims for C must be 'mn' or 'nm', got {dims!r}")
    wm, wn = _warps(warps)
    tm, tn = (None, None) if warp_tile is None else shape_pair(warp_tile, "warp_tile")
    ext_r, ext_c = _extent(tile, dims)
    sm = _warp_split(ext_r, wm, tm, "warp tile M")
    sn = _warp_split(ext_c, wn, tn, "warp tile N")
    fr, fc = f.matrix_shape("D")
    if sm % fr or sn % fc:
        raise ValueError(f"warp tile {sm}x{sn} is not a multiple of the {fr}x{fc} accumulator fragment")

    def index(r, c):
        return r * tile.cols + c if _natural(dims) else c * tile.cols + r

    seqs = []
    for w in range(wm * wn):
        iwm, iwn = divmod(w, wn)
        frags = [(iwm * sm + a * fr, iwn * sn + b * fc) for a in range(sm // fr) for b in range(sn // fc)]
        seqs.append((w, _lane_sequences(frags, f, "D", index)))
    default = "stmatrix.x4" if tile.elem_bytes == 2 else "st.shared.v2.b32"

    def build(o: SharedOp):
        if not o.is_store or o.family == "cp.async":
            raise ValueError(f"store_op must be stmatrix or st.shared, got {o.name}")
        instr, labs = [], []
        for w, seq in seqs:
            for j, ch in enumerate(_registers_to_instructions(seq, o, "the warp's accumulators")):
                instr.append(ch)
                labs.append({"warp": w, "i": j})
        detail = f"{f.shape_name} D, {wm * wn} warps, warp tile {sm}x{sn}"
        return AccessSet([_build(tile, o, instr, f"{name} store", labs, detail)])

    stores = _with_trans(tile, store_op, default, build)
    nthreads = wm * wn * WARP_LANES if threads is None else validate.integer(threads, "threads")
    return stores + row_reads(tile, read_op, threads=nthreads, name=f"{name} read")


# ---------------------------------------------------------------------------------------------
# from the user's address expressions
# ---------------------------------------------------------------------------------------------

def _instances(variables) -> list[dict]:
    if variables is None:
        return [{}]
    if not isinstance(variables, dict):
        raise TypeError(f"variables must be a dict of name -> int or range of ints, got {type(variables).__name__}")
    names, values = [], []
    for k, v in variables.items():
        if not isinstance(k, str) or not k.isidentifier() or k == "lane":
            raise ValueError(f"variables: {k!r} is not a variable name (lane is the lane index, not a variable)")
        # an iterator is read no further than the limit: range(10**12) is refused, not listed
        vals = [v] if not hasattr(v, "__iter__") else list(itertools.islice(v, MAX_INSTANCES + 1))
        if not vals:
            raise ValueError(f"variables: {k} has no values")
        if len(vals) > MAX_INSTANCES:
            raise ValueError(f"variables: {k} has more than {MAX_INSTANCES:,} values (one instruction each)")
        names.append(k)
        values.append([validate.integer(x, f"variable {k}") for x in vals])
    total = math.prod(len(v) for v in values)
    if total > MAX_INSTANCES:
        raise ValueError(f"variables: {' x '.join(str(len(v)) for v in values)} = {total:,} combinations of "
                         f"{', '.join(names)} (one instruction each); the limit is {MAX_INSTANCES:,}")
    return [dict(zip(names, combo)) for combo in itertools.product(*values)]


def _eval(expr, insts: list[dict], what: str) -> np.ndarray:
    """(n, 32) int64 values of an expression, a callable of (lane, **vars) or an array."""
    n = len(insts)
    if isinstance(expr, str):
        from .addrexpr import parse

        e = parse(expr)
        names = [v for v in e.variables if v != "lane"]
        env = {k: np.array([inst.get(k, 0) for inst in insts], np.int64)[:, None] for k in names}
        missing = [v for v in names if v not in (insts[0] if insts else {})]
        if missing:
            raise ValueError(f"{what}: variable {missing[0]!r} has no value; give it "
                             + validate.spell(f"in variables, e.g. {{'{missing[0]}': range(4)}}",
                                              f"with --var, e.g. --var {missing[0]}=0..3"))
        out = e.evaluate(LANES[None, :], **env)
        return np.broadcast_to(out, (n, WARP_LANES)).astype(np.int64)
    if callable(expr):
        rows = []
        for inst in insts:
            v = np.asarray(expr(LANES.copy(), **inst))
            if v.dtype.kind not in "ui":
                raise TypeError(f"{what}: the callable must return integers, got dtype {v.dtype}")
            rows.append(np.broadcast_to(v, (WARP_LANES,)))
        return np.stack(rows).astype(np.int64)
    a = np.asarray(expr)
    if a.dtype.kind not in "ui":
        raise TypeError(f"{what} must be a C expression (str), a callable of the lane or integers, got dtype {a.dtype}")
    if a.shape == (WARP_LANES,):
        a = np.broadcast_to(a, (n, WARP_LANES))
    if a.shape != (n, WARP_LANES):
        raise ValueError(f"{what}: expected 32 values per instruction, shaped (32,) or ({n}, 32), got {a.shape}")
    return a.astype(np.int64)


def _masks(mask, insts, op: SharedOp) -> np.ndarray:
    n = len(insts)
    if mask is None:
        return np.ones((n, WARP_LANES), bool)
    if op.kind in ("ldsm", "stsm"):
        raise ValueError(f"mask: {op.name} is .sync.aligned, every lane of the warp executes it")
    if isinstance(mask, (int, np.integer)) and not isinstance(mask, bool):
        from fragsim.sim.smem import lane_mask
        return np.broadcast_to(lane_mask(mask), (n, WARP_LANES)).copy()
    return _eval(mask, insts, "mask") != 0


def from_exprs(tile, op, addrs, *, src=None, mask=None, variables=None, name=None, global_pitch=None,
               global_base=0) -> AccessSet:
    """One instruction of the user's code, for every combination of ``variables``.

    ``addrs``: a C address expression in ``lane`` and the variables (``fragsim.search.addrexpr``), a callable
    ``f(lane, **variables)`` or integers; the addresses are byte addresses in the layout of ``tile``,
    which says which elements they reach.  ``mask``: an int bit mask or a C condition.  cp.async:
    ``src`` gives each lane's absolute global source address (an expression too; default: the
    element's place in a row-major source of ``global_pitch`` bytes per line at ``global_base``).
    With ``src`` and ``global_pitch`` both given, the sources say which element each lane copies;
    lanes that write it elsewhere than ``tile`` holds it are reported in the group's ``note``, and
    the search lays the copy out by what the sources say.
    """
    tile = _tile(tile)
    o = parse_shared_op(op)
    insts = _instances(variables)
    what = f"{o.name} addrs"
    a = _eval(addrs, insts, what)
    m = _masks(mask, insts, o)
    use = m & (LANES < o.address_lanes)
    idx, off = tile.locate(np.where(use, a, tile.base))
    bad = use & ((idx < 0) | (off != 0))
    if bad.any():
        i, lane = (int(x) for x in np.argwhere(bad)[0])
        where = " ".join(f"{k}={v}" for k, v in insts[i].items())
        why = (f"points inside element {_rc(tile, idx[i, lane])}" if idx[i, lane] >= 0 else
               "holds no element of the tile (outside it or in its padding)")
        raise ValueError(f"{where + ', ' if where else ''}lane {lane}: {o.what} {validate.hex_int(a[i, lane])} {why}")
    bad = use & (a % o.bytes_per_addr != 0)
    if bad.any():
        i, lane = (int(x) for x in np.argwhere(bad)[0])
        where = " ".join(f"{k}={v}" for k, v in insts[i].items())
        raise ValueError(f"{where + ', ' if where else ''}lane {lane}: {o.what} {validate.hex_int(a[i, lane])} is not "
                         f"{o.bytes_per_addr}-byte aligned")
    at = np.where(use, idx, -1)
    esize = tile.elem_bytes
    labels = tuple(insts)
    if o.family in ("ldmatrix", "stmatrix"):
        src_l, col, _ = matrix_movement(o)                 # (32, num, 2)
        epr = BANK_BYTES // esize
        slot_byte = np.arange(epr) * esize                 # byte of each element in its register
        piece, inner = slot_byte // 2, slot_byte % 2
        addr = a[:, src_l[:, :, piece]] + 2 * col[:, :, piece] + inner   # (n, 32, num, epr)
        e_idx, e_off = tile.locate(addr)
        bad = (e_idx < 0) | (e_off != 0)
        if bad.any():
            i, lane, reg, k = (int(x) for x in np.argwhere(bad)[0])
            raise ValueError(f"{o.name}: lane {lane} register {reg} would move bytes at "
                             f"{validate.hex_int(addr[i, lane, reg, k])}, which hold no whole element of {tile!r}")
        elems = e_idx.reshape(len(insts), WARP_LANES, -1)
        g = AccessGroup(name or o.name, o, at, elems, m, labels, _shape(tile), user_addrs=a,
                        detail=f"{len(insts)} instances")
        return AccessSet([g])
    if o.bytes_per_addr % esize:
        raise ValueError(f"{o.name} moves {o.bytes_per_addr} bytes per lane, not whole {esize}-byte elements")
    e = o.bytes_per_addr // esize
    k_idx, k_off = tile.locate(np.where(use, a, tile.base)[:, :, None] + esize * np.arange(e))
    bad = use[:, :, None] & ((k_idx < 0) | (k_off != 0))
    if bad.any():
        i, lane, k = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"{o.name}: lane {lane} moves bytes at {validate.hex_int(a[i, lane] + esize * k)}, "
                         f"which hold no whole element of {tile!r}")
    elems = np.where(use[:, :, None], k_idx, -1)
    s: np.ndarray | None = None
    note, source = "", {}
    if o.family == "cp.async":
        gp = tile.line_bytes if global_pitch is None else validate.integer(global_pitch, "global_pitch")
        gb = validate.integer(global_base, "global_base")
        _check_global(tile, o, gp, gb)
        source = {"global_pitch": gp, "global_base": gb}
        r, c = np.divmod(np.maximum(at, 0), tile.cols)
        line, pos = (r, c) if tile.order == "row" else (c, r)
        implied = gb + line * gp + pos * esize
        if src is None:
            s = np.where(use, implied, 0)
        else:
            s = np.where(use, _eval(src, insts, "src"), 0)
            if global_pitch is not None:
                at, elems, note = _by_source(tile, o, s, use, at, elems, gp, gb, insts)
    elif src is not None:
        raise ValueError(f"src: only cp.async reads global memory; {o.name} takes no source addresses")
    g = AccessGroup(name or o.name, o, at, elems, m, labels, _shape(tile), src=s, user_addrs=a, note=note,
                    detail=f"{len(insts)} instances", source=source)
    return AccessSet([g])


def _by_source(tile: Tile, o: SharedOp, s, use, at, elems, gp: int, gb: int, insts):
    """The elements the sources say each lane copies (row-major source of ``gp`` bytes per line at
    ``gb``); returns them, with a note where the destinations put them elsewhere than ``tile`` does."""
    esize = tile.elem_bytes
    rel = s - gb
    line, posb = np.divmod(np.where(use, rel, 0), gp)
    bad = use & ((rel < 0) | (line >= tile.lines) | (posb + o.bytes_per_addr > tile.line_bytes) | (posb % esize != 0))
    if bad.any():
        i, lane = (int(x) for x in np.argwhere(bad)[0])
        raise ValueError(f"src: lane {lane} ({' '.join(f'{k}={v}' for k, v in insts[i].items())}) copies from "
                         f"{validate.hex_int(s[i, lane])}, which is not inside line 0..{tile.lines - 1} of the global "
                         f"source ({gp} bytes per line at {validate.hex_int(gb)})")
    pos = posb // esize
    r, c = (line, pos) if tile.order == "row" else (pos, line)
    first = r * tile.cols + c
    step = 1 if tile.order == "row" else tile.cols
    sem = np.where(use[:, :, None], first[:, :, None] + step * np.arange(elems.shape[2]), -1)
    differ = use & (sem[:, :, 0] != at)
    note = ""
    if differ.any():
        i, lane = (int(x) for x in np.argwhere(differ)[0])
        where = " ".join(f"{k}={v}" for k, v in insts[i].items())
        note = (f"{int(differ.sum())} of {int(use.sum())} lanes write their element elsewhere than the tile's "
                f"layout ({tile.layout_name}) holds it: e.g. {where + ', ' if where else ''}lane {lane} copies "
                f"element {_rc(tile, first[i, lane])} to {validate.hex_int(tile.offset_of(at[i, lane]))}, where the tile "
                f"holds {_rc(tile, at[i, lane])}; it is at {validate.hex_int(tile.offset_of(first[i, lane]))}")
    return np.where(use, first, -1), sem, note
