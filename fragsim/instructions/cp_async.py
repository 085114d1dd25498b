"""``cp.async`` (global -> shared copies, SASS LDGSTS): the table entries.

``.ca`` copies 4, 8 or 16 bytes per lane through L1; ``.cg`` 16 bytes only, bypassing L1 (PTX ISA,
"cp.async").  Nsight Compute counts .cg's shared-memory traffic nowhere (``counted`` False).
Overlapping copies (undefined in PTX): for .ca the highest lane wins; .cg resolves like a store
in phases of 8 lanes (H200 overlap probes).
"""

from __future__ import annotations

from fragsim.facts.hardware import WARP_LANES, WAVEFRONT_BYTES
from .shared_op import OVERLAP_HIGHEST_LANE, OVERLAP_PHASES, SharedOp

SIZES = {"ca": (4, 8, 16), "cg": (16,)}


def _entry(level: str, nbytes: int) -> SharedOp:
    return SharedOp(
        name=f"cp.async.{level}.{nbytes}", ptx=f"cp.async.{level}.shared.global", family="cp.async",
        kind="ldgsts", sass="LDGSTS", bytes_per_addr=nbytes, address_lanes=WARP_LANES,
        phase_lanes=min(WARP_LANES, WAVEFRONT_BYTES // nbytes), nregs=0, counter="ldgsts",
        min_cc=80, counted=level == "ca", level=level,
        overlap=OVERLAP_HIGHEST_LANE if level == "ca" else OVERLAP_PHASES,
        aliases=(f"cp.async.{level}.shared.global.{nbytes}", f"cp.async.{level}.shared::cta.global.{nbytes}"),
        # sm_90 SASS: three predicated-off LDS in every kernel with LDGSTS, whatever their number (1 to 8
        # per kernel read; docs/validation.md, "Odd counters"), counted 3 per warp on the H100
        phantom_lds=3)


ENTRIES = tuple(_entry(level, n) for level, sizes in SIZES.items() for n in sizes)
