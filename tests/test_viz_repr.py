"""Objects that have a picture show it in Jupyter: Swizzle, XorMap, Tile and MmaForm return a PNG
and an SVG whose cells say what the object computes; importing fragsim still loads no matplotlib."""

import io
import subprocess
import sys

import numpy as np
import pytest
import svg_labels

import fragsim
from fragsim.instructions import FORMS


def _png_opens(data: bytes):
    from PIL import Image
    img = Image.open(io.BytesIO(data))
    img.load()
    assert img.format == "PNG" and min(img.size) > 100


@pytest.mark.parametrize("swizzle", [fragsim.Swizzle(3, 4, 3), fragsim.XorMap.of(fragsim.Swizzle(2, 4, 3)),
                                     fragsim.Swizzle(2, 4, 3)], ids=repr)
def test_a_swizzle_shows_where_each_16_byte_chunk_of_128_byte_rows_lands(swizzle):
    """Logical cell (r, c): the banks chunk c of row r lands in; physical slot: the chunk it holds."""
    _png_opens(swizzle._repr_png_())
    got = svg_labels.labels(svg_labels.parse(swizzle._repr_svg_()))
    rows = max(8, swizzle.alignment // 128)
    r, c = np.mgrid[0:rows, 0:8]
    dest = np.asarray(swizzle(r * 128 + c * 16))
    bank = dest // 4 % 32
    assert {k: v for k, v in got.items() if k.startswith("logical-")} == \
        {f"logical-{i}-{j}": f"{i},{j} b{bank[i, j]}-{bank[i, j] + 3}" for i, j in np.ndindex(rows, 8)}
    assert {k: v for k, v in got.items() if k.startswith("physical-")} == \
        {f"physical-{dest[i, j] // 128}-{dest[i, j] % 128 // 16}": f"{i},{j}" for i, j in np.ndindex(rows, 8)}


def test_a_tile_shows_the_bank_of_every_element():
    tile = fragsim.Tile.parse("16x64 f16 pitch=144")
    _png_opens(tile._repr_png_())
    got = svg_labels.labels(svg_labels.parse(tile._repr_svg_()))
    r, c = np.mgrid[0:16, 0:64]
    bank = np.asarray(tile.offset(r, c)) // 4 % 32
    assert {k: int(v) for k, v in got.items()} == {f"bank-{i}-{j}": int(bank[i, j]) for i, j in np.ndindex(16, 64)}


@pytest.mark.parametrize("name", ["m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k8.row.col.f32.tf32.tf32.f32",
                                  "m8n8k4.row.col.f64.f64.f64.f64"])
def test_an_mma_form_shows_its_combined_fragment_map(name):
    """Every cell of A, B and C/D labelled with the instruction table's lane and element."""
    form = FORMS[name]
    _png_opens(form._repr_png_())
    got = svg_labels.labels(svg_labels.parse(form._repr_svg_()))
    ops = "ABC" if form.layout("C") == form.layout("D") else "ABCD"
    want = {}
    for op in ops:
        lane, reg, half = form.owner(op)
        want.update({f"{op}-{r}-{c}": f"T{lane[r, c]} {form.element_name(op, reg[r, c], half[r, c])}"
                     for r, c in np.ndindex(lane.shape)})
    assert got == want


def test_importing_fragsim_and_making_these_objects_loads_no_matplotlib():
    code = ("import sys, fragsim; fragsim.Swizzle(3, 4, 3); fragsim.Tile.parse('16x64 f16'); "
            "fragsim.instructions.lookup('m16n8k16.row.col.f32.f16.f16.f32'); "
            "assert 'matplotlib' not in sys.modules, 'matplotlib imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_64x64_tile_picture_is_small_and_still_says_each_bank():
    """4,096 cells: one image of the banks' colours and white gaps (a named <rect> and <text> per cell
    made 2.2 MB of SVG); every pixel of the image is its element's bank colour."""
    from fragsim.viz.banks import draw_bank_map
    from fragsim.viz.palette import BANK_RGB
    tile = fragsim.Tile(64, 64, "f16", swizzle=fragsim.Swizzle(3, 4, 3))
    svg = tile._repr_svg_()
    assert len(svg.encode()) < 200_000 and svg.count("<rect") < 100
    (img,) = draw_bank_map(tile).axes[0].images
    r, c = np.mgrid[0:64, 0:64]
    assert np.array_equal(np.asarray(img.get_array()), BANK_RGB[np.asarray(tile.offset(r, c)) // 4 % 32])
