"""``fragsim.MatrixDescriptor``: the sm_90 wgmma shared-memory matrix descriptor, and the map from a
descriptor to the shared-memory byte address of every element an operand of wgmma reads.

The 64-bit value (PTX ISA, "Matrix Descriptor Format" of the wgmma section, 9.7.15.5.1.2.2; CuTe's
``GmmaDescriptor`` in cute/arch/mma_sm90_desc.hpp has the same bit fields):

    bits  0-13  matrix-descriptor-encode(start address)            encode(x) = (x & 0x3FFFF) >> 4
    bits 16-29  matrix-descriptor-encode(leading dimension byte offset, LBO)
    bits 32-45  matrix-descriptor-encode(stride dimension byte offset, SBO)
    bits 49-51  matrix base offset (all swizzling modes except no-swizzle)
    bits 62-63  swizzling mode: 0 none, 1 128-byte, 2 64-byte, 3 32-byte
    (bits 14-15, 30-31, 46-48 and 52-61 are unused: fragsim refuses values that set them)

The canonical layouts (PTX ISA "Shared Memory Matrix Layout", 9.7.15.5.1.2, and the layouts CuTe's
``make_gmma_desc`` accepts, cute/atom/mma_traits_sm90_gmma.hpp), in units of 16 bytes (one row of
an 8-row core matrix; T = 16 bytes / element size), W = swizzle width / 16 (1, 2, 4, 8):

    K-major   none   ((8,m),2):((1,SBO),LBO)      rows 16 B apart, the second 16 B of K at LBO
    K-major   sw     ((8,m),2):((W,SBO),1)        rows W*16 B apart, K contiguous; LBO unused
    MN-major  none   ((T,m),(8,k)):((1,SBO),(1,LBO))   T MN-elements per 16 B, next 16 B of MN at
                                                   SBO; 8 K-rows 16 B apart, the next 8 at LBO
    MN-major  sw     ((W*T,m),(8,k)):((1,LBO),(W,SBO)) W*16 B of MN contiguous, the next at LBO;
                                                   8 K-rows W*16 B apart, the next 8 at SBO

The swizzle is CuTe's Swizzle<3,4,3> (128B), <2,4,3> (64B), <1,4,3> (32B) on byte addresses:
bits 4.. of the address are XORed with bits 7.. .  fragsim applies it to the ABSOLUTE address
``start + offset`` (smem byte 0 is 1024-byte aligned), as TMA writes and as CuTe's descriptor
iterator assumes when it advances the start address by k inside a swizzle atom (``start + 32``
for the second k-step of a 128B-swizzled bf16 tile).  ``base_offset`` b shifts the pattern's row
phase: the XOR uses ``((addr >> 7) - b) & mask``, the reading of the ISA's "base offset =
(pattern start addr >> 0x7) & 0x7" for a pattern that does not start on its 1024/512/256-byte
boundary.  Both choices are the model's hypotheses, for the hardware runs to settle.
"""

from __future__ import annotations

import dataclasses
import numbers

import numpy as np

from fragsim import validate
from fragsim.facts.hardware import MATRIX_ROW_BYTES, MATRIX_ROWS

__all__ = ["MatrixDescriptor", "operand_addresses", "canonical_descriptor", "SWIZZLE_MODES", "SWIZZLE_BYTES", "MAJORS"]

#: Swizzling modes in the order of their 2-bit code (bits 62-63).
SWIZZLE_MODES = ("none", "128B", "64B", "32B")
#: Bytes of a swizzle row (the width of the swizzle atom); "none" has 16-byte core-matrix rows.
SWIZZLE_BYTES = {"none": MATRIX_ROW_BYTES, "128B": 128, "64B": 64, "32B": 32}
MAJORS = ("K", "MN")
#: Address bits a descriptor holds: matrix-descriptor-encode keeps bits 4-17.
ADDRESS_LIMIT = 1 << 18
_FIELD_MASK = 0x3FFF
_RESERVED = {"14-15": 0x3 << 14, "30-31": 0x3 << 30, "46-48": 0x7 << 46, "52-61": 0x3FF << 52}
_ELEM_BITS = (8, 16, 32)
_ALIASES = {"none": "none", "interleave": "none", "128b": "128B", "64b": "64B", "32b": "32B",
            "b128": "128B", "b64": "64B", "b32": "32B"}


