"""Write ``kernel_generated.py``, the numba batch path, from the rules and the drivers.

    python -m fragsim.banks.generate          # rewrite fragsim/banks/kernel_generated.py
    python -m fragsim.banks.generate --check  # exit 1 if the committed file is stale

The generated module holds, as text: the hardware constants the rules use (as literal values),
straight-line versions of ``rules.phase_cost`` for phases of 8 and 16 lanes (they double the batch
throughput), verbatim copies of ``rules.COMPILED`` and ``drivers.COMPILED`` under
``@njit(cache=True)``, and per phase structure of the table's entries (lanes per phase, partner
merging) a copy of ``rules.instruction_figures`` and ``drivers.batch_instructions`` bound to the
straight-line phase code it needs (``batch_instructions_<lanes>[m]``). Because everything numba
compiles sits in that one file, numba's on-disk cache (keyed on the file that defines a function)
can never serve code compiled from an older version of a rule: any change to a rule changes the
generated file, and the test suite fails until it is regenerated.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import textwrap

from fragsim.facts import hardware
from fragsim.facts.hardware import WARP_LANES
from fragsim.instructions.shared_ops import SHARED_OPS
from . import drivers, rules
from .drivers import driver_name, driver_params, tag

TARGET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_generated.py")
CONSTANTS = {"WARP_LANES": hardware.WARP_LANES, "NUM_BANKS": hardware.NUM_BANKS,
             "SOURCE_LINE_BYTES": hardware.SOURCE_LINE_BYTES, "BANK_BYTES": hardware.BANK_BYTES,
             "SOURCE_LINE_CLASS_MASK0": hardware.SOURCE_LINE_CLASS_MASK0,
             "SOURCE_LINE_CLASS_MASK1": hardware.SOURCE_LINE_CLASS_MASK1,
             "SOURCE_LINE_HASH_BITS": hardware.SOURCE_LINE_HASH_BITS, "ERR_NEGATIVE": drivers.ERR_NEGATIVE,
             "ERR_TOO_BIG": drivers.ERR_TOO_BIG, "ERR_ALIGN": drivers.ERR_ALIGN, "ERR_SRC": drivers.ERR_SRC}


def straight_line_phase(p: int) -> str:
    """``phase_cost`` for a phase of ``p`` lanes without loops or branches.

    Lane j is the first of its unit (f_j) unless an earlier active lane has the same unit; the
    phase costs the most first-units in one group.  For 8 groups the counts are packed as nibbles
    of one integer (counts <= 8 fit in 4 bits); otherwise they are counted pairwise.
    """
    lines = ["@njit(cache=True, inline=\"always\")",
             f"def _phase{p}(row, s, m, shift, gm):"]
    for j in range(p):
        lines += [f"    a{j} = (m >> (s + {j})) & 1", f"    u{j} = row[s + {j}] >> shift", f"    g{j} = u{j} & gm"]
    for j in range(p):
        terms = " & ".join(f"(1 - (a{q} & (u{q} == u{j})))" for q in range(j)) or "1"
        lines.append(f"    f{j} = a{j} & {terms}")
    if p == 8:
        lines.append("    h = " + " + ".join(f"(f{j} << (g{j} << 2))" for j in range(p)))
        lines.append("    best = max(" + ", ".join(f"(h >> {4 * k}) & 15" for k in range(8)) + ")")
    else:
        lines.append("    best = 0")
        for j in range(p):
            terms = " + ".join(f"(f{q} & (g{q} == g{j}))" for q in range(p))
            lines.append(f"    best = max(best, a{j} * ({terms}))")
    lines.append(f"    return best, {' | '.join(f'a{j}' for j in range(p))}")
    return "\n".join(lines) + "\n"


def structures() -> list:
    """The phase structures of the table's ld/st/ldmatrix/stmatrix entries: (phase lanes, merges)."""
    return sorted({(e.phase_lanes, e.merges_partners) for e in SHARED_OPS.values() if e.kind != "ldgsts"})


def _phases_for(p: int) -> str:
    """``rules.phases_cost`` for phases of exactly ``p`` lanes (a constant the compiler can unroll
    by), bound to its straight-line phase code."""
    body = _copy(rules.phases_cost, f"phases_cost_p{p}", inline=True).replace("    wf = 0\n", f"    p = {p}\n    wf = 0\n", 1)
    if p in (8, 16):
        wrap = ('@njit(cache=True, inline="always")\n'
                f"def phase_cost_p{p}(addr, start, stop, m, unit_shift, groups, seen, counts):\n"
                f"    return _phase{p}(addr, start, m, unit_shift, groups - 1)\n\n\n")
        return wrap + body.replace("phase_cost(", f"phase_cost_p{p}(")
    return body.replace("phase_cost(", "phase_cost_loop(")


