"""The suspects of the first inconsistent mma a trace finds (``fragsim.trace.checks``): which
operand (A or B) holds what it should not, what it should hold instead -- the fragment's origin
and k block fitted from what it holds, or the rows and columns where the epilogue stored its D --
and why, in a sentence.  ``fragsim.trace.diagnose`` tries them in order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .checks import Analysis, repeated
from .ids import GARBAGE, OTHER, agree
from .operands import operand_names
from .passes import Tracing

__all__ = ["Suspect", "operand_suspects", "store_suspects", "what_is_wrong", "span"]


def natural(v: np.ndarray) -> int | None:
    """v0 when the valid entries of ``v`` (1-D) are v0 + their index, else None."""
    ok = v >= 0
    if not ok.any():
        return None
    d = (v - np.arange(len(v)))[ok]
    return int(d[0]) if (d == d[0]).all() else None


@dataclass
class Suspect:
    """A hypothesis about the first inconsistent mma: ``operand`` should hold ``want`` and holds
    ``got`` (int64 (rows, cols, 2): the matrix element at each position of the operand's fragment,
    -1 where none); ``why``: what makes it the suspect."""

    operand: str
    want: np.ndarray
    got: np.ndarray
    why: str


def _runs(v) -> str:
    """A sequence as its runs of consecutive values: [8..15, 0..7] -> "8..15, 0..7"."""
    v = [int(x) for x in v]
    out, i = [], 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[j + 1] == v[j] + 1 and v[i] >= 0:
            j += 1
        out.append("none" if v[i] < 0 else f"{v[i]}..{v[j]}" if j > i else str(v[i]))
        i = j + 1
    return ", ".join(out)


def span(v) -> str:
    """The valid values of ``v``: "a..b" when consecutive, else the first six."""
    v = np.unique(np.asarray(v)[np.asarray(v) >= 0])
    if not v.size:
        return "none"
    if v.size == v[-1] - v[0] + 1:
        return f"{v[0]}..{v[-1]}" if v.size > 1 else str(v[0])
    return ", ".join(map(str, v[:6])) + (" ..." if v.size > 6 else "")


def origin(v: np.ndarray, index: np.ndarray, step: int) -> int | None:
    """The origin o that best explains elements ``v`` as o + their ``index`` in the fragment: of the
    origins some element gives, the one explaining most elements, aligned to ``step`` (the
    fragment's size there, as kernels tile) if one is; None when no element is valid."""
    ok = v >= 0
    if not ok.any():
        return None
    vals, counts = np.unique((v - index)[ok], return_counts=True)
    aligned = vals % step == 0
    if aligned.any():
        vals, counts = vals[aligned], counts[aligned]
    return int(vals[np.argmax(counts)])


def chain_k0s(t: Tracing, an: Analysis, e: int, u: int) -> set:
    """The k blocks (first k) the earlier mma's of this warp into the same accumulators summed."""
    ev = t.events[e]
    mine = operand_names(ev, "D")
    used = set()
    for e2 in range(e):
        ev2 = t.events[e2]
        if (operand_names(ev2, "D") != mine) if mine is not None else ev2.line != ev.line:
            continue
        for u2 in range(len(ev2.first)):
            if tuple(ev2.ctas[u2]) == tuple(ev.ctas[u]) and ev2.warps[u2] == ev.warps[u]:
                k0 = natural(an.sums[e2][2][u2])
                if k0 is not None:
                    used.add(k0)
    return used


def operand_suspects(t: Tracing, an: Analysis, e: int, u: int) -> list[Suspect]:
    """A or B (or both, in the order worth trying): what it holds, what it should hold, and why."""
    ev = t.events[e]
    M, N, K = ev.form.shape
    rows, cols, ka, kb = (x[u] for x in an.sums[e])
    ra, kA = (x[u] for x in t.slot_coords(ev, "A"))              # (M, K)
    kB, cB = (x[u] for x in t.slot_coords(ev, "B"))              # (K, N)
    r0 = origin(ra, np.broadcast_to(np.arange(M)[:, None], ra.shape), M)
    c0 = origin(cB, np.broadcast_to(np.arange(N)[None, :], cB.shape), N)
    kA0, kB0 = natural(ka), natural(kb)
    order = []
    if kA0 is not None and kB0 is not None and kA0 != kB0:
        # two k blocks: suspect the operand that repeats a block this warp summed into these accumulators
        used = chain_k0s(t, an, e, u)
        first = "B" if kB0 in used and kA0 not in used else "A"
        order = [first, "B" if first == "A" else "A"]
        k_for: dict = {"A": kB0, "B": kA0}
    else:
        k0 = kB0 if kB0 is not None else kA0
        if k0 is None:
            k0 = origin(np.concatenate([kA.ravel(), kB.ravel()]),
                        np.concatenate([np.broadcast_to(np.arange(K)[None, :], kA.shape).ravel(),
                                        np.broadcast_to(np.arange(K)[:, None], kB.shape).ravel()]), K)
        k_for = {"A": k0, "B": k0}
    got = {"A": np.stack([ra, kA], -1), "B": np.stack([kB, cB], -1)}
    want: dict = {}
    if r0 is not None and k_for["A"] is not None:
        r, k = np.meshgrid(r0 + np.arange(M), k_for["A"] + np.arange(K), indexing="ij")
        out = (r < 0) | (r >= t.M) | (k < 0) | (k >= t.K)
        want["A"] = np.where(out[..., None], -1, np.stack([r, k], -1))
    if c0 is not None and k_for["B"] is not None:
        k, c = np.meshgrid(k_for["B"] + np.arange(K), c0 + np.arange(N), indexing="ij")
        out = (c < 0) | (c >= t.N) | (k < 0) | (k >= t.K)
        want["B"] = np.where(out[..., None], -1, np.stack([k, c], -1))
    for op in ("A", "B"):
        if op not in order:
            order.append(op)
    out_s = []
    for op in order:
        if op not in want:
            continue
        g = np.where(got[op] < 0, -1, got[op])
        if (g != want[op]).any():
            out_s.append(Suspect(op, want[op], g, what_is_wrong(op, rows, cols, ka, kb, got[op])))
    return out_s


def what_is_wrong(op: str, rows, cols, ka, kb, got) -> str:
    """What is wrong with operand ``op`` of one mma, in a sentence."""
    if op == "A":
        lines, line_name, mine, theirs, other = rows, "row", ka, kb, "B"
    else:
        lines, line_name, mine, theirs, other = cols, "column", kb, ka, "A"
    parts = []
    if (got == OTHER).any():
        parts.append(f"{op} holds elements of {other}")
    if (got == GARBAGE).any():
        parts.append(f"{op} holds bits that are no element of {op} (not loaded from it, or changed on the way)")
    if (lines == GARBAGE).any():
        i = int(np.flatnonzero(lines == GARBAGE)[0])
        parts.append(f"{line_name} {i} of the {op} fragment holds elements of several {line_name}s of {op}")
    elif repeated(lines[None], 1)[0]:
        v = lines[lines >= 0]
        dup = int(v[np.flatnonzero(np.bincount(v) > 1)[0]]) if v.size else -1
        where = np.flatnonzero(lines == dup)
        parts.append(f"the {op} fragment holds {line_name} {dup} of {op} twice ({line_name}s "
                     f"{', '.join(map(str, where))} of the fragment)")
    if (mine == GARBAGE).any():
        parts.append(f"a k slot of {op} holds elements of several k")
    elif ((mine >= 0) & (theirs >= 0) & (mine != theirs)).any():
        parts.append(f"{op}'s k slots hold k {_runs(mine)} where {other}'s hold k {_runs(theirs)}")
    elif repeated(mine[None], 1)[0]:
        parts.append(f"{op} holds some k twice")
    return "; ".join(parts) or f"{op} holds other elements than its fragment's"


def store_suspects(t: Tracing, an: Analysis, e: int, u: int) -> tuple[list[Suspect], np.ndarray, np.ndarray]:
    """For an mma whose D lands elsewhere: (the operands that would explain it -- their rows or
    columns are not the ones the stores give them --, D's want and got (M, N, 2))."""
    ev = t.events[e]
    M, N, K = ev.form.shape
    rows, cols, ka, kb = (x[u] for x in an.sums[e])
    ok = (rows >= 0)[:, None] & (cols >= 0)[None, :]
    tag = np.maximum(rows, 0)[:, None] * t.N + np.maximum(cols, 0)[None, :]
    where = np.where(ok, an.placed.landed[tag], -1)
    got = np.where((where >= 0)[..., None], np.stack(np.divmod(np.maximum(where, 0), t.N), -1), -1)
    want = np.where(ok[..., None], np.stack([np.broadcast_to(rows[:, None], (M, N)),
                                             np.broadcast_to(cols[None, :], (M, N))], -1), -1)
    out = []
    lr, lc = agree(np.where(where >= 0, got[..., 0] + 1, 0), 1) - 1, agree(np.where(where >= 0, got[..., 1] + 1, 0), 0) - 1
    if natural(lr) is not None and natural(lc) is not None:
        ra, kA = (x[u] for x in t.slot_coords(ev, "A"))
        kB, cB = (x[u] for x in t.slot_coords(ev, "B"))
        if ((lr >= 0) & (lr != rows)).any():
            w = np.stack([np.broadcast_to(lr[:, None], (M, K)), kA], -1)
            out.append(Suspect("A", np.where((lr < 0)[:, None, None], -1, w), np.stack([ra, kA], -1),
                               f"its D is stored at rows {span(lr)}, so it must get A's rows {span(lr)}; A holds rows "
                               f"{span(rows)}"))
        if ((lc >= 0) & (lc != cols)).any():
            w = np.stack([kB, np.broadcast_to(lc[None, :], (K, N))], -1)
            out.append(Suspect("B", np.where((lc < 0)[None, :, None], -1, w), np.stack([kB, cB], -1),
                               f"its D is stored at columns {span(lc)}, so it must get B's columns {span(lc)}; B "
                               f"holds columns {span(cols)}"))
    return out, want, got