def _mode(value) -> str:
    if isinstance(value, str):
        m = _ALIASES.get(value.strip().lower())
        if m is not None:
            return m
        raise ValueError(f"MatrixDescriptor swizzle must be one of 'none', '128B', '64B', '32B', got {value!r}")
    raise TypeError(f"MatrixDescriptor swizzle must be one of 'none', '128B', '64B', '32B', got {validate.show(value)}")


@dataclasses.dataclass(frozen=True)
class MatrixDescriptor:
    """A wgmma shared-memory matrix descriptor, field by field (byte values, not the >>4 encodings).

    ``start_address``: byte offset of the matrix in shared memory; ``leading_byte_offset`` (LBO)
    and ``stride_byte_offset`` (SBO): bytes, their meaning per majorness and swizzle mode in the
    module docstring; ``base_offset``: 0..7, the row phase of a swizzle pattern that does not start
    on its boundary; ``swizzle``: "none", "128B", "64B" or "32B".  Each must fit the descriptor:
    a multiple of 16 below 2**18 (the descriptor keeps address bits 4-17).
    """

    start_address: int
    leading_byte_offset: int
    stride_byte_offset: int
    base_offset: int = 0
    swizzle: str = "none"

    def __post_init__(self):
        for name in ("start_address", "leading_byte_offset", "stride_byte_offset"):
            v = validate.integer(getattr(self, name), f"MatrixDescriptor {name}", hint="bytes")
            if v < 0 or v >= ADDRESS_LIMIT:
                raise ValueError(f"MatrixDescriptor {name} {validate.hex_int(v)} is outside 0..0x3fff0 (the descriptor "
                                 "holds byte-address bits 4-17)")
            if v % 16:
                raise ValueError(f"MatrixDescriptor {name} {validate.hex_int(v)} is not a multiple of 16 (the descriptor "
                                 "drops the 4 low bits)")
            object.__setattr__(self, name, v)
        b = validate.integer(self.base_offset, "MatrixDescriptor base_offset", hint="3 bits")
        if not 0 <= b <= 7:
            raise ValueError(f"MatrixDescriptor base_offset must be 0..7 (3 bits), got {b}")
        mode = _mode(self.swizzle)
        if mode == "none" and b:
            raise ValueError(f"MatrixDescriptor base_offset {b} with swizzle 'none': the base offset is valid only "
                             "for the swizzling modes (PTX ISA); use 0")
        object.__setattr__(self, "base_offset", b)
        object.__setattr__(self, "swizzle", mode)

    # -- the 64-bit value ----------------------------------------------------------------------------
    def encode(self) -> int:
        """The 64-bit descriptor value (a Python int in 0..2**64-1)."""
        return ((self.start_address >> 4) | (self.leading_byte_offset >> 4) << 16
                | (self.stride_byte_offset >> 4) << 32 | self.base_offset << 49
                | SWIZZLE_MODES.index(self.swizzle) << 62)

    def __int__(self) -> int:
        return self.encode()

    @classmethod
    def decode(cls, value) -> "MatrixDescriptor":
        """The descriptor a 64-bit value holds.  An int64 (negative: the 64B and 32B modes set bit 63)
        is read as its two's-complement bits; set unused bits are refused."""
        if isinstance(value, MatrixDescriptor):
            return value
        v = validate.integer(value, "descriptor", hint="the 64-bit wgmma matrix descriptor value")
        if not -(1 << 63) <= v < 1 << 64:
            raise ValueError(f"descriptor {validate.hex_int(v)} does not fit 64 bits")
        v &= (1 << 64) - 1
        for bits, mask in _RESERVED.items():
            if v & mask:
                raise ValueError(f"descriptor {v:#018x}: unused bits {bits} are set ({v & mask:#x}); the fields are "
                                 "bits 0-13, 16-29, 32-45, 49-51 and 62-63")
        return cls(start_address=(v & _FIELD_MASK) << 4, leading_byte_offset=(v >> 16 & _FIELD_MASK) << 4,
                   stride_byte_offset=(v >> 32 & _FIELD_MASK) << 4, base_offset=v >> 49 & 7,
                   swizzle=SWIZZLE_MODES[v >> 62])

    def replace(self, **fields) -> "MatrixDescriptor":
        """The same descriptor with some fields changed (checked like a new one)."""
        return dataclasses.replace(self, **fields)

    def advance(self, nbytes: int) -> "MatrixDescriptor":
        """The descriptor with its start address ``nbytes`` further (the k-step advance)."""
        return self.replace(start_address=self.start_address + validate.integer(nbytes, "advance nbytes"))

    # -- text and pictures ---------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"MatrixDescriptor(start_address={validate.hex_int(self.start_address)}, "
                f"leading_byte_offset={self.leading_byte_offset}, stride_byte_offset={self.stride_byte_offset}, "
                f"base_offset={self.base_offset}, swizzle={self.swizzle!r})")

    def __str__(self) -> str:
        return (f"descriptor {self.encode():#018x}: start {validate.hex_int(self.start_address)}, "
                f"LBO {self.leading_byte_offset} B, SBO {self.stride_byte_offset} B, "
                f"base offset {self.base_offset}, swizzle {self.swizzle}")

    def to_dict(self) -> dict:
        return {"value": f"{self.encode():#018x}", **dataclasses.asdict(self)}

    def _repr_png_(self):   # Jupyter: the K-major canonical layout this descriptor reads (matplotlib loads here)
        from fragsim import display
        return display.png(self)

    def _repr_svg_(self):
        from fragsim import display
        return display.svg(self)


