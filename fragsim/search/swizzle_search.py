"""``fragsim.swizzle_search``: which layout of a tile avoids bank conflicts for an access set.

The search enumerates a stated candidate space for one tile -- no swizzle; every CUTLASS
``Swizzle<B,M,S>`` valid on the tile; general XOR maps (``fragsim.XorMap``) from the lowest row
bits into the 16-byte-chunk bits of a 128-byte wavefront; paddings of the pitch in 16-byte steps --
lays the access set out in each (``AccessGroup.addresses``), scores all of them with the batched
bank model (``fragsim.banks.bank_conflicts_batch``, one call per instruction group for all
candidates at once) and ranks them by total wavefronts of all reads and writes, then memory
overhead, then the base alignment the layout needs.

A candidate is only ranked once it passes the round trip: a tagged matrix written through the
access set's writes (``fragsim.cp_async`` / ``st_shared`` / ``stmatrix``) and read through its reads
(``fragsim.ldmatrix`` / ``ld_shared``) lands every element where the reads need it.  Candidates are
verified in rank order until ``top`` have passed; those that fail are listed with the reason.

What no layout can change is reported apart: the ideal of every instruction, and for cp.async the
source side (one phase per 128-byte source line, and lanes reading one source element), the cost
the same copy has when each lane's destination bank equals its source bank.  ``.cg`` copies are
scored by their modelled cost (Nsight Compute counts nothing for them).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from fragsim import validate
from .access import AccessGroup, AccessSet
from fragsim.facts.hardware import MATRIX_ROW_BYTES, SOURCE_LINE_BYTES, WARP_LANES, WAVEFRONT_BYTES
from fragsim.facts.smem import smem_per_cta
from fragsim.instructions.shared_op import SharedOp
from fragsim.instructions.shared_ops import SHARED_OPS
from fragsim.layout.swizzle import Swizzle
from fragsim.layout.tile import Tile
from fragsim.layout.xor_map import XorMap

__all__ = ["swizzle_search", "SearchResult", "Candidate", "round_trip", "RoundTrip"]

#: The general XOR maps family is capped at this many maps (2**(row bits * chunk bits)).
MAX_XOR_MAPS = 4096
CHUNK_BYTES = MATRIX_ROW_BYTES    # the unit XOR maps permute: an ldmatrix row, a 16-byte copy
MAX_PADDING = 4096        # bytes of padding per line the search tries at most
#: Lane addresses (layouts x instructions x 32) a search may score: beyond it the search is refused
#: before it starts (scoring runs at a few million lane addresses per second: this is about a minute).
MAX_SCORED_ADDRESSES = 1 << 27
SCORE_CHUNK = 1 << 20     # lane addresses laid out and scored at a time (8 MiB per int64 array)
FAMILY_RANK = {"none": 0, "padding": 1, "Swizzle": 2, "XOR": 3, "yours": 4, "given": 5}


# ---------------------------------------------------------------------------------------------
# results
# ---------------------------------------------------------------------------------------------

@dataclass
class GroupFigures:
    """One instruction group's figures under one layout: int arrays (n,)."""

    name: str
    op: str                  # the group's instruction
    wavefronts: np.ndarray
    ideal: np.ndarray
    counted: bool            # Nsight Compute counts it (False for cp.async.cg: 0 on the counters)
    labels: tuple

    @property
    def conflicts(self) -> np.ndarray:
        return self.wavefronts - self.ideal

    def to_dict(self) -> dict:
        return {"group": self.name, "op": self.op, "wavefronts": int(self.wavefronts.sum()),
                "conflicts": int(self.conflicts.sum()), "ideal": int(self.ideal.sum()),
                "counted_by_ncu": self.counted, "instructions": [
                    {**lab, "wavefronts": int(w), "ideal": int(i), "conflicts": int(w - i)}
                    for lab, w, i in zip(self.labels, self.wavefronts, self.ideal)]}


