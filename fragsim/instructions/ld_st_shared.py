"""Plain shared-memory loads and stores (``ld.shared`` / ``st.shared``): the table entries.

Bank phases: accesses of up to 4 bytes take one phase of 32 lanes, 8 bytes two of 16, 16 bytes
four of 8 (WAVEFRONT_BYTES per phase).  8- and 16-byte *loads* merge phases pairwise when partner
lanes n and n^1 (or n^2) hold the same address (measured on H200 with Nsight Compute).
Overlapping stores resolve phase by phase, the lowest lane of the last phase winning (H200).
The aliases are spellings with the same shared-memory access: the bank model and the probes only
see the bytes each lane moves (``ld.shared.s8`` sign-extends in the register, but reads what
``ld.shared.u8`` reads).
"""

from __future__ import annotations

from fragsim.facts.hardware import BANK_BYTES, WARP_LANES, WAVEFRONT_BYTES
from .shared_op import OVERLAP_PHASES, SharedOp

# bytes per lane -> (type suffix of the canonical spelling, other spellings of the same access)
WIDTHS = {
    1: ("u8", ("b8", "s8")),
    2: ("u16", ("b16", "s16", "f16")),
    4: ("b32", ("u32", "s32", "f32")),
    8: ("v2.b32", ("v2.u32", "v2.s32", "v2.f32", "b64", "u64", "s64", "f64")),
    16: ("v4.b32", ("v4.u32", "v4.s32", "v4.f32", "v2.b64", "v2.u64", "v2.s64", "v2.f64")),
}


def _entry(direction: str, nbytes: int) -> SharedOp:
    suffix, others = WIDTHS[nbytes]
    name = f"{direction}.shared.{suffix}"
    unit = max(BANK_BYTES, nbytes)
    return SharedOp(
        name=name, ptx=name, family=f"{direction}.shared", kind=direction,
        sass="LDS" if direction == "ld" else "STS", bytes_per_addr=nbytes, address_lanes=WARP_LANES,
        phase_lanes=min(WARP_LANES, WAVEFRONT_BYTES // unit), nregs=max(1, nbytes // BANK_BYTES),
        counter=direction, min_cc=70, merges_partners=direction == "ld" and nbytes >= 8,
        overlap=OVERLAP_PHASES if direction == "st" else None,
        aliases=tuple(f"{direction}.shared.{o}" for o in others))


ENTRIES = tuple(_entry(d, n) for d in ("ld", "st") for n in WIDTHS)