def as_descriptor(value, name: str = "descriptor") -> MatrixDescriptor:
    """A MatrixDescriptor from itself, its 64-bit value, or a dict of its fields."""
    if isinstance(value, MatrixDescriptor):
        return value
    if isinstance(value, dict):
        unknown = set(value) - {f.name for f in dataclasses.fields(MatrixDescriptor)}
        if unknown:
            raise ValueError(f"{name}: unknown field {sorted(unknown)[0]!r}; the fields are start_address, "
                             "leading_byte_offset, stride_byte_offset, base_offset, swizzle")
        missing = {"start_address", "leading_byte_offset", "stride_byte_offset"} - set(value)
        if missing:
            raise ValueError(f"{name}: field {sorted(missing)[0]!r} is missing")
        return MatrixDescriptor(**value)
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        return MatrixDescriptor.decode(value)
    raise TypeError(f"{name} must be a fragsim.MatrixDescriptor, its 64-bit value or a dict of its fields, "
                    f"got {validate.show(value)}")


def swizzle_phase_mask(mode: str) -> int:
    """The XOR's bits (of address bits 7..) per mode: 128B 3 bits, 64B 2, 32B 1, none 0."""
    return {"none": 0, "32B": 1, "64B": 3, "128B": 7}[mode]


def swizzle_address(addr, mode: str, base_offset: int = 0):
    """The swizzled byte address: bits 4.. XOR ((bits 7.. - base_offset) & mask) -- Swizzle<3,4,3>,
    <2,4,3>, <1,4,3> on absolute addresses (see the module docstring)."""
    mask = swizzle_phase_mask(mode)
    if not mask:
        return addr
    return addr ^ ((((addr >> 7) - base_offset) & mask) << 4)


