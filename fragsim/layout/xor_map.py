"""General XOR swizzles: linear maps over GF(2) from byte-offset bits to byte-offset bits.

An ``XorMap`` sends offset bit ``i`` to ``images[i]`` and any offset to the XOR of the images of
its set bits; bits at or above ``len(images)`` pass through unchanged.  This is Triton's
linear-layout view of a shared-memory swizzle, and every CUTLASS ``Swizzle<B,M,S>`` is one
(``XorMap.of(Swizzle(3, 4, 3))``).  The map itself is a ``fragsim.layout.linear.LinearLayout`` with one
input and one output named ``offset``; this class adds what a swizzle needs on top: application
to offsets, a readable name and the base alignment.

Notation: ``XorMap.xor({4: [7], 5: [8]})`` is "bit 4 ^= bit 7, bit 5 ^= bit 8" (= ``Swizzle<2,4,3>``),
printed ``XorMap(b4^=b7, b5^=b8)``.
"""

from __future__ import annotations

import numbers
from typing import Mapping, Sequence

import numpy as np

from fragsim import validate
from .linear import LinearLayout
from .swizzle import MAX_LAYOUT_BITS, Swizzle

__all__ = ["XorMap"]


class XorMap:
    """A linear map over GF(2) on non-negative integer offsets; callable like ``Swizzle``."""

    __slots__ = ("images", "_layout")
    images: tuple
    _layout: LinearLayout | None

    def __init__(self, images: Sequence[int]):
        # a str, bytes or dict iterates (characters, byte values, keys), and never means the images
        if isinstance(images, (str, bytes, Mapping)) or not hasattr(images, "__iter__") or (
                isinstance(images, np.ndarray) and images.ndim != 1):
            raise TypeError(f"XorMap: images must be a sequence of integers (the image of each offset bit; "
                            f"XorMap.xor takes {{target: [sources]}}), got {validate.show(images)}")
        imgs = []
        for i, v in enumerate(images):
            if type(v) is not int and (isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral)):
                raise TypeError(f"XorMap: image of bit {i} must be an integer, got {type(v).__name__}")
            if not 0 <= int(v) < 1 << MAX_LAYOUT_BITS:
                raise ValueError(f"XorMap: image of bit {i} must be in [0, 2**{MAX_LAYOUT_BITS}), got {int(v)}")
            imgs.append(int(v))
        if len(imgs) > MAX_LAYOUT_BITS:
            raise ValueError(f"XorMap: at most {MAX_LAYOUT_BITS} bits, got {len(imgs)}")
        self._set(imgs)

    def _set(self, imgs: list) -> None:
        # Trailing identity bits say nothing: drop them so that equal maps compare equal.
        while imgs and imgs[-1] == 1 << (len(imgs) - 1):
            imgs.pop()
        self.images = tuple(imgs)
        self._layout = None

    @classmethod
    def _checked(cls, imgs: list) -> "XorMap":
        """From images already known to be valid ints (fragsim's own constructors)."""
        x = cls.__new__(cls)
        x._set(imgs)
        return x

    # -- constructors ------------------------------------------------------------------------------
    @classmethod
    def of(cls, swizzle) -> "XorMap":
        """An ``XorMap`` from a ``Swizzle``, a ``LinearLayout`` (offset -> offset) or an ``XorMap``."""
        if isinstance(swizzle, XorMap):
            return swizzle
        if isinstance(swizzle, Swizzle):
            n = swizzle.M + abs(swizzle.S) + swizzle.B
            return cls._checked([(1 << i) ^ swizzle._shift((1 << i) & swizzle.yyy_mask) for i in range(n)])
        if isinstance(swizzle, LinearLayout):
            if swizzle.in_dims != ("offset",) or swizzle.out_dims != ("offset",):
                raise ValueError(f"XorMap.of: the layout must map 'offset' to 'offset', got "
                                 f"{swizzle.in_dims} -> {swizzle.out_dims}")
            return cls([v[0] for v in dict(swizzle.bases)["offset"]])
        raise TypeError(f"XorMap.of: expected a Swizzle, XorMap or LinearLayout, got {type(swizzle).__name__}")

    @classmethod
    def xor(cls, terms: Mapping[int, Sequence[int]]) -> "XorMap":
        """``{target bit: [source bits]}``: each target bit is XORed with its source bits."""
        if not isinstance(terms, Mapping):
            raise TypeError(f"XorMap.xor: terms must be a dict {{target bit: [source bits]}}, got {validate.show(terms)}")
        top = 0
        for t, srcs in terms.items():
            if isinstance(srcs, (str, bytes, Mapping)) or not hasattr(srcs, "__iter__"):
                raise TypeError(f"XorMap.xor: the source bits of bit {t!r} must be a list of bits, got {validate.show(srcs)}")
            for b in (t, *srcs):
                if isinstance(b, (bool, np.bool_)) or not isinstance(b, numbers.Integral) or not 0 <= b < MAX_LAYOUT_BITS:
                    raise ValueError(f"XorMap.xor: bit {b!r} must be an integer in [0, {MAX_LAYOUT_BITS})")
                top = max(top, int(b) + 1)
        images = [1 << i for i in range(top)]
        for t, srcs in terms.items():
            for s in srcs:
                if s == t:
                    raise ValueError(f"XorMap.xor: bit {t} cannot be XORed with itself (that clears it)")
                images[s] ^= 1 << t
        return cls._checked(images)

    # -- properties --------------------------------------------------------------------------------
    @property
    def bits(self) -> int:
        """Offset bits the map reads (every higher bit passes through)."""
        return len(self.images)

    @property
    def layout(self) -> LinearLayout:
        """The map as a ``LinearLayout`` (offset -> offset) on the bits it reads."""
        if self._layout is None:
            self._layout = LinearLayout.of(("offset",), offset=[(v,) for v in self.images])
        return self._layout

    @property
    def size(self) -> int:
        """Off-diagonal entries of the matrix (XOR terms): 0 for the identity."""
        return sum(bin(v).count("1") - (v >> i & 1) for i, v in enumerate(self.images))

    def is_bijective(self) -> bool:
        """One to one on all offsets (the square matrix over every bit it reads or writes is invertible)."""
        n = max([self.bits] + [v.bit_length() for v in self.images])
        return self.as_layout(n).is_bijective() if n else True

    @property
    def is_identity(self) -> bool:
        return not self.images

    @property
    def alignment(self) -> int:
        """Base alignment that keeps ``map(base + off) == base + map(off)``: 2**(highest bit it reads
        or writes + 1).  Nothing for the identity (1)."""
        top = 0
        for i, v in enumerate(self.images):
            if v != 1 << i:
                top = max(top, i + 1, v.bit_length())
        return 1 << top

    @property
    def low_bits_kept(self) -> int:
        """How many low bits pass through untouched and influence no other bit (contiguous runs of
        ``2**low_bits_kept`` bytes stay contiguous)."""
        k = 0
        while True:
            if k >= len(self.images):
                return MAX_LAYOUT_BITS
            if self.images[k] != 1 << k or any(v >> k & 1 for i, v in enumerate(self.images) if i != k):
                return k
            k += 1

    def terms(self) -> dict[int, list[int]]:
        """``{target bit: [source bits]}`` of the off-diagonal entries (bit t ^= bit s)."""
        out: dict[int, list[int]] = {}
        for s, v in enumerate(self.images):
            for t in range(v.bit_length()):
                if t != s and v >> t & 1:
                    out.setdefault(t, []).append(s)
        return dict(sorted(out.items()))

    def restricted(self, bits: int) -> "XorMap":
        """The map on offsets below ``2**bits`` (images of higher bits dropped)."""
        return XorMap._checked(list(self.images[:bits]))

    # -- application -------------------------------------------------------------------------------
    def __call__(self, offset):
        if isinstance(offset, numbers.Integral) and not isinstance(offset, (bool, np.bool_)):
            off = int(offset)
            if off < 0:
                raise ValueError(f"{self!r}: offsets must be >= 0, got {off}")
            out = off >> self.bits << self.bits
            for i, v in enumerate(self.images):
                if off >> i & 1:
                    out ^= v
            return out
        a = validate.array(offset, f"{self!r}: offsets")
        if a.dtype.kind not in "ui":
            raise TypeError(f"{self!r}: offsets must be integers, got dtype {a.dtype}")
        if a.dtype.kind == "i" and a.size and a.min() < 0:
            idx = tuple(int(i) for i in np.argwhere(a < 0)[0])
            raise ValueError(f"{self!r}: offsets must be >= 0, got {int(a[idx])} at index {idx}")
        if a.dtype == np.uint64 and a.size and a.max() >= 1 << 63:     # the map computes in int64
            idx = tuple(int(i) for i in np.argwhere(a >= np.uint64(1 << 63))[0])
            raise ValueError(f"{self!r}: offsets must be < 2**63, got {int(a[idx])} at index {idx}")
        w = a.astype(np.int64)
        if not self.images:
            return w
        low = w & ((1 << self.bits) - 1)
        (mapped,) = self.layout.apply(offset=low)
        return (w ^ low) ^ mapped

    apply = __call__

    def as_layout(self, bits: int | None = None) -> LinearLayout:
        """The map as a ``LinearLayout`` on ``bits`` offset bits (default: the bits it reads)."""
        n = self.bits if bits is None else int(bits)
        if not self.bits <= n <= MAX_LAYOUT_BITS:
            raise ValueError(f"{self!r}.as_layout: bits must be in [{self.bits}, {MAX_LAYOUT_BITS}], got {n}")
        imgs = list(self.images) + [1 << i for i in range(self.bits, n)]
        return LinearLayout.of(("offset",), offset=[(v,) for v in imgs])

    def swizzle(self) -> Swizzle | None:
        """The ``Swizzle<B,M,S>`` this map equals, if any (the identity is ``Swizzle<0,0,0>``)."""
        t = self.terms()
        if not t:
            return Swizzle(0, 0, 0)
        targets = sorted(t)
        if any(len(t[x]) != 1 for x in targets):
            return None
        B, M = len(targets), targets[0]
        S = t[M][0] - M
        if abs(S) < B or targets != list(range(M, M + B)) or any(t[x] != [x + S] for x in targets):
            return None
        # Swizzle's M is where its lower bit group starts: the targets for S > 0, the sources for S < 0
        sw = Swizzle(B, M if S > 0 else M + S, S)
        return sw if XorMap.of(sw) == self else None

    # -- value semantics ---------------------------------------------------------------------------
    def __eq__(self, other):
        if isinstance(other, Swizzle):
            other = XorMap.of(other)
        return isinstance(other, XorMap) and self.images == other.images

    def __hash__(self):
        return hash(("XorMap", self.images))

    def _repr_png_(self):   # Jupyter: the swizzle view (matplotlib loads only here)
        from fragsim import display
        return display.png(self)

    def _repr_svg_(self):
        from fragsim import display
        return display.svg(self)

    def __repr__(self):
        t = self.terms()
        if not t:
            return "XorMap()"
        if all(v >> i & 1 for i, v in enumerate(self.images)):
            return "XorMap(" + ", ".join(f"b{x}^=" + "^".join(f"b{s}" for s in srcs) for x, srcs in t.items()) + ")"
        return "XorMap([" + ", ".join(hex(v) for v in self.images) + "])"
