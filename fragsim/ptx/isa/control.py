"""Rows: control flow, CTA barriers, memory fences and the instructions with no effect on data
(PTX ISA sections 9.7.12, 9.7.13.1-9.7.13.4, 9.7.19).  Builders: ``fragsim.ptx.semantics.control``;
the kernels of ``fragsim gpu-check --family ptx_kernels`` run the rows whose status names it.

``barrier.cluster`` is semantics/mbarrier.py's (isa/mbarrier.py).  ``call`` reads the same modifiers
whether its target is a function or a register (``call{.uni} (r), fptr, (params), flist|fproto``): the
builder refuses the indirect forms by their operand, which a modifier grammar cannot tell apart.
"""

from __future__ import annotations

from ..semantics import control as C
from .grammar import Syntax
from .row import Row, Status

#: run by whole kernels of the ptx_kernels corpus
K = Status("exact", "ptx_kernels")
#: exact by construction (it orders or moves nothing fragsim keeps, or moves control), no GPU kernel runs it
X = Status("exact")

SCOPE = ("cta", "cluster", "gpu", "sys")
PROXYKIND = ("alias", "async", "async.global", "async.shared::cta", "async.shared::cluster")


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status = K, note: str = "",
       **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status, kind="machine", note=note)


def _no(text: str, operands: str, why: str, target: str, ptx: str, **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, None, target, ptx, Status("refused", why=why), kind="machine")


BAR_RED = "bar.red / barrier.red (a reduction across the CTA at a barrier) is not modelled"

ROWS: tuple[Row, ...] = (
    # ---- branches, calls, returns -----------------------------------------------------------------
    _r("bra{.uni}", "-, tgt:label", C.bra, "sm_10", "1.0"),
    _no("brx.idx{.uni}", "-, index, tlist:label", "brx.idx (a branch through a .branchtargets table) is not "
        "modelled", "sm_30", "6.0"),
    _r("call{.uni}", "-, {ret_param}, func:label, {param_list}", C.build_call, "sm_10", "1.0",
       note="direct calls; an indirect call (a register target with flist or fproto: PTX 2.1, sm_20) has the "
            "same modifiers and the builder refuses it by its operand"),
    _r("ret{.uni}", "", C.build_ret, "sm_10", "1.0"),
    _r("exit", "", C.build_exit, "sm_10", "1.0", X, note="also the end of every kernel (fragsim appends it)"),
    _r("trap", "", C.trap, "sm_10", "1.0", X),
    # ---- CTA barriers -----------------------------------------------------------------------------
    _r("bar{.cta}.sync", "-, a, {b}", C.build_barrier, "sm_10", "1.0",
       note="a register barrier or a thread count b: PTX 2.0, sm_20; .cta: PTX 7.8"),
    _r("bar{.cta}.arrive", "-, a, b", C.build_barrier, "sm_20", "2.0", X, note=".cta: PTX 7.8"),
    _no("bar{.cta}.red.popc.u32", "d, a, {b}, c:pred", BAR_RED, "sm_20", "2.0"),
    _no("bar{.cta}.red.op.pred", "p, a, {b}, c:pred", BAR_RED, "sm_20", "2.0", op=("and", "or")),
    _r("barrier{.cta}.sync{.aligned}", "-, a, {b}", C.build_barrier, "sm_30", "6.0", X, note=".cta: PTX 7.8"),
    _r("barrier{.cta}.arrive{.aligned}", "-, a, b", C.build_barrier, "sm_30", "6.0", X, note=".cta: PTX 7.8"),
    _no("barrier{.cta}.red.popc{.aligned}.u32", "d, a, {b}, c:pred", BAR_RED, "sm_30", "6.0"),
    _no("barrier{.cta}.red.op{.aligned}.pred", "p, a, {b}, c:pred", BAR_RED, "sm_30", "6.0", op=("and", "or")),
    _r("bar.warp.sync", "-, membermask:member", C.build_barrier, "sm_30", "6.0"),
    # ---- fences: no effect on data, every access runs in program order ----------------------------
    _r("membar.level", "", C.nothing, "sm_10", "1.4", X, note="membar.sys: PTX 2.0, sm_20",
       level=("cta", "gl", "sys")),
    _r("membar.proxy.proxykind", "", C.nothing, "sm_60", "7.5", X, proxykind=("alias",)),
    _r("fence{.sem}.scope", "", C.nothing, "sm_70", "6.0", X, note=".cluster: PTX 7.8, sm_90",
       sem=("sc", "acq_rel"), scope=SCOPE),
    _r("fence.sem.scope", "", C.nothing, "sm_90", "8.6", X, sem=("acquire", "release"), scope=SCOPE),
    _r("fence.acquire.sync_restrict::shared::cluster.cluster", "", C.nothing, "sm_90", "8.6", X),
    _r("fence.release.sync_restrict::shared::cta.cluster", "", C.nothing, "sm_90", "8.6", X),
    _r("fence.op_restrict.release.cluster", "", C.nothing, "sm_90", "8.0", op_restrict=("mbarrier_init",)),
    _r("fence.proxy.proxykind", "", C.nothing, "sm_70", "7.5", note=".async, .async.global, "
       ".async.shared::{cta,cluster}: PTX 8.0, sm_90", proxykind=PROXYKIND),
    _r("fence.proxy.to_proxykind::from_proxykind.release.scope", "", C.nothing, "sm_90", "8.3", X,
       scope=SCOPE, **{"to_proxykind::from_proxykind": ("tensormap::generic",)}),
    _r("fence.proxy.to_proxykind::from_proxykind.acquire.scope", "-, [addr], size:imm", C.nothing, "sm_90", "8.3",
       X, scope=SCOPE, **{"to_proxykind::from_proxykind": ("tensormap::generic",)}),
    _r("fence.proxy.async::generic.acquire.sync_restrict::shared::cluster.cluster", "", C.nothing, "sm_90", "8.6", X),
    _r("fence.proxy.async::generic.release.sync_restrict::shared::cta.cluster", "", C.nothing, "sm_90", "8.6", X),
    # ---- no effect on data ------------------------------------------------------------------------
    _r("nanosleep.u32", "-, t", C.nothing, "sm_70", "6.3", X),
    _r("pmevent", "-, a:imm", C.nothing, "sm_10", "1.4", X),
    _r("pmevent.mask", "-, a:imm", C.nothing, "sm_20", "3.0", X),
)
