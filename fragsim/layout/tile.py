"""``fragsim.Tile``: where a matrix lives in shared memory.

``Tile(rows, cols, dtype, order="row", pitch=None, swizzle=None, base=0, space="shared")``: a
``rows x cols`` matrix of ``dtype`` elements.  ``order="row"`` stores each row contiguously (a *line* is a row),
``"col"`` each column.  Lines start ``pitch`` bytes apart (default: a line's bytes; larger means
padding).  The byte address of element (row, col) is

    base + swizzle(line * pitch + position_in_line * element_bytes)

where ``swizzle`` is a ``fragsim.Swizzle``, a ``fragsim.XorMap`` (a GF(2) matrix on offset bits,
as Triton's linear layouts; every Swizzle<B,M,S> is one), a Python callable on arrays of byte
offsets, or None.  Addresses are byte offsets into the 1-D ``uint8`` shared-memory array that
``fragsim.ldmatrix`` and friends take.

A tile is checked when made, one line per refused rule: the pitch must hold a line and be a
multiple of the element size; the swizzle must move whole elements and be a bijection of the
tile's footprint (the bytes its elements occupy) onto itself; the base must be a multiple of the
element size and, for Swizzle/XorMap, aligned to the map's ``alignment`` (so that swizzling the
absolute address, as sm_90's TMA and wgmma do, or the offset, as CuTe does, agree).

A tile lives in shared memory: base + footprint must fit in what one CTA can address
(``ArchParams.smem_per_cta`` of the default architecture: 227 KB on sm_90), and every
shared-memory entry point takes it.  ``space="global"`` (tile spec word ``global``) declares a
matrix in global memory instead: up to ``MAX_TILE_BYTES``, no swizzle, and refused by the
shared-memory entry points (the swizzle search, the access sets, the checks' tiles).

Elements are numbered row-major whatever the storage order: ``index = row * cols + col``.
"""

from __future__ import annotations

import numbers
import re

import numpy as np

from fragsim import validate
from fragsim.facts.formats import FORMATS
from fragsim.facts.smem import smem_limit, smem_per_cta
from .swizzle import Swizzle
from .xor_map import XorMap

__all__ = ["Tile", "ELEMENT_BYTES"]

#: Element types a tile can hold, by name: bytes per element.
ELEMENT_BYTES: dict[str, int] = {
    **{name: f.storage_bits // 8 for name, f in FORMATS.items() if f.storage_bits % 8 == 0},
    "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "b32": 4, "u32": 4, "s32": 4,
    "f64": 8, "b64": 8, "u64": 8, "s64": 8,
}
_NUMPY_NAMES = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "uint8": "u8",
                "int8": "s8", "uint16": "u16", "int16": "s16", "uint32": "u32", "int32": "s32",
                "uint64": "u64", "int64": "s64", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}
ORDERS = ("row", "col")
SPACES = ("shared", "global")
#: Largest footprint of a global tile (its element arrays stay a few hundred MB at most).
MAX_TILE_BYTES = 1 << 24
#: Global addresses are kept below this (the bank model's bound on a cp.async source address).
GLOBAL_ADDRESS_LIMIT = 1 << 62
_KEEP = object()


def element_type(dtype) -> tuple[str, int]:
    """(canonical name, bytes) of an element type given by name ("bf16") or NumPy dtype."""
    if isinstance(dtype, str):
        name = dtype.strip().lstrip(".").lower()
        if name in ELEMENT_BYTES:
            return name, ELEMENT_BYTES[name]
        bits = _format_bits(name)
        if bits is not None:
            raise ValueError(f"Tile: {name} elements are {bits} bits; a tile holds whole bytes "
                             "(store packed sub-byte elements as u8)")
        raise ValueError(f"Tile: unknown dtype {dtype!r}; expected one of {', '.join(ELEMENT_BYTES)}")
    try:
        if dtype is None:        # np.dtype(None) is float64: not a choice anyone makes by leaving it out
            raise TypeError
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"Tile: dtype must be a name such as 'bf16' or a NumPy dtype, got {type(dtype).__name__}") from None
    if dt.name not in _NUMPY_NAMES:
        raise ValueError(f"Tile: NumPy dtype {dt.name} is not an element type; use a name such as "
                         f"{', '.join(list(ELEMENT_BYTES)[:6])}")
    name = _NUMPY_NAMES[dt.name]
    return name, ELEMENT_BYTES[name]


