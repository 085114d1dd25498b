"""Rows: warp-collective instructions (PTX ISA 9.7.9.6, 9.7.13.x): ``shfl.sync``, ``vote.sync``,
``match.sync``, ``redux.sync``, ``elect.sync``.  Semantics: ``fragsim.ptx.semantics.warp``; validated
bit for bit, with diverged and exited lanes, by ``fragsim gpu-check --family ptx_int``."""

from __future__ import annotations

from ..semantics import warp as W
from .grammar import Syntax
from .row import Row, Status

V = Status("bit-exact", "ptx_int")
NO_SYNC = Status("refused", why="without .sync is not supported on sm_70 and later (ptxas refuses it): use the .sync form")


def _r(text: str, operands: str, run, target: str, ptx: str, status: Status = V, **vocab) -> Row:
    return Row(Syntax(text, **vocab), operands, run, target, ptx, status)


ROWS: tuple[Row, ...] = (
    _r("shfl.sync.mode.b32", "d[|p], a, b:lane, c:clamp, membermask:member", W.shfl, "sm_30", "6.0",
       mode=("up", "down", "bfly", "idx")),
    _r("vote.sync.mode.pred", "d, a:pred, membermask:member", W.resolve_vote, "sm_30", "6.0",
       mode=("all", "any", "uni")),
    _r("vote.sync.ballot.b32", "d, a:pred, membermask:member", W.resolve_vote, "sm_30", "6.0"),
    _r("match.any.sync.type", "d, a:few, membermask:member", W.resolve_match, "sm_70", "6.0", type=("b32", "b64")),
    _r("match.all.sync.type", "d[|p], a:few, membermask:member", W.resolve_match, "sm_70", "6.0",
       type=("b32", "b64")),
    _r("redux.sync.op.type", "d, a, membermask:member", W.redux, "sm_80", "7.0", op=("add", "min", "max"),
       type=("u32", "s32")),
    _r("redux.sync.op.b32", "d, a, membermask:member", W.redux, "sm_80", "7.0", op=("and", "or", "xor")),
    _r("redux.sync.op{.abs}{.NaN}.f32", "d, a, membermask:member", None, "sm_100a", "8.6",
       Status("refused", why="redux.sync on .f32 is sm_100a and later (fragsim models sm_80 and sm_90)"),
       op=("min", "max")),
    _r("elect.sync", "d|p, membermask:member", W.elect, "sm_90", "8.0"),
    # the forms without .sync, which ptxas refuses for sm_70 and later
    _r("shfl.mode.b32", "d[|p], a, b:lane, c:clamp", None, "sm_30", "3.0", NO_SYNC, mode=("up", "down", "bfly", "idx")),
    _r("vote.mode.pred", "d, a:pred", None, "sm_20", "2.0", NO_SYNC, mode=("all", "any", "uni")),
    _r("vote.ballot.b32", "d, a:pred", None, "sm_20", "2.0", NO_SYNC),
)
