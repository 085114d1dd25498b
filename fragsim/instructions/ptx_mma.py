"""Every ``mma.sync.aligned`` form the PTX ISA defines, and why a spelling is not one.

fragsim models a few of these forms (``mma.MMA_FORMS``).  A spelling outside that table is
either a valid PTX form fragsim does not model, or not PTX at all; ``refusal`` says which,
and for the latter names the rule it breaks, derived from ``PTX_FORMS`` so that it is
never a rule PTX does not have.

``PTX_FORMS`` follows the ISA's syntax section for ``mma`` (PTX ISA 9.0): the half-precision,
alternate floating-point (tf32, bf16, e4m3/e5m2 and ``.kind::f8f6f4``), double-precision,
integer and single-bit forms, with their optional modifiers where the ISA writes them
(``.rn`` and ``.satfinite`` after the layouts, ``.xor.popc``/``.and.popc`` after the
types).  Element-type pairs and accumulator pairs are those ptxas 13.0 accepts (sm_90,
sm_120a for ``.kind::f8f6f4``); tests/test_ptx_mma.py rechecks them when ptxas is on PATH.
ptxas is laxer than the ISA in a few places (it also takes m16n8k16 .tf32, m16n8k16
``.kind::f8f6f4``, modifiers at either end, and ``.xor``/``.popc`` on 4-bit integers);
those spellings are refused here with the ISA's rule.  Block-scaled (``.block_scale``) and
sparse (``mma.sp``) forms are refused as not modelled without checking them.
"""

from __future__ import annotations

from itertools import product
from typing import NamedTuple

_SEP = "."


class PtxForm(NamedTuple):
    shape: str
    alayout: str
    blayout: str
    pre: tuple[str, ...]      # modifiers between the layouts and the types
    d: str
    a: str
    b: str
    c: str
    post: tuple[str, ...]     # modifiers after the types

    @property
    def name(self) -> str:
        return _SEP.join((self.shape, self.alayout, self.blayout) + self.pre
                         + (self.d, self.a, self.b, self.c) + self.post)


def _family(shapes, types_a, types_b, accs, layouts=(("row", "col"),), pres=((),), posts=((),)):
    return [PtxForm(s, la, lb, pre, d, a, b, c, post)
            for s, (la, lb), pre, (d, c), a, b, post in product(shapes, layouts, pres, accs, types_a, types_b, posts)]


_ANY_LAYOUT = tuple(product(("row", "col"), repeat=2))
_FP8 = ("e4m3", "e5m2")
_F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
_SAME_F16_F32 = (("f16", "f16"), ("f32", "f32"))
_INT = ("s8", "u8")
_INT4 = ("s4", "u4")

PTX_FORMS: dict[str, PtxForm] = {f.name: f for f in (
    # Half precision: m8n8k4 (four 8x8x4 products per warp) takes any layouts.
    _family(["m8n8k4"], ["f16"], ["f16"], [("f16", "f16"), ("f32", "f16"), ("f32", "f32")], _ANY_LAYOUT)
    + _family(["m16n8k8", "m16n8k16"], ["f16"], ["f16"], _SAME_F16_F32)
    # Alternate floating point.
    + _family(["m16n8k4", "m16n8k8"], ["tf32"], ["tf32"], [("f32", "f32")])
    + _family(["m16n8k8", "m16n8k16"], ["bf16"], ["bf16"], [("f32", "f32")])
    + _family(["m16n8k16", "m16n8k32"], _FP8, _FP8, _SAME_F16_F32)
    + _family(["m16n8k32"], _F8F6F4, _F8F6F4, _SAME_F16_F32, pres=[("kind::f8f6f4",)])
    # Double precision.
    + _family(["m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"], ["f64"], ["f64"], [("f64", "f64")],
              pres=[(), ("rn",)])
    # Integer.
    + _family(["m8n8k16", "m16n8k16", "m16n8k32"], _INT, _INT, [("s32", "s32")], pres=[(), ("satfinite",)])
    + _family(["m8n8k32", "m16n8k32", "m16n8k64"], _INT4, _INT4, [("s32", "s32")], pres=[(), ("satfinite",)])
    # Single bit.
    + _family(["m8n8k128", "m16n8k128", "m16n8k256"], ["b1"], ["b1"], [("s32", "s32")],
              posts=[("xor", "popc"), ("and", "popc")])
)}


def _shape_key(shape: str):
    m, rest = shape[1:].split("n")
    n, k = rest.split("k")
    return int(m), int(n), int(k)


