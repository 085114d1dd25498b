"""ldmatrix/stmatrix flow pictures: each 16-bit element of each addressed row names the lane that
receives it, each register half the row and column it came from -- as the simulator moves them."""

import numpy as np
import pytest
import svg_labels

import fragsim
from fragsim.viz.flow import draw_ldmatrix_flow

VARIANTS = [f"{fam}.x{n}{t}" for fam in ("ldmatrix", "stmatrix") for n in (1, 2, 4) for t in ("", ".trans")]


def _tagged_smem(addrs, n):
    """Shared memory whose 16-bit element j of the row lane k addresses holds 256*k + j."""
    smem = np.zeros(8192, np.uint8)
    for k in range(n):
        smem[addrs[k]:addrs[k] + 16] = np.arange(256 * k, 256 * k + 8, dtype=np.uint16).view(np.uint8)
    return smem


@pytest.mark.parametrize("op", VARIANTS)
def test_memory_cells_name_the_lane_that_receives_them(op):
    """Label of row k, element j == the lane whose register gets that element in fragsim.ldmatrix."""
    lane = np.arange(32)
    addrs = ((lane * 7) % 32) * 48          # scattered rows, 16-byte aligned, none shared
    num, trans = int(op.split(".x")[1][0]), op.endswith(".trans")
    n = 8 * num
    regs = fragsim.ldmatrix(_tagged_smem(addrs, n), addrs, num=num, trans=trans)
    halves = np.stack([regs & 0xFFFF, regs >> 16], -1)            # (32, num, 2) tags
    receiver = {int(tag): (l, r, h) for (l, r, h), tag in np.ndenumerate(halves)}
    root = svg_labels.parse(draw_ldmatrix_flow(op, addrs))
    got = svg_labels.labels(root)
    for k in range(n):
        for j in range(8):
            l, r, h = receiver[256 * k + j]
            assert got[f"flow-s-{k}-{j}"].split()[0] == f"T{l}"
            assert got[f"flow-r-{l}-{r}-{h}"] in (f"r{k % 8} c{j}", f"{k % 8},{j}")
    assert f"flow-row-{n - 1}" in svg_labels.ids(root) and f"flow-row-{n}" not in svg_labels.ids(root)


@pytest.mark.parametrize("name", ["m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k8.row.col.f16.f16.f16.f16",
                                  "m16n8k8.row.col.f32.tf32.tf32.f32"])
def test_operand_flow_names_the_fragment_elements(name):
    """With form/operand, each memory element carries the PTX name of the element it is, and that name
    is what the receiving lane's register holds in the fragment map."""
    form = fragsim.lookup(name)
    for op in "AB":
        root = svg_labels.parse(draw_ldmatrix_flow(form=form, operand=op))
        got = svg_labels.labels(root)
        lane, reg, half = form.owner(op)
        names = {f"T{lane[r, c]} {form.element_name(op, reg[r, c], half[r, c])}" for r, c in np.ndindex(lane.shape)}
        cells = [v for k, v in got.items() if k.startswith("flow-s-")]
        assert len(cells) == 8 * form.nregs(op) * 8 and set(cells) == names


def test_row_labels_give_address_and_operand_rows():
    root = svg_labels.parse(draw_ldmatrix_flow(form="m16n8k16.row.col.f16.f16.f16.f16", operand="A"))
    texts = [t.text for t in root.iter(svg_labels.NS + "text")]
    assert "A[5, 0:8]" in texts and "0x00a0" in texts and "A[5, 8:16]" in texts   # lane 5 and lane 21