@dataclass
class Candidate:
    """One layout of the tile, scored: ``.tile`` the layout, totals over every read and write."""

    name: str
    family: str              # "none" | "Swizzle" | "XOR" | "padding" | "yours" (as written) | "given"
    pitch: int
    xor_map: XorMap | None
    figures: list            # GroupFigures per access group, in the access set's order
    overhead: int            # padding bytes
    alignment: int           # base alignment the layout needs
    tile: Tile | None = None
    rank: int | None = None
    verified: bool | None = None   # passed the round trip (None: not run)
    failure: str = ""
    layout: "_Layout | None" = field(default=None, repr=False)

    @property
    def wavefronts(self) -> int:
        return int(sum(int(f.wavefronts.sum()) for f in self.figures))

    @property
    def ideal(self) -> int:
        return int(sum(int(f.ideal.sum()) for f in self.figures))

    @property
    def conflicts(self) -> int:
        return self.wavefronts - self.ideal

    @property
    def ncu_wavefronts(self) -> int:
        """What Nsight Compute's counters show (cp.async.cg copies count 0)."""
        return int(sum(int(f.wavefronts.sum()) for f in self.figures if f.counted))

    @property
    def per_instruction(self) -> list:
        """[(group, op, labels, wavefronts, ideal, conflicts), ...] for every instruction."""
        return [(f.name, f.op, lab, int(w), int(i), int(w - i))
                for f in self.figures for lab, w, i in zip(f.labels, f.wavefronts, f.ideal)]

    def key(self):
        terms = self.xor_map.size if self.xor_map is not None else 0
        return (self.wavefronts, self.overhead, self.alignment, FAMILY_RANK[self.family], terms, self.name)

    def to_dict(self) -> dict:
        return {"rank": self.rank, "layout": self.name, "family": self.family, "pitch": self.pitch,
                "tile": self.tile.spec() if self.tile is not None else None,
                "xor": {str(k): v for k, v in self.xor_map.terms().items()} if self.xor_map is not None else None,
                "wavefronts": self.wavefronts, "conflicts": self.conflicts, "ideal": self.ideal,
                "ncu_wavefronts": self.ncu_wavefronts, "overhead_bytes": self.overhead,
                "alignment": self.alignment, "round_trip": self.verified, "failure": self.failure or None,
                "groups": [f.to_dict() for f in self.figures]}


@dataclass
class SearchResult:
    """Ranked candidates (a sequence: ``result[0]`` is the best) and what the search found."""

    tile: Tile
    groups: tuple
    ranked: list
    nothing: Candidate                 # no swizzle, no padding: the cost of doing nothing
    floor: int                         # wavefronts no layout can go below
    ideal: int
    floor_by_group: list
    space: list                        # [(family, count scored, description)]
    scored: int
    rejected: list                     # [(layout, reason)]
    notes: list = field(default_factory=list)
    yours: Candidate | None = None     # the tile's own layout, when it is not "none"
    as_written: Candidate | None = None  # the user's own addresses (access sets from expressions)
    seconds: float = 0.0
    candidates: list = field(default_factory=list, repr=False)   # every scored layout, in rank order

    def verify(self, c: Candidate) -> bool:
        """Run the round trip of a scored candidate that was not verified (those past ``top``)."""
        _verify(c, self.tile, self.groups)
        return bool(c.verified)

    @property
    def best(self) -> Candidate:
        if not self.ranked:
            raise ValueError("no candidate passed the round trip: " + "; ".join(r for _, r in self.rejected[:3]))
        return self.ranked[0]

    def __getitem__(self, i):
        return self.ranked[i]

    def __len__(self):
        return len(self.ranked)

    def __iter__(self):
        return iter(self.ranked)

    def to_dict(self) -> dict:
        return {"tile": self.tile.describe(), "access_set": [g.describe() for g in self.groups],
                "space": [{"family": f, "scored": n, "description": d} for f, n, d in self.space],
                "scored": self.scored, "seconds": round(self.seconds, 4), "floor": self.floor,
                "ideal": self.ideal, "floor_by_group": self.floor_by_group,
                "ranked": [c.to_dict() for c in self.ranked], "nothing": self.nothing.to_dict(),
                "yours": self.yours.to_dict() if self.yours else None,
                "as_written": self.as_written.to_dict() if self.as_written else None,
                "rejected": [{"layout": n, "reason": r} for n, r in self.rejected], "notes": self.notes}

    def table(self, detail: bool = False) -> str:
        from .text import format_result
        return format_result(self, detail)

    def __str__(self) -> str:
        return self.table()


# ---------------------------------------------------------------------------------------------
# the candidate space
# ---------------------------------------------------------------------------------------------

@dataclass
class _Layout:
    family: str
    name: str
    pitch: int
    xor: XorMap | None = None       # None: a callable swizzle (then ``tile`` is set)
    tile: Tile | None = None

    def make_tile(self, tile: Tile) -> Tile:
        if self.tile is None:
            sw = None if self.xor is None or self.xor.is_identity else (self.xor.swizzle() or self.xor)
            self.tile = tile.with_layout(pitch=self.pitch, swizzle=sw)
        return self.tile


def _bits(n: int) -> int:
    """Bits of offsets below n."""
    return max(1, (n - 1).bit_length())


