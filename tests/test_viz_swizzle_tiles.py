"""Swizzle views (each physical slot names the logical chunk the layout puts there) and warp/CTA tiles."""

import pytest
import svg_labels

import fragsim
from fragsim.viz.swizzle import draw_swizzle
from fragsim.viz.tiles import draw_cta_tile, draw_warp_tile


def _physical(fig):
    """{(line, slot): "r,c"} of the memory panel."""
    got = svg_labels.labels(svg_labels.parse(fig))
    return {tuple(int(x) for x in k.split("-")[1:]): v for k, v in got.items() if k.startswith("physical-")}


@pytest.mark.parametrize("B", [1, 2, 3])
def test_each_memory_slot_holds_the_chunk_the_swizzle_sends_there(B):
    sw = fragsim.Swizzle(B, 4, 3)
    phys = _physical(draw_swizzle(sw))
    rows = max(8, sw.alignment // 128)
    want = {}
    for r in range(rows):
        for c in range(8):
            a = sw(r * 128 + c * 16)
            want[(a // 128, (a % 128) // 16)] = f"{r},{c}"
    assert phys == want


def test_swizzle_on_element_offsets_is_the_byte_swizzle_one_bit_up():
    """CuTe's Swizzle<3,3,3> over fp16 elements places chunks as Swizzle<3,4,3> over bytes."""
    assert _physical(draw_swizzle(fragsim.Swizzle(3, 3, 3), offset_bytes=2)) == \
        _physical(draw_swizzle(fragsim.Swizzle(3, 4, 3)))


def test_padding_shows_the_padding_slots_and_the_logical_columns_bank_groups():
    fig = draw_swizzle(None, pitch=144)
    phys = _physical(fig)
    assert sum(v == "pad" for v in phys.values()) == 7           # 16 pad bytes after each of rows 0-6
    assert phys[(1, 1)] == "1,0"                                  # row 1 starts 16 bytes into line 1
    logical = svg_labels.labels(svg_labels.parse(fig))
    assert [logical[f"logical-{r}-0"].split()[1] for r in range(3)] == ["b0-3", "b4-7", "b8-11"]


def test_per_column_cost_is_what_an_ldmatrix_phase_pays():
    texts = lambda fig: [t.text for t in svg_labels.parse(fig).iter(svg_labels.NS + "text")]  # noqa: E731
    assert texts(draw_swizzle(None)).count("8") >= 8               # every column: 8 rows in one bank group
    assert texts(draw_swizzle(fragsim.Swizzle(3, 4, 3))).count("1") >= 8


def test_swizzle_moving_bytes_inside_a_chunk_is_refused():
    with pytest.raises(ValueError, match="moves bytes within a 16-byte chunk"):
        draw_swizzle(fragsim.Swizzle(3, 2, 3))
    with pytest.raises(ValueError, match="row_bytes must be a positive multiple of 16"):
        draw_swizzle(None, row_bytes=100)


def test_warp_tile_cells_are_the_mma_fragments_repeated():
    root = svg_labels.parse(draw_warp_tile("m16n8k16.row.col.f32.f16.f16.f32", 2, 2))
    texts = [t.text for t in root.iter(svg_labels.NS + "text")]
    assert texts.count("T5") == 4 * 4 + 8 * 2 + 4 * 2            # C: 4 per tile; A: 8 per m-tile; B: 4 per n-tile
    assert {"0,0", "0,1", "1,0", "1,1", "A0", "A1", "B0", "B1"} <= set(texts)


def test_cta_tile_names_each_warp_by_its_id():
    root = svg_labels.parse(draw_cta_tile((128, 128), (2, 4), warp_order="col"))
    texts = " ".join(t.text or "" for t in root.iter(svg_labels.NS + "text"))
    assert "warp 1 (warp_m 1, warp_n 0)" in texts and "warp 2 (warp_m 0, warp_n 1)" in texts
    assert "A rows 0-63: warps 0, 2, 4, 6" in texts and "B cols 96-127: warps 6, 7" in texts


def test_tile_shapes_that_do_not_split_are_refused():
    with pytest.raises(ValueError, match="must split into 2x2 warp tiles of whole 16x8 mma tiles"):
        draw_cta_tile((112, 128), (2, 2))
    with pytest.raises(ValueError, match="m_tiles must be an integer in 1..64"):
        draw_warp_tile(m_tiles=0)
