"""The PTX instruction table: every instruction fragsim runs, refuses or stands in for, as data.

``table`` holds the rows (``row.Row``: a syntax line of the PTX ISA, its operands, the semantic that
runs it, the least architecture and PTX version, the status of fragsim's result, the Nsight Compute
op) gathered from one data module per family (``integer``, ``floating``, ``convert``, ``warp``,
``memory``, ``control``, ``data``, ``tensor``, ``bulk``, ``mbarrier``); ``grammar`` is the one engine
that reads modifiers against a row's syntax; ``support`` renders the table as the support page.

This package's ``__init__`` imports nothing: the semantics modules import ``grammar`` from here
while ``table`` imports them.
"""
