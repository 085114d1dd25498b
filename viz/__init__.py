"""Renderers (matplotlib), one module per kind of picture.  Installed as ``fragsim.viz``.

- ``fragment_map``: which lane and register hold each element of an mma operand.
"""