def canonical_offsets(desc: MatrixDescriptor, *, rows: int, k: int, elem_bits: int, major: str = "K"):
    """Unswizzled byte offsets from the start address, (rows, k) int64, of the canonical layout."""
    eb = elem_bits // 8
    r = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    lbo, sbo = desc.leading_byte_offset, desc.stride_byte_offset
    width = SWIZZLE_BYTES[desc.swizzle]
    if major == "K":
        kb = kk * eb                                   # byte of the row's 32 bytes of K
        row_pitch = width                              # none: core-matrix rows 16 B apart
        chunk = kb // MATRIX_ROW_BYTES * (lbo if desc.swizzle == "none" else MATRIX_ROW_BYTES)
        return (r % MATRIX_ROWS) * row_pitch + (r // MATRIX_ROWS) * sbo + chunk + kb % MATRIX_ROW_BYTES
    per16 = MATRIX_ROW_BYTES // eb                     # MN-elements in 16 bytes (T)
    if desc.swizzle == "none":
        return (r % per16) * eb + (r // per16) * sbo + (kk % MATRIX_ROWS) * MATRIX_ROW_BYTES + (kk // MATRIX_ROWS) * lbo
    run = width // eb                                  # MN-elements in one swizzle row (W*T)
    return (r % run) * eb + (r // run) * lbo + (kk % MATRIX_ROWS) * width + (kk // MATRIX_ROWS) * sbo


def check_shape(rows, k, elem_bits, major, who: str = "operand_addresses") -> tuple[int, int, int, str]:
    rows = validate.integer(rows, f"{who} rows", hint="M = 64 for A, N for B")
    elem_bits = validate.integer(elem_bits, f"{who} elem_bits", _ELEM_BITS)
    k = validate.integer(k, f"{who} k", hint="the instruction's K")
    major = validate.choice(major, f"{who} major", MAJORS)
    if rows < MATRIX_ROWS or rows > 256 or rows % MATRIX_ROWS:
        raise ValueError(f"{who} rows must be a multiple of 8 in 8..256 (M = 64 for A, N for B), got {rows}")
    if k * elem_bits != 256:
        raise ValueError(f"{who} k must be {256 // elem_bits} for {elem_bits}-bit elements (wgmma reads 32 bytes of K "
                         f"per row), got {k}")
    if major == "MN" and elem_bits != 16:
        raise ValueError(f"{who} major 'MN' (imm-trans = 1) is for 16-bit elements only (f16, bf16), got "
                         f"{elem_bits}-bit elements")
    return rows, k, elem_bits, major


def operand_addresses(desc, *, rows: int, k: int, elem_bits: int, major: str = "K") -> np.ndarray:
    """Shared-memory byte address (int64, shape (rows, k)) of element (row, k) of a wgmma operand read
    through ``desc`` (a MatrixDescriptor, its 64-bit value or a dict of its fields).

    ``rows``: M = 64 for A, N for B; ``k``: the instruction's K (16 for 16-bit types, 8 for tf32, 32
    for 8-bit types; always 32 bytes of K per row); ``elem_bits``: 8, 16 or 32; ``major``: "K"
    (imm-trans = 0) or "MN" (imm-trans = 1, 16-bit types only).  Addresses are byte offsets into
    shared memory whose byte 0 is 1024-byte aligned; the address of an element is that of its
    first byte.
    """
    d = as_descriptor(desc)
    rows, k, elem_bits, major = check_shape(rows, k, elem_bits, major)
    addr = d.start_address + canonical_offsets(d, rows=rows, k=k, elem_bits=elem_bits, major=major)
    return swizzle_address(addr, d.swizzle, d.base_offset)


def canonical_descriptor(swizzle="128B", *, major="K", elem_bits=16, rows=64, start=0) -> MatrixDescriptor:
    """The descriptor of the layout CuTe's ``tile_to_shape(Layout_<major>_<swizzle>_Atom<T>, (rows, K))``
    builds at byte ``start``: swizzle atoms (8 rows x the swizzle width, or 8 x 16-byte core matrices)
    stacked along M/N first, then along K.  K-major: SBO = one atom (8 * width bytes), LBO = the
    column of atoms along M/N (no swizzle; unused, 16, when swizzled); MN-major: LBO/SBO the same
    two strides along M/N and K (swapped without a swizzle, as the ISA defines them)."""
    mode = _mode(swizzle)
    rows, k, elem_bits, major = check_shape(rows, 256 // elem_bits if elem_bits in _ELEM_BITS else 0, elem_bits,
                                            major, "canonical_descriptor")
    w = SWIZZLE_BYTES[mode]
    atom = MATRIX_ROWS * w
    if major == "K":
        along_mn, along_k = atom, (rows // MATRIX_ROWS) * atom
        lbo, sbo = (along_k if mode == "none" else MATRIX_ROW_BYTES), along_mn
    else:
        run = w // (elem_bits // 8)                   # M/N elements in one atom row
        along_mn, along_k = atom, -(-rows // run) * atom
        lbo, sbo = (along_k, along_mn) if mode == "none" else (along_mn, along_k)
    return MatrixDescriptor(start, lbo, sbo, 0, mode)
