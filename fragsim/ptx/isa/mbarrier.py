"""Rows: mbarrier objects, ``cp.async.mbarrier.arrive``, the cluster barrier, ``mapa`` and ``getctarank``
(PTX ISA sections 9.7.13.15, 9.7.9.25.3, 9.7.13.3, 9.7.9.22-9.7.9.23).  Builders:
``fragsim.ptx.semantics.mbarrier`` -- for clusters of one CTA (a kernel that asks for larger ones is
refused when it loads).

``{.sem.scope}`` is one optional slot of two tokens (both or neither, as the ISA writes it);
``.shared{::cta}`` is the slot ``.ss``.  An arrive on ``.shared::cluster`` returns no state: its
destination is the sink ``_``.
"""

from __future__ import annotations

from ..semantics import mbarrier as MB
from .grammar import Syntax
from .row import Row, Status

K = Status("exact", "ptx_kernels")
X = Status("exact")

SS = ("shared", "shared::cta")
SPACE = SS + ("shared::cluster",)


def _pairs(sems: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {"sem.scope": tuple(f"{s}.{c}" for s in sems for c in ("cta", "cluster"))}


ARRIVE_SEM = _pairs(("release", "relaxed"))
WAIT_SEM = _pairs(("acquire", "relaxed"))
TX_SEM = _pairs(("relaxed",))
ARRIVE_NOTE = ("a count without .noComplete: PTX 7.8, sm_90; .sem.scope: 8.0, sm_90 (.relaxed: 8.6); "
               ".shared::cta: 7.8")


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status = X, note: str = "",
       **vocab: tuple[str, ...]) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status, kind="machine", note=note)


def _arrive(op: str, status: tuple[Status, ...]) -> tuple[Row, ...]:
    """mbarrier.arrive / arrive_drop: the state forms, the remote (.shared::cluster) forms, .expect_tx,
    .noComplete."""
    m = MB.mbarrier
    return (
        _r(f"mbarrier.{op}{{.sem.scope}}{{.ss}}.b64", "state, [addr], {count}", m, "sm_80", "7.0", status[0],
           ARRIVE_NOTE, ss=SS, **ARRIVE_SEM),
        _r(f"mbarrier.{op}{{.sem.scope}}.shared::cluster.b64", "_, [addr], {count}", m, "sm_90", "8.0", X,
           **ARRIVE_SEM),
        _r(f"mbarrier.{op}.expect_tx{{.sem.scope}}{{.ss}}.b64", "state, [addr], txCount", m, "sm_90", "8.0",
           status[1], ss=SS, **ARRIVE_SEM),
        _r(f"mbarrier.{op}.expect_tx{{.sem.scope}}.shared::cluster.b64", "_, [addr], txCount", m, "sm_90", "8.0", X,
           **ARRIVE_SEM),
        _r(f"mbarrier.{op}.noComplete{{.release.cta}}{{.ss}}.b64", "state, [addr], count", m, "sm_80", "7.0", X,
           ss=SS),
    )


ROWS: tuple[Row, ...] = (
    _r("mbarrier.init{.ss}.b64", "-, [addr], count", MB.mbarrier, "sm_80", "7.0", K, ss=SS),
    _r("mbarrier.inval{.ss}.b64", "-, [addr]", MB.mbarrier, "sm_80", "7.0", K, ss=SS),
    *_arrive("arrive", (K, K)),
    *_arrive("arrive_drop", (X, X)),
    _r("mbarrier.expect_tx{.sem.scope}{.space}.b64", "-, [addr], txCount", MB.mbarrier, "sm_90", "8.0",
       space=SPACE, **TX_SEM),
    _r("mbarrier.complete_tx{.sem.scope}{.space}.b64", "-, [addr], txCount", MB.mbarrier, "sm_90", "8.0",
       space=SPACE, **TX_SEM),
    _r("mbarrier.test_wait{.sem.scope}{.ss}.b64", "waitComplete, [addr], state", MB.mbarrier, "sm_80", "7.0", X,
       ".sem.scope: PTX 8.0, sm_90 (.relaxed: 8.6)", ss=SS, **WAIT_SEM),
    _r("mbarrier.test_wait.parity{.sem.scope}{.ss}.b64", "waitComplete, [addr], phaseParity", MB.mbarrier, "sm_80",
       "7.1", K, ".sem.scope: PTX 8.0, sm_90 (.relaxed: 8.6)", ss=SS, **WAIT_SEM),
    _r("mbarrier.try_wait{.sem.scope}{.ss}.b64", "waitComplete, [addr], state, {suspendTimeHint}", MB.mbarrier,
       "sm_90", "7.8", K, ss=SS, **WAIT_SEM),
    _r("mbarrier.try_wait.parity{.sem.scope}{.ss}.b64", "waitComplete, [addr], phaseParity, {suspendTimeHint}",
       MB.mbarrier, "sm_90", "7.8", K, ss=SS, **WAIT_SEM),
    _r("mbarrier.pending_count.b64", "count, state", MB.mbarrier, "sm_80", "7.0"),
    _r("cp.async.mbarrier.arrive{.noinc}{.ss}.b64", "-, [addr]", MB.cp_async_arrive, "sm_80", "7.0", ss=SS),
    # the cluster barrier, and addresses in the cluster's shared memory
    _r("barrier.cluster.arrive{.sem}{.aligned}", "", MB.build_barrier, "sm_90", "7.8", K, ".sem: PTX 8.0",
       sem=("release", "relaxed")),
    _r("barrier.cluster.wait{.acquire}{.aligned}", "", MB.build_barrier, "sm_90", "7.8", K, ".acquire: PTX 8.0"),
    _r("mapa{.space}.type", "d, a, b", MB.mapa, "sm_90", "7.8", space=("shared::cluster",), type=("u32", "u64")),
    _r("getctarank{.space}.type", "d, a", MB.getctarank, "sm_90", "7.8", space=("shared::cluster",),
       type=("u32", "u64")),
)
