"""Integers written as runs ("0-7,9,12-15"): how every message, table and picture lists lanes,
registers or banks."""

from __future__ import annotations

from collections.abc import Iterable


def runs(values: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted distinct integers as maximal runs of consecutive values: [0,1,2,5] -> [(0, 2), (5, 5)]."""
    vs = sorted({int(v) for v in values})
    out: list[tuple[int, int]] = []
    for v in vs:
        if out and v == out[-1][1] + 1:
            out[-1] = (out[-1][0], v)
        else:
            out.append((v, v))
    return out


def format_ranges(values: Iterable[int], sep: str = ",", prefix: str = "", short_runs: bool = False,
                  empty: str = "") -> str:
    """``values`` as runs joined by ``sep``, each number after ``prefix``: "r0-r3, r6".

    ``short_runs`` (the bank pictures' lane labels): a run of two is two items ("T0,T1") and a longer
    run's end carries no prefix ("T0-7")."""
    parts = []
    for lo, hi in runs(values):
        if lo == hi:
            parts.append(f"{prefix}{lo}")
        elif short_runs:
            parts.append(f"{prefix}{lo}{sep}{prefix}{hi}" if hi == lo + 1 else f"{prefix}{lo}-{hi}")
        else:
            parts.append(f"{prefix}{lo}-{prefix}{hi}")
    return sep.join(parts) if parts else empty