def test_swizzled_tile_shows_where_the_logical_rows_landed():
    """Swizzle<3,4,3> on 128-byte rows: logical row r, chunk 0 sits in 16-byte slot r of line r."""
    lane = np.arange(32)
    sw = fragsim.Swizzle(3, 4, 3)
    tile = fragsim.Tile(16, 64, "f16", swizzle=sw)
    addrs = sw((lane % 16) * 128 + (lane // 16) * 16)
    root = svg_labels.parse(draw_ldmatrix_flow("ldmatrix.x4", addrs, tile=tile))
    got = svg_labels.labels(root)
    for r in range(8):
        assert got[f"flow-p-{r}-{r}"] == f"T{r} ({r},0)"            # lane r reads logical (r, 0) at slot r
    texts = [t.text for t in root.iter(svg_labels.NS + "text")]
    assert "tile[3, 0:8]" in texts and any("0 bank conflicts" in (t or "") for t in texts)


def test_coords_in_a_tile_give_the_addresses():
    lane = np.arange(32)
    tile = fragsim.Tile(16, 64, "f16", pitch=144)
    a = draw_ldmatrix_flow("ldmatrix.x4", coords=(lane % 16, (lane // 16) * 8), tile=tile)
    b = draw_ldmatrix_flow("ldmatrix.x4", (lane % 16) * 144 + (lane // 16) * 16, tile=tile)
    assert svg_labels.labels(svg_labels.parse(a)) == svg_labels.labels(svg_labels.parse(b))


def test_errors_name_what_is_wrong():
    lane = np.arange(32)
    with pytest.raises(ValueError, match="flow is drawn for ldmatrix/stmatrix"):
        draw_ldmatrix_flow("ld.shared.b32", lane * 4)
    with pytest.raises(ValueError, match="lane 9: ldmatrix row address 0x98 is not 16-byte aligned"):
        draw_ldmatrix_flow("ldmatrix.x4", lane * 16 + (lane == 9) * 8)
    with pytest.raises(ValueError, match="ldmatrix.x4 does not move operand B .* ldmatrix.x2.trans or ldmatrix.x2"):
        draw_ldmatrix_flow("ldmatrix.x4", form="m16n8k16.row.col.f16.f16.f16.f16", operand="B")
    with pytest.raises(ValueError, match="no ldmatrix/stmatrix moves"):
        draw_ldmatrix_flow(form="m16n8k16.row.col.f32.f16.f16.f32", operand="C")
    with pytest.raises(ValueError, match="arrows must be lane numbers"):
        draw_ldmatrix_flow("ldmatrix.x1", arrows=[40])


def _arrows_and_labels(fig):
    """Each arrow's outline as points (display pixels), and every label's box: texts and cell labels
    (glyph outlines in PNG/PDF figures)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.collections import PathCollection
    from matplotlib.patches import FancyArrowPatch
    from matplotlib.text import Text
    from matplotlib.transforms import Bbox
    canvas = FigureCanvasAgg(fig)
    canvas.draw()                                   # lays out the annotations' arrows
    renderer, ax = canvas.get_renderer(), fig.axes[0]
    boxes = [t.get_window_extent(renderer) for t in fig.findobj(Text) if t.get_text().strip()]
    for pc in ax.collections:
        if isinstance(pc, PathCollection):
            for path, (ox, oy) in zip(pc.get_paths(), ax.transData.transform(pc.get_offsets())):
                b = path.get_extents(pc.get_transform())
                boxes.append(Bbox.from_extents(b.x0 + ox, b.y0 + oy, b.x1 + ox, b.y1 + oy))
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    arrows += [t.arrow_patch for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    points = []
    for a in arrows:
        for poly in a.get_transform().transform_path(a.get_path()).to_polygons(closed_only=False):
            for p, q in zip(poly[:-1], poly[1:]):
                n = int(np.hypot(*(q - p))) + 1
                points.append(p + (q - p) * np.linspace(0, 1, n + 1)[:, None])
    return arrows, (np.concatenate(points) if points else np.zeros((0, 2))), boxes


@pytest.mark.parametrize("args", [dict(form="m16n8k16.row.col.f16.f16.f16.f16", operand="A"),
                                  dict(form="m16n8k16.row.col.f16.f16.f16.f16", operand="B"),
                                  dict(op="stmatrix.x2.trans", arrows=(0, 5)),
                                  dict(op="ldmatrix.x4", addrs=((np.arange(32) * 7) % 32) * 48, arrows=(0, 9))],
                         ids=["A", "B", "stmatrix-0-5", "scattered-0-9"])
def test_arrows_cover_no_label(args):
    """The arrows (lane 0's by default) pass beside the labels -- register halves, lane names, row
    addresses -- never over one (they used to cross the registers of lanes 1-15 to reach lane 0's)."""
    arrows, points, boxes = _arrows_and_labels(draw_ldmatrix_flow(**args))
    assert arrows and len(points)
    for b in boxes:
        inside = (points[:, 0] > b.x0 + 1) & (points[:, 0] < b.x1 - 1) & (points[:, 1] > b.y0 + 1) & (points[:, 1] < b.y1 - 1)
        assert not inside.any(), b
