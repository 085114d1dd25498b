"""wgmma fragment-map pictures (viz/warpgroup_map.py): every cell's label is the wgmma table's thread
and element; the two halves of a 16-bit register pair are one box; large maps (m64n256) keep the
lane colours without labels, as one image; files are reproducible."""

import numpy as np
import pytest

import svg_labels
from fragsim.instructions.wgmma import lookup_wgmma
from fragsim.viz.palette import LANE_RGB
from fragsim.viz.warpgroup_map import draw_warpgroup_map
from fragsim.sim.wgmma import owners


@pytest.mark.parametrize("form, op", [("m64n8k16.f16.f16.f16", "D"), ("m64n16k16.f32.bf16.bf16", "C"),
                                      ("m64n8k32.s32.s8.s8", "A"), ("m64n8k8.f32.tf32.tf32", "A")])
def test_labels_equal_the_wgmma_table(form, op):
    """Each cell reads ``T<thread>`` over ``<operand><element>``, element = register * per-register + half."""
    f = lookup_wgmma(form)
    thread, reg, half = owners(f, op)
    epr = f.elems_per_reg(op)
    got = svg_labels.labels(svg_labels.parse(draw_warpgroup_map(form, op)))
    assert got == {f"{op}-{r}-{c}": f"T{thread[r, c]} {op.lower()}{reg[r, c] * epr + half[r, c]}"
                   for r, c in np.ndindex(thread.shape)}


def test_register_halves_are_one_box():
    """.f16x2 D: d0|d1 of one register touch; neighbouring registers keep a gap."""
    rects = svg_labels.rects(svg_labels.parse(draw_warpgroup_map("m64n8k16.f16.f16.f16", "D")))
    assert rects["D-0-0"][2] == pytest.approx(rects["D-0-1"][0])          # d0 | d1: one register
    assert rects["D-0-1"][2] < rects["D-0-2"][0] - 0.5                    # next register
    f32 = svg_labels.rects(svg_labels.parse(draw_warpgroup_map("m64n8k16.f32.f16.f16", "D")))
    assert f32["D-0-0"][2] < f32["D-0-1"][0] - 0.5                        # f32: one element a register


def test_large_map_keeps_colour_and_drops_labels(tmp_path):
    """m64n256 (16,384 cells): no labels, the lanes' colours as one image, the warp bands tagged; the
    SVG stays small (per-cell shapes would be megabytes)."""
    form = "m64n256k16.f32.f16.f16"
    fig = draw_warpgroup_map(form, "D", tmp_path / "d.svg")
    thread = owners(lookup_wgmma(form), "D")[0]
    (img,) = fig.axes[0].images
    assert np.array_equal(np.asarray(img.get_array()), LANE_RGB[thread % 32])
    root = svg_labels.parse((tmp_path / "d.svg").read_text())
    assert svg_labels.labels(root) == {}
    assert {f"warp-{w}" for w in range(4)} <= svg_labels.ids(root)
    assert (tmp_path / "d.svg").stat().st_size < 200_000


@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG\r\n\x1a\n"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_every_format_opens(tmp_path, ext, magic):
    path = tmp_path / f"a.{ext}"
    draw_warpgroup_map("m64n8k16.f32.f16.f16", "D", path)
    assert path.read_bytes().startswith(magic)


@pytest.mark.parametrize("form", ["m64n8k16.f16.f16.f16", "m64n256k16.f32.f16.f16"])
@pytest.mark.parametrize("ext", ["png", "svg"])
def test_files_are_reproducible(tmp_path, form, ext):
    """Saved through viz/_figure.save: the same bytes every time (SVG: no date, fixed ids)."""
    a, b = tmp_path / f"a.{ext}", tmp_path / f"b.{ext}"
    draw_warpgroup_map(form, "D", a)
    draw_warpgroup_map(form, "D", b)
    assert a.read_bytes() == b.read_bytes()
