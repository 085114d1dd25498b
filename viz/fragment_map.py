"""Fragment map picture: the operand's matrix, each cell labelled with the lane (T#) and
the PTX element name (a0, b3, …) that holds it, coloured by lane — the PTX ISA figure."""

from __future__ import annotations

from fragsim.instructions import lookup

from .palette import lane_color, text_color


def draw_fragment_map(form, operand, path=None, ax=None):
    """Draw the map of ``operand`` of ``form``; saves to ``path`` (PNG/SVG/PDF) if given."""
    import matplotlib
    if ax is None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    form = lookup(form)
    lane, reg, half = form.owner(operand)
    rows, cols = lane.shape
    own_fig = ax is None
    if own_fig:
        cell = 0.62
        fig, ax = plt.subplots(figsize=(cols * cell + 1.2, rows * cell + 1.3))
    for r in range(rows):
        for c in range(cols):
            col = lane_color(lane[r, c])
            ax.add_patch(matplotlib.patches.Rectangle((c, r), 1, 1, facecolor=col, edgecolor="white", lw=1))
            ax.text(c + 0.5, r + 0.5, f"T{lane[r, c]}\n{form.element_name(operand, reg[r, c], half[r, c])}",
                    ha="center", va="center", fontsize=7, color=text_color(col), linespacing=1.1)
    # 8x8 blocks are what one ldmatrix matrix moves: outline them.
    for x in range(0, cols + 1, 8):
        ax.axvline(x, color="#333333", lw=1.6)
    for y in range(0, rows + 1, 8):
        ax.axhline(y, color="#333333", lw=1.6)
    ax.set_xlim(0, cols)
    ax.set_ylim(rows, 0)
    ax.set_aspect("equal")
    ax.set_xticks([c + 0.5 for c in range(cols)], [str(c) for c in range(cols)], fontsize=7)
    ax.set_yticks([r + 0.5 for r in range(rows)], [str(r) for r in range(rows)], fontsize=7)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for s in ax.spines.values():
        s.set_visible(False)
    fmt = form.fmt(operand)
    ax.set_title(f"{form.ptx}\noperand {operand.upper()} ({rows}x{cols} {fmt.name}): "
                 f"cell = lane T# : element", fontsize=9, pad=18)
    if own_fig:
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=110)
        plt.close(fig)
    return ax
