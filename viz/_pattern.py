"""An instruction's 32 lane addresses, said the way a kernel writes them: ``(lane % 16) * 128 +
(lane / 16) * 16``, or ``Swizzle<3,4,3>(...)`` of such an expression, for the pictures' titles.

The expression is read off the addresses, not taken from the caller: each address bit field of the
lane number that adds a fixed step is one term (the lanes' bits are found by looking at lanes 1, 2,
4, 8 and 16), and every lane the instruction uses is checked against it.  Addresses that no such
expression -- or a CuTe swizzle of one -- gives are listed instead.
"""

from __future__ import annotations

import numpy as np

from fragsim.facts.hardware import WARP_LANES

LANE_BITS = (WARP_LANES - 1).bit_length()
SHOWN = 4            # addresses listed where no expression fits


def _linear(a: np.ndarray, used: np.ndarray):
    """(base, step per lane bit) with a[lane] = base + sum of the steps of lane's set bits for every used
    lane, or None."""
    lanes = np.flatnonzero(used)
    bits = int(lanes.max()).bit_length()
    if not used[0] or not all(used[1 << b] for b in range(bits)):
        return None
    base = int(a[0])
    steps = [int(a[1 << b]) - base for b in range(bits)]
    want = base + sum(((lanes >> b) & 1) * s for b, s in enumerate(steps))
    return (base, steps) if np.array_equal(want, a[lanes]) else None


def _field(lo: int, width: int, bits: int) -> str:
    """The C expression of lane bits lo..lo+width-1 (``lane`` has ``bits`` bits in use)."""
    if lo == 0 and width == bits:
        return "lane"
    if lo == 0:
        return f"lane % {1 << width}"
    if lo + width == bits:
        return f"lane / {1 << lo}"
    return f"lane / {1 << lo} % {1 << width}"


def _expression(base: int, steps: list[int]) -> str:
    """``steps`` as terms: runs of bits whose steps double are one field times the first step."""
    bits = len(steps)
    terms = []
    b = 0
    while b < bits:
        if steps[b] == 0:
            b += 1
            continue
        e = b
        while e + 1 < bits and steps[e + 1] == 2 * steps[e]:
            e += 1
        field, step = _field(b, e - b + 1, bits), steps[b]
        term = field if abs(step) == 1 else (f"{field} * {abs(step)}" if field == "lane" else f"({field}) * {abs(step)}")
        terms.append((step < 0, term))
        b = e + 1
    if base or not terms:
        # the constant last (as in "lane * 16 + 4096"), or first where it keeps a term from leading with "-"
        const = (base < 0, str(abs(base)))
        terms = [const] + terms if terms and terms[0][0] and base > 0 else terms + [const]
    out = ("- " if terms[0][0] else "") + terms[0][1]
    for neg, t in terms[1:]:
        out += f" {'-' if neg else '+'} {t}"
    return out


def _swizzles():
    """CuTe swizzles Swizzle<B,M,S> of byte offsets worth trying, the usual ones first (16-byte chunks:
    M = 4; the most bits first), which win where several give the same addresses."""
    from fragsim.layout.swizzle import Swizzle
    return [Swizzle(b, m, s) for m in (4, 2, 3, 5, 6, 7) for b in (3, 2, 1) for s in range(b, 8)]


def describe(addrs, used=None) -> str:
    """The lane addresses ``addrs`` (32) as an expression in ``lane`` over the ``used`` lanes (a mask;
    all lanes by default), e.g. ``(lane % 16) * 128 + (lane / 16) * 16``."""
    a = np.asarray(addrs, dtype=np.int64).reshape(WARP_LANES)
    used = np.ones(WARP_LANES, bool) if used is None else np.asarray(used, bool)
    if not used.any():
        return "no lane gives an address"
    vals = a[used]
    if (vals == vals[0]).all():
        return f"every lane {int(vals[0])}"
    # the addresses as they are, or a swizzle (its own inverse) undone first: the fewest terms wins,
    # the plain expression on a tie (undoing part of a swizzle, or one the addresses do not feel,
    # also leaves an expression, a longer or an equal one)
    found = []
    fit = _linear(a, used)
    if fit is not None:
        found.append(_expression(*fit))
    if (a[used] >= 0).all():
        for sw in _swizzles():
            fit = _linear(np.where(used, sw(np.where(used, a, 0)), 0), used)
            if fit is not None:
                found.append(f"{sw!r}({_expression(*fit)})")
    if found:
        return min(found, key=lambda e: e.count(" + ") + e.count(" - "))
    lanes = np.flatnonzero(used)
    shown = ", ".join(f"{int(a[k]):#x}" for k in lanes[:SHOWN])
    return f"lanes {lanes[0]}..{lanes[-1]} at {shown}, ... (no lane expression)"


def describe_in_tile(place, addrs, used) -> str | None:
    """The same lanes as tile coordinates, ``tile[lane % 16, (lane / 16) * 8]``, where every used lane's
    address is the first byte of an element of ``place`` (a viz placement) and both coordinates are
    lane expressions; else None."""
    by_addr = place.by_address()
    a = np.asarray(addrs, dtype=np.int64).reshape(WARP_LANES)
    used = np.asarray(used, bool)
    rc = [by_addr.get(int(x)) for x in a[used]]
    if not rc or any(x is None for x in rc):
        return None
    rows, cols = np.zeros(WARP_LANES, np.int64), np.zeros(WARP_LANES, np.int64)
    rows[used], cols[used] = zip(*rc)
    parts = [_linear(v, used) for v in (rows, cols)]
    if any(p is None for p in parts):
        return None
    return f"tile[{_expression(*parts[0])}, {_expression(*parts[1])}]"
