"""Pictures of fragsim objects, for Jupyter: an object's ``_repr_png_``/``_repr_svg_`` is one line
calling ``repr_png(self)``/``repr_svg(self)`` here (importing this module, and matplotlib, only
when a notebook asks for the picture).

``picture(obj)``: a bank report -> its phases and histogram; a ``Swizzle`` (or XOR map) -> the
swizzle view of 128-byte rows; a ``Tile`` -> its elements coloured by bank; an mma form -> the
combined fragment map; a check report -> expected vs received fragment map.
"""

from __future__ import annotations


def picture(obj):
    """The Figure that shows ``obj``."""
    from fragsim.banks import BankReport
    from fragsim.check.report import CheckReport
    from fragsim.instructions import MmaForm
    from fragsim.layout.descriptor import MatrixDescriptor
    if isinstance(obj, MatrixDescriptor):      # the K-major canonical layout it reads
        from .canonical import draw_descriptor
        return draw_descriptor(obj)
    if isinstance(obj, CheckReport):
        from .check_result import draw_check
        return draw_check(obj)
    if isinstance(obj, BankReport):
        from .banks import draw_bank_report
        return draw_bank_report(obj)
    if isinstance(obj, MmaForm):
        from .fragment_map import draw_mma
        return draw_mma(obj)
    if hasattr(obj, "rows") and hasattr(obj, "cols") and callable(getattr(obj, "offset", None)):
        from .banks import draw_bank_map
        return draw_bank_map(obj)
    if callable(obj):              # a Swizzle, an XOR map, any map of byte offsets
        from .swizzle import draw_swizzle
        return draw_swizzle(obj)
    raise TypeError(f"no picture of a {type(obj).__name__}: expected a bank report, a check report, "
                    "a Swizzle or XOR map, a Tile or an mma form")


def repr_png(obj) -> bytes:
    from ._figure import png_bytes
    return png_bytes(picture(obj))


def repr_svg(obj) -> str:
    from ._figure import svg_text
    return svg_text(picture(obj))