def _swizzle_family(tile: Tile, keep: int) -> tuple[list, int, int]:
    """Every Swizzle<B,M,S> valid on the tile (whole elements, every bit inside the footprint, the
    base aligned); those that split the access set's pieces (M < log2 of the widest piece: both its
    bit groups start at or above M) are counted, not kept."""
    nb = _bits(tile.span)
    ebits = tile.elem_bytes.bit_length() - 1
    pow2 = tile.pitch == tile.line_bytes and tile.span == 1 << nb
    out, valid, split = [], 0, 0
    for B in range(1, nb):
        for M in range(ebits, nb):
            for mag in range(B, nb - M - B + 1):
                for S in (mag, -mag):
                    sw = Swizzle(B, M, S)
                    if tile.base % sw.alignment:
                        continue
                    # an involution on the bits below 2**nb: a bijection of a power-of-two footprint
                    if not pow2:
                        try:
                            tile.with_layout(swizzle=sw)
                        except ValueError:
                            continue
                    valid += 1
                    if M < keep:
                        split += 1
                        continue
                    out.append(_Layout("Swizzle", repr(sw), tile.pitch, XorMap.of(sw)))
    return out, valid, split


def _xor_family(tile: Tile, row_bits) -> tuple[list, str]:
    """XOR maps from the lowest row bits into the 16-byte-chunk bits of the first 128 bytes of a line."""
    line = tile.pitch
    if line & (line - 1) or tile.pitch != tile.line_bytes:
        return [], f"none (a {tile.order} of {tile.line_bytes} bytes is not a power of two, so its index has no address bits)"
    lo = CHUNK_BYTES.bit_length() - 1
    lb = line.bit_length() - 1
    top = min(lb, WAVEFRONT_BYTES.bit_length() - 1)
    targets = list(range(lo, top))
    avail = max(0, _bits(tile.span) - lb)
    if not targets or not avail:
        return [], f"none ({tile.order}s of {line} bytes have no 16-byte chunk bits to permute)" if not targets \
            else "none (the tile has one line)"
    c = len(targets)
    cap = (MAX_XOR_MAPS.bit_length() - 1) // c
    if row_bits is None:
        r = min(avail, cap, max(3, 10 - lb))
    else:
        r = validate.integer(row_bits, "xor_row_bits")
        if not 1 <= r <= min(avail, cap):
            raise ValueError(f"xor_row_bits must be in 1..{min(avail, cap)} for this tile ({avail} row bits; at most "
                             f"{MAX_XOR_MAPS} maps of {c} chunk bits), got {r}")
    sources = list(range(lb, lb + r))
    out = []
    for code in range(1, 1 << (r * c)):
        terms = {}
        for ti, t in enumerate(targets):
            sel = (code >> (ti * r)) & ((1 << r) - 1)
            srcs = [sources[j] for j in range(r) if sel >> j & 1]
            if srcs:
                terms[t] = srcs
        xm = XorMap.xor(terms)
        if tile.base % xm.alignment:
            continue
        out.append(_Layout("XOR", repr(xm), tile.pitch, xm))
    desc = (f"{len(out)} maps: address bits {sources[0]}..{sources[-1]} (the {tile.order} index's low {r} bits) "
            f"XORed into bits {targets[0]}..{targets[-1]} (16-byte chunks of a 128-byte wavefront)")
    return out, desc


