"""movmatrix.sync.aligned.m8n8.trans.b16 maps (viz/movmatrix_map.py, `fragsim draw movmatrix`, `fragsim layout
movmatrix`): every cell (r, c) of the 8x8 source matrix names the lane and half that hold it in the source
register (RegisterOp.src) and in the destination register (RegisterOp.dst), in the picture, the JSON and the text."""

import json

import numpy as np
import pytest

import svg_labels
from fragsim.cli import main
from fragsim.instructions.movmatrix import MOVMATRIX
from fragsim.viz.movmatrix_map import draw_movmatrix_map


def table_labels(which):
    """{(r, c): (lane, half)} straight from the RegisterOp's (lane, elem) -> (row, col) map."""
    rows, cols = getattr(MOVMATRIX, which).table()
    return {(int(rows[lane, 0, e]), int(cols[lane, 0, e])): (lane, e) for lane in range(32) for e in range(2)}


def test_table_maps_cover_all_64_cells_once():
    """Each map is a bijection of (32 lanes x 2 halves) onto the 8x8 matrix (else the tests below prove little)."""
    assert len(table_labels("src")) == len(table_labels("dst")) == 64


@pytest.mark.parametrize("which", ["src", "dst"])
def test_svg_cells_name_the_register_op_owners(which, tmp_path):
    """`fragsim draw movmatrix -o x.svg`: cell which-r-c reads 'T<lane> e<half>' of the src/dst map, all 64 cells."""
    path = tmp_path / "m.svg"
    assert main(["draw", "movmatrix", "-o", str(path)]) == 0
    got = {k: v for k, v in svg_labels.labels(svg_labels.parse(path.read_text())).items() if k.startswith(which)}
    assert got == {f"{which}-{r}-{c}": f"T{lane} e{half}" for (r, c), (lane, half) in table_labels(which).items()}


def test_destination_is_the_transpose_of_the_source():
    """PTX ISA: the destination holds the transpose in the source's fragment layout: whoever held (c, r)
    before holds (r, c) after."""
    src, dst = table_labels("src"), table_labels("dst")
    assert all(dst[r, c] == src[c, r] for r, c in np.ndindex(8, 8))


def test_register_halves_are_one_box():
    """Before: e0|e1 side by side in a row; after: e0 over e1 in a column; other neighbours keep a gap."""
    rects = svg_labels.rects(svg_labels.parse(draw_movmatrix_map()))
    assert rects["src-0-0"][2] == pytest.approx(rects["src-0-1"][0])     # T0 e0 | T0 e1
    assert rects["src-0-1"][2] < rects["src-0-2"][0] - 0.5               # T0 | T1
    assert rects["dst-0-0"][3] == pytest.approx(rects["dst-1-0"][1])     # T0 e0 over T0 e1
    assert rects["dst-0-0"][2] < rects["dst-0-1"][0] - 0.5               # T0 | T4


def test_layout_json_is_the_register_op(capsys):
    """`fragsim layout movmatrix --json`: lane[r][c] and half[r][c] of src and dst, all 64 cells."""
    assert main(["layout", "movmatrix", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["instruction"] == MOVMATRIX.ptx and got["shape"] == [8, 8]
    for which in ("src", "dst"):
        assert {(r, c): (got[which]["lane"][r][c], got[which]["half"][r][c]) for r, c in np.ndindex(8, 8)} \
            == table_labels(which)


def test_layout_text_grids_are_the_register_op(capsys):
    """The text: two 8x8 grids (before, after) of 'T<lane>:e<half>', rows top down."""
    assert main(["layout", "movmatrix"]) == 0
    lines = capsys.readouterr().out.splitlines()
    grids = [[ln.split()[1:] for ln in lines[i + 2:i + 10]] for i, ln in enumerate(lines)
             if ln.startswith(("source register", "destination register"))]
    assert len(grids) == 2
    for which, grid in zip(("src", "dst"), grids):
        assert {(r, c): grid[r][c] for r, c in np.ndindex(8, 8)} == \
            {rc: f"T{lane}:e{half}" for rc, (lane, half) in table_labels(which).items()}


def test_layout_png_and_svg_are_the_drawing(tmp_path, capsys):
    """`fragsim layout movmatrix --png/--svg`: the same picture as `fragsim draw movmatrix`."""
    png, svg = tmp_path / "m.png", tmp_path / "m.svg"
    assert main(["layout", "movmatrix", "--png", str(png), "--svg", str(svg)]) == 0
    assert capsys.readouterr().out == f"wrote {png}\nwrote {svg}\n"
    assert png.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert svg_labels.labels(svg_labels.parse(svg.read_text())) == svg_labels.labels(svg_labels.parse(draw_movmatrix_map()))


@pytest.mark.parametrize("args, message", [
    (["movmatrix", "A"], "operand 'A': movmatrix has none"),
    (["movmatrix", "--by-lane"], "--by-lane: movmatrix has one register per lane"),
    (["movmatrix", "--png", "{tmp}/m.svg"], "expected a file name ending in .png"),
    (["movmatrix.sync.aligned.m8n8.b16"], "movmatrix.sync.aligned.m8n8.b16"),
    (["m16n8k16.row.col.f32.f16.f16.f32"], "operand: expected A, B, C or D after the form"),
])
def test_layout_bad_input_is_one_line(tmp_path, capsys, args, message):
    assert main(["layout", *[a.replace("{tmp}", str(tmp_path)) for a in args]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert list(tmp_path.iterdir()) == []
