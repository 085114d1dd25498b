"""Rows: moves between registers, state-space addresses to and from generic ones, the active mask
(PTX ISA sections 9.7.9.1-9.7.9.2, 9.7.9.19, 9.7.13.11).  Builders: ``fragsim.ptx.semantics.data``."""

from __future__ import annotations

from ..semantics import data as D
from .grammar import Syntax
from .row import Row, Status

K = Status("exact", "ptx_kernels")
X = Status("exact")

MOV_TYPES = ("pred", "b16", "b32", "b64", "u16", "u32", "u64", "s16", "s32", "s64", "f32", "f64")
#: the state spaces cvta converts from and to (``.shared::cluster`` names this CTA's own shared memory:
#: fragsim runs clusters of one CTA)
CVTA_SPACES = ("global", "local", "shared", "shared::cta", "shared::cluster", "param", "param::entry")
#: .size is .u64 only: .u32 is 32-bit addressing (.address_size 32), which ptxas 13 no longer assembles (and
#: fragsim's generic windows of .shared, .local and .param lie above 2^32)
CVTA_NOTE = (".shared::cta/.shared::cluster: PTX 7.8 (::cluster sm_90); .param: 7.7, sm_70; .param::entry: 8.3; "
             ".size .u32 (32-bit addressing) is no row")


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status = K, note: str = "",
       **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status, kind="machine", note=note)


def _no(text: str, operands: str, why: str, target: str, ptx: str, **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, None, target, ptx, Status("refused", why=why), kind="machine")


ROWS: tuple[Row, ...] = (
    _r("mov.type", "d, a", D.build_mov, "sm_10", "1.0", type=MOV_TYPES,
       note="a register, an immediate, a special register, a variable's or function's address; mov.f64: sm_13. "
            "The pack/unpack form (mov.type d, {a, b} and {a, b}, d: .b16, .b32, .b64) has the same modifiers"),
    _no("mov.b128", "d, a", "128-bit moves (mov.b128 and its pack/unpack form) are not modelled", "sm_70", "8.3"),
    _r("cvta.space.size", "p, a", D.cvta, "sm_20", "2.0", space=CVTA_SPACES, size=("u64",), note=CVTA_NOTE),
    _r("cvta.to.space.size", "p, a", D.cvta, "sm_20", "2.0", space=CVTA_SPACES, size=("u64",), note=CVTA_NOTE),
    _no("cvta.const.size", "p, a", "generic addresses of .const memory are not modelled", "sm_20", "3.1",
        size=("u64",)),
    _no("cvta.to.const.size", "p, a", "generic addresses of .const memory are not modelled", "sm_20", "3.1",
        size=("u64",)),
    _r("activemask.b32", "d", D.activemask, "sm_30", "6.2", X),
)