def _specialised(phase_lanes: int, merges: bool) -> str:
    """``rules.instruction_figures`` for one phase structure: the phase length (one, or two with
    merging) chosen once per instruction, outside the phase loop, each length with its own loop
    (one function holding them all behind a per-phase branch, or writing the per-phase costs the
    batch never reads, runs 2-3x slower)."""
    t = tag(phase_lanes, merges)
    lengths = sorted({phase_lanes, min(WARP_LANES, 2 * phase_lanes)} if merges else {phase_lanes})
    lines = ['@njit(cache=True, inline="always")',
             f"def phases_cost_{t}(addr, m, address_lanes, p, unit_shift, groups, seen, counts, phase_wf):"]
    for n in lengths[:-1]:
        lines += [f"    if p == {n}:",
                  f"        return phases_cost_p{n}(addr, m, address_lanes, p, unit_shift, groups, seen, counts, phase_wf)"]
    lines.append(f"    return phases_cost_p{lengths[-1]}(addr, m, address_lanes, p, unit_shift, groups, seen, counts, "
                 "phase_wf)")
    fig = _copy(rules.instruction_figures, f"instruction_figures_{t}", inline=True).replace(
        "phases_cost(", f"phases_cost_{t}(")
    # the structure fixes merge_capable: a constant lets the compiler drop the branch it never takes
    sig_end = fig.index(":\n") + 2
    fig = fig[:sig_end] + fig[sig_end:].replace("merge_capable", str(merges))
    return "\n".join(lines) + "\n\n\n" + fig


def _driver(e) -> str:
    """``drivers.batch_instructions`` for the entries of one structure, its parameters bound to
    the structure's values: with them constant the compiler unrolls the phase loop and folds the
    shifts (twice the throughput of the same code with run-time parameters, measured)."""
    drv = _copy(drivers.batch_instructions, driver_name(e)).replace(
        "instruction_figures(", f"instruction_figures_{tag(e.phase_lanes, e.merges_partners)}(")
    names = list(inspect.signature(drivers.batch_instructions).parameters)
    fixed = names[2:2 + len(driver_params(e))]
    name_at = drv.index(f"def {driver_name(e)}(")
    head_end = drv.index("):\n", name_at) + 3
    drv = f"{drv[:name_at]}def {driver_name(e)}({', '.join(n for n in names if n not in fixed)}):\n" + drv[head_end:]
    doc_end = drv.index('"""', drv.index('"""') + 3) + 4
    binds = "".join(f"    {k} = {v}\n" for k, v in zip(fixed, driver_params(e)))
    return drv[:doc_end] + binds + drv[doc_end:]


def _check_structures() -> None:
    """The 8-lane straight-line code packs counts of 8 bank groups: every entry that can take an
    8-lane phase must have 16-byte units."""
    for e in SHARED_OPS.values():
        if e.kind != "ldgsts" and e.phase_lanes == 8 and e.bank_groups != 8:
            raise ValueError(f"{e.name}: 8-lane phases with {e.bank_groups} bank groups; extend generate.py")


def _copy(fn, name=None, inline=False) -> str:
    """A function's source under @njit, lines marked ``# detail only`` left out (the batch path
    does not read what they record)."""
    src = textwrap.dedent(inspect.getsource(fn))
    src = "".join(line for line in src.splitlines(keepends=True) if not line.rstrip().endswith("# detail only"))
    if name:
        src = src.replace(f"def {fn.__name__}(", f"def {name}(", 1)
    return ('@njit(cache=True, inline="always")\n' if inline else "@njit(cache=True)\n") + src


def source() -> str:
    parts = ['"""GENERATED by `python -m fragsim.banks.generate` from fragsim/banks/rules.py and '
             'drivers.py.\n\n'
             'Do not edit: change the rules or the drivers and regenerate (tests/test_banks_generated.py\n'
             'fails while this file is stale).\n"""\n',
             "import numpy as np\nfrom numba import njit\n",
             "\n".join(f"{k} = {v}" for k, v in CONSTANTS.items()) + "\n",
             straight_line_phase(8), straight_line_phase(16),
             _copy(rules.phase_cost, "phase_cost_loop")]
    parts += [_copy(getattr(rules, n)) for n in rules.COMPILED
              if n not in ("phase_cost", "phases_cost", "instruction_figures")]
    parts += [_copy(getattr(drivers, n)) for n in drivers.COMPILED if n != "batch_instructions"]
    _check_structures()
    lengths = sorted({n for p, m in structures() for n in ({p, min(WARP_LANES, 2 * p)} if m else {p})})
    parts += [_phases_for(n) for n in lengths]
    parts += [_specialised(p, m) for p, m in structures()]
    firsts: dict = {}
    for e in SHARED_OPS.values():
        if e.kind != "ldgsts":
            firsts.setdefault(driver_name(e), e)
    parts += [_driver(e) for _, e in sorted(firsts.items())]
    return "\n\n".join(p.rstrip("\n") + "\n" for p in parts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m fragsim.banks.generate", description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 if the committed file differs from a fresh one")
    args = p.parse_args(argv)
    new = source()
    old = open(TARGET).read() if os.path.exists(TARGET) else ""
    if args.check:
        if old != new:
            sys.stderr.write(f"{TARGET} is stale: run python -m fragsim.banks.generate\n")
            return 1
        return 0
    if old != new:
        with open(TARGET, "w") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
