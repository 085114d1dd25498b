"""Renderers (matplotlib), one module per kind of picture.  Installed as ``fragsim.viz``.

Each ``draw_*`` function returns a matplotlib ``Figure`` and, given ``path``, saves it as PNG, SVG
or PDF (by extension).  Importing ``fragsim`` never imports these; ``fragsim draw`` and
``fragsim tour`` call them.

- ``fragment_map``: ``draw_fragment_map(form, operand)``, ``draw_mma(form)`` (A, B, C/D together)
- ``flow``: ``draw_ldmatrix_flow(op, addrs, form=, operand=, tile=)`` (ldmatrix/stmatrix)
- ``banks``: ``draw_bank_map(tile)``, ``draw_bank_phases(report)``, ``draw_bank_histogram(report)``,
  ``draw_bank_report(report)``
- ``swizzle``: ``draw_swizzle(swizzle, pitch=, tile=)``
- ``tiles``: ``draw_warp_tile(form, m_tiles, n_tiles)``, ``draw_cta_tile(cta, warps, form)``
- ``explorer``: ``write_explorer(folder)`` (the self-contained index.html of ``fragsim tour``: every mma.sync
  and wgmma form, the ldmatrix/stmatrix flows and swizzle views, drawn in the browser from tables)
- ``notebook``: ``picture(obj)``, ``repr_png(obj)``, ``repr_svg(obj)`` for objects that have a picture
"""
