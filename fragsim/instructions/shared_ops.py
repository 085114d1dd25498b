"""Shared-memory instructions, by their PTX spelling: what each lane moves.

One ``SharedOp`` per spelling: the access kind (``ld``/``st`` plain loads and stores,
``ldsm``/``stsm`` for ldmatrix/stmatrix, ``ldgsts`` for cp.async, which writes shared
memory), the bytes each address covers, and for ldmatrix/stmatrix how many 8x8 matrices.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .ldmatrix import ROW_BYTES


@dataclass(frozen=True)
class SharedOp:
    name: str            # canonical short spelling, e.g. "ldmatrix.x4.trans", "ld.shared.v2.b32"
    kind: str            # "ld" | "st" | "ldsm" | "stsm" | "ldgsts"
    bytes_per_addr: int  # bytes each lane's address covers (16 for an ldmatrix row)
    num: int = 0         # ldmatrix/stmatrix: number of 8x8 matrices
    trans: bool = False

    @property
    def is_store(self) -> bool:
        return self.kind in ("st", "stsm", "ldgsts")

    @property
    def address_lanes(self) -> int:
        """How many lanes' addresses the instruction reads (ldmatrix.x1 reads 8)."""
        return 8 * self.num if self.num else 32

    @property
    def ptx(self) -> str:
        if self.kind in ("ldsm", "stsm"):
            base = "ldmatrix" if self.kind == "ldsm" else "stmatrix"
            return f"{base}.sync.aligned.m8n8.x{self.num}{'.trans' if self.trans else ''}.shared.b16"
        if self.kind == "ldgsts":
            level = self.name.split(".")[2]
            return f"cp.async.{level}.shared.global [dst], [src], {self.bytes_per_addr}"
        return self.name


_MATRIX = re.compile(r"^(ldmatrix|stmatrix)(?:\.sync)?(?:\.aligned)?(?:\.m8n8)?\.x([124])(\.trans)?"
                     r"(?:\.shared(?:::cta)?)?(?:\.b16)?$")
_PLAIN = re.compile(r"^(ld|st)\.shared(?:::cta)?(?:\.(v2|v4))?\.([usbf])(8|16|32|64)$")
_CPASYNC = re.compile(r"^cp\.async\.(ca|cg)(?:\.shared(?:::cta)?\.global)?\.(4|8|16)$")

EXAMPLES = ("ldmatrix.x4", "ldmatrix.x2.trans", "stmatrix.x4", "ld.shared.u8", "ld.shared.u16",
            "ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32", "st.shared.b32",
            "st.shared.v4.b32", "cp.async.ca.4", "cp.async.cg.16")


def parse_shared_op(op) -> SharedOp:
    if isinstance(op, SharedOp):
        return op
    if not isinstance(op, str):
        raise TypeError(f"op must be a PTX instruction name (str), got {type(op).__name__}")
    s = op.strip().lower()
    m = _MATRIX.match(s)
    if m:
        kind = "ldsm" if m.group(1) == "ldmatrix" else "stsm"
        num, trans = int(m.group(2)), bool(m.group(3))
        return SharedOp(f"{m.group(1)}.x{num}{'.trans' if trans else ''}", kind, ROW_BYTES, num, trans)
    m = _PLAIN.match(s)
    if m:
        vec = {None: 1, "v2": 2, "v4": 4}[m.group(2)]
        nbytes = vec * int(m.group(4)) // 8
        if nbytes > 16:
            raise ValueError(f"op {op!r}: a lane moves at most 16 bytes (v4.b32 or v2.b64), got {nbytes}")
        return SharedOp(s, m.group(1), nbytes)
    m = _CPASYNC.match(s)
    if m:
        level, size = m.group(1), int(m.group(2))
        if level == "cg" and size != 16:
            raise ValueError(f"op {op!r}: cp.async.cg copies 16 bytes only (PTX ISA); use cp.async.ca for 4 or 8")
        return SharedOp(f"cp.async.{level}.{size}", "ldgsts", size)
    raise ValueError(f"unknown shared-memory op {op!r}; expected e.g. {', '.join(EXAMPLES)}")
