"""``fragsim.trace_fragments``: is each ``mma.sync``/``wgmma`` of a kernel fed the right elements?

The kernel runs once per pass with element identities in its GEMM's inputs (its arrays copied),
and every mma's operands are decoded and checked; the modules, in the order a trace uses them:

- ``args``: which arguments are A, B and D, the GEMM's shape;
- ``ids``: element identities in bits, their digits combined over the passes;
- ``passes``: the plan of the passes, the runs, what each mma received (``operands``:
  an mma's operands as element words);
- ``checks``: the per-mma checks and k coverage; ``stores``: where the epilogue put D;
- ``suspects`` and ``report``: the first inconsistent mma, what it should have held,
  reported as a ``BadMma`` (``result``: ``Trace``, ``BadMma``, ``Element``);
- ``diagnose``: its diagnosis in ``fragsim check``'s words, verified on the kernel.

The manual: docs/trace.md.
"""

from __future__ import annotations

import time

from fragsim.ptx import ast as A
from fragsim.ptx.machine import MAX_STEPS
from fragsim.ptx.run import find_entry, launch_dims, load_module

from .args import gemm_shape, parse_matrix
from .checks import Analysis
from .diagnose import diagnose as explain
from .ids import CODES
from .passes import Launch, PassObserver, Tracing, make_plan
from .report import first_bad, fragment_report
from .result import Trace
from .stores import EXACT, out_formats

__all__ = ["trace_fragments"]


def trace_fragments(ptx, kernel=None, grid=1, block=1, args=(), *, a, b, d, dynamic_smem=0, arch=None,
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
    module = load_module(text if text is not None else ptx, ptx_path(ptx))
    entry = find_entry(module, kernel)
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
        pargs = launch.run(p, ctas, [PassObserver(tracing, p)])
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
    g, bl = launch_dims(grid, "grid"), launch_dims(block, "block")
    nctas = len(ctas) if ctas is not None else g[0] * g[1] * g[2]
    return Trace(entry.name, g, bl, nctas, plan.passes, sum(len(ev.first) for ev in tracing.events), first is None,
                 first, an.counts, an.untraced, time.time() - t0, an.stored)


def accumulators(entry: A.Function) -> list[str]:
    """The D formats of the entry's mma.sync and wgmma instructions."""
    from fragsim.instructions import lookup
    from fragsim.instructions.wgmma import lookup_wgmma

    out = set()
    for ins in entry.instructions:
        try:
            if ins.opcode == "mma":
                out.add(lookup(".".join(m for m in ins.mods if m not in ("sync", "aligned"))).fmt("D").name)
            elif ins.opcode == "wgmma" and ins.mods[:1] == ("mma_async",):
                out.add(lookup_wgmma(".".join(ins.mods[3:])).fmt("D").name)
        except ValueError:
            continue               # a form the run refuses, with its own message
    return sorted(out)


def ptx_path(ptx) -> str | None:
    """The path of ``ptx`` when it names a .ptx file (None for text or a parsed module)."""
    import os

    if isinstance(ptx, os.PathLike) or (isinstance(ptx, str) and "\n" not in ptx and ptx.endswith(".ptx")):
        return os.fspath(ptx)
    return None


def ptx_text(ptx) -> str | None:
    """The PTX text of ``ptx`` (a .ptx path or the text itself; None for a parsed module)."""
    import os

    if isinstance(ptx, os.PathLike) or (isinstance(ptx, str) and "\n" not in ptx and ptx.endswith(".ptx")):
        try:
            with open(os.fspath(ptx)) as f:
                return f.read()
        except OSError as e:
            raise ValueError(f"ptx: cannot read {os.fspath(ptx)}: {e.strerror or e}") from None
    return ptx if isinstance(ptx, str) else None
