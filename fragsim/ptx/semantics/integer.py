"""Integer, bit and predicate instructions: what the PTX ISA defines and the H100 computes, bit for bit.

Operands are raw bits (see the package docstring): ``.s32`` is a ``uint32`` array holding two's
complement, ``.pred`` a ``bool`` array.  Every result wraps modulo 2^n unless the instruction says
``.sat``.

**The carry flag.**  ``add.cc``/``sub.cc``/``mad.lo.cc``/``mad.hi.cc``/``addc``/``subc``/``madc``
read or write CC.CF, state the PTX line does not name.  A Semantic carries it as a *hidden trailing
operand* of type ``.pred``: when ``len(semantic.src) > spec.nsrc`` the last source is the carry in,
when ``len(semantic.dst) > spec.ndst`` the last destination is the carry out (``carry_operands``
says which).  The machine keeps it per thread in a pseudo-register named ``CARRY`` (``"%cc"``),
false at the start of a thread.  It holds the carry of the hardware's adder, which is what PTX's
CC.CF means after an addition; after a subtraction it holds NOT borrow, because the H100 subtracts
as ``a + ~b + carry``: ``sub.cc`` sets it when ``a >= b`` (unsigned), and ``subc`` computes
``a - b - !CF``.  A pure ``sub.cc``/``subc`` chain therefore gives PTX's borrow semantics; a mixed
chain (``add.cc`` then ``subc``, ``sub.cc`` then ``addc``) gives what ptxas's code gives on the
H100 (measured: gpu_check family ``ptx_int``).

**Opcodes shared with floating point.**  The instruction table (``fragsim.ptx.isa``) routes each
form to its family by its type: the integer forms of ``add sub mul mad div abs neg min max setp set
cvt`` come here, the float forms go to ``floating``/``convert``.  ``selp`` and ``slct`` move bits
whatever the type and are resolved here for ``.f32``/``.f64`` too (``slct``'s ``.f32`` selector
included).

**Measured on the H100** (gpu_check family ``ptx_int``), where the PTX ISA leaves it open or the
H100 departs from it: division and remainder by zero give all ones (``0xffff...``) for every width
and signedness; ``INT_MIN / -1`` is ``INT_MIN`` and ``INT_MIN % -1`` is 0; ``bfe``/``bfi`` on 64-bit
types use the whole 32-bit position and length where the ISA says their low 8 bits (a position of
256 inserts or extracts nothing; 32-bit types do mask to 8 bits); ``fns`` with a base above 31 finds
nothing.  An 8-bit destination (``cvt.u8``/``cvt.s8``) in a wider register arrives zero-extended
(``.u8``) or sign-extended (``.s8``) there -- the machine's part: a Semantic returns the 8 bits.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..types import TYPES, PtxType
from . import Semantic, Spec
from .floating import SET_TRUE

#: The per-thread pseudo-register that holds the carry flag CC.CF (see the module docstring).
CARRY = "%cc"

#: Packed integer types of add/min/max (sm_90): two 16-bit halves in a .b32 operand.
PACKED = ("u16x2", "s16x2")

_WIDTHS = (16, 32, 64)
_CMP = ("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs")
_BOOL = ("and", "or", "xor")


def carry_operands(spec: Spec, semantic: Semantic) -> tuple[bool, bool]:
    """(reads, writes): whether ``semantic`` takes the carry flag as a hidden trailing source and
    gives it as a hidden trailing destination."""
    return len(semantic.src) > spec.nsrc, len(semantic.dst) > spec.ndst


# ---------------------------------------------------------------------------------------------
# bit helpers (unsigned arrays of the operand's width; Python/NumPy scalars typed to match)

def _ut(bits: int) -> np.dtype:
    return np.dtype(f"uint{bits}")


def _st(bits: int) -> np.dtype:
    return np.dtype(f"int{bits}")


def _sv(x: np.ndarray) -> np.ndarray:
    """The signed view of unsigned bits."""
    return x.view(_st(x.dtype.itemsize * 8))


def _ones(dtype: np.dtype):
    return dtype.type(np.iinfo(dtype).max)


def _low_mask(n: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``(1 << n) - 1`` in ``dtype`` for n in 0..width (n >= width: all ones)."""
    w = dtype.itemsize * 8
    n = np.asarray(n, np.int64)
    short = np.minimum(n, w - 1).astype(dtype)
    m = (np.ones_like(short) << short) - dtype.type(1)
    return np.where(n >= w, _ones(dtype), m).astype(dtype)