def _format_bits(name: str) -> int | None:
    """Storage bits of a number format the format table knows (None if it does not)."""
    from fragsim.facts.formats import get_format

    try:
        return int(get_format(name).storage_bits)
    except (ValueError, TypeError):
        return None


def describe_swizzle(swizzle) -> str:
    if swizzle is None:
        return "none"
    if isinstance(swizzle, XorMap):
        sw = swizzle.swizzle()
        return repr(sw) if sw is not None and not swizzle.is_identity else repr(swizzle)
    if isinstance(swizzle, Swizzle):
        return repr(swizzle)
    return getattr(swizzle, "__name__", type(swizzle).__name__)


class Tile:
    """A ``rows x cols`` matrix of ``dtype`` in shared memory (see the module docstring)."""

    __slots__ = ("rows", "cols", "dtype", "elem_bytes", "order", "pitch", "swizzle", "base", "space",
                 "_map", "_inverse")

    def __init__(self, rows, cols, dtype, order="row", pitch=None, swizzle=None, base=0, space="shared"):
        self.rows = validate.integer(rows, "Tile rows")
        self.cols = validate.integer(cols, "Tile cols")
        if self.rows < 1 or self.cols < 1:
            raise ValueError(f"Tile: rows and cols must be >= 1, got {self.rows} x {self.cols}")
        self.dtype, self.elem_bytes = element_type(dtype)
        self.order = validate.choice(order, "Tile order", ORDERS)
        self.space = validate.choice(space, "Tile space", SPACES)
        line = self.line_bytes
        given = pitch is not None
        if pitch is None:
            pitch = line
        self.pitch = validate.integer(pitch, "Tile pitch", hint="bytes between the starts of two "
                                    + ("rows" if self.order == "row" else "columns"))
        what = "a row" if self.order == "row" else "a column"
        if self.pitch < line:
            raise ValueError(f"Tile: pitch {self.pitch} is smaller than {what} ({line} bytes = "
                             f"{self.line_elems} {self.dtype}); the pitch must hold {what}")
        if self.pitch % self.elem_bytes:
            raise ValueError(f"Tile: pitch {self.pitch} is not a multiple of the element size "
                             f"({self.elem_bytes} bytes, {self.dtype})")
        glob = self.space == "global"
        room = GLOBAL_ADDRESS_LIMIT if glob else smem_per_cta()
        if given and self.pitch > room:   # even a one-line tile: such a pitch is a mistake, whatever it spans
            raise ValueError(f"Tile: pitch {self.pitch} is beyond what {self.space} memory holds "
                             f"({validate.human_bytes(room)})")
        if glob and self.span > MAX_TILE_BYTES:
            raise ValueError(f"Tile: a global tile of {self._extent()} exceeds {validate.human_bytes(MAX_TILE_BYTES)} "
                             f"(MAX_TILE_BYTES)")
        self.base = validate.integer(base, "Tile base", hint=f"byte address of the tile in {self.space} memory")
        if self.base < 0 or self.base % self.elem_bytes:
            raise ValueError(f"Tile: base {validate.hex_int(self.base)} must be a non-negative multiple of the "
                             f"element size ({self.elem_bytes} bytes, {self.dtype})")
        if glob and self.size > GLOBAL_ADDRESS_LIMIT:
            raise ValueError(f"Tile: base {validate.hex_int(self.base)} + footprint {self.span} bytes passes 2**62")
        if not glob and self.size > smem_per_cta():
            at = f" at base {validate.hex_int(self.base)}" if self.base else ""
            raise ValueError(f"Tile: {self._extent()}{at} does not fit in {smem_limit()}; a matrix in global "
                             "memory is declared with " + validate.spell("Tile(..., space='global')",
                                                                          "the word global in the tile spec"))
        if glob and swizzle is not None:
            raise ValueError(f"Tile: a global tile (space='global') takes no swizzle (got {describe_swizzle(swizzle)}): "
                             "swizzles permute shared-memory addresses")
        self.swizzle = swizzle
        self._inverse = None
        self._map = self._check_swizzle(swizzle)

    # -- geometry ----------------------------------------------------------------------------------
    def _extent(self) -> str:
        """"2048 rows x 2048 cols of f16 (8 MiB)", with the pitch where it pads: the tile's size in words."""
        pad = f", pitch {self.pitch}" if self.pitch != self.line_bytes else ""
        size = validate.human_bytes(self.span) if self.span >= 1 << 20 else f"{self.span} bytes"
        return f"{self.rows} rows x {self.cols} cols of {self.dtype} ({size}{pad})"

    @property
    def lines(self) -> int:
        """Rows of a row-order tile, columns of a column-order one."""
        return self.rows if self.order == "row" else self.cols

    @property
    def line_elems(self) -> int:
        return self.cols if self.order == "row" else self.rows

    @property
    def line_bytes(self) -> int:
        return self.line_elems * self.elem_bytes

    @property
    def span(self) -> int:
        """Bytes from the base to the end of the last element (the footprint's extent)."""
        return (self.lines - 1) * self.pitch + self.line_bytes

    @property
    def size(self) -> int:
        """Shared-memory bytes the tile needs: ``base + span``."""
        return self.base + self.span

    @property
    def elements(self) -> int:
        return self.rows * self.cols

    @property
    def overhead(self) -> int:
        """Padding bytes: ``lines * (pitch - line bytes)`` (what a buffer of ``lines`` pitches wastes)."""
        return self.lines * (self.pitch - self.line_bytes)

    @property
    def alignment(self) -> int:
        """Base alignment the layout needs (the element size without a swizzle)."""
        a = self._map.alignment if isinstance(self._map, XorMap) else 1
        return max(a, self.elem_bytes)

    @property
    def xor_map(self) -> XorMap | None:
        """The swizzle as an ``XorMap`` (None for a callable swizzle)."""
        if self.swizzle is None:
            return XorMap(())
        return self._map if isinstance(self._map, XorMap) else None

    @property
    def layout_name(self) -> str:
        """The layout in a few words: "Swizzle<3,4,3>", "pitch 144 (+16 B/row)", "none"."""
        parts = []
        if self.swizzle is not None:
            parts.append(describe_swizzle(self._map if isinstance(self._map, XorMap) else self.swizzle))
        if self.pitch != self.line_bytes:
            parts.append(f"pitch {self.pitch} (+{self.pitch - self.line_bytes} B/{self.order})")
        return ", ".join(parts) or "none"

    # -- element -> address ------------------------------------------------------------------------
    def _lin(self, index):
        """Unswizzled byte offsets (from the base) of elements given by row-major index."""
        r, c = np.divmod(index, self.cols)
        line, pos = (r, c) if self.order == "row" else (c, r)
        return line * self.pitch + pos * self.elem_bytes

    def _apply(self, lin):
        if self.swizzle is None:
            return lin
        return self._map(lin) if isinstance(self._map, XorMap) else _call(self.swizzle, lin)

    def offset_of(self, index):
        """Byte addresses (int64) of elements given by row-major index ``row * cols + col``."""
        idx = validate.array(index, "Tile.offset_of: element indices")
        if idx.dtype.kind not in "ui":
            raise TypeError(f"Tile.offset_of: element indices must be integers, got dtype {idx.dtype}")
        bad = (idx < 0) | (idx >= self.elements)
        if bad.any():
            i = tuple(int(x) for x in np.argwhere(bad)[0])
            raise ValueError(f"Tile.offset_of: element index {int(idx[i])} outside the tile's "
                             f"{self.elements} elements")
        return self.base + self._apply(self._lin(idx.astype(np.int64)))

    def offset(self, row, col):
        """Byte address of element (row, col) in shared memory: ints give an int, arrays (broadcast
        together) an int64 array."""
        scalar = all(isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)) for v in (row, col))
        r, c = validate.array(row, "Tile.offset: row"), validate.array(col, "Tile.offset: col")
        for name, v, n in (("row", r, self.rows), ("col", c, self.cols)):
            if v.dtype.kind not in "ui":
                raise TypeError(f"Tile.offset: {name} must be integers, got dtype {v.dtype}")
            bad = (v < 0) | (v >= n)
            if bad.any():
                i = tuple(int(x) for x in np.argwhere(bad)[0])
                raise ValueError(f"Tile.offset: {name} {int(v[i])} outside the tile's {n} {name}s"
                                 + (f" (at index {i})" if v.ndim else ""))
        shape = validate.broadcast_shape([r.shape, c.shape], ["row", "col"], "Tile.offset: ")
        n = int(np.prod(shape, dtype=np.int64))
        # int64 row, col, index, line, position and the swizzle's temporaries: ~80 bytes an offset
        validate.working_memory(80 * n, f"Tile.offset: row and col broadcast to {shape} = {n:,} offsets",
                                "ask for fewer (row, col) pairs at a time")
        r, c = (np.broadcast_to(v.astype(np.int64), shape) for v in (r, c))
        out = self.base + self._apply(self._lin(r * self.cols + c))
        return int(out) if scalar else out

    def addresses(self):
        """Byte address of every element, shaped (rows, cols)."""
        return self.offset_of(np.arange(self.elements)).reshape(self.rows, self.cols)

    def locate(self, addrs):
        """(element index, byte within it) of byte addresses; index -1 where an address holds no
        element of the tile (outside it, or padding)."""
        a = validate.array(addrs, "Tile.locate: addresses")
        if a.dtype.kind not in "ui":
            raise TypeError(f"Tile.locate: addresses must be integers, got dtype {a.dtype}")
        inv = self._inverse_table()
        rel = a.astype(np.int64) - self.base
        inside = (rel >= 0) & (rel < self.span)
        cell = np.where(inside, rel, 0) // self.elem_bytes
        idx = np.where(inside, inv[cell], -1)
        return idx, np.where(idx >= 0, rel % self.elem_bytes, 0)

    def _inverse_table(self) -> np.ndarray:
        if self._inverse is None:
            inv = np.full(-(-self.span // self.elem_bytes), -1, np.int64)
            n = np.arange(self.elements, dtype=np.int64)
            inv[(self.offset_of(n) - self.base) // self.elem_bytes] = n
            inv.setflags(write=False)
            self._inverse = inv
        return self._inverse

    # -- data --------------------------------------------------------------------------------------
    @property
    def bits_dtype(self):
        return {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[self.elem_bytes]

    def _check_smem(self, smem, stores: bool = False) -> np.ndarray:
        if not isinstance(smem, np.ndarray) or smem.dtype != np.uint8 or smem.ndim != 1:
            raise TypeError("smem must be a 1-D numpy uint8 array of bytes, got "
                            + (f"dtype {smem.dtype} shape {smem.shape}" if isinstance(smem, np.ndarray)
                               else type(smem).__name__))
        if smem.size < self.size:
            raise ValueError(f"smem of {smem.size} bytes is too small for the tile (it needs {self.size}: "
                             f"base {validate.hex_int(self.base)} + {self.span} bytes)")
        if self.space == "shared" and smem.size > smem_per_cta():
            raise ValueError(f"smem of {smem.size} bytes is larger than {smem_limit()}")
        if stores and not smem.flags.writeable:
            raise ValueError("smem is read-only; Tile.write writes into it in place")
        return smem

    def write(self, smem, matrix) -> None:
        """Write ``matrix`` (rows, cols) of element bit patterns into ``smem`` where the tile says."""
        smem = self._check_smem(smem, stores=True)
        m = validate.array(matrix, "Tile.write: matrix")
        if m.dtype.kind == "f":
            raise TypeError(f"Tile.write: expected {self.dtype} bit patterns (unsigned integers), got float "
                            f"dtype {m.dtype}; convert with fragsim.to_bits(values, {self.dtype!r})")
        if m.dtype.kind not in "ui":
            raise TypeError(f"Tile.write: expected {self.dtype} bit patterns (unsigned integers), got dtype {m.dtype}")
        if m.shape != (self.rows, self.cols):
            raise ValueError(f"Tile.write: matrix must be shaped ({self.rows}, {self.cols}), got {m.shape}")
        bits = 8 * self.elem_bytes
        if m.size and bits < 64:
            bad = m > (1 << bits) - 1
            if m.dtype.kind == "i":
                bad |= m < 0
            if bad.any():
                r, c = (int(x) for x in np.argwhere(bad)[0])
                raise ValueError(f"Tile.write: element ({r}, {c}) = {int(m[r, c])} is not a {bits}-bit pattern")
        elif m.size and m.dtype.kind == "i" and m.min() < 0:
            r, c = (int(x) for x in np.argwhere(m < 0)[0])
            raise ValueError(f"Tile.write: element ({r}, {c}) = {int(m[r, c])} is not a {bits}-bit pattern")
        data = m.astype(np.dtype(self.bits_dtype).newbyteorder("<"))
        addr = self.addresses().reshape(-1)
        smem[addr[:, None] + np.arange(self.elem_bytes)] = data.reshape(-1).view(np.uint8).reshape(-1, self.elem_bytes)

    def read(self, smem) -> np.ndarray:
        """The matrix (rows, cols) of element bit patterns the tile holds in ``smem``."""
        smem = self._check_smem(smem)
        addr = self.addresses().reshape(-1)
        raw = np.ascontiguousarray(smem[addr[:, None] + np.arange(self.elem_bytes)])
        return raw.view(np.dtype(self.bits_dtype).newbyteorder("<")).reshape(self.rows, self.cols).astype(self.bits_dtype)

    # -- variants ----------------------------------------------------------------------------------
    def with_layout(self, pitch=_KEEP, swizzle=_KEEP, base=_KEEP) -> "Tile":
        """The same matrix with another pitch, swizzle or base (checked like a new tile)."""
        return Tile(self.rows, self.cols, self.dtype, self.order,
                    self.pitch if pitch is _KEEP else pitch,
                    self.swizzle if swizzle is _KEEP else swizzle,
                    self.base if base is _KEEP else base, self.space)

    def shared_only(self, what: str) -> "Tile":
        """This tile, for an entry point ``what`` that lays it out in shared memory (a global tile refused)."""
        if self.space != "shared":
            raise ValueError(f"{what}: the tile {self._extent()} is in global memory; {what} works on a "
                             "tile in shared memory")
        return self

    @classmethod
    def parse(cls, text: str) -> "Tile":
        """``"128x32 bf16 [row|col] [pitch=N] [swizzle=B,M,S|none] [base=N] [shared|global]"`` -> a Tile."""
        if not isinstance(text, str):
            raise TypeError(f"tile spec must be a str, got {type(text).__name__}")
        words = validate.name_length(text, "tile spec").replace(",", " , ").split()
        m = re.fullmatch(r"(\d+)[xX](\d+)", words[0]) if words else None
        if not m or len(words) < 2:
            raise ValueError(f"tile spec {text!r}: expected 'ROWSxCOLS DTYPE [row|col] [pitch=N] "
                             "[swizzle=B,M,S|none] [base=N]', e.g. '128x32 bf16 swizzle=2,4,3'")
        kw: dict = {"dtype": words[1]}
        rest = " ".join(words[2:]).replace(" , ", ",")
        for item in rest.split():
            key, eq, value = item.partition("=")
            if not eq and key in ORDERS:
                kw["order"] = key
            elif not eq and key in SPACES:
                kw["space"] = key
            elif key in ("pitch", "base") and eq:
                kw[key] = _int(value, f"tile spec {text!r}: {key}")
            elif key == "swizzle" and eq:
                kw["swizzle"] = parse_swizzle(value)
            else:
                raise ValueError(f"tile spec {text!r}: unexpected {item!r} (expected row, col, pitch=N, "
                                 "swizzle=B,M,S or none, base=N, shared or global)")
        return cls(int(m.group(1)), int(m.group(2)), **kw)

    def spec(self) -> str:
        """The tile as ``Tile.parse`` reads it (None for a callable or general XOR swizzle)."""
        sw = ""
        if self.swizzle is not None:
            x = self.xor_map
            s = x.swizzle() if x is not None else None
            if x is None or s is None:
                return ""
            sw = f" swizzle={s.B},{s.M},{s.S}" if not x.is_identity else ""
        pitch = f" pitch={self.pitch}" if self.pitch != self.line_bytes else ""
        base = f" base={validate.hex_int(self.base)}" if self.base else ""
        space = " global" if self.space == "global" else ""
        return f"{self.rows}x{self.cols} {self.dtype}{'' if self.order == 'row' else ' col'}{pitch}{sw}{base}{space}"

    # -- checks ------------------------------------------------------------------------------------
    def _check_swizzle(self, swizzle):
        if swizzle is None:
            return None
        name = describe_swizzle(swizzle)
        if isinstance(swizzle, (Swizzle, XorMap)):
            xm = XorMap.of(swizzle)
            keep = self.elem_bytes.bit_length() - 1
            if xm.low_bits_kept < keep:
                raise ValueError(f"Tile: {name} splits {self.dtype} elements: it moves or reads offset bits "
                                 f"below bit {keep} (a swizzle must move whole {self.elem_bytes}-byte elements)")
            self._check_bijection(name, xm, None)
            if self.base % xm.alignment:
                raise ValueError(f"Tile: base {validate.hex_int(self.base)} is not aligned as {name} needs "
                                 f"({xm.alignment} bytes, 2**(highest bit it touches + 1)); otherwise "
                                 "swizzling the address and swizzling the offset disagree")
            return xm
        if not callable(swizzle):
            raise TypeError(f"Tile: swizzle must be a fragsim.Swizzle, a fragsim.XorMap, a callable on byte "
                            f"offsets or None, got {type(swizzle).__name__}")
        self._check_bijection(name, None, swizzle)
        return None

    def _check_bijection(self, name, xm, fn):
        if xm is not None and self.pitch == self.line_bytes:
            # The footprint is all of [0, span), a union of aligned blocks of 2**t bytes (2**t divides
            # span): an invertible map that flips only bits below t keeps each block, so it permutes
            # the footprint -- without an offset of it computed (a tile can have 200,000 of them).
            sub = xm.restricted((self.span - 1).bit_length())
            flips = 0
            for i, v in enumerate(sub.images):
                flips |= v ^ (1 << i)
            if flips < self.span & -self.span and sub.is_bijective():
                return
        idx = np.arange(self.elements, dtype=np.int64)
        lin = self._lin(idx)
        if xm is not None:
            img = xm(lin)
        else:
            byte_lin = (lin[:, None] + np.arange(self.elem_bytes)).reshape(-1)
            img_b = _call(fn, byte_lin, name).reshape(-1, self.elem_bytes)
            whole = (img_b == img_b[:, :1] + np.arange(self.elem_bytes)).all(1) & (img_b[:, 0] % self.elem_bytes == 0)
            if not whole.all():
                e = int(np.flatnonzero(~whole)[0])
                raise ValueError(f"Tile: swizzle {name} splits {self.dtype} elements: element "
                                 f"{self._rc(e)} at offset {lin[e]:#x} is not moved as a whole "
                                 f"{self.elem_bytes}-byte aligned unit")
            img = img_b[:, 0]
        line, pos = np.divmod(img, self.pitch)
        inside = (img >= 0) & (line < self.lines) & (pos < self.line_bytes)
        if not inside.all():
            e = int(np.flatnonzero(~inside)[0])
            raise ValueError(f"Tile: {name} is not a bijection on the tile's footprint: it sends element "
                             f"{self._rc(e)} (offset {lin[e]:#x}) to offset {validate.hex_int(img[e])}, outside "
                             f"the bytes the tile occupies (a swizzle must permute them)" + self._whole_tile_hint(xm))
        order = np.argsort(img, kind="stable")
        dup = np.flatnonzero(img[order][1:] == img[order][:-1])
        if dup.size:
            a, b = int(order[dup[0]]), int(order[dup[0] + 1])
            raise ValueError(f"Tile: {name} is not a bijection on the tile's footprint: elements "
                             f"{self._rc(a)} and {self._rc(b)} both land at offset {img[a]:#x}")

    def _whole_tile_hint(self, xm) -> str:
        """Where the map reaches the padding or lines past the tile, the tile may be a fragment of the
        tile the swizzle was made for: that whole tile (every line a full pitch, and as many lines as
        the map's bits span), if the swizzle is a bijection on it."""
        if xm is None:
            return ""
        lines = max(self.lines, -(-xm.alignment // self.pitch))
        elems = self.pitch // self.elem_bytes
        if (lines, elems) == (self.lines, self.line_elems):
            return ""
        rows, cols = (lines, elems) if self.order == "row" else (elems, lines)
        try:
            whole = Tile(rows, cols, self.dtype, self.order, swizzle=self.swizzle, base=self.base)
        except ValueError:
            return ""
        sw = xm.swizzle()
        code = f"Swizzle({sw.B}, {sw.M}, {sw.S})" if sw is not None else f"XorMap.xor({xm.terms()})"
        args = [str(rows), str(cols), repr(self.dtype)] + (["order='col'"] if self.order == "col" else []) \
            + [f"swizzle={code}"] + ([f"base={validate.hex_int(self.base)}"] if self.base else [])
        python = f"Tile({', '.join(args)})"
        return (f"; if the {self.rows}x{self.cols} tile is a fragment of a larger one, declare the whole tile "
                f"({rows} x {cols}), " + validate.spell(python, f"--tile '{whole.spec()}'" if whole.spec() else python)
                + ", and place the fragment in it with " + validate.spell("at=(row, col)", "--at ROW,COL"))

    def _rc(self, index: int) -> tuple[int, int]:
        return divmod(int(index), self.cols)

    # -- value semantics ---------------------------------------------------------------------------
    def _key(self):
        sw = self._map if isinstance(self._map, XorMap) else self.swizzle
        if isinstance(sw, XorMap) and sw.is_identity:
            sw = None
        return (self.rows, self.cols, self.dtype, self.order, self.pitch, sw, self.base, self.space)

    def __eq__(self, other):
        return isinstance(other, Tile) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def _repr_png_(self):   # Jupyter: the elements coloured by bank (matplotlib loads only here)
        if self.space != "shared":      # banks are shared memory's: a global tile shows as its repr
            return None
        from fragsim import display
        return display.png(self)

    def _repr_svg_(self):
        if self.space != "shared":
            return None
        from fragsim import display
        return display.svg(self)

    def __repr__(self):
        parts = [str(self.rows), str(self.cols), repr(self.dtype)]
        if self.order != "row":
            parts.append(f"order={self.order!r}")
        if self.pitch != self.line_bytes:
            parts.append(f"pitch={self.pitch}")
        if self.swizzle is not None:
            parts.append(f"swizzle={describe_swizzle(self.swizzle)}")
        if self.base:
            parts.append(f"base={validate.hex_int(self.base)}")
        if self.space != "shared":
            parts.append(f"space={self.space!r}")
        return f"Tile({', '.join(parts)})"

    def describe(self) -> str:
        kind = "row-major" if self.order == "row" else "column-major"
        return (f"{self.rows}x{self.cols} {self.dtype} {kind} ({self.line_bytes}-byte {self.order}s), "
                f"layout {self.layout_name}, base {validate.hex_int(self.base)}"
                + (" in global memory" if self.space == "global" else ""))


def _call(fn, offsets: np.ndarray, name: str = "swizzle") -> np.ndarray:
    """A user's swizzle callable on an int64 array of byte offsets -> int64 array of the same shape."""
    try:
        out = np.asarray(fn(offsets))
    except Exception as e:  # the user's function: report its failure in one line
        raise TypeError(f"Tile: swizzle {name} failed on an int64 array of byte offsets "
                        f"({type(e).__name__}: {e}); it must map arrays elementwise") from None
    if out.shape != offsets.shape or out.dtype.kind not in "ui":
        raise TypeError(f"Tile: swizzle {name} must map an int64 array of byte offsets to an integer array "
                        f"of the same shape, got {out.dtype} {out.shape}")
    return out.astype(np.int64)


def _int(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise ValueError(f"{what}: {text!r} is not an integer (decimal or 0x hex)") from None


def parse_swizzle(text: str):
    """``"B,M,S"`` -> Swizzle(B, M, S); ``"none"`` -> None."""
    t = text.strip().lower()
    if t in ("none", "0", ""):
        return None
    parts = [p for p in re.split(r"[,\s]+", t.strip("<>()")) if p]
    if len(parts) != 3:
        raise ValueError(f"swizzle {text!r}: expected B,M,S (CUTLASS Swizzle<B,M,S>, e.g. 3,4,3) or none")
    return Swizzle(*(_int(p, f"swizzle {text!r}") for p in parts))
