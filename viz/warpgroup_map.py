"""Fragment maps of wgmma (the warpgroup accumulator D/C and A in registers), drawn like the mma.sync
maps: each cell reads ``T37`` / ``d5`` (thread 37 of the warpgroup holds element d5), coloured by
its lane (thread % 32, the mma.sync palette); the four warps' row bands are outlined and tagged
``warp 0``..``warp 3``; the two halves of an .f16x2 register are joined into one box.  Everything is
read from the wgmma table (fragsim/instructions/wgmma.py).
"""

from __future__ import annotations


from fragsim.instructions.wgmma import lookup_wgmma
from fragsim.warpgroup import owners

from .palette import LANE_RGB, text_color


def draw_warpgroup_map(form, operand, path=None):
    """The picture of one operand's warpgroup fragment map; written to ``path`` if given."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    f = lookup_wgmma(form)
    op = operand.upper()
    thread, reg, half = owners(f, op)
    R, C = thread.shape
    epr = f.elems_per_reg(op)
    cell = 0.42 if C <= 32 else 0.3
    fig, ax = plt.subplots(figsize=(1.2 + C * cell, 1.4 + R * cell * 0.62))
    small = 5.0 if C <= 32 else 4.0
    for r in range(R):
        for c in range(C):
            t = int(thread[r, c])
            rgb = LANE_RGB[t % 32]
            ax.add_patch(Rectangle((c + 0.04, r + 0.04), 0.92, 0.92, facecolor=rgb, edgecolor="none"))
            name = f"{op.lower()}{int(reg[r, c]) * epr + int(half[r, c])}"
            ax.text(c + 0.5, r + 0.5, f"T{t}\n{name}", ha="center", va="center", fontsize=small,
                    color=text_color(rgb), linespacing=0.9)
    for w in range(4):
        ax.add_patch(Rectangle((0, 16 * w), C, 16, fill=False, edgecolor="black", linewidth=1.6))
        ax.text(-0.4, 16 * w + 8, f"warp {w}", rotation=90, ha="right", va="center", fontsize=8)
    if epr == 2:                            # one box per .f16x2 register: a dark bar between register pairs
        for c in range(0, C, 2):
            ax.plot([c + 2, c + 2], [0, R], color="white", linewidth=1.2)
    ax.set_xlim(-1.2, C)
    ax.set_ylim(R, -1.5)
    ax.set_xticks(range(0, C, 8 if C > 16 else 1))
    ax.set_yticks(range(0, R, 8))
    ax.tick_params(labelsize=6, length=0)
    ax.xaxis.tick_top()
    for s in ax.spines.values():
        s.set_visible(False)
    what = {"A": "A in registers", "C": "accumulator C", "D": "accumulator D"}[op]
    regs = f.nregs(op)
    ax.set_title(f"wgmma.mma_async {f.name}: {what} ({R} x {C}), 128 threads x {regs} registers; "
                 f"cell = thread and PTX element", fontsize=8, pad=14)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=110)
        plt.close(fig)
    return fig
