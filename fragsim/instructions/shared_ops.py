"""The shared-memory instruction table: one ``SharedOp`` entry per variant, and the parser.

``SHARED_OPS`` is the one list of variants (name -> entry, in a fixed order: ldmatrix, stmatrix,
ld.shared, st.shared, cp.async, then the ld/st.shared vectors of 8- and 16-bit elements: a new
group goes last, so that the earlier entries keep their positions, which seed the bank probe's
address sets).  ``parse_shared_op`` turns any accepted PTX spelling into its
entry; callers parse once at the boundary and pass the entry down.
"""

from __future__ import annotations

import re

from fragsim import validate
from . import cp_async, ld_st_shared, ldmatrix
from .shared_op import SharedOp

SHARED_OPS: dict[str, SharedOp] = {e.name: e for e in ldmatrix.ENTRIES + ld_st_shared.ENTRIES + cp_async.ENTRIES
                                    + ld_st_shared.SMALL_VECTOR_ENTRIES}
_PLAIN = ld_st_shared.ENTRIES + ld_st_shared.SMALL_VECTOR_ENTRIES
# ld.shared / st.shared: every spelling of one access (ld.shared.f32 -> ld.shared.b32)
_PLAIN_SPELLINGS = {s: e for e in _PLAIN for s in (e.name, *e.aliases)}

_MATRIX = re.compile(r"^(ldmatrix|stmatrix)(?:\.sync)?(?:\.aligned)?(?:\.m8n8)?\.x([124])(\.trans)?"
                     r"(?:\.shared(?:::cta)?)?(?:\.b16)?$")
_PLAIN_RE = re.compile(r"^(ld|st)\.shared(?:::cta)?((?:\.v[0-9]+)?\.[a-z]+[0-9]+)$")
_CPASYNC = re.compile(r"^cp\.async\.(ca|cg)(?:\.shared(?:::cta)?\.global)?\.([0-9]+)$")

EXAMPLES = ("ldmatrix.x4", "ldmatrix.x2.trans", "stmatrix.x4", "ld.shared.u8", "ld.shared.u16",
            "ld.shared.b32", "ld.shared.v2.b32", "ld.shared.v4.b32", "st.shared.b32",
            "st.shared.v4.b32", "cp.async.ca.4", "cp.async.cg.16")


def parse_shared_op(op) -> SharedOp:
    """A PTX spelling (``"ldmatrix.x4"``, ``"ldmatrix.sync.aligned.m8n8.x4.shared.b16"``,
    ``"ld.shared.v4.b32"``, ``"cp.async.cg.16"`` ...) or an entry -> the table entry."""
    if isinstance(op, SharedOp):
        return op
    if not isinstance(op, str):
        raise TypeError(f"op must be a PTX instruction name (str), got {type(op).__name__}")
    s = validate.name_length(op, "op").strip().lower()
    if not s.isascii() or any(c.isspace() for c in s):
        raise ValueError(f"op {op!r}: unexpected space or non-ASCII character in an instruction name")
    m = _MATRIX.match(s)
    if m:
        return SHARED_OPS[f"{m.group(1)}.x{m.group(2)}{m.group(3) or ''}"]
    m = _PLAIN_RE.match(s)
    if m:
        key = f"{m.group(1)}.shared{m.group(2)}"
        if key in _PLAIN_SPELLINGS:
            return _PLAIN_SPELLINGS[key]
        raise ValueError(f"op {op!r}: not a PTX shared-memory access fragsim models; a lane moves 1, 2, 4, 8 or "
                         f"16 bytes ({', '.join(e.name for e in _PLAIN if e.kind == m.group(1))} "
                         f"and their .b/.s/.u/.f32 spellings; PTX has no .f16 loads or stores: .b16)")
    m = _CPASYNC.match(s)
    if m:
        # a size of more digits than any PTX size is only refused (Python will not convert 5,000 digits)
        level, size = m.group(1), int(m.group(2)) if len(m.group(2)) <= 3 else -1
        if size not in cp_async.SIZES[level]:
            sizes = ", ".join(map(str, cp_async.SIZES[level][:-1])) + " or " * (len(cp_async.SIZES[level]) > 1) \
                + str(cp_async.SIZES[level][-1])
            raise ValueError(f"op {op!r}: cp.async.{level} copies {sizes} bytes per lane (PTX ISA)")
        return SHARED_OPS[f"cp.async.{level}.{size}"]
    raise ValueError(f"unknown shared-memory op {op!r}; expected e.g. {', '.join(EXAMPLES)}")


# Entries by the parameters of the functional API (fragsim.ldmatrix(num, trans), ld_shared(nbytes) ...).

def matrix_op(family: str, num, trans) -> SharedOp:
    """``ldmatrix``/``stmatrix`` entry for ``num`` matrices (1, 2, 4) and ``trans``."""
    n = validate.integer(num, "num", ldmatrix.NUMS, f"8x8 matrices: {family} .x1/.x2/.x4")
    t = validate.boolean(trans, "trans")
    return SHARED_OPS[f"{family}.x{n}{'.trans' if t else ''}"]


def plain_op(direction: str, nbytes, element_bytes=None) -> SharedOp:
    """``ld.shared``/``st.shared`` entry for ``nbytes`` per lane in elements of ``element_bytes``
    (default: the whole access up to 4 bytes, else 4-byte words; ``nbytes=4, element_bytes=1`` is
    ``.v4.u8``)."""
    n = validate.integer(nbytes, "nbytes", tuple(ld_st_shared.WIDTHS), "bytes per lane: u8, u16, b32, v2.b32, v4.b32")
    if element_bytes is None:
        return SHARED_OPS[f"{direction}.shared.{ld_st_shared.WIDTHS[n][0]}"]
    e = validate.integer(element_bytes, "element_bytes", (1, 2, 4), "bytes per element (register)")
    if (direction, n, e) not in ld_st_shared.SHAPES:
        shapes = ", ".join(f"{nb}/{eb} ({sfx})" for (d, nb, eb), (sfx, _) in ld_st_shared.SHAPES.items() if d == direction)
        raise ValueError(f"{direction}.shared has no access of {n} bytes per lane in {e}-byte elements; "
                         f"nbytes/element_bytes: {shapes}")
    return SHARED_OPS[f"{direction}.shared.{ld_st_shared.SHAPES[direction, n, e][0]}"]


def cp_async_op(level, nbytes) -> SharedOp:
    """``cp.async.{level}`` entry for ``nbytes`` per lane."""
    lv = validate.choice(level, "level (cp.async cache level)", tuple(cp_async.SIZES))
    n = validate.integer(nbytes, "nbytes", (4, 8, 16))
    if n not in cp_async.SIZES[lv]:
        raise ValueError(f"cp.async.{lv} copies {', '.join(map(str, cp_async.SIZES[lv]))} bytes per lane, got {n}")
    return SHARED_OPS[f"cp.async.{lv}.{n}"]