def _paddings(tile: Tile, max_padding: int) -> tuple[list, int]:
    """The padded pitches, and how many more would not fit in a CTA's shared memory."""
    start = -(-tile.line_bytes // CHUNK_BYTES) * CHUNK_BYTES
    out, too_big = [], 0
    for pitch in range(start, tile.line_bytes + max_padding + 1, CHUNK_BYTES):
        if pitch == tile.line_bytes:
            continue
        if tile.base + (tile.lines - 1) * pitch + tile.line_bytes > smem_per_cta():
            too_big += 1
            continue
        out.append(_Layout("padding", f"pitch {pitch} (+{pitch - tile.line_bytes} B)", pitch, XorMap(())))
    return out, too_big


def _as_layout(x, tile: Tile) -> _Layout:
    """A user-named candidate: a Tile, a Swizzle/XorMap, a callable, None, or ("pitch", N)."""
    if isinstance(x, Tile):
        if (x.rows, x.cols, x.dtype, x.order) != (tile.rows, tile.cols, tile.dtype, tile.order):
            raise ValueError(f"candidate {x!r} is not a layout of the searched tile {tile!r}")
        xm = x.xor_map
        return _Layout("given", x.layout_name, x.pitch, xm, x if xm is None else None)
    if isinstance(x, tuple) and len(x) == 2 and x[0] == "pitch":
        return _as_layout(tile.with_layout(pitch=x[1], swizzle=None), tile)
    return _as_layout(tile.with_layout(pitch=tile.line_bytes, swizzle=x), tile)


# ---------------------------------------------------------------------------------------------
# scoring
# ---------------------------------------------------------------------------------------------

def _images(xm: XorMap, nb: int) -> list:
    """Images of offset bits 0..nb-1."""
    return list(xm.images[:nb]) + [1 << i for i in range(len(xm.images), nb)]


def _byte_tables(images: np.ndarray, nb: int) -> list:
    """Per byte of the offset, a (k, 256) table of the XOR of the images of its set bits."""
    k = images.shape[0]
    tables = []
    for b0 in range(0, nb, 8):
        t = np.zeros((k, 256), np.int64)
        for j in range(8):
            if b0 + j >= nb:
                break
            t[:, 1 << j: 2 << j] = t[:, : 1 << j] ^ images[:, b0 + j: b0 + j + 1]
        tables.append(t)
    return tables


def _addresses(tile: Tile, layouts: list, group: AccessGroup) -> np.ndarray:
    """(L, n, 32) byte addresses of ``group`` under each layout (0 where a lane gives none)."""
    use = group.address_lanes
    at = np.where(use, group.at, 0)
    out = np.zeros((len(layouts),) + at.shape, np.int64)
    by_pitch: dict = {}
    for j, lay in enumerate(layouts):
        if lay.xor is None:
            out[j] = group.addresses(lay.tile)
        else:
            by_pitch.setdefault(lay.pitch, []).append(j)
    r, c = np.divmod(at, tile.cols)
    line, pos = (r, c) if tile.order == "row" else (c, r)
    for pitch, js in by_pitch.items():
        lin = (line * pitch + pos * tile.elem_bytes).reshape(-1)
        nb = _bits((tile.lines - 1) * pitch + tile.line_bytes)
        images = np.array([_images(layouts[j].xor, nb) for j in js], np.int64).reshape(len(js), nb)
        acc = np.zeros((len(js), lin.size), np.int64)
        for b, t in enumerate(_byte_tables(images, nb)):
            acc ^= t[:, (lin >> (8 * b)) & 0xFF]
        out[js] = (tile.base + acc).reshape((len(js),) + at.shape)
    return np.where(use, out, 0)


def _scoring_op(op: SharedOp) -> SharedOp:
    """cp.async.cg shows nothing on the counters: score it by the modelled cost of its .ca twin."""
    return SHARED_OPS[f"cp.async.ca.{op.bytes_per_addr}"] if op.family == "cp.async" and not op.counted else op


def _batch(op: SharedOp, addrs: np.ndarray, group: AccessGroup, copies: int):
    """int32 (copies, n) wavefronts and ideal of ``group`` at ``addrs`` (copies, n, 32)."""
    from fragsim.banks import bank_conflicts_batch

    masks = np.tile(group.mask, (copies, 1))
    src = None if group.src is None else np.tile(group.src, (copies, 1))
    r = bank_conflicts_batch(op, addrs.reshape(-1, WARP_LANES), masks, src)
    n = len(group)
    return r.wavefronts.reshape(copies, n), r.ideal.reshape(copies, n)


def _score_group(tile: Tile, layouts: list, group: AccessGroup):
    """``group`` under every layout, ``SCORE_CHUNK`` lane addresses at a time (the addresses of all
    layouts at once would take 8 bytes per layout, instruction and lane): (misaligned (L,) bool,
    wavefronts and ideal int32 (L, n), follows (L,) bool -- the layout gives the user's own addresses
    -- or None for a group without them)."""
    n = len(group)
    L = len(layouts)
    bad = np.zeros(L, bool)
    wf = np.zeros((L, n), np.int32)
    ideal = np.zeros((L, n), np.int32)
    use = group.address_lanes
    user = None if group.user_addrs is None else np.where(use, group.user_addrs, 0)
    same = np.zeros(L, bool)
    op = _scoring_op(group.op)
    step = max(1, SCORE_CHUNK // max(1, n * WARP_LANES))
    for j0 in range(0, L, step):
        js = slice(j0, min(L, j0 + step))
        a = _addresses(tile, layouts[js], group)
        bad[js] = (use[None] & (a % group.width != 0)).any(axis=(1, 2))
        good = np.flatnonzero(~bad[js])
        if good.size:
            w, i = _batch(op, a[good], group, good.size)
            wf[j0 + good], ideal[j0 + good] = w, i
        if user is not None:
            same[js] = (a == user[None]).all(axis=(1, 2))
    return bad, wf, ideal, None if user is None else same


def _check_work(layouts: list, groups) -> None:
    """Refuse a search whose scoring would run past ``MAX_SCORED_ADDRESSES``, before any of it runs."""
    n = sum(len(g) for g in groups)
    work = len(layouts) * n * WARP_LANES
    if work <= MAX_SCORED_ADDRESSES:
        return
    memory = len(layouts) * n * 8 + 8 * 8 * SCORE_CHUNK     # the figures, and a chunk's address arrays
    raise ValueError(f"swizzle_search: {len(layouts):,} layouts x {n:,} instructions x {WARP_LANES} lanes = "
                     f"{work:,} addresses to score (~{validate.human_bytes(memory)} of working memory); the limit is "
                     f"{MAX_SCORED_ADDRESSES:,} addresses: score fewer layouts ("
                     + validate.spell("swizzles=False, xor_maps=False, xor_row_bits, max_padding or candidates",
                                      "--no-swizzles, --no-xor, --xor-row-bits, --max-padding or --compare")
                     + ") or fewer instructions")


def _source_floor(group: AccessGroup) -> np.ndarray:
    """cp.async: the wavefronts of the same copy when every lane's destination bank is its source
    bank (what the source side costs whatever the layout)."""
    op = _scoring_op(group.op)
    assert group.src is not None, "cp.async groups carry their sources"
    dst = np.where(group.mask, group.src % SOURCE_LINE_BYTES + SOURCE_LINE_BYTES * np.arange(WARP_LANES), 0)
    wf, _ = _batch(op, dst[None], group, 1)
    return wf[0]


# ---------------------------------------------------------------------------------------------
# the round trip through the simulator
# ---------------------------------------------------------------------------------------------

@dataclass
class RoundTrip:
    ok: bool
    message: str = ""


def element_tags(tile: Tile, p: int) -> np.ndarray:
    """Pass ``p`` of every element's tag: the element index, ``8 * elem_bytes`` bits at a time (an element
    too narrow to hold its index is told apart over several passes)."""
    bits = 8 * tile.elem_bytes
    idx = np.arange(tile.elements, dtype=np.uint64)
    if bits >= 64:
        return idx.astype(tile.bits_dtype)
    return ((idx >> np.uint64(bits * p)) & np.uint64((1 << bits) - 1)).astype(tile.bits_dtype)


def lane_bytes(tags: np.ndarray, elems: np.ndarray) -> np.ndarray:
    """(32, E) element indices -> (32, E * element bytes) little-endian bytes of their tags."""
    v = np.where(elems >= 0, tags[np.maximum(elems, 0)], 0).astype(np.dtype(tags.dtype).newbyteorder("<"))
    return np.ascontiguousarray(v).view(np.uint8).reshape(elems.shape[0], -1)


def bytes_to_words(b: np.ndarray) -> np.ndarray:
    """(..., nbytes) bytes -> (..., max(1, nbytes // 4)) little-endian uint32 words (zero-extended)."""
    nb = b.shape[-1]
    if nb < 4:
        pad = np.zeros(b.shape[:-1] + (4 - nb,), np.uint8)
        b = np.concatenate([b, pad], -1)
    return np.ascontiguousarray(b).view("<u4").astype(np.uint32)


def _describe_word(tile: Tile, word: int, nbytes: int) -> str:
    """The elements a register word holds, as (row, col), assuming single-pass tags."""
    esize = tile.elem_bytes
    out = []
    for k in range(max(1, min(4, nbytes) // esize)):
        v = (word >> (8 * esize * k)) & ((1 << (8 * esize)) - 1)
        out.append(f"({v // tile.cols}, {v % tile.cols})" if v < tile.elements else f"{v:#x}")
    return "elements " + " ".join(out) if len(out) > 1 else "element " + out[0]


def round_trip(tile: Tile, groups, addresses=None) -> RoundTrip:
    """Write a tagged matrix through the access set's writes (or lay it out with ``tile`` when there
    are none), read it through its reads, and compare every register with what its elements say.

    ``addresses``: optional {group index: (n, 32) addresses} used instead of ``tile``'s layout (the
    user's own address math)."""
    from fragsim.sim import smem as S

    groups = list(AccessSet(groups))
    addrs = [addresses.get(i) if addresses and i in addresses else g.addresses(tile) for i, g in enumerate(groups)]
    top = max([tile.size] + [int(a.max()) + g.width for a, g in zip(addrs, groups) if a.size])
    writes = [i for i, g in enumerate(groups) if g.role == "write"]
    reads = [i for i, g in enumerate(groups) if g.role == "read"]
    bits = 8 * tile.elem_bytes
    passes = max(1, -(-max(1, (tile.elements - 1).bit_length()) // bits))
    for p in range(passes):
        tags = element_tags(tile, p)
        # all-ones bytes: no element's tag while the tile has fewer elements than 2**bits - 1, so a read
        # of a byte nothing wrote cannot pass for an element
        smem = np.full(top, 0xFF, np.uint8)
        if writes:
            for gi in writes:
                g, a = groups[gi], addrs[gi]
                o = g.op
                for i in range(len(g)):
                    data = lane_bytes(tags, g.elems[i])
                    if o.family == "cp.async":
                        S.cp_async(smem, a[i], data, o.bytes_per_addr, g.mask[i], o.level)
                    elif o.family == "st.shared":
                        S.st_shared(smem, a[i], bytes_to_words(data), o.bytes_per_addr, g.mask[i])
                    else:
                        S.stmatrix(smem, a[i], bytes_to_words(data), o.num, o.trans)
            written = np.unique(np.concatenate([groups[gi].elems[groups[gi].elems >= 0] for gi in writes]))
            if addresses is None:
                got = tile.read(smem).reshape(-1)
                wrong = written[got[written] != tags[written]]
                if wrong.size:
                    e = int(wrong[0])
                    return RoundTrip(False, f"after the writes, element ({e // tile.cols}, {e % tile.cols}) is "
                                            f"not at {validate.hex_int(tile.offset_of(e))}, where the layout puts it")
        else:
            tile.write(smem, tags.reshape(tile.rows, tile.cols))
        for gi in reads:
            g, a = groups[gi], addrs[gi]
            o = g.op
            want = bytes_to_words(lane_bytes(tags, g.elems.reshape(-1, g.elems.shape[2])).reshape(len(g), WARP_LANES, -1))
            if o.family == "ldmatrix":
                got = S.ldmatrix(smem, a, o.num, o.trans)
                active = np.ones((len(g), WARP_LANES), bool)
            else:
                got = np.zeros_like(want)
                for m in np.unique(g.mask, axis=0):
                    rows = np.flatnonzero((g.mask == m).all(1))
                    got[rows] = S.ld_shared(smem, a[rows], o.bytes_per_addr, m)
                active = g.mask
            bad = active[:, :, None] & (got != want)
            if bad.any():
                i, lane, reg = (int(x) for x in np.argwhere(bad)[0])
                nbytes = 4 * o.nregs if o.family == "ldmatrix" else o.bytes_per_addr
                what = (f"holds {_describe_word(tile, int(got[i, lane, reg]), nbytes)}, wants "
                        f"{_describe_word(tile, int(want[i, lane, reg]), nbytes)}") if passes == 1 else \
                    f"holds {int(got[i, lane, reg]):#x}, wants {int(want[i, lane, reg]):#x} (tag byte {p})"
                lab = g.label(i)
                return RoundTrip(False, f"{g.name} {o.name}{' ' + lab if lab else ''} (instruction {i}), lane {lane}, "
                                        f"register {reg}: {what}")
    return RoundTrip(True)


# ---------------------------------------------------------------------------------------------
# the search
# ---------------------------------------------------------------------------------------------

def _groups(tile: Tile, reads, writes) -> tuple:
    out = []
    for role, s in (("write", writes), ("read", reads)):
        if s is None:
            continue
        if not isinstance(s, (AccessSet, AccessGroup, list, tuple)):
            raise TypeError(f"{role}s must be an access set (fragsim.access presets or from_exprs) or None, "
                            f"got {validate.show(s)}")
        for g in AccessSet(s):
            if g.role != role:
                raise ValueError(f"{role}s: group {g.name!r} ({g.op.name}) {'writes' if g.role == 'write' else 'reads'} "
                                 f"shared memory; pass it in {g.role}s")
            if g.shape != (tile.rows, tile.cols, tile.dtype, tile.order):
                r, c, d, o = g.shape
                raise ValueError(f"group {g.name!r} was built for a {r}x{c} {d} {o}-order tile, not for {tile!r}")
            out.append(g)
    if not out:
        raise ValueError("swizzle_search needs at least one read or write (fragsim.access presets or from_exprs)")
    return tuple(out)


def _pieces(groups) -> int:
    """log2 of the widest contiguous piece a lane moves (ldmatrix rows and 16-byte copies: 4)."""
    return max(g.width for g in groups).bit_length() - 1


def swizzle_search(tile, reads=None, writes=None, *, candidates=None, swizzles=True, xor_maps=True,
                   xor_row_bits=None, paddings=True, max_padding=128, top=10) -> SearchResult:
    """Rank layouts of ``tile`` by the total wavefronts of ``reads`` and ``writes`` (access sets).

    The space: no swizzle; every Swizzle<B,M,S> valid on the tile (``swizzles``); XOR maps from
    the ``xor_row_bits`` lowest row bits into the 16-byte-chunk bits of the first 128 bytes of a row
    (``xor_maps``; default 3-5 row bits, at most 4096 maps); pitches padded in 16-byte steps up to
    ``max_padding`` bytes (``paddings``).  ``candidates`` (a list of Tiles, Swizzles, XorMaps,
    callables, None or ("pitch", N)) scores just those instead: compare mode.  ``top``: how many
    candidates to verify and rank (None: all).  Ties in wavefronts go to less memory overhead, then a
    smaller base alignment, then the simpler family (none, padding, Swizzle, XOR).
    """
    t0 = time.perf_counter()
    if not isinstance(tile, Tile):
        raise TypeError(f"tile must be a fragsim.Tile, got {type(tile).__name__}")
    tile.shared_only("swizzle_search")
    groups = _groups(tile, reads, writes)
    keep = _pieces(groups)
    if top is not None:
        top = validate.integer(top, "top")
        if top < 1:
            raise ValueError(f"top must be >= 1 (or None for all), got {top}")
    space: list = []
    notes: list = []
    nothing = _Layout("none", "none", tile.line_bytes, XorMap(()))
    layouts = [nothing]
    if candidates is not None:
        if not isinstance(candidates, (list, tuple)):
            raise TypeError(f"candidates must be a list, got {type(candidates).__name__}")
        given = [_as_layout(x, tile) for x in candidates]
        layouts += given
        space.append(("given", len(given), "the named candidates"))
    else:
        if swizzles:
            sw, valid, split = _swizzle_family(tile, keep)
            layouts += sw
            space.append(("Swizzle", len(sw), f"Swizzle<B,M,S> valid on the tile: {valid}"
                          + (f", {split} of them split the {1 << keep}-byte pieces lanes move (not scored)" if split else "")))
        if xor_maps:
            xs, desc = _xor_family(tile, xor_row_bits)
            layouts += xs
            space.append(("XOR", len(xs), desc))
        if paddings:
            mp = validate.integer(max_padding, "max_padding")
            # banks repeat every 128 bytes: a larger padding only adds memory (and an endless loop at 2**63)
            if not 0 <= mp <= MAX_PADDING:
                raise ValueError(f"max_padding must be in 0..{MAX_PADDING} bytes (bank patterns repeat every "
                                 f"{WAVEFRONT_BYTES} bytes), got {mp}")
            pads, too_big = _paddings(tile, mp)
            layouts += pads
            space.append(("padding", len(pads), f"pitches {tile.line_bytes}+16..{tile.line_bytes + mp} in 16-byte steps"
                          + (f", {too_big} of them too large for shared memory (not scored)" if too_big else "")))
    yours_layout = None
    if tile.swizzle is not None or tile.pitch != tile.line_bytes:
        yours_layout = _as_layout(tile, tile)
        yours_layout.family = "yours"
        layouts.append(yours_layout)
    # one layout per distinct address map (the simplest name wins: families come in that order)
    seen: dict = {}
    unique = []
    for lay in layouts:
        if lay.xor is None:
            unique.append(lay)
            continue
        nb = _bits((tile.lines - 1) * lay.pitch + tile.line_bytes)
        k = (lay.pitch, lay.xor.restricted(nb).images) if len(lay.xor.images) > nb else (lay.pitch, lay.xor.images)
        if k in seen:
            if lay is yours_layout:
                yours_layout = seen[k]
            continue
        seen[k] = lay
        unique.append(lay)
    # addresses, alignment, then batched bank-model calls per group for every layout
    _check_work(unique, groups)
    scores = [_score_group(tile, unique, g) for g in groups]
    rejected = []
    ok = np.ones(len(unique), bool)
    for g, (bad, *_) in zip(groups, scores):
        for jj in np.flatnonzero(bad & ok):
            rejected.append((unique[jj].name, f"{g.name}: {g.op.what}es are not {g.width}-byte aligned in this layout"))
        ok &= ~bad
    live = [lay for lay, k in zip(unique, ok) if k]
    if nothing not in live:
        raise ValueError("the access set does not fit the unswizzled tile: " + rejected[0][1])
    idx = np.flatnonzero(ok)
    figures: list = [[] for _ in live]
    floors = []
    ideal_total: int = 0
    for g, (_, wf, ideals, _) in zip(groups, scores):
        for j, i in enumerate(idx):
            figures[j].append(GroupFigures(g.name, g.op.name, wf[i], ideals[i], g.op.counted, g.labels))
        # the ideal does not depend on the layout: lanes share an address exactly when they share an element
        g_ideal = int(ideals[idx[0]].sum())
        g_floor = int(_source_floor(g).sum()) if g.op.family == "cp.async" else g_ideal
        floors.append((g.name, g.op.name, g_ideal, g_floor))
        ideal_total += g_ideal
        if not g.op.counted:
            notes.append(f"{g.name}: {g.op.name} is scored by its modelled cost; Nsight Compute counts no "
                         "shared-memory wavefronts for .cg copies (they bypass L1)")
    cands = []
    for lay, fig in zip(live, figures):
        c = Candidate(lay.name, lay.family, lay.pitch, lay.xor, fig,
                      tile.lines * (lay.pitch - tile.line_bytes),
                      max(tile.elem_bytes, lay.xor.alignment if lay.xor is not None else 1),
                      tile=lay.tile, layout=lay)
        cands.append(c)
    by_layout = {id(c.layout): c for c in cands}
    order = sorted(cands, key=Candidate.key)
    ranked: list = []
    for c in order:
        if top is not None and len(ranked) >= top:
            break
        _verify(c, tile, groups)
        if c.verified:
            c.rank = len(ranked) + 1
            ranked.append(c)
        else:
            rejected.append((c.name, c.failure))
    none_c = by_layout[id(nothing)]
    _verify(none_c, tile, groups)
    yours = by_layout.get(id(yours_layout)) if yours_layout is not None else None
    if yours is not None:
        _verify(yours, tile, groups)
    floor = sum(f for *_, f in floors)
    as_written = _as_written(tile, groups, unique, [sc[3] for sc in scores], notes)
    _explain(notes, floors, floor, ideal_total, none_c, ranked)
    res = SearchResult(tile, groups, ranked, none_c, floor, ideal_total,
                       [{"group": n, "op": o, "ideal": i, "floor": f} for n, o, i, f in floors],
                       space, len(cands), rejected, notes, yours, as_written, candidates=order)
    res.seconds = time.perf_counter() - t0
    return res


def _verify(c: Candidate, tile: Tile, groups) -> None:
    if c.verified is not None:
        return
    assert c.layout is not None, "candidates of the search carry their layout"
    try:
        t = c.layout.make_tile(tile)
    except ValueError as e:
        c.verified, c.failure = False, str(e)
        return
    c.tile = t
    rt = round_trip(t, groups)
    c.verified, c.failure = rt.ok, rt.message


def _as_written(tile, groups, layouts, follows_by_group, notes) -> Candidate | None:
    """The user's own addresses (``from_exprs`` groups), scored and round-tripped as they are, and
    which layouts of the space each group's addresses follow."""
    if not any(g.user_addrs is not None for g in groups):
        return None
    user = {i: (g.user_addrs if g.user_addrs is not None else g.addresses(tile)) for i, g in enumerate(groups)}
    figs = []
    for i, g in enumerate(groups):
        a = np.where(g.address_lanes, user[i], 0)
        wf, ideal = _batch(_scoring_op(g.op), a[None], g, 1)
        figs.append(GroupFigures(g.name, g.op.name, wf[0], ideal[0], g.op.counted, g.labels))
    c = Candidate("as written", "yours", tile.pitch, None, figs, tile.overhead, tile.alignment, tile=tile)
    rt = round_trip(tile, groups, addresses={i: np.where(g.address_lanes, user[i], 0) for i, g in enumerate(groups)})
    c.verified, c.failure = rt.ok, rt.message
    follows = {}
    for g, same in zip(groups, follows_by_group):
        if same is None:
            continue
        names = [layouts[j].name for j in np.flatnonzero(same)]
        follows[g.name] = names
        if g.note:
            notes.append(f"{g.name}: {g.note}")
    if follows:
        parts = [f"{name} ({next(g.op.name for g in groups if g.name == name)}) follow "
                 + (names[0] if names else "no layout of the space") for name, names in follows.items()]
        sides = {tuple(v[:1]) for v in follows.values()}
        if len(sides) > 1:
            notes.append("your reads and writes disagree about the layout: " + "; ".join(parts)
                         + ("" if rt.ok else f" -- as written, {rt.message}"))
        elif not rt.ok:
            notes.append(f"your addresses as written fail the round trip: {rt.message}")
    return c


def _explain(notes, floors, floor, ideal, none_c, ranked) -> None:
    src = floor - ideal
    if src:
        parts = [f"{n} ({o}): {f - i}" for n, o, i, f in floors if f > i]
        notes.append(f"no layout can remove {src} wavefronts over the ideal: cp.async charges one phase per "
                     f"128-byte source line (and lanes reading one source element), whatever the shared-memory "
                     f"layout ({', '.join(parts)})")
    if none_c.wavefronts <= floor:
        notes.append("the unswizzled tile is already at the floor: no layout helps here")
    elif ranked and ranked[0].wavefronts > floor:
        notes.append(f"the best layout in the space stays {ranked[0].wavefronts - floor} wavefronts above the floor; "
                     "a larger space (xor_row_bits, max_padding) or another access pattern may do better")