SHAPES = sorted({f.shape for f in PTX_FORMS.values()}, key=_shape_key)
TYPES = sorted({t for f in PTX_FORMS.values() for t in (f.d, f.a, f.b, f.c)})


def _dots(xs) -> str:
    return ", ".join("." + x for x in xs)


def _parse(tokens: list[str]):
    """(shape, la, lb, pre, (d, a, b, c), post), or None when there are not 4 types."""
    if len(tokens) < 7:
        return None
    i = 3
    while i < len(tokens) and tokens[i] not in TYPES:
        i += 1
    if len(tokens) - i < 4:
        return None
    return tokens[0], tokens[1], tokens[2], tuple(tokens[3:i]), tuple(tokens[i:i + 4]), tuple(tokens[i + 4:])


def _why_not(tokens: list[str], spelled: str) -> str:
    """The rule a spelling that is not in ``PTX_FORMS`` breaks."""
    parsed = _parse(tokens)
    if parsed is None:
        return (f"form {spelled!r}: expected SHAPE.row.col.DTYPE.ATYPE.BTYPE.CTYPE (PTX's mma spelling "
                f"after mma.sync.aligned.), e.g. m16n8k16.row.col.f32.f16.f16.f32")
    shape, la, lb, pre, (d, a, b, c), post = parsed
    if shape not in SHAPES:
        return f"form {spelled}: PTX mma has no shape {shape}; its shapes are {', '.join(SHAPES)}"
    for t in (d, a, b, c):
        if t not in TYPES:
            return f"form {spelled}: .{t} is not a PTX mma element type; they are {_dots(TYPES)}"
    cands = [f for f in PTX_FORMS.values() if f.a == a]
    shapes = sorted({f.shape for f in cands}, key=_shape_key)
    if shape not in shapes:
        return f"form {spelled}: .{a} inputs come in shapes {', '.join(shapes)}, not {shape}"
    cands = [f for f in cands if f.shape == shape]
    btypes = sorted({f.b for f in cands})
    if b not in btypes:
        if btypes == [a]:
            return f"form {spelled}: A and B must have the same type here (.{a} vs .{b})"
        return f"form {spelled}: with .{a} A, B's type must be one of {_dots(btypes)}, not .{b}"
    cands = [f for f in cands if f.b == b]
    accs = sorted({(f.d, f.c) for f in cands})
    if (d, c) not in accs:
        if len(accs) == 1 and accs[0][0] == accs[0][1]:
            return (f"form {spelled}: .{a} inputs accumulate in {accs[0][0]} only in {shape} "
                    f"(.{accs[0][0]}.{a}.{b}.{accs[0][1]})")
        listed = " or ".join(f".{x}.{y}" for x, y in accs)
        if all(x == y for x, y in accs):
            return f"form {spelled}: D and C types must match for {shape} .{a} ({listed}); got .{d} and .{c}"
        return f"form {spelled}: D and C types of {shape} .{a} must be {listed}; got .{d} and .{c}"
    cands = [f for f in cands if (f.d, f.c) == (d, c)]
    layouts = sorted({(f.alayout, f.blayout) for f in cands})
    if (la, lb) not in layouts:
        if layouts == [("row", "col")]:
            return (f"form {spelled}: {shape} with .{a} inputs takes only .row.col (A row-major, "
                    f"B column-major); got .{la}.{lb}")
        return f"form {spelled}: layouts must be one of {', '.join(f'.{x}.{y}' for x, y in layouts)}"
    spellings = sorted(f.name for f in cands if (f.alayout, f.blayout) == (la, lb))
    return (f"form {spelled}: the modifiers do not fit; PTX spells this form "
            f"{' or '.join(spellings)}")


def refusal(tokens: list[str], spelled: str, modelled) -> str:
    """Why ``tokens`` (a lower-case spelling after ``mma.sync.aligned.``, split at dots) is
    not one of the ``modelled`` form names: not modelled, or not PTX (and which rule)."""
    listed = ", ".join(modelled)
    sparse = bool(tokens) and tokens[0].split("::")[0] == "sp"
    if sparse or "block_scale" in tokens:
        kind = "sparse mma (mma.sp)" if sparse else "block-scaled mma (.block_scale)"
        return f"form {spelled}: {kind} is not modelled by fragsim (modelled: {listed})"
    if _SEP.join(tokens) in PTX_FORMS:
        return f"form {spelled} is a valid PTX form but is not modelled by fragsim (modelled: {listed})"
    return _why_not(tokens, spelled)
