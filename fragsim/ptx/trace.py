"""``fragsim.trace_fragments``: is each ``mma.sync``/``wgmma`` of a kernel fed the right elements?

The passes and the checks are ``fragsim.ptx.trace_passes`` (how the identities travel, what is
checked); the diagnosis of the first inconsistent mma and its verification on the kernel are
``fragsim.ptx.trace_diagnose``.  The manual: docs/trace.md.
"""

from __future__ import annotations

import time

from fragsim.facts.arch import DEFAULT_ARCH

from .machine import MAX_STEPS
from .run import _dims, _entry, _module
from .trace_diagnose import diagnose as explain
from .trace_passes import (CODES, EXACT, Analysis, Launch, Observer, Trace, Tracing, out_formats, gemm_shape, ptx_text,
                           accumulators, first_bad, fragment_report, make_plan, parse_matrix)

__all__ = ["trace_fragments"]


def trace_fragments(ptx, kernel=None, grid=1, block=1, args=(), *, a, b, d, dynamic_smem=0, arch=DEFAULT_ARCH,
                    ctas=None, max_steps=MAX_STEPS, approx=None, diagnose=True) -> Trace:
    """Run ``kernel`` (``run_kernel``'s arguments) with element identities in its GEMM's inputs and
    check that every ``mma.sync``/``wgmma`` gets the right elements and every D element lands
    where it belongs (module docstring).

    ``a``, ``b``, ``d``: which of ``args`` hold A (M x K), B (K x N) and D (M x N): the position,
    or ``"POS.T"`` when the array holds the matrix transposed (B given as N x K, a column-major D),
    either with ``":ROWSxCOLS"`` for a 1-D array (its shape as stored): ``b="1.T"``, ``d="2:64x64"``.
    The arrays passed stay as they are (each pass runs on copies).  ``diagnose``: explain the first
    inconsistent mma in ``fragsim check``'s words and verify the explanation by re-running its CTA
    with the fix.  Returns a ``Trace`` (``.ok``, ``.first``, ``.counts``; ``print`` it)."""
    t0 = time.time()
    text = ptx_text(ptx)
    module = _module(text if text is not None else ptx)
    entry = _entry(module, kernel)
    args = list(args)
    ma, mb, md = (parse_matrix(x, r, args) for x, r in ((a, "A"), (b, "B"), (d, "D")))
    M, N, K = gemm_shape(ma, mb, md)
    ca, cb = CODES[ma.dtype.itemsize * 8], CODES[mb.dtype.itemsize * 8]
    d_base = min(EXACT[f] for f in list(out_formats(md.dtype)) + [f for f in accumulators(entry) if f in EXACT])
    plan = make_plan(M, N, K, ca, cb, d_base)
    tracing = Tracing(ma, mb, md, (M, N, K), plan, ca, cb)
    lines = text.split("\n") if text is not None else []
    launch = Launch(module, entry.name, grid, block, dynamic_smem, arch, approx, max_steps, args, tracing, lines)
    outputs = []
    for p in range(plan.passes):
        pargs = launch.run(p, ctas, [Observer(tracing, p)])
        tracing.end_pass(p)
        if 0 <= p - plan.d_first < plan.d_digits:
            outputs.append(launch.output(pargs))
    if not tracing.events:
        raise ValueError(f"{entry.name}: the run executed no mma.sync or wgmma: nothing to trace")
    an = Analysis(tracing, outputs, lines, module)
    found = first_bad(tracing, an)
    first = None
    if found is not None:
        first, suspects, e, u = found
        if diagnose:
            explain(launch, an, first, suspects, e, u)
        first.picture = first.report if first.report is not None else fragment_report(first, tracing.events[e])
    g, bl = _dims(grid, "grid"), _dims(block, "block")
    nctas = len(ctas) if ctas is not None else g[0] * g[1] * g[2]
    return Trace(entry.name, g, bl, nctas, plan.passes, sum(len(ev.first) for ev in tracing.events), first is None,
                 first, an.counts, an.untraced, time.time() - t0, an.stored)
