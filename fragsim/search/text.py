"""The swizzle search's result as text: a ranked table with per-group and per-instruction figures."""

from __future__ import annotations


def _cell(f) -> str:
    w = f.wavefronts
    if not len(w):
        return "-"
    lo, hi = int(w.min()), int(w.max())
    each = f"{lo}" if lo == hi else f"{lo}-{hi}"
    return f"{int(w.sum())} ({each}/instr)"


def _align(n: int) -> str:
    return f"{n} B"


def _rows(cands):
    rows = []
    for label, c in cands:
        row = [label, c.name, str(c.wavefronts), str(c.conflicts)]
        row += [_cell(f) for f in c.figures]
        row += [f"{c.overhead} B", _align(c.alignment)]
        rows.append(row)
    return rows


def _signature(c):
    return (c.overhead, c.alignment) + tuple(int(f.wavefronts.sum()) for f in c.figures)


def _collapse(cands, show: int = 2):
    """Ranked rows; of a run of layouts with the same figures, the first ``show`` and a count."""
    rows, i = [], 0
    while i < len(cands):
        j = i
        while j + 1 < len(cands) and _signature(cands[j + 1][1]) == _signature(cands[i][1]):
            j += 1
        if j + 1 - i == show + 1:         # one more: show it rather than say so
            rows += _rows(cands[i:j + 1])
            i = j + 1
            continue
        rows += _rows(cands[i:min(j + 1, i + show)])
        if j + 1 - i > show:
            rows.append(f"... {j + 1 - i - show} more with the same figures (ranks {cands[i + show][0]}-{cands[j][0]})")
        i = j + 1
    return rows


def format_result(r, detail: bool = False) -> str:
    from fragsim import validate

    out = [f"tile: {r.tile.describe()}"]
    if r.as_written is not None and (r.tile.swizzle is not None or r.tile.pitch != r.tile.line_bytes):
        given = validate.spell("addresses", "--read/--write addresses")
        out.append(f"  your {given} are taken as already laid out in {r.tile.layout_name} (the tile's layout): they "
                   "are read back through it to find the element each lane moves, not swizzled again; each row below "
                   "lays those elements out in its own layout")
    out.append("access set: " + "; ".join(g.describe() for g in r.groups))
    fams = " + ".join(f"{n} {fam}" for fam, n, _ in r.space)
    out.append(f"space: 1 none + {fams} -> {r.scored} distinct layouts scored in {r.seconds:.2f} s")
    for fam, _, desc in r.space:
        out.append(f"  {fam}: {desc}")
    src = r.floor - r.ideal
    out.append(f"floor: {r.floor} wavefronts (ideal {r.ideal}"
               + (f" + {src} from cp.async source lines, which no layout changes)" if src else ")"))
    out.append("")
    n = sum(len(g) for g in r.groups)
    out.append(f"wavefronts, conflicts: totals over the access set's {n} warp instruction{'s' if n != 1 else ''}; "
               "a group's column: its wavefronts (per instruction)")
    head = ["rank", "layout", "wavefronts", "conflicts"]
    head += [f"{g.name} ({g.op.name})" for g in r.groups] + ["overhead", "align"]
    cands = [(str(c.rank), c) for c in r.ranked]
    extra = []
    if all(c is not r.nothing for _, c in cands):
        extra.append(("-", r.nothing, "doing nothing"))
    if r.yours is not None and all(c is not r.yours for _, c in cands):
        extra.append(("-", r.yours, "your tile's layout"))
    if r.as_written is not None:
        extra.append(("-", r.as_written, "your addresses"))
    rows = _collapse(cands)
    for lab, c, why in extra:
        row = _rows([(lab, c)])[0]
        row[1] = f"{c.name} ({why})" if c.name != "as written" else f"{why}, as written"
        rows.append(row)
    width = [max([len(h)] + [len(x[i]) for x in rows if not isinstance(x, str)]) for i, h in enumerate(head)]
    right = {0, 2, 3} | {len(head) - 2, len(head) - 1}

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(cells, width))).rstrip()

    out.append(line(head))
    for row in rows:
        out.append(" " * (width[0] + 2) + row if isinstance(row, str) else line(row))
    for c in (r.nothing, r.yours, r.as_written):
        if c is not None and c.verified is False:
            out.append(f"  ! {c.name}: fails the round trip: {c.failure}")
    if r.notes:
        out.append("")
        out.extend(f"note: {n}" for n in r.notes)
    if r.rejected:
        out.append("")
        out.append(f"not ranked ({len(r.rejected)}):")
        for name, why in r.rejected[:5]:
            out.append(f"  {name}: {why}")
        if len(r.rejected) > 5:
            out.append(f"  ... and {len(r.rejected) - 5} more (--json lists them)")
    if detail:
        for title, c in (("best", r.ranked[0] if r.ranked else None), ("doing nothing", r.nothing),
                         ("as written", r.as_written)):
            if c is None:
                continue
            out.append("")
            out.append(f"per instruction, {title} ({c.name}):")
            rows = [(name, op, " ".join(f"{a}={b}" for a, b in lab.items()), str(w), str(i), str(k))
                    for name, op, lab, w, i, k in c.per_instruction]
            cols = ("group", "instruction", "labels", "wavefronts", "ideal", "conflicts")
            ws = [max([len(h)] + [len(x[j]) for x in rows]) for j, h in enumerate(cols)]
            for x in [cols] + rows:
                out.append("  " + "  ".join(v.rjust(w) if j >= 3 else v.ljust(w) for j, (v, w) in enumerate(zip(x, ws))))
    return "\n".join(out)


__all__ = ["format_result"]
