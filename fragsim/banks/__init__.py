"""Shared-memory bank conflicts, in Nsight Compute's terms, as measured on sm_90 (H100/H200).

``bank_conflicts(op, addrs, mask=None)`` gives, for one warp instruction, the wavefronts that
``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld/st`` counts, the ideal (fewest possible) and
the bank conflicts that ``l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld/st/ldgsts``
counts, with the detail behind them: the phases (which lanes), per phase the banks hit and the
distinct words in each bank, and which lanes collide.  ``addrs`` shaped ``(n, 32)`` gives arrays
for ``n`` instructions at once (a numba kernel; see ``bank_conflicts_batch``).

The model, every rule of it checked against Nsight Compute on an H200 and an H100 (tests/data/banks/):

* 32 banks of 4 bytes: bank = (address >> 2) % 32.  A wavefront reads or writes at most one
  4-byte word per bank; lanes that touch the same word share it (broadcast on loads; on stores
  one write).  Per phase, wavefronts = the most distinct words that fall into one bank.
* Phases, by lane index: 1-, 2- and 4-byte ``ld/st.shared``: one phase of 32 lanes; 8 bytes: two
  of 16; 16 bytes: four of 8.  ``ldmatrix``/``stmatrix``: one phase per 8x8 matrix (lanes 8i..8i+7
  give its rows); lanes past ``8*num`` are ignored.
* Loads of 8 and 16 bytes (not stores) merge phases pairwise when every two active partner lanes
  ``n`` and ``n^1`` -- or every two ``n`` and ``n^2`` -- hold the same address: then 64-bit loads
  take one phase of 32 lanes and 128-bit loads two phases of 16 (the return path packs the
  duplicated registers).  Partners of which one is inactive do not break the rule.
* Phases without an active lane cost nothing.  ideal = the phases with an active lane; Nsight
  Compute's bank-conflict counter = wavefronts - ideal.
* ``cp.async`` (LDGSTS) writes shared memory as its global data arrives (fitted on an H100, checked
  on 10,320 H100 and H200 launches): lanes split into width phases (128 bytes' worth: 32, 16 or 8 lanes); the
  active lanes' 128-byte *source* lines go first-fit into slots holding at most one line of each
  of 4 classes (a XOR hash of the line's absolute address bits 7..21); each (width phase, slot)
  with an active lane is a group, ideal = the number of groups.  Inside a group lanes that write
  one bank or read one source bank take a wavefront each (no broadcast, writes not merged).
  ``src`` are absolute global addresses (the hash reads them; default ``lane * size``).  Exact
  except where lanes of different lines write one bank, lines share a source bank while a line
  collides in itself, one source element is read twice with a bank written twice, or the lines
  differ in bits >= 22 (``report.exact`` is False; the ideal stays exact).  ``.cg`` copies
  bypass L1: Nsight Compute shows 0 wavefronts and 0 conflicts for them;
  ``modelled_wavefronts`` keeps the cost the counters do not show.
"""

from __future__ import annotations

from fragsim.instructions.shared_op import NCU_METRICS
from fragsim.instructions.shared_ops import parse_shared_op
from . import inputs
from .batch import BatchReport, bank_conflicts_batch
from .report import BankReport, Phase, cp_async_report, report

__all__ = ["bank_conflicts", "bank_conflicts_batch", "BankReport", "BatchReport", "Phase", "NCU_METRICS"]


def bank_conflicts(op, addrs, mask=None, src=None):
    """Bank conflicts of one warp instruction (``addrs`` shape ``(32,)``) -> ``BankReport``;
    of ``n`` instructions (``addrs`` shape ``(n, 32)``) -> ``BatchReport`` of arrays.

    ``op`` is a shared-memory instruction in PTX spelling (``"ldmatrix.x4"``,
    ``"ld.shared.v4.b32"``, ``"cp.async.cg.16"`` ...) or its table entry; ``addrs`` the lanes' byte
    offsets in one CTA's shared memory (the bytes of an active lane must lie below the default
    architecture's ``smem_per_cta``: 227 KB on sm_90); ``mask`` the active lanes (an int, bit i = lane i, or 32 booleans;
    batched: ``(n,)`` ints or ``(n, 32)`` booleans).  ldmatrix/stmatrix take no mask (all lanes
    execute them).  ``src`` (cp.async only): the lanes' absolute global source byte addresses (the
    source-line class hash reads bits 7..21: for offsets into a buffer, add its address or assume
    one aligned to 4 MiB); default ``lane * size``.
    """
    o = parse_shared_op(op)
    inputs.no_src_unless_cp_async(o, src)
    a = inputs.integer_array(addrs, "addrs", "byte offsets into shared memory")
    if a.ndim == 2:
        return bank_conflicts_batch(o, a, mask, src)
    active = inputs.active_lanes(o, mask)
    a = inputs.check_addrs(o, a, active)
    if o.kind == "ldgsts":
        return cp_async_report(o, a, inputs.check_src(o, src, active), active)
    return report(o, a, active)
