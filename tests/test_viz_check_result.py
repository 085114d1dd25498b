"""Check-result pictures: the expected grid is the fragment map, the received grid is what the run
delivered, and exactly the cells a mismatch names are marked -- read back from the SVG."""

import io

import numpy as np
import pytest
import svg_labels

import fragsim
from fragsim.check import check_copy, check_load, check_store
from fragsim.cli import main
from fragsim.viz.check_result import draw_check

F16 = "m16n8k16.row.col.f16.f16.f16.f16"
F32 = "m16n8k16.row.col.f32.f16.f16.f32"
A16 = fragsim.Tile(16, 16, "f16")
A_X4 = "(lane % 16) * 32 + (lane / 16) * 16"
B_COL = fragsim.Tile(16, 16, "f16", order="col")
B_X4 = "((lane >> 4) * 8 + (lane & 7)) * 32 + ((lane >> 3) & 1) * 16"


def _grid(root, name):
    """(row, col) -> label of the named grid's labelled cells."""
    out = {}
    for k, v in svg_labels.labels(root).items():
        panel, r, c = k.rsplit("-", 2)
        if panel == name:
            out[(int(r), int(c))] = v
    return out


def _marked(root, name):
    return {tuple(int(x) for x in i.rsplit("-", 2)[1:]) for i in svg_labels.ids(root) if i.startswith(f"{name}-bad-")}


def _fragment_map(form, op, origin=(0, 0)):
    """The fragment map as the PTX ISA figure labels it, placed at ``origin`` of the tile."""
    form = fragsim.instructions.lookup(form)
    lane, reg, half = form.owner(op)
    return {(origin[0] + r, origin[1] + c): f"T{lane[r, c]} {form.element_name(op, reg[r, c], half[r, c])}"
            for r, c in np.ndindex(lane.shape)}


def test_a_right_load_shows_the_fragment_map_twice_and_marks_nothing():
    root = svg_labels.parse(draw_check(check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)])))
    assert _grid(root, "expected") == _fragment_map(F16, "A") == _grid(root, "received")
    assert _marked(root, "expected") == _marked(root, "received") == set()


def test_one_x4_filling_two_b_fragments_shows_both_at_their_origins():
    root = svg_labels.parse(draw_check(check_load(F16, "B", B_COL, [("ldmatrix.x4", B_X4)])))
    assert _grid(root, "expected") == {**_fragment_map(F16, "B"), **_fragment_map(F16, "B", (0, 8))}


def test_a_transposed_load_places_each_register_element_on_the_tile_element_it_holds():
    """Received: lane L's element e sits on the cell of the tile element it holds (the mismatch's got)."""
    r = check_load(F16, "A", A16, [("ldmatrix.x4.trans", A_X4)])
    assert r.kinds == ["transposed"]
    root = svg_labels.parse(draw_check(r))
    received = _grid(root, "received")
    form = fragsim.instructions.lookup(F16)
    for m in r.mismatches:
        assert received[m.got] == f"T{m.lane} {form.element_name('A', m.reg, m.half)}"


@pytest.mark.parametrize("case", ["load", "store", "copy"])
def test_the_marked_cells_are_the_cells_the_mismatches_name(case):
    """A cell differs where an element is missing or another one arrived: the wants and the gots."""
    if case == "load":
        r = check_load(F16, "A", A16, [("ldmatrix.x4", "(lane % 16) * 32 + (1 - lane / 16) * 16")])
    elif case == "store":
        r = check_store(F32, "C", fragsim.Tile(16, 8, "f32"), [("st.shared.v2.b32", "(lane / 4) * 32 + (lane % 4) * 8"),
                                                                ("st.shared.v2.b32", "(lane / 4 + 9) * 32 + (lane % 4) * 8")])
    else:
        r = check_copy("16x32 f16", [("cp.async.ca.16", "(32 * pass + lane) * 16 + (lane / 16) * 512")],
                       variables={"pass": range(2)})
    assert not r.ok and r.mismatches
    root = svg_labels.parse(draw_check(r))
    named = {m.want for m in r.mismatches} | {m.got for m in r.mismatches if m.got is not None}
    assert _marked(root, "received") == _marked(root, "expected") == named