def _shl(x: np.ndarray, s) -> np.ndarray:
    """x << s with s >= width giving 0 (NumPy, like C, leaves wide shifts undefined)."""
    w = x.dtype.itemsize * 8
    s = np.asarray(s, np.int64)
    r = np.left_shift(x, np.clip(s, 0, w - 1).astype(x.dtype))
    return np.where(s >= w, x.dtype.type(0), r).astype(x.dtype)


def _shr(x: np.ndarray, s) -> np.ndarray:
    """Logical x >> s with s >= width giving 0."""
    w = x.dtype.itemsize * 8
    s = np.asarray(s, np.int64)
    r = np.right_shift(x, np.clip(s, 0, w - 1).astype(x.dtype))
    return np.where(s >= w, x.dtype.type(0), r).astype(x.dtype)


def _sar(x: np.ndarray, s) -> np.ndarray:
    """Arithmetic x >> s (bits of a signed value) with s >= width filling with the sign."""
    w = x.dtype.itemsize * 8
    s = np.clip(np.asarray(s, np.int64), 0, w - 1)
    return np.right_shift(_sv(x), s.astype(_st(w))).view(x.dtype)


def _adc(a: np.ndarray, b: np.ndarray, cin) -> tuple[np.ndarray, np.ndarray]:
    """a + b + cin and its carry out."""
    s1 = a + b
    s2 = s1 + np.asarray(cin, bool).astype(a.dtype)
    return s2, (s1 < a) | (s2 < s1)


