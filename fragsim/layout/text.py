"""Fragment maps as text: the matrix grid of the PTX ISA figures, and the per-lane list."""

from __future__ import annotations

from fragsim.instructions import lookup


def fragment_grid(form, operand) -> str:
    """The matrix, one cell per element, each "T<lane>:<element>" as in the PTX ISA figures."""
    form = lookup(form)
    lane, reg, half = form.owner(operand)
    rows, cols = lane.shape
    cells = [[f"T{lane[r, c]}:{form.element_name(operand, reg[r, c], half[r, c])}" for c in range(cols)]
             for r in range(rows)]
    w = max(len(x) for row in cells for x in row)
    head = "row\\col " + " ".join(f"{c:>{w}}" for c in range(cols))
    lines = [f"{form.ptx}  operand {operand.upper()}: {rows}x{cols} {form.fmt(operand).name}, "
             f"{form.nregs(operand)} registers x {form.elems_per_reg(operand)} element(s) per lane",
             head]
    for r in range(rows):
        lines.append(f"{r:>7} " + " ".join(f"{x:>{w}}" for x in cells[r]))
    return "\n".join(lines)


def lane_list(form, operand) -> str:
    """Per lane: each register and the (row, col) of the elements it holds (low half first)."""
    form = lookup(form)
    rows, cols = form.coords(operand)
    out = []
    for l in range(32):
        regs = []
        for r in range(rows.shape[1]):
            els = ",".join(f"({rows[l, r, e]},{cols[l, r, e]})" for e in range(rows.shape[2]))
            regs.append(f"r{r}={{{els}}}")
        out.append(f"lane {l:>2}: " + "  ".join(regs))
    return "\n".join(out)


def fragment_json(form, operand) -> dict:
    form = lookup(form)
    lane, reg, half = form.owner(operand)
    rows, cols = form.coords(operand)
    return {
        "form": form.ptx, "operand": operand.upper(), "shape": list(form.matrix_shape(operand)),
        "format": form.fmt(operand).name, "registers_per_lane": form.nregs(operand),
        "elements_per_register": form.elems_per_reg(operand),
        "lane": lane.tolist(), "register": reg.tolist(), "half": half.tolist(),
        "by_lane": [[[[int(rows[l, r, e]), int(cols[l, r, e])] for e in range(rows.shape[2])]
                     for r in range(rows.shape[1])] for l in range(32)],
    }
