"""Plain shared-memory loads and stores (``ld.shared`` / ``st.shared``): the table entries.

One entry per (direction, bytes per lane, bytes per element).  Each lane moves ``bytes_per_addr``
bytes as ``nregs`` elements of ``element_bytes`` each, one element per register, zero-extended to
32 bits on a load: the scalars (``.u8``, ``.u16``, ``.b32``) and the vectors of 32-bit words
(``.v2.b32``, ``.v4.b32``), and the vectors of 8- and 16-bit elements (``.v2.u8``, ``.v4.u8``,
``.v2.u16``, ``.v4.u16``).  ptxas (sm_90a) compiles every vector to ONE access of its whole width --
``.v2.u8`` to ``LDS.U16``/``STS.U16``, ``.v4.u8`` and ``.v2.u16`` to ``LDS``/``STS``, ``.v4.u16`` to
``LDS.64``/``STS.64`` -- and moves the elements in and out of registers with PRMT/SGXT/LOP3, so the
bank phases of a vector are those of a scalar access of its width (H100, Nsight Compute).

Bank phases: accesses of up to 4 bytes take one phase of 32 lanes, 8 bytes two of 16, 16 bytes
four of 8 (WAVEFRONT_BYTES per phase).  8- and 16-byte *loads* merge phases pairwise when partner
lanes n and n^1 (or n^2) hold the same address (measured on H200 with Nsight Compute).
Overlapping stores resolve phase by phase, the lowest lane of the last phase winning (H200).
The aliases are spellings with the same shared-memory access and registers: the bank model and
the probes only see the bytes each lane moves (``ld.shared.s8`` sign-extends in the register, but
reads what ``ld.shared.u8`` reads).  PTX has no ``.f16``/``.bf16`` loads or stores (ptxas:
"Unexpected instruction types"): a half moves as ``.b16``.
"""

from __future__ import annotations

from fragsim.facts.hardware import BANK_BYTES, WARP_LANES, WAVEFRONT_BYTES
from .shared_op import OVERLAP_PHASES, SharedOp

# bytes per lane -> (type suffix of the canonical spelling, other spellings of the same access)
WIDTHS = {
    1: ("u8", ("b8", "s8")),
    2: ("u16", ("b16", "s16")),
    4: ("b32", ("u32", "s32", "f32")),
    8: ("v2.b32", ("v2.u32", "v2.s32", "v2.f32", "b64", "u64", "s64", "f64")),
    16: ("v4.b32", ("v4.u32", "v4.s32", "v4.f32", "v2.b64", "v2.u64", "v2.s64", "v2.f64")),
}

# vectors of 8- and 16-bit elements: (bytes per lane, bytes per element) -> (suffix, other spellings)
SMALL_VECTORS = {
    (2, 1): ("v2.u8", ("v2.b8", "v2.s8")),
    (4, 1): ("v4.u8", ("v4.b8", "v4.s8")),
    (4, 2): ("v2.u16", ("v2.b16", "v2.s16")),
    (8, 2): ("v4.u16", ("v4.b16", "v4.s16")),
}


def _entry(direction: str, nbytes: int, element: int, suffix: str, others: tuple) -> SharedOp:
    name = f"{direction}.shared.{suffix}"
    unit = max(BANK_BYTES, nbytes)
    return SharedOp(
        name=name, ptx=name, family=f"{direction}.shared", kind=direction,
        sass="LDS" if direction == "ld" else "STS", bytes_per_addr=nbytes, address_lanes=WARP_LANES,
        phase_lanes=min(WARP_LANES, WAVEFRONT_BYTES // unit), nregs=nbytes // element,
        counter=direction, min_cc=70, merges_partners=direction == "ld" and nbytes >= 8,
        overlap=OVERLAP_PHASES if direction == "st" else None,
        aliases=tuple(f"{direction}.shared.{o}" for o in others))


#: (direction, bytes per lane, bytes per element) -> (suffix, other spellings): every plain access
SHAPES = {(d, n, min(n, BANK_BYTES)): spelled for d in ("ld", "st") for n, spelled in WIDTHS.items()}
SHAPES |= {(d, n, e): spelled for d in ("ld", "st") for (n, e), spelled in SMALL_VECTORS.items()}

# The table's order: the scalars and word vectors first, loads then stores; the vectors of 8/16-bit
# elements are their own group (shared_ops appends it after cp.async: table positions seed the bank
# probe's address sets, gpu_check/banks/cases.py's cases_for, and the earlier entries keep theirs).
ENTRIES = tuple(_entry(d, n, min(n, BANK_BYTES), *WIDTHS[n]) for d in ("ld", "st") for n in WIDTHS)
SMALL_VECTOR_ENTRIES = tuple(_entry(d, n, e, *SMALL_VECTORS[n, e]) for d in ("ld", "st") for n, e in SMALL_VECTORS)
