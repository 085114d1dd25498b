"""Bank pictures: a tile's cells carry the bank of their word; a phase's grid has one row per
wavefront and puts each distinct word of a bank in its own row; the report pictures render."""

import numpy as np
import pytest
import svg_labels

import fragsim
from fragsim.viz import banks

LANE = np.arange(32)
A_READS = (LANE % 16) * 128 + (LANE // 16) * 16


@pytest.mark.parametrize("swizzle", [None, fragsim.Swizzle(3, 4, 3)])
def test_bank_map_labels_are_the_banks_of_each_element(swizzle):
    fig = banks.draw_bank_map(rows=16, cols=64, dtype="f16", swizzle=swizzle)
    got = svg_labels.labels(svg_labels.parse(fig))
    r, c = np.mgrid[0:16, 0:64]
    off = r * 128 + c * 2
    bank = ((off if swizzle is None else swizzle(off)) // 4) % 32
    assert {k: int(v) for k, v in got.items()} == {f"bank-{i}-{j}": int(bank[i, j]) for i, j in np.ndindex(16, 64)}


def test_bank_map_of_a_swizzled_tile_spreads_the_first_chunk_column_over_8_bank_groups():
    """The picture's point: chunk column 0 of rows 0-7 (what ldmatrix's phase 0 reads) lands in 8
    different groups of 4 banks with Swizzle<3,4,3>, in one group without."""
    def groups(sw):
        got = svg_labels.labels(svg_labels.parse(banks.draw_bank_map(rows=8, cols=64, dtype="f16", swizzle=sw)))
        return {int(got[f"bank-{r}-0"]) // 4 for r in range(8)}
    assert len(groups(None)) == 1 and len(groups(fragsim.Swizzle(3, 4, 3))) == 8


def test_phase_grid_has_a_row_per_wavefront_and_a_word_per_cell():
    """ldmatrix.x4 on 128-byte rows: each phase 8 wavefronts, one lane per row of banks 0-3 or 4-7."""
    rep = fragsim.bank_conflicts("ldmatrix.x4", A_READS)
    root = svg_labels.parse(banks.draw_bank_phases(rep))
    ids = svg_labels.ids(root)
    for ph in rep.phases:
        rows = {int(i.split("-")[1]) for i in ids if i.startswith(f"phase{ph.index}-")}
        assert len(rows) == ph.wavefronts == 8
    texts = [t.text for t in root.iter(svg_labels.NS + "text")]
    assert all(f"T{k}" in texts for k in range(32))                     # each lane its own word
    assert "phase 0: lanes T0-7  8 wavefronts, conflicts in banks 0-3" in texts


def test_conflict_free_phases_are_one_row_and_broadcast_lanes_share_a_cell():
    sw = fragsim.Swizzle(3, 4, 3)
    root = svg_labels.parse(banks.draw_bank_phases("ldmatrix.x4", sw(A_READS)))
    assert {i.split("-")[1] for i in svg_labels.ids(root) if i.startswith("phase")} == {"0"}
    texts = [t.text for t in root.iter(svg_labels.NS + "text")]
    assert "32 wavefronts" not in " ".join(t or "" for t in texts)
    bc = svg_labels.parse(banks.draw_bank_phases("ld.shared.b32", LANE // 8 * 4))     # 8 lanes per word
    assert {"T0-7", "T8-15", "T16-23", "T24-31"} <= {t.text for t in bc.iter(svg_labels.NS + "text")}


def test_lane_strip_marks_lanes_that_give_no_address():
    got = svg_labels.labels(svg_labels.parse(banks.draw_bank_phases("ldmatrix.x1", LANE * 16)))
    assert got["lane-7"] == "T7 28" and got["lane-8"] == "T8 -"


@pytest.mark.parametrize("draw", [banks.draw_bank_histogram, banks.draw_bank_report])
@pytest.mark.parametrize("op,addrs", [("ldmatrix.x4", A_READS), ("cp.async.ca.16", LANE * 16),
                                      ("st.shared.v4.b32", LANE * 16)])
def test_histogram_and_report_render_every_kind_of_instruction(tmp_path, draw, op, addrs):
    path = tmp_path / "h.png"
    draw(op, addrs, path=path)
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_report_argument_errors():
    rep = fragsim.bank_conflicts("ldmatrix.x4", A_READS)
    with pytest.raises(ValueError, match="not both"):
        banks.draw_bank_phases(rep, A_READS)
    with pytest.raises(ValueError, match="one instruction"):
        banks.draw_bank_phases("ldmatrix.x4", np.stack([A_READS, A_READS]))
    with pytest.raises(ValueError, match="phase must be in 0..3"):
        banks.draw_bank_map(rows=16, cols=64, access=("ldmatrix.x4", A_READS), phase=4)
    with pytest.raises(ValueError, match="lane 3: ldmatrix row address"):
        banks.draw_bank_phases("ldmatrix.x4", A_READS + (LANE == 3) * 4)


def test_a_128x128_tile_drops_its_labels():
    """Large tiles stay legible: colour for every element, no unreadable numbers (their drawing time:
    benchmarks, not a test)."""
    fig = banks.draw_bank_map(rows=128, cols=128, dtype="f16", swizzle=fragsim.Swizzle(3, 4, 3))
    assert svg_labels.labels(svg_labels.parse(fig)) == {}


def test_a_bank_report_shows_its_picture_in_jupyter():
    r = fragsim.bank_conflicts("ldmatrix.x4", (np.arange(32) % 16) * 128)
    assert r._repr_png_().startswith(b"\x89PNG") and "<svg" in r._repr_svg_()


def test_cp_async_steps_are_called_groups_as_in_the_text_report():
    lane = np.arange(32)
    rep = fragsim.bank_conflicts("cp.async.ca.16", lane * 16, src=lane * 16 + 16)
    root = svg_labels.parse(banks.draw_bank_phases(rep))
    texts = [t.text or "" for t in root.iter(svg_labels.NS + "text")]
    assert "group 4: lanes T31  1 wavefront" in texts and not any(t.startswith("phase ") for t in texts)


def _title(fig) -> str:
    """The figure's title (its top text), no-break spaces read as spaces."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    renderer = FigureCanvasAgg(fig).get_renderer()
    top = max((t for t in fig.findobj(Text) if t.get_text().strip()), key=lambda t: t.get_window_extent(renderer).y1)
    return top.get_text().replace("\u00a0", " ")


def test_a_bank_map_title_names_the_tile_and_the_address_pattern():
    """Not only the file name tells the tour's pictures apart: the tile, the lanes' addresses as a kernel
    writes them (a Swizzle of a lane expression) and where they fall in the tile."""
    sw = fragsim.Swizzle(3, 4, 3)
    fig = banks.draw_bank_map(rows=16, cols=64, dtype="f16", swizzle=sw, access=("ldmatrix.x4", sw(A_READS)))
    title = _title(fig)
    assert "16x64 f16, Swizzle<3,4,3>" in title
    assert "Swizzle<3,4,3>((lane % 16) * 128 + (lane / 16) * 16) = tile[lane % 16, (lane / 16) * 8]" in title


@pytest.mark.parametrize("draw", [banks.draw_bank_phases, banks.draw_bank_histogram, banks.draw_bank_report])
def test_a_report_title_names_the_address_pattern_and_the_tile_when_given(draw):
    tile = fragsim.Tile(16, 64, "f16", pitch=144)
    padded = (LANE % 16) * 144 + (LANE // 16) * 16
    assert "addresses (lane % 16) * 128 + (lane / 16) * 16" in _title(draw("ldmatrix.x4", A_READS))
    title = _title(draw("ldmatrix.x4", padded, tile=tile))
    assert "tile 16x64 f16, pitch 144" in title and "= tile[lane % 16, (lane / 16) * 8]" in title
    assert "addresses row * 144 + half * 16" in _title(draw("ldmatrix.x4", padded, pattern="row * 144 + half * 16"))


@pytest.mark.parametrize("expr,swizzle", [
    ("(lane % 16) * 128 + (lane / 16) * 16", None), ("(lane % 16) * 128 + (lane / 16) * 16", (3, 4, 3)),
    ("(lane % 16) * 64 + (lane / 16) * 16", (2, 4, 3)), ("(lane / 4) * 32 + (lane % 4) * 8 + 4096", None),
    ("lane * 16", (1, 4, 3)), ("(lane % 8) * 256 + (lane / 8) * 16", (3, 4, 4)), ("512 - lane * 4", None),
])
def test_the_described_pattern_gives_the_addresses_back(expr, swizzle):
    """describe(addresses) is an expression (or a Swizzle of one) that evaluates to the same addresses."""
    import re

    from fragsim.search.addrexpr import evaluate
    from fragsim.viz._pattern import describe
    a = evaluate(expr)
    if swizzle:
        a = np.asarray(fragsim.Swizzle(*swizzle)(a))
    said = describe(a)
    m = re.fullmatch(r"Swizzle<(\d+),(\d+),(\d+)>\((.*)\)", said)
    back = evaluate(m.group(4) if m else said)
    if m:
        back = np.asarray(fragsim.Swizzle(*(int(x) for x in m.groups()[:3]))(back))
    assert np.array_equal(back, a), said


def test_addresses_no_expression_gives_are_listed():
    from fragsim.viz._pattern import describe
    assert describe((LANE * 7) % 32 * 48) == "lanes 0..31 at 0x0, 0x150, 0x2a0, 0x3f0, ... (no lane expression)"