def test_a_store_off_the_tile_leaves_its_cells_empty_and_counts_the_lost_elements():
    r = check_store(F32, "C", fragsim.Tile(16, 8, "f32"), [("st.shared.v2.b32", "(lane / 4) * 32 + (lane % 4) * 8"),
                                                            ("st.shared.v2.b32", "(lane / 4) * 32 + (lane % 4) * 8")])
    root = svg_labels.parse(draw_check(r))
    assert set(_grid(root, "received")) == {(row, c) for row in range(8) for c in range(8)}
    texts = " ".join(t.text or "" for t in root.iter(svg_labels.NS + "text"))
    assert "64 stored elements land outside the tile's elements" in texts


def test_a_128x128_copy_draws_its_differences_as_a_third_grid(tmp_path):
    """Large tiles: colour only (no labels), and the mismatches as their own grid, not outlines."""
    r = check_copy("128x128 f16 swizzle=3,4,3", [("cp.async.cg.16", "(32 * pass + lane) * 16")],
                   variables={"pass": range(64)})
    assert not r.ok
    draw_check(r, tmp_path / "c.png")
    root = svg_labels.parse(draw_check(r))
    texts = [t.text for t in root.iter(svg_labels.NS + "text")]
    assert svg_labels.labels(root) == {} and "red: received is not expected" in texts


@pytest.mark.parametrize("ext,magic", [("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_every_format_opens(tmp_path, ext, magic):
    path = tmp_path / f"c.{ext}"
    draw_check(check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)]), path)
    assert path.read_bytes().startswith(magic)


def test_a_check_report_shows_its_picture_in_jupyter():
    r = check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)])
    from PIL import Image
    assert Image.open(io.BytesIO(r._repr_png_())).format == "PNG"
    assert _grid(svg_labels.parse(r._repr_svg_()), "received") == _fragment_map(F16, "A")


def test_only_a_check_report_has_this_picture():
    with pytest.raises(TypeError, match="result of fragsim.check_load, check_store or check_copy"):
        draw_check(fragsim.bank_conflicts("ldmatrix.x4", np.arange(32) * 16))


CLI = ["--form", F16, "--operand", "A", "--tile", "16x16 f16", "--load", "ldmatrix.x4.trans: " + A_X4]


def test_fragsim_draw_check_takes_the_arguments_of_fragsim_check(tmp_path, capsys):
    path = tmp_path / "c.svg"
    assert main(["draw", "check", *CLI, "-o", str(path)]) == 0
    assert capsys.readouterr().out == f"WRONG: 224 of 256 elements are not where they must be\nwrote {path}\n"
    assert len(_marked(svg_labels.parse(path.read_text()), "received")) == 224


def test_fragsim_check_png_draws_it_and_keeps_its_exit_code(tmp_path, capsys):
    png = tmp_path / "c.png"
    assert main(["check", *CLI, "--png", str(png)]) == 1          # 1: the address math is wrong
    assert png.read_bytes().startswith(b"\x89PNG") and capsys.readouterr().out.endswith(f"wrote {png}\n")
    assert main(["check", *CLI, "--svg", str(tmp_path / "c.png")]) == 2
    assert "--svg" in capsys.readouterr().err


@pytest.mark.parametrize("tile,expr", [("16x16 f16", "ldmatrix.x4.trans: (lane % 16) * 32 + (lane / 16) * 16"),
                                       ("32x16 f16", "ldmatrix.x4: (lane % 16) * 64 + (lane / 16) * 16")])
def test_the_caption_counts_the_wrong_elements_as_the_text_report_does(tile, expr):
    """The text says "240 of 256 elements"; the caption names that count and what its outlined cells are:
    the places the wrong elements must be, and the other cells they landed in (368 in all for the
    64-byte pitch: 240 + 128), each count equal to the outlines drawn."""
    import re
    op, addrs = expr.split(": ")
    r = check_load(F16, "A", tile, [(op, addrs)])
    wrong, compared = (int(x) for x in re.match(r"WRONG: (\d+) of (\d+) elements", r.verdict()).groups())
    root = svg_labels.parse(draw_check(r))
    caption = next(t.text for t in root.iter(svg_labels.NS + "text") if (t.text or "").startswith("red outline"))
    m = re.match(r"red outline: (\d+) cells?: where the (\d+) wrong elements? of (\d+) must be \((\d+) cells?\)"
                 r"(?: and the (\d+) other cells? they landed in)?", caption)
    assert m, caption
    cells, named, of, places, landed = (int(x or 0) for x in m.groups())
    assert (named, of) == (wrong, compared)
    assert cells == len(_marked(root, "received")) == places + landed
    assert places == len({x.want for x in r.mismatches})
