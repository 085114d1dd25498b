"""What a run reports to those who watch it: the events of the machine, for the shared-memory report,
the bug checks and fragment tracing.

An observer is any object with ``on_<kind>`` methods for the kinds it cares about; a run with none
pays one empty-tuple test per event site.  ``State.emit(kind, idx, **data)`` calls
``observer.on_<kind>(state, idx, **data)`` for every observer that has the method; ``state.op`` is the
instruction running (its ``line``, ``instr.opcode``/``instr.text``, ``extra``).

Events (``idx``: the threads concerned, ascending global thread indices):

``shared(s, idx, addrs, width, write)``
    shared-memory bytes ``[addrs, addrs + width)`` of each thread's CTA read (``write=False``) or
    written, as the instruction issues: ``ld``/``st``/``atom``/``red`` with a ``.shared`` or generic
    address that lands there (``addrs`` (n,) in the CTA's shared window; an atom reads then writes),
    ``ldmatrix``/``stmatrix`` (``idx``, ``addrs`` (warps, address lanes): the row each address lane
    names, ``width`` the row's bytes), ``cp.async`` (the destination, ``write=True``, at issue; the
    bytes land later: ``cp_land``).
``cp_land(s, idx, flat, width)``
    cp.async bytes landing at the wait that covers them: ``width`` bytes from ``flat`` (n,) on, as
    indices into ``State.smem`` flattened (CTA-major).
``mma(s, idx, form, a, b, c, result)``
    one ``mma.sync`` for whole warps (``idx``: their threads, warp after warp), before it computes:
    ``form`` its ``fragsim.MmaForm``; ``a``, ``b``, ``c`` the operand registers as read, uint32
    ``(warps, 32, registers)`` (an ``.f64`` element is two words, low first).  ``result`` is a dict:
    an observer that puts ``result["d"]`` (uint32, that shape for D) gives the instruction's D,
    which is then written instead of fragsim's arithmetic (fragment tracing writes element
    identities there).
``wgmma(s, idx, form, a, b, c, smem, trans_a, trans_b, result)``
    one ``wgmma.mma_async`` for whole warpgroups, before it computes: ``form`` its ``WgmmaForm``;
    ``a`` A's registers uint32 ``(groups, 128, registers)`` or its descriptors uint64 ``(groups,)``,
    ``b`` B's descriptors, ``c`` the accumulator registers; ``smem`` uint8 ``(groups, bytes)`` each
    warpgroup's CTA's shared memory as the instruction reads it; ``trans_a``/``trans_b`` the
    imm-trans operands (MN-major); ``result`` as for ``mma``.
``cp_async(s, idx, dst, src, size)``
    one ``cp.async`` copy step as it issues, after its ``shared`` event: ``dst`` (n,) the shared
    destinations (CTA window), ``src`` (n,) the absolute global source addresses (the bank model of
    LDGSTS reads them), ``size`` the cp-size in bytes.
``shared_store(s, idx, addrs, data)``
    the bytes an ``st``/``atom``/``red`` writes to shared memory, ``data`` uint8 ``(n, width)``, told
    just before that access's ``shared`` event (the checks tell a write of the same value apart).
``bar_arrive(s, idx, barrier, count, wait)``
    threads arrive at ``bar.sync``/``barrier.sync`` (``wait=True``) or ``bar.arrive``: ``barrier``
    and ``count`` (n,) their operands (count 0: every thread of the CTA).
``bar_release(s, idx)``
    a barrier lets its waiting threads go (``s.barrier[idx]`` still names the barrier each waited at).
``warp_sync(s, idx)``
    threads pass ``bar.warp.sync`` (``__syncwarp``).
``guard_off(s, idx, off)``
    threads ``idx`` reached a guarded instruction (``s.op``) and the guard is false for those where
    ``off`` (bool, ``(len(idx),)``) is true; told before the instruction runs for the others, if any
    (a warp whose lanes are all off may still issue the instruction on the hardware: the traffic
    report counts such idle executions).

An observer whose ``batch_mma`` attribute is true needs no ``mma`` events: with only such observers
the machine keeps running consecutive ``mma.sync`` as one call of the arithmetic.
"""

from __future__ import annotations

from typing import Protocol


class Observer(Protocol):
    """Marker for the objects ``run_kernel(observers=...)`` takes; every method is optional."""
