"""Fragment-map pictures: every cell's label is the instruction table's (and the PTX ISA's) lane and
element, a register's two halves are joined, the ldmatrix matrices are the ones ldmatrix loads."""

import numpy as np
import pytest
import svg_labels

import fragsim
from fragsim.instructions import FORMS
from fragsim.viz import _blocks, _groups
from fragsim.viz.fragment_map import draw_fragment_map, draw_mma

OPS = "ABCD"


def _ptx_figure(form, op):
    """The PTX ISA's row/col formulas ("Matrix Fragments for mma.m*n*k*"), transcribed, as
    {(row, col): "T<lane> <element>"} -- independent of fragsim's table."""
    M, N, K = form.shape
    a_type = form.types["A"]
    bits = form.fmt("A").storage_bits
    epr = max(1, 32 // bits)                         # integer and .b1 inputs: elements per register
    out = {}
    if form.shape_name == "m8n8k4" and a_type == "f16":
        return _quad_pair_figure(form, op)
    for lane in range(32):
        g, t = lane >> 2, lane % 4
        if op == "A" and a_type in ("f16", "bf16"):
            elems = [(g + 8 * ((i >> 1) & 1), t * 2 + (i & 1) + 8 * (i >> 2)) for i in range(K // 2)]
        elif op == "A" and a_type in ("tf32", "f64"):
            elems = [(g + 8 * (i & 1), t + 4 * (i >> 1)) for i in range(M * K // 32)]
        elif op == "A":                               # s8/u8, s4/u4, b1
            elems = [(g + 8 * ((i // epr) & 1), t * epr + i % epr + (i // (2 * epr)) * 4 * epr)
                     for i in range(M * K // 32)]
        elif op == "B" and a_type in ("f16", "bf16"):
            elems = [(t * 2 + (i & 1) + 8 * (i >> 1), g) for i in range(K // 4)]
        elif op == "B" and a_type in ("tf32", "f64"):
            elems = [(t + 4 * i, g) for i in range(K * N // 32)]
        elif op == "B":
            elems = [(t * epr + i % epr + (i // epr) * 4 * epr, g) for i in range(K * N // 32)]
        else:                                   # C and D: c0,c1 row groupID, c2,c3 row groupID + 8
            elems = [(g + 8 * (i >> 1), t * 2 + (i & 1)) for i in range(M * N // 32)]
        for i, rc in enumerate(elems):
            out[rc] = f"T{lane} {op.lower()}{i}"
    return out


def _quad_pair_figure(form, op):
    """m8n8k4 .f16 ("Matrix Fragments for mma.m8n8k4 with .f16"): quad pair q (lanes 4q..4q+3 and
    4q+16..4q+19) computes its own 8x8x4 product; the table stacks them by rows (A, C, D rows 8q..,
    B rows 4q..).  In a quad pair, the upper quad (lane >= 16) holds rows 4-7 of A, C, D (columns
    4-7 of B)."""
    la, lb = form.name.split(".")[1:3]
    f32 = form.types[op] == "f32"
    out = {}
    for lane in range(32):
        q, t, up = (lane >> 2) & 3, lane % 4, 4 * (lane >= 16)
        if op == "A":
            elems = [(8 * q + t + up, i) if la == "row" else (8 * q + i + up, t) for i in range(4)]
        elif op == "B":
            elems = [(4 * q + t, i + up) if lb == "row" else (4 * q + i, t + up) for i in range(4)]
        elif f32:
            elems = [(8 * q + (lane & 1) + (i & 2) + up, (i & 4) + (lane & 2) + (i & 1)) for i in range(8)]
        else:
            elems = [(8 * q + t + up, i) for i in range(8)]
        for i, rc in enumerate(elems):
            out[rc] = f"T{lane} {op.lower()}{i}"
    return out


@pytest.mark.parametrize("name", list(FORMS))
def test_the_table_is_the_ptx_isa_figure_for_every_form(name):
    """What every picture draws -- the table's owner of each cell -- is the PTX ISA's."""
    form = FORMS[name]
    for op in OPS:
        lane, reg, half = form.owner(op)
        table = {(r, c): f"T{lane[r, c]} {form.element_name(op, reg[r, c], half[r, c])}"
                 for r, c in np.ndindex(lane.shape)}
        assert table == _ptx_figure(form, op), (name, op)


PICTURES = [(fs[0].name, op) for op in OPS
            for fs in _groups.group(FORMS.values(), lambda f, op=op: _groups.operand_key(f, op)).values()]


@pytest.mark.parametrize("name,op", PICTURES)
def test_each_picture_says_what_the_ptx_isa_figure_says(name, op):
    """Each distinct map, cell by cell: the label (lane and element) where cells are large enough
    for one, else the lane's colour (a named cell's fill; past 2,048 cells, a pixel of one image)."""
    from fragsim.viz.palette import LANE_RGB
    form = FORMS[name]
    fig = draw_fragment_map(form, op)
    root = svg_labels.parse(fig)
    ptx = _ptx_figure(form, op)
    got = {tuple(int(x) for x in k.split("-")[1:]): v for k, v in svg_labels.labels(root).items()
           if k.startswith(op + "-")}
    if got:
        assert got == ptx
        return
    lanes = {rc: int(v.split()[0][1:]) for rc, v in ptx.items()}      # 16x128, 16x256 .b1: colour only
    hexes = ["#" + "".join(f"{int(round(x * 255)):02x}" for x in c) for c in LANE_RGB]
    fills = {tuple(int(x) for x in k.split("-")[1:]): v for k, v in svg_labels.fills(root).items()
             if k.startswith(op + "-") and k.count("-") == 2}
    if fills:
        assert {rc: hexes.index(f) for rc, f in fills.items()} == lanes
    else:
        lane = np.zeros(form.matrix_shape(op), int)
        for (r, c), ln in lanes.items():
            lane[r, c] = ln
        assert any(np.array_equal(np.asarray(img.get_array()), LANE_RGB[lane]) for img in fig.axes[0].images)


@pytest.mark.parametrize("name", [fs[0].name for fs in _groups.group(FORMS.values(), _groups.view_key).values()])
def test_combined_view_labels_equal_the_instruction_table(name):
    """Each (lane, register, half) of the table appears as exactly one cell of A, B and C/D, at its (row, col)."""
    form = FORMS[name]
    got = svg_labels.labels(svg_labels.parse(draw_mma(form)))
    if not got:
        pytest.skip("cells too small for labels (checked by colour above)")
    for op in "ABC":
        rows, cols = form.coords(op)
        for lane in range(32):
            for reg in range(rows.shape[1]):
                for half in range(rows.shape[2]):
                    cell = f"{op}-{rows[lane, reg, half]}-{cols[lane, reg, half]}"
                    assert got[cell] == f"T{lane} {form.element_name(op, reg, half)}"


@pytest.mark.parametrize("name", ["m16n8k16.row.col.f32.f16.f16.f32", "m8n8k4.row.col.f32.f16.f16.f32",
                                  "m8n8k4.col.row.f16.f16.f16.f16"])
def test_combined_view_puts_a_rows_beside_c_rows_and_b_columns_above_c_columns(name):
    """The CuTe-style view, product by product (m8n8k4 .f16: one view per quad pair): row r of A is
    level with row r of C, column c of B straight above column c of C, and no two cells overlap."""
    form = FORMS[name]
    rects = svg_labels.rects(svg_labels.parse(draw_mma(form)))
    cells = {tuple(k.split("-")[:1]) + tuple(int(x) for x in k.split("-")[1:]): v for k, v in rects.items()
             if k[0] in "ABCD" and k.count("-") == 2}
    M, N, K = form.shape
    for q in range(form.groups):
        for r in range(q * M, (q + 1) * M):
            a, c = cells[("A", r, 0)], cells[("C", r, 0)]
            assert a[1] < (c[1] + c[3]) / 2 < a[3] and a[2] < c[0], (q, r)      # C's middle within A's row
        for col in range(N):
            b, c = cells[("B", q * K + K - 1, col)], cells[("C", q * M, col)]
            assert b[0] < (c[0] + c[2]) / 2 < b[2] and b[3] < c[1], (q, col)
    boxes = sorted(cells.values())
    for i, (x0, y0, x1, y1) in enumerate(boxes):       # sorted by left edge: compare with the next few
        for u0, v0, u1, v1 in boxes[i + 1:i + 80]:
            assert u0 >= x1 - 0.01 or v1 <= y0 + 0.01 or v0 >= y1 - 0.01, ((x0, y0, x1, y1), (u0, v0, u1, v1))


def test_the_two_halves_of_a_register_share_an_edge_and_registers_are_apart():
    """Joined registers: a0/a1 of one lane touch; a1 of lane 0 and a0 of lane 1 do not."""
    form = FORMS["m16n8k16.row.col.f16.f16.f16.f16"]
    r = svg_labels.rects(svg_labels.parse(draw_fragment_map(form, "A")))
    assert r["A-0-0"][2] == pytest.approx(r["A-0-1"][0])          # a0 | a1 of lane 0: one box
    assert r["A-0-1"][2] < r["A-0-2"][0] - 1                      # lane 0 a1 | lane 1 a0: a gap
    rb = svg_labels.rects(svg_labels.parse(draw_fragment_map(form, "B")))
    assert rb["B-0-0"][3] == pytest.approx(rb["B-1-0"][1])        # b0 over b1 of lane 0 (vertical pair)
    assert rb["B-1-0"][3] < rb["B-2-0"][1] - 1
    rc = svg_labels.rects(svg_labels.parse(draw_fragment_map("m16n8k16.row.col.f32.f16.f16.f32", "C")))
    assert rc["C-0-0"][2] < rc["C-0-1"][0] - 1                    # f32: c0 and c1 are two registers


def _memory_bytes(mem, bits):
    """A matrix of ``bits``-wide values as the bytes of row-major memory (sub-byte: low bits first)."""
    if bits >= 8:
        return np.frombuffer(np.ascontiguousarray(mem).tobytes(), np.uint8).copy()
    per = 8 // bits
    m = mem.astype(np.uint8).reshape(mem.shape[0], -1, per)
    return (m << (bits * np.arange(per, dtype=np.uint8))).sum(-1, dtype=np.uint8).ravel()


@pytest.mark.parametrize("name", [fs[0].name for fs in _groups.group(FORMS.values(), _groups.view_key).values()])
def test_outlined_matrices_are_what_ldmatrix_loads(name):
    """For each layout the picture names, ldmatrix with those row addresses returns pack(operand)."""
    form = FORMS[name]
    rng = np.random.default_rng(0)
    for op in OPS:
        for st in _blocks.storages(form, op):
            R, C = form.matrix_shape(op)
            bits = form.fmt(op).storage_bits
            dtype = {32: np.uint32, 16: np.uint16}.get(bits, np.uint8)
            m = rng.integers(0, 1 << min(bits, 16), size=(R, C)).astype(dtype)
            smem = _memory_bytes(m if st.major == "row" else m.T, bits)
            regs = fragsim.ldmatrix(smem, st.addrs(), num=st.num, trans=st.trans)
            assert np.array_equal(regs, fragsim.pack(form, op, m)), (name, op, st.major, st.trans)


def test_matrix_layouts_found_for_each_operand_kind():
    """16-bit A: row-major .x4 (or column-major .trans); B: K x N with .trans; tf32 B: N x K only;
    f32 accumulators: none (ldmatrix moves 16-bit halves)."""
    def names(form, op):
        return [(s.major, s.op_name()) for s in _blocks.storages(form, op)]
    k16 = "m16n8k16.row.col.f32.f16.f16.f32"
    assert names(k16, "A") == [("row", "ldmatrix.x4"), ("col", "ldmatrix.x4.trans")]
    assert names(k16, "B") == [("row", "ldmatrix.x2.trans"), ("col", "ldmatrix.x2")]
    assert names(k16, "C") == []
    assert names("m16n8k8.row.col.f16.f16.f16.f16", "C") == [("row", "ldmatrix.x2"), ("col", "ldmatrix.x2.trans")]
    assert names("m16n8k8.row.col.f32.tf32.tf32.f32", "B") == [("col", "ldmatrix.x2")]


def test_matrix_tags_name_register_i_at_its_block():
    """m0..m3 tags of m16n8k16 A sit on the four 8x8 blocks in register order (a0a1, a2a3, a4a5, a6a7)."""
    root = svg_labels.parse(draw_fragment_map("m16n8k16.row.col.f16.f16.f16.f16", "A"))
    assert {"A-m0", "A-m1", "A-m2", "A-m3"} <= svg_labels.ids(root)
    assert [(b.row0, b.col0) for b in _blocks.blocks("m16n8k16.row.col.f16.f16.f16.f16", "A")] == \
        [(0, 0), (8, 0), (0, 8), (8, 8)]


@pytest.mark.parametrize("ext,magic", [("png", b"\x89PNG\r\n\x1a\n"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_every_format_opens(tmp_path, ext, magic):
    path = tmp_path / f"a.{ext}"
    fig = draw_fragment_map("m16n8k8.row.col.f32.tf32.tf32.f32", "A", path)
    assert path.read_bytes().startswith(magic) and fig.get_figwidth() > 1
    if ext == "png":
        from PIL import Image
        with Image.open(path) as im:
            assert im.size[0] > 400 and im.size[1] > 400


def test_unknown_extension_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"\.png, \.svg or \.pdf \(got \.jpg\)"):
        draw_fragment_map("m16n8k8.row.col.f32.tf32.tf32.f32", "A", tmp_path / "a.jpg")
    assert not (tmp_path / "a.jpg").exists()


def test_bad_operand_and_form_are_the_tables_errors():
    with pytest.raises(ValueError, match="operand must be one of A, B, C, D"):
        draw_fragment_map("m16n8k16.row.col.f32.f16.f16.f32", "E")
    with pytest.raises(ValueError, match="D and C types must match"):
        draw_mma("m16n8k16.row.col.f32.f16.f16.f16")


def test_importing_fragsim_does_not_import_matplotlib():
    import subprocess
    import sys
    code = "import fragsim, sys; fragsim.lookup('m16n8k16.f32.f16.f16.f32'); print('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


def _top_text_inside(fig):
    """The figure's top line of text (its title) lies inside the figure, left to right and top to bottom."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    renderer = FigureCanvasAgg(fig).get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.findobj(Text) if t.get_text().strip()]
    title = max(boxes, key=lambda b: b.y1)
    assert 0 <= title.x0 and title.x1 <= fig.bbox.width and 0 <= title.y0 and title.y1 <= fig.bbox.height, \
        (title, fig.bbox)


OPERAND_GROUPS = [(fs[0].name, op, tuple(f.name for f in fs[1:])) for op in OPS
                  for fs in _groups.group(FORMS.values(), lambda f, op=op: _groups.operand_key(f, op)).values()]


@pytest.mark.parametrize("name,op,also", OPERAND_GROUPS, ids=[f"{n}-{o}" for n, o, _ in OPERAND_GROUPS])
def test_each_map_title_fits_its_figure(name, op, also):
    """Titles wrap to the figure's width: m8n8k4's A (4 columns, 12 forms named) was cut off at the right."""
    _top_text_inside(draw_fragment_map(name, op, also=also))


@pytest.mark.parametrize("forms", [fs for fs in _groups.group(FORMS.values(), _groups.view_key).values()],
                         ids=lambda fs: fs[0].name)
def test_each_combined_view_title_fits_its_figure(forms):
    _top_text_inside(draw_mma(forms[0], also=[f.name for f in forms[1:]]))
