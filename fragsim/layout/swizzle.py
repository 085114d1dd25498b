"""CUTLASS/CuTe ``Swizzle<B, M, S>`` on integer offsets.

``apply(off) = off ^ ((off & yyy_mask) >> S)`` with ``yyy_mask = ((1 << B) - 1) << (M + max(0, S))``;
for a negative ``S`` the shift goes left (the source bits sit below the target bits).  ``B`` bits
starting at bit ``M + |S|`` (or at ``M`` for S < 0) are XORed into the ``B`` bits starting at ``M``
(or at ``M + |S|``).  It needs ``|S| >= B`` so source and target bits do not overlap; then it is an
involution: applying it twice gives the offset back.

CuTe composes it with element offsets (``Swizzle<3,3,3>`` over fp16 elements of 128-byte rows on
sm_80) and with byte offsets (``Swizzle<3,4,3>`` = SW128, ``<2,4,3>`` = SW64, ``<1,4,3>`` = SW32 for
sm_90 GMMA/TMA), where the buffer base must be aligned to ``2**(M + |S| + B)`` units
(``Swizzle.alignment``) for ``swz(base + off) == base + swz(off)`` to hold.
"""

from __future__ import annotations

import numbers

import numpy as np

from fragsim.validate import array

__all__ = ["Swizzle"]

MAX_LAYOUT_BITS = 63  # every non-negative int64 offset


class Swizzle:
    """``Swizzle(B, M, S)``: callable on a Python int or an integer NumPy array of offsets.

    A Python int gives a Python int.  An array gives an int64 array (uint64 stays uint64)
    whatever its integer dtype: ``Swizzle(4, 20, -10)`` moves bits 20..23 up to 30..33, past
    any 32-bit type, so the result is computed and returned in 64 bits.
    """

    __slots__ = ("B", "M", "S")

    def __init__(self, B, M, S):
        for name, v in (("B", B), ("M", M), ("S", S)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise TypeError(f"Swizzle<{B},{M},{S}>: {name} must be an integer, got {type(v).__name__}")
        B, M, S = int(B), int(M), int(S)
        if B < 0:
            raise ValueError(f"Swizzle<{B},{M},{S}>: B (number of XORed bits) must be >= 0")
        if M < 0:
            raise ValueError(f"Swizzle<{B},{M},{S}>: M (number of untouched low bits) must be >= 0")
        if abs(S) < B:
            raise ValueError(f"Swizzle<{B},{M},{S}>: |S| must be >= B")
        if M + abs(S) + B > 62:
            raise ValueError(f"Swizzle<{B},{M},{S}>: M + |S| + B must be <= 62 (bits of an int64 offset)")
        self.B, self.M, self.S = B, M, S

    # -- the masks, in CuTe's names --------------------------------------------------------------
    @property
    def bit_mask(self) -> int:
        return (1 << self.B) - 1

    @property
    def yyy_mask(self) -> int:
        """The source bits (read and shifted by S)."""
        return self.bit_mask << (self.M + max(0, self.S))

    @property
    def zzz_mask(self) -> int:
        """The target bits (XORed)."""
        return self.bit_mask << (self.M - min(0, self.S))

    @property
    def alignment(self) -> int:
        """Base alignment (in offset units) that keeps ``swz(base + off) == base + swz(off)``."""
        return 1 << (self.M + abs(self.S) + self.B)

    # -- application -----------------------------------------------------------------------------
    def __call__(self, offset):
        if isinstance(offset, numbers.Integral) and not isinstance(offset, (bool, np.bool_)):
            off = int(offset)
            if off < 0:
                raise ValueError(f"{self!r}: offsets must be >= 0, got {off}")
            return off ^ self._shift(off & self.yyy_mask)
        a = array(offset, f"{self!r}: offsets")
        if a.dtype.kind not in "ui":
            raise TypeError(f"{self!r}: offsets must be integers, got dtype {a.dtype}")
        if a.dtype.kind == "i" and a.size and a.min() < 0:
            idx = np.argwhere(a < 0)[0]
            raise ValueError(f"{self!r}: offsets must be >= 0, got {int(a[tuple(idx)])} at index {tuple(int(i) for i in idx)}")
        # The result can need more bits than the input's dtype (a left shift, S < 0): compute
        # and return in 64 bits, where every swizzle fits (M + |S| + B <= 62).
        w = a.astype(np.uint64 if a.dtype == np.uint64 else np.int64)
        t = w.dtype.type
        y = w & t(self.yyy_mask)
        y = (y >> t(self.S)) if self.S >= 0 else (y << t(-self.S))
        return w ^ y

    def _shift(self, v: int) -> int:
        return v >> self.S if self.S >= 0 else v << -self.S

    apply = __call__

    def as_layout(self, bits: int | None = None):
        """The swizzle as a ``fragsim.layout.linear.LinearLayout`` from ``offset`` bits to ``offset``.

        ``bits`` defaults to ``M + |S| + B``, every bit the swizzle reads or writes; higher
        bits pass through unchanged, so any larger ``bits`` gives the same map extended by the
        identity.
        """
        from .linear import LinearLayout

        need = self.M + abs(self.S) + self.B
        if bits is None:
            bits = need
        elif isinstance(bits, (bool, np.bool_)) or not isinstance(bits, numbers.Integral):
            raise TypeError(f"{self!r}.as_layout: bits must be an integer, got {type(bits).__name__}")
        bits = int(bits)
        # Bits above ``need`` are the identity: a larger layout says nothing new.
        if not 0 <= bits <= MAX_LAYOUT_BITS:
            raise ValueError(f"{self!r}.as_layout: bits must be in [0, {MAX_LAYOUT_BITS}] (bits above "
                             f"{need} pass through unchanged), got {bits}")
        return LinearLayout.of(("offset",), offset=[(self(1 << i),) for i in range(bits)])

    # -- value semantics ---------------------------------------------------------------------------
    def __eq__(self, other):
        return isinstance(other, Swizzle) and (self.B, self.M, self.S) == (other.B, other.M, other.S)

    def __hash__(self):
        return hash(("Swizzle", self.B, self.M, self.S))

    def _repr_png_(self):   # Jupyter: the swizzle view (matplotlib loads only here)
        from fragsim import display
        return display.png(self)

    def _repr_svg_(self):
        from fragsim import display
        return display.svg(self)

    def __repr__(self):
        return f"Swizzle<{self.B},{self.M},{self.S}>"
