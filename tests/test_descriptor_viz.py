"""Pictures of the canonical layouts (viz/canonical.py): what each shows is read back from the SVG text."""

import pytest

from fragsim.cli import main
from fragsim.layout.descriptor import MatrixDescriptor, canonical_descriptor, operand_addresses
from fragsim.viz._figure import svg_text
from fragsim.viz.canonical import draw_canonical


def texts(fig):
    return svg_text(fig)


@pytest.mark.parametrize("mode, major, lbo_shown, sbo_shown", [
    ("none", "K", True, True), ("128B", "K", False, True), ("64B", "MN", True, True), ("128B", "MN", False, True),
])
def test_lbo_and_sbo_arrows_appear_where_the_layout_uses_them(mode, major, lbo_shown, sbo_shown):
    d = canonical_descriptor(mode, major=major, rows=64)
    svg = texts(draw_canonical(d, major=major, rows=64))
    assert (f"LBO = {d.leading_byte_offset} B" in svg) == lbo_shown
    assert (f"SBO = {d.stride_byte_offset} B" in svg) == sbo_shown
    assert ("LBO unused" in svg) == (not lbo_shown)


def test_each_memory_slot_names_the_operand_chunk_the_descriptor_reads_there():
    """K-major 128B, row 1: its first 16 bytes of K sit in slot 1 ^ 1 = 0 of line 1 (Swizzle<3,4,3>)."""
    d = canonical_descriptor("128B", rows=8)
    a = operand_addresses(d, rows=8, k=16, elem_bits=16)
    assert a[1, 0] == 128 + 16 and a[1, 8] == 128
    svg = texts(draw_canonical(d, rows=8))
    assert svg.count(">1,k0<") == 2 and svg.count(">1,k8<") == 2      # the operand grid and memory


def test_canonical_descriptor_is_cutes_k_major_sw128():
    """CuTe's make_gmma_desc on tile_to_shape(Layout_K_SW128_Atom<bf16>, (64, 64)): SBO 1024 (64 in
    16-byte units), LBO 1 (16 bytes), layout type B128."""
    assert canonical_descriptor("128B").encode() == (1 << 62) | (64 << 32) | (1 << 16)


def test_the_descriptor_shows_itself_in_jupyter():
    d = MatrixDescriptor(0, 16, 1024, 0, "128B")
    assert d._repr_png_()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "descriptor 0x4000004000010000" in d._repr_svg_()


def test_draw_canonical_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "c.svg"
    assert main(["draw", "canonical", "--swizzle", "32B", "--rows", "16", "-o", str(out)]) == 0
    assert "Swizzle&lt;1,4,3&gt;" in out.read_text() or "Swizzle<1,4,3>" in out.read_text()
    assert main(["draw", "canonical", "--major", "MN", "--bits", "32", "-o", str(out)]) == 2
    assert "16-bit elements only" in capsys.readouterr().err