def _popc(x: np.ndarray) -> np.ndarray:
    y = x.astype(np.uint64)
    y = y - ((y >> np.uint64(1)) & np.uint64(0x5555555555555555))
    y = (y & np.uint64(0x3333333333333333)) + ((y >> np.uint64(2)) & np.uint64(0x3333333333333333))
    y = (y + (y >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((y * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.uint32)


def _clz(x: np.ndarray) -> np.ndarray:
    """Leading zeros of each value of its width (the width for 0), uint32."""
    w = x.dtype.itemsize * 8
    y = x.copy()
    n = np.zeros(x.shape, np.uint32)
    s = w // 2
    while s:
        top_clear = (y >> x.dtype.type(w - s)) == 0
        n += np.where(top_clear, np.uint32(s), np.uint32(0))
        y = np.where(top_clear, y << x.dtype.type(s), y)
        s //= 2
    return np.where(x == 0, np.uint32(w), n)


_BREV_MASKS = {1: 0x5555555555555555, 2: 0x3333333333333333, 4: 0x0F0F0F0F0F0F0F0F,
               8: 0x00FF00FF00FF00FF, 16: 0x0000FFFF0000FFFF}


def _brev(x: np.ndarray) -> np.ndarray:
    w = x.dtype.itemsize * 8
    t = x.dtype.type
    y = x.copy()
    for s, m in _BREV_MASKS.items():
        if s < w // 2:
            mm = t(m & ((1 << w) - 1))
            y = ((y >> t(s)) & mm) | ((y & mm) << t(s))
    return (y >> t(w // 2)) | (y << t(w // 2))


def _halves(x: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    lo = (x & np.uint32(0xFFFF)).astype(np.uint16)
    hi = (x >> np.uint32(16)).astype(np.uint16)
    return (lo.view(np.int16), hi.view(np.int16)) if signed else (lo, hi)


def _pack(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return lo.view(np.uint16).astype(np.uint32) | (hi.view(np.uint16).astype(np.uint32) << np.uint32(16))


def _mul_parts(a: np.ndarray, b: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) halves of the double-width product, each of the operands' width."""
    w = a.dtype.itemsize * 8
    u = a.dtype
    if w <= 32:
        if signed:
            ps = _sv(a).astype(np.int64) * _sv(b).astype(np.int64)
            return ps.astype(u), (ps >> np.int64(w)).astype(u)
        pu = a.astype(np.uint64) * b.astype(np.uint64)
        return pu.astype(u), (pu >> np.uint64(w)).astype(u)
    m = np.uint64(0xFFFFFFFF)
    s32 = np.uint64(32)
    a0, a1, b0, b1 = a & m, a >> s32, b & m, b >> s32
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> s32) + (p01 & m) + (p10 & m)
    hi = p11 + (p01 >> s32) + (p10 >> s32) + (mid >> s32)
    if signed:   # two's complement: subtract the other operand for each negative one
        hi = hi - np.where(_sv(a) < 0, b, np.uint64(0)) - np.where(_sv(b) < 0, a, np.uint64(0))
    return a * b, hi


def _wide(a: np.ndarray, b: np.ndarray, signed: bool) -> np.ndarray:
    w = a.dtype.itemsize * 8
    if signed:
        return (_sv(a).astype(np.int64) * _sv(b).astype(np.int64)).astype(_ut(2 * w))
    return (a.astype(np.uint64) * b.astype(np.uint64)).astype(_ut(2 * w))


def _clamp_s32(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -(1 << 31), (1 << 31) - 1).astype(np.int32).view(np.uint32)


# ---------------------------------------------------------------------------------------------
# arithmetic

_ARITH = tuple(f"{k}{n}" for k in "us" for n in _WIDTHS)
_CARRY_TYPES = ("u32", "s32", "u64", "s64")


def add_sub(spec: Spec) -> Semantic:
    sub = spec.opcode == "sub"
    flags, types = spec.flags, spec.types
    t = types[-1]
    if "sat" in flags:
        sign = -1 if sub else 1
        return Semantic(lambda a, b: (_clamp_s32(_sv(a).astype(np.int64) + sign * _sv(b).astype(np.int64)),),
                        (t,), (t, t))
    if "cc" in flags:
        if sub:
            return Semantic(lambda a, b: _adc(a, ~b, True), (t, "pred"), (t, t))
        return Semantic(lambda a, b: _adc(a, b, False), (t, "pred"), (t, t))
    if t in PACKED:
        def packed_add(a, b):
            al, ah = _halves(a, False)
            bl, bh = _halves(b, False)
            return (_pack(al + bl, ah + bh),)
        return Semantic(packed_add, ("b32",), ("b32", "b32"))
    if sub:
        return Semantic(lambda a, b: (a - b,), (t,), (t, t))
    return Semantic(lambda a, b: (a + b,), (t,), (t, t))


def addc_subc(spec: Spec) -> Semantic:
    flags, types = spec.flags, spec.types
    t = types[-1]
    sub = spec.opcode == "subc"

    def fn(a, b, cf):
        return _adc(a, ~b if sub else b, cf)
    if "cc" in flags:
        return Semantic(fn, (t, "pred"), (t, t, "pred"))
    return Semantic(lambda a, b, cf: fn(a, b, cf)[:1], (t,), (t, t, "pred"))


def mul(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    mode = spec.which(("lo", "hi", "wide"))
    signed = t[0] == "s"
    bits = TYPES[t].bits
    if mode == "wide":
        return Semantic(lambda a, b: (_wide(a, b, signed),), (f"{t[0]}{2 * bits}",), (t, t))
    part = 0 if mode == "lo" else 1
    return Semantic(lambda a, b: (_mul_parts(a, b, signed)[part],), (t,), (t, t))


def mad(spec: Spec) -> Semantic:
    flags, types = spec.flags, spec.types
    t = types[-1]
    mode = spec.which(("lo", "hi", "wide"))
    signed = t[0] == "s"
    bits = TYPES[t].bits
    if "sat" in flags:
        return Semantic(lambda a, b, c: (_clamp_s32(_sv(_mul_parts(a, b, True)[1]).astype(np.int64)
                                                    + _sv(c).astype(np.int64)),), (t,), (t, t, t))
    if mode == "wide":
        wt = f"{t[0]}{2 * bits}"
        return Semantic(lambda a, b, c: (_wide(a, b, signed) + c,), (wt,), (t, t, wt))
    part = 0 if mode == "lo" else 1
    if "cc" in flags:
        return Semantic(lambda a, b, c: _adc(_mul_parts(a, b, signed)[part], c, False), (t, "pred"), (t, t, t))
    return Semantic(lambda a, b, c: (_mul_parts(a, b, signed)[part] + c,), (t,), (t, t, t))


def madc(spec: Spec) -> Semantic:
    flags, types = spec.flags, spec.types
    t = types[-1]
    mode = spec.which(("lo", "hi"))
    signed = t[0] == "s"
    part = 0 if mode == "lo" else 1

    def fn(a, b, c, cf):
        return _adc(_mul_parts(a, b, signed)[part], c, cf)
    if "cc" in flags:
        return Semantic(fn, (t, "pred"), (t, t, t, "pred"))
    return Semantic(lambda a, b, c, cf: fn(a, b, c, cf)[:1], (t,), (t, t, t, "pred"))


def _mul24_product(a: np.ndarray, b: np.ndarray, signed: bool, hi: bool) -> np.ndarray:
    """Bits 31..0 (lo) or 47..16 (hi) of the 48-bit product of the operands' low 24 bits."""
    def low24(x):
        v = (x & np.uint32(0xFFFFFF)).astype(np.int64)
        return (v ^ 0x800000) - 0x800000 if signed else v
    p = low24(a) * low24(b)
    return ((p >> 16) if hi else p).astype(np.uint32)


def mul24_mad24(spec: Spec) -> Semantic:
    mad = spec.opcode == "mad24"
    flags, types = spec.flags, spec.types
    t = types[-1]
    hi = spec.which(("lo", "hi")) == "hi"
    signed = t == "s32"
    if not mad:
        return Semantic(lambda a, b: (_mul24_product(a, b, signed, hi),), (t,), (t, t))
    if "sat" in flags:
        return Semantic(lambda a, b, c: (_clamp_s32(_sv(_mul24_product(a, b, True, True)).astype(np.int64)
                                                    + _sv(c).astype(np.int64)),), (t,), (t, t, t))
    return Semantic(lambda a, b, c: (_mul24_product(a, b, signed, hi) + c,), (t,), (t, t, t))


def sad(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    signed = t[0] == "s"

    def fn(a, b, c):
        lt = _sv(a) < _sv(b) if signed else a < b
        return (c + np.where(lt, b - a, a - b),)
    return Semantic(fn, (t,), (t, t, t))


def _divrem(a: np.ndarray, b: np.ndarray, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """Truncating quotient and remainder; a zero divisor gives all ones for both (H100)."""
    t = a.dtype.type
    zero = b == 0
    if signed:
        na, nb = _sv(a) < 0, _sv(b) < 0
        ua = np.where(na, t(0) - a, a)      # |INT_MIN| is 2^(n-1), exact as unsigned
        ub = np.where(nb, t(0) - b, b)
        ub = np.where(zero, t(1), ub)
        q, r = ua // ub, ua % ub
        q = np.where(na ^ nb, t(0) - q, q)
        r = np.where(na, t(0) - r, r)
    else:
        bb = np.where(zero, t(1), b)
        q, r = a // bb, a % bb
    ones = _ones(a.dtype)
    return np.where(zero, ones, q).astype(a.dtype), np.where(zero, ones, r).astype(a.dtype)


def div_rem(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    signed = t[0] == "s"
    part = 0 if spec.opcode == "div" else 1
    return Semantic(lambda a, b: (_divrem(a, b, signed)[part],), (t,), (t, t))


def abs_neg(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    if spec.opcode == "neg":
        return Semantic(lambda a: (a.dtype.type(0) - a,), (t,), (t,))
    return Semantic(lambda a: (np.where(_sv(a) < 0, a.dtype.type(0) - a, a).astype(a.dtype),), (t,), (t,))


def min_max(spec: Spec) -> Semantic:
    flags, types = spec.flags, spec.types
    t = types[-1]
    relu = "relu" in flags
    pick = np.minimum if spec.opcode == "min" else np.maximum
    signed = t[0] == "s"
    if t in PACKED:
        def packed(a, b):
            al, ah = _halves(a, signed)
            bl, bh = _halves(b, signed)
            lo, hi = pick(al, bl), pick(ah, bh)
            if relu:
                lo, hi = np.maximum(lo, np.int16(0)), np.maximum(hi, np.int16(0))
            return (_pack(lo, hi),)
        return Semantic(packed, ("b32",), ("b32", "b32"))

    def scalar(a, b):
        r = pick(_sv(a), _sv(b)).view(a.dtype) if signed else pick(a, b)
        if relu:
            r = np.where(_sv(r) < 0, a.dtype.type(0), r).astype(a.dtype)
        return (r,)
    return Semantic(scalar, (t,), (t, t))


# ---------------------------------------------------------------------------------------------
# bit manipulation

def bitcount(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    if spec.opcode == "popc":
        return Semantic(lambda a: (_popc(a),), ("u32",), (t,))
    if spec.opcode == "clz":
        return Semantic(lambda a: (_clz(a),), ("u32",), (t,))
    return Semantic(lambda a: (_brev(a),), (t,), (t,))


def bfind(spec: Spec) -> Semantic:
    flags, types = spec.flags, spec.types
    t = types[-1]
    signed = t[0] == "s"
    msb = TYPES[t].bits - 1
    shiftamt = "shiftamt" in flags

    def fn(a):
        x = np.where(_sv(a) < 0, ~a, a) if signed else a
        lz = _clz(x)
        d = lz if shiftamt else np.uint32(msb) - lz
        return (np.where(x == 0, np.uint32(0xFFFFFFFF), d).astype(np.uint32),)
    return Semantic(fn, ("u32",), (t,))


def _fns_fn(mask, base, offset):
    """The bit position of the |offset|-th set bit of ``mask`` from ``base`` (up for offset > 0,
    down for offset < 0; offset 0: base itself if set), 0xffffffff if there is none.  PTX leaves a
    base above 31 undefined; its pseudocode, and the H100, find nothing then."""
    pos = np.arange(32, dtype=np.int64)
    bits = ((mask.astype(np.uint64)[..., None] >> pos.astype(np.uint64)) & np.uint64(1)).astype(bool)
    base64 = base.astype(np.int64)[..., None]
    off = _sv(offset).astype(np.int64)[..., None]
    k = np.abs(off)
    up = bits & (pos >= base64)
    down = bits & (pos <= base64)
    nth_up = up & (np.cumsum(up, axis=-1) == k)
    nth_down = down & (np.cumsum(down[..., ::-1], axis=-1)[..., ::-1] == k)
    at_base = bits & (pos == base64)
    hit = np.where(off > 0, nth_up, np.where(off < 0, nth_down, at_base))
    found = hit.any(axis=-1) & (base < 32)
    return (np.where(found, hit.argmax(axis=-1), 0xFFFFFFFF).astype(np.uint32),)


def fns(spec: Spec) -> Semantic:
    return Semantic(_fns_fn, ("b32",), ("b32", "u32", "s32"))


def _field(b: np.ndarray, w: int) -> np.ndarray:
    """bfe/bfi's position or length: the low 8 bits (PTX ISA) for 32-bit types; for 64-bit types
    the H100 (ptxas emulates them with 64-bit shifts) uses the whole value, so 256 is 256, not 0."""
    return (b & np.uint32(0xFF) if w == 32 else b).astype(np.int64)


def bfe(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    w = TYPES[t].bits
    signed = t[0] == "s"

    def fn(a, b, c):
        pos, ln = _field(b, w), _field(c, w)
        keep = np.clip(np.minimum(ln, w - pos), 0, w)       # field bits that lie inside a
        m = _low_mask(keep, a.dtype)
        field = _shr(a, pos) & m
        if not signed:
            return (field,)
        top = np.minimum(pos + ln - 1, w - 1)
        sbit = (ln > 0) & ((_shr(a, top) & a.dtype.type(1)) == 1)
        return (np.where(sbit, field | ~m, field).astype(a.dtype),)
    return Semantic(fn, (t,), (t, "u32", "u32"))


def bfi(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    w = TYPES[t].bits

    def fn(a, b, c, d):
        pos, ln = _field(c, w), _field(d, w)
        keep = np.clip(np.minimum(ln, w - pos), 0, w)
        m = _shl(_low_mask(keep, a.dtype), pos)
        return (((b & ~m) | (_shl(a, pos) & m)).astype(a.dtype),)
    return Semantic(fn, (t,), (t, t, "u32", "u32"))


#: prmt's modes: for c[1:0], the source byte of each destination byte (byte 0 first).
PRMT_MODES = {
    "f4e": ((0, 1, 2, 3), (1, 2, 3, 4), (2, 3, 4, 5), (3, 4, 5, 6)),
    "b4e": ((0, 7, 6, 5), (1, 0, 7, 6), (2, 1, 0, 7), (3, 2, 1, 0)),
    "rc8": ((0, 0, 0, 0), (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)),
    "ecl": ((0, 1, 2, 3), (1, 1, 2, 3), (2, 2, 2, 3), (3, 3, 3, 3)),
    "ecr": ((0, 0, 0, 0), (0, 1, 1, 1), (0, 1, 2, 2), (0, 1, 2, 3)),
    "rc16": ((0, 1, 0, 1), (2, 3, 2, 3), (0, 1, 0, 1), (2, 3, 2, 3)),
}


def prmt(spec: Spec) -> Semantic:
    mode = spec.which(tuple(PRMT_MODES))
    shifts = np.arange(4, dtype=np.uint64)

    def fn(a, b, c):
        src = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
        if mode is None:
            sel = (c.astype(np.uint64)[..., None] >> (shifts * np.uint64(4))) & np.uint64(0xF)
            byte = (src[..., None] >> (np.uint64(8) * (sel & np.uint64(7)))) & np.uint64(0xFF)
            sign = np.where((byte >> np.uint64(7)) == 1, np.uint64(0xFF), np.uint64(0))
            byte = np.where((sel & np.uint64(8)) != 0, sign, byte)
        else:
            idx = np.array(PRMT_MODES[mode], np.uint64)[(c & np.uint32(3)).astype(np.intp)]
            byte = (src[..., None] >> (np.uint64(8) * idx)) & np.uint64(0xFF)
        return ((byte << (np.uint64(8) * shifts)).sum(axis=-1, dtype=np.uint64).astype(np.uint32),)
    return Semantic(fn, ("b32",), ("b32", "b32", "b32"))


def _lut3(a, b, c, lut):
    """lop3's function: bit i of lut is F at a = i & 4, b = i & 2, c = i & 1."""
    d = np.zeros_like(a)
    for i in range(8):
        term = (a if i & 4 else ~a) & (b if i & 2 else ~b) & (c if i & 1 else ~c)
        on = ((lut >> np.uint32(i)) & np.uint32(1)) == 1
        d |= np.where(on, term, np.uint32(0))
    return d


def lop3(spec: Spec) -> Semantic:
    op = spec.which(("and", "or"))
    if op is None:
        return Semantic(lambda a, b, c, lut: (_lut3(a, b, c, lut),), ("b32",), ("b32",) * 4)

    def boolop(a, b, c, lut, q):
        d = _lut3(a, b, c, lut)
        nz = d != 0
        return d, (nz & q) if op == "and" else (nz | q)
    return Semantic(boolop, ("b32", "pred"), ("b32",) * 4 + ("pred",))


def logic(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    if spec.opcode == "not":
        return Semantic(lambda a: (~a,), (t,), (t,))
    op = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[spec.opcode]
    return Semantic(lambda a, b: (op(a, b),), (t,), (t, t))


def cnot(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    return Semantic(lambda a: ((a == 0).astype(a.dtype),), (t,), (t,))


def resolve_shift(spec: Spec) -> Semantic:
    """Shift counts are unsigned 32-bit; counts at or above the width clamp to the width."""
    types = spec.types
    left = spec.opcode == "shl"
    t = types[-1]
    if left:
        return Semantic(lambda a, b: (_shl(a, b),), (t,), (t, "u32"))
    if t[0] == "s":
        return Semantic(lambda a, b: (_sar(a, b),), (t,), (t, "u32"))
    return Semantic(lambda a, b: (_shr(a, b),), (t,), (t, "u32"))


def shf(spec: Spec) -> Semantic:
    left = spec.which(("l", "r")) == "l"
    clamp = spec.which(("clamp", "wrap")) == "clamp"

    def fn(a, b, c):
        n = np.minimum(c, np.uint32(32)) if clamp else c & np.uint32(31)
        src = (b.astype(np.uint64) << np.uint64(32)) | a.astype(np.uint64)
        n = n.astype(np.uint64)
        return (((src << n) >> np.uint64(32)).astype(np.uint32) if left else (src >> n).astype(np.uint32),)
    return Semantic(fn, ("b32",), ("b32", "b32", "u32"))


def szext(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    clamp = spec.which(("clamp", "wrap")) == "clamp"

    def fn(a, b):
        b1 = (b & np.uint32(31)).astype(np.int64)
        too_large = (b >= 32) if clamp else np.zeros(b.shape, bool)
        mask = np.where(too_large, np.uint32(0), _shl(np.full(a.shape, 0xFFFFFFFF, np.uint32), b1))
        sign = (t == "s32") & (b1 != 0) & ~too_large & (((a >> ((b1 - 1) & 31).astype(np.uint32)) & 1) == 1)
        return (((a & ~mask) | np.where(sign, mask, np.uint32(0))).astype(np.uint32),)
    return Semantic(fn, (t,), (t, "u32"))


def bmsk(spec: Spec) -> Semantic:
    clamp = spec.which(("clamp", "wrap")) == "clamp"

    def fn(a, b):
        ones = np.full(a.shape, 0xFFFFFFFF, np.uint32)
        a1 = (a & np.uint32(31)).astype(np.int64)
        b1 = (b & np.uint32(31)).astype(np.int64)
        mask0 = _shl(ones, a1)
        mask1 = _shl(ones, a1 + b1)
        zero1 = (a1 + b1) >= 32
        if clamp:
            mask0 = np.where(a >= 32, np.uint32(0), mask0)
            zero1 = zero1 | (a >= 32) | (b >= 32)
        mask1 = np.where(zero1, np.uint32(0), np.where(b1 == 0, ones, mask1))
        return ((mask0 & ~mask1).astype(np.uint32),)
    return Semantic(fn, ("b32",), ("b32", "u32"))


# ---------------------------------------------------------------------------------------------
# comparison and selection

def _compare(cmp: str, t: str) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    kind = t[0]
    op = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
          "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater,
          "hs": np.greater_equal}[cmp]
    if kind == "s":
        return lambda a, b: op(_sv(a), _sv(b))
    return lambda a, b: op(a, b)


def _boolop(op: str | None, t: np.ndarray, c=None) -> np.ndarray:
    if op is None:
        return t
    return {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op](t, c)


def setp_set(spec: Spec) -> Semantic:
    setp = spec.opcode == "setp"
    types = spec.types
    cmp = str(spec.which(_CMP))
    op = spec.which(_BOOL)
    dt, t = (None, types[-1]) if setp else types
    compare = _compare(cmp, t)
    src = (t, t, "pred") if op else (t, t)
    if setp:
        def fn_setp(a, b, *c):
            r = compare(a, b)
            p = _boolop(op, r, *c)
            return (p,) if spec.ndst == 1 else (p, _boolop(op, ~r, *c))
        return Semantic(fn_setp, ("pred",) * spec.ndst, src)
    assert dt is not None
    word = TYPES[dt].dtype.type
    true, false = word(SET_TRUE[dt]), word(0)

    def fn_set(a, b, *c):
        return (np.where(_boolop(op, compare(a, b), *c), true, false),)
    return Semantic(fn_set, (dt,), src)


def selp(spec: Spec) -> Semantic:
    types = spec.types
    t = types[-1]
    return Semantic(lambda a, b, c: (np.asarray(np.where(c, a, b), a.dtype),), (t,), (t, t, "pred"))


def slct(spec: Spec) -> Semantic:
    flags, types = spec.flags, spec.types
    dt, ct = types
    ftz = "ftz" in flags

    def nonneg(c):
        if ct == "s32":
            return _sv(c) >= 0
        mag = c & np.uint32(0x7FFFFFFF)
        zero = (mag == 0) | (ftz & (mag < np.uint32(0x00800000)))
        return zero | ((c >> np.uint32(31)) == 0) & (mag <= np.uint32(0x7F800000))
    return Semantic(lambda a, b, c: (np.asarray(np.where(nonneg(c), a, b), a.dtype),), (dt,), (dt, dt, ct))


def dp(spec: Spec) -> Semantic:
    two = spec.opcode == "dp2a"
    types = spec.types
    at, bt = types
    half = (spec.which(("lo", "hi")) == "hi") if two else False
    ct = "u32" if at == bt == "u32" else "s32"

    def parts(x, bits, signed):
        n = 32 // bits
        v = (x.astype(np.int64)[..., None] >> (np.arange(n, dtype=np.int64) * bits)) & ((1 << bits) - 1)
        return (v ^ (1 << (bits - 1))) - (1 << (bits - 1)) if signed else v

    def fn(a, b, c):
        va = parts(a, 16 if two else 8, at == "s32")
        vb = parts(b, 8, bt == "s32")
        if two:
            vb = vb[..., 2:] if half else vb[..., :2]
        return ((c.astype(np.int64) + (va * vb).sum(axis=-1)).astype(np.uint32),)
    return Semantic(fn, ("u32",) if ct == "u32" else ("s32",), (at, bt, ct))


# ---------------------------------------------------------------------------------------------
# conversion among integer types

def _range(t: PtxType) -> tuple[int, int]:
    return (-(1 << (t.bits - 1)), (1 << (t.bits - 1)) - 1) if t.kind == "s" else (0, (1 << t.bits) - 1)


def resolve_integer_cvt(spec: Spec) -> Semantic:
    """``cvt{.sat}.dtype.atype`` between u8..u64 and s8..s64: the source value (sign- or
    zero-extended by its type) truncated to the destination width, or with ``.sat`` clamped to the
    destination's range (ptxas takes ``.sat`` only where the source range exceeds it)."""
    flags, types = spec.flags, spec.types
    d, a = TYPES[types[0]], TYPES[types[1]]
    dlo, dhi = _range(d)
    alo, ahi = _range(a)
    sat = "sat" in flags
    out = _ut(d.bits)

    def fn(x):
        if not sat:
            v = _sv(x).astype(np.int64) if a.kind == "s" else x.astype(np.uint64)
            return (v.astype(out),)
        # compare in the wider of the two signed/unsigned domains without overflowing int64
        if a.kind == "s":
            v = _sv(x).astype(np.int64)
            r = np.clip(v, max(dlo, -(1 << 63)), min(dhi, (1 << 63) - 1))
        else:
            v = x.astype(np.uint64)
            r = np.minimum(v, np.uint64(dhi))
        return (r.astype(out),)
    return Semantic(fn, (d.name,), (a.name,))


# ---------------------------------------------------------------------------------------------
# packing conversion

def cvt_pack(spec: Spec) -> Semantic:
    """``cvt.pack.sat.convertType.s32{.b32}``: ``a`` and ``b`` clamped to ``convertType``'s range,
    ``b``'s bits in the low ``size`` bits of the result, ``a``'s in the ``size`` above; for the 8-,
    4- and 2-bit types ``c``'s low bits fill the rest of the word above them (PTX ISA, "cvt.pack").
    On the H100 ptxas compiles it to one ``I2IP`` per pair."""
    ct = str(spec.slot("convertType"))
    size = int(ct[1:])
    lo, hi = (-(1 << (size - 1)), (1 << (size - 1)) - 1) if ct[0] == "s" else (0, (1 << size) - 1)
    field = np.uint64((1 << size) - 1)

    def sat(x: np.ndarray) -> np.ndarray:
        return (np.clip(_sv(x).astype(np.int64), lo, hi).astype(np.uint64)) & field

    if size == 16:
        return Semantic(lambda a, b: (((sat(a) << np.uint64(16)) | sat(b)).astype(np.uint32),), ("b32",),
                        ("s32", "s32"))

    def fn(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> tuple[np.ndarray]:
        d = (c.astype(np.uint64) << np.uint64(2 * size)) | (sat(a) << np.uint64(size)) | sat(b)
        return ((d & np.uint64(0xFFFFFFFF)).astype(np.uint32),)
    return Semantic(fn, ("b32",), ("s32", "s32", "b32"))
