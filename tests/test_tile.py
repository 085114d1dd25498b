"""fragsim.Tile (a matrix in shared memory) and fragsim.XorMap (a GF(2) swizzle)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fragsim
from fragsim import Swizzle, Tile, XorMap

ESIZE = {"u8": 1, "bf16": 2, "f16": 2, "f32": 4, "tf32": 4, "f64": 8}


@st.composite
def valid_tiles(draw):
    """Any tile the constructor accepts: sizes, orders, pitches and swizzles that fit."""
    dtype = draw(st.sampled_from(sorted(ESIZE)))
    e = ESIZE[dtype]
    rows, cols = draw(st.integers(1, 40)), draw(st.integers(1, 40))
    order = draw(st.sampled_from(["row", "col"]))
    line = (cols if order == "row" else rows) * e
    pitch = line + e * draw(st.integers(0, 8))
    kind = draw(st.sampled_from(["none", "swizzle", "xor", "callable"]))
    sw = None
    if kind == "swizzle":
        sw = Swizzle(draw(st.integers(1, 3)), draw(st.integers(e.bit_length() - 1, 6)), draw(st.integers(3, 5)))
    elif kind == "xor":
        sw = XorMap.xor({draw(st.integers(e.bit_length() - 1, 5)): [draw(st.integers(6, 12))]})
    elif kind == "callable":
        def sw(off):
            return off            # the identity, written as a function
    base = draw(st.integers(0, 4)) * 4096
    try:
        return Tile(rows, cols, dtype, order, pitch, sw, base)
    except ValueError:            # not a bijection of this footprint, or misaligned: draw another
        from hypothesis import reject
        reject()


@settings(max_examples=150, deadline=None)
@given(valid_tiles(), st.integers(0, 2**32))
def test_read_after_write_gives_the_matrix_back_for_every_valid_layout(tile, seed):
    x = np.random.default_rng(seed).integers(0, 256 ** tile.elem_bytes, (tile.rows, tile.cols),
                                             dtype=np.uint64).astype(tile.bits_dtype)
    smem = np.zeros(tile.size, np.uint8)
    tile.write(smem, x)
    assert np.array_equal(tile.read(smem), x)


@settings(max_examples=80, deadline=None)
@given(valid_tiles())
def test_locate_inverts_offset(tile):
    idx = np.arange(tile.elements)
    found, byte = tile.locate(tile.offset_of(idx))
    assert np.array_equal(found, idx) and not byte.any()


def test_offset_is_base_plus_the_swizzled_row_major_offset():
    sw = Swizzle(3, 4, 3)
    t = Tile(64, 64, "f16", swizzle=sw, base=2048)
    r, c = np.meshgrid(np.arange(64), np.arange(64), indexing="ij")
    assert np.array_equal(t.offset(r, c), 2048 + sw(r * 128 + c * 2))
    assert t.offset(1, 0) == 2048 + sw(128)


def test_column_order_and_pitch_place_columns_pitch_bytes_apart():
    t = Tile(16, 8, "bf16", order="col", pitch=48)
    assert t.offset(0, 1) == 48 and t.offset(3, 2) == 2 * 48 + 3 * 2
    assert (t.lines, t.line_bytes, t.overhead) == (8, 32, 8 * 16)


def test_write_lays_bytes_little_endian():
    t = Tile(1, 2, "f32", pitch=16, base=16)
    smem = np.zeros(32, np.uint8)
    t.write(smem, np.array([[0x04030201, 0x08070605]], np.uint32))
    assert smem[16:24].tolist() == [1, 2, 3, 4, 5, 6, 7, 8]


@pytest.mark.parametrize("kwargs,msg", [
    (dict(pitch=60), r"pitch 60 is smaller than a row \(64 bytes = 32 bf16\)"),
    (dict(pitch=65), r"pitch 65 is not a multiple of the element size \(2 bytes, bf16\)"),
    (dict(swizzle=Swizzle(3, 4, 3), base=512), r"base 0x200 is not aligned as Swizzle<3,4,3> needs \(1024 bytes"),
    (dict(base=3), r"base 0x3 must be a non-negative multiple of the element size"),
    (dict(swizzle=Swizzle(2, 0, 3)), r"Swizzle<2,0,3> splits bf16 elements"),
    (dict(swizzle=Swizzle(2, 12, -2)), r"not a bijection on the tile's footprint: it sends element .* outside"),
    (dict(swizzle=XorMap([1, 2, 4, 8, 16, 32, 64, 64])), r"not a bijection on the tile's footprint: elements"),
    (dict(swizzle=lambda off: off // 2), r"splits bf16 elements"),
    (dict(swizzle=lambda off: off % 64), r"not a bijection on the tile's footprint: elements \(0, 0\) and \(1, 0\)"),
])
def test_each_refusal_names_its_rule(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        Tile(128, 32, "bf16", **kwargs)


def test_padding_and_swizzle_that_moves_into_the_padding_is_refused():
    with pytest.raises(ValueError, match="outside the bytes the tile occupies"):
        Tile(8, 32, "bf16", pitch=80, swizzle=Swizzle(1, 6, 1))


@pytest.mark.parametrize("args,exc,msg", [
    ((0, 8, "f16"), ValueError, "rows and cols must be >= 1"),
    ((8, 8, "f12"), ValueError, "unknown dtype 'f12'"),
    ((8, 8, "f16", "diag"), ValueError, "Tile order must be one of 'row', 'col'"),
    ((8.0, 8, "f16"), TypeError, "Tile rows must be an integer"),
    ((8, 8, "f16", "row", None, "3,4,3"), TypeError, "swizzle must be a fragsim.Swizzle"),
])
def test_bad_parameters_are_refused_in_one_line(args, exc, msg):
    with pytest.raises(exc, match=msg):
        Tile(*args)


def test_a_swizzle_callable_that_fails_on_arrays_is_named():
    with pytest.raises(TypeError, match="failed on an int64 array of byte offsets"):
        Tile(8, 8, "f16", swizzle=lambda off: int(off) ^ 16)


def test_write_refuses_floats_wrong_shapes_and_short_smem():
    t = Tile(4, 4, "bf16")
    with pytest.raises(TypeError, match="to_bits"):
        t.write(np.zeros(64, np.uint8), np.zeros((4, 4), np.float32))
    with pytest.raises(ValueError, match=r"shaped \(4, 4\)"):
        t.write(np.zeros(64, np.uint8), np.zeros((4, 5), np.uint16))
    with pytest.raises(ValueError, match="element \\(0, 1\\) = 65536 is not a 16-bit pattern"):
        t.write(np.zeros(64, np.uint8), np.array([[0, 65536, 0, 0]] * 4))
    with pytest.raises(ValueError, match="too small for the tile"):
        t.read(np.zeros(16, np.uint8))


def test_parse_and_spec_round_trip():
    t = Tile.parse("128x32 bf16 pitch=80 base=0x400")
    assert t == Tile(128, 32, "bf16", pitch=80, base=1024)
    s = Tile.parse("64x64 f16 col swizzle=3,4,3")
    assert s.order == "col" and s.swizzle == Swizzle(3, 4, 3)
    assert Tile.parse(s.spec()) == s
    with pytest.raises(ValueError, match="unexpected 'pich=80'"):
        Tile.parse("64x64 f16 pich=80")


def test_tile_is_public_and_layout_name_says_what_the_layout_is():
    assert fragsim.Tile is Tile
    assert Tile(8, 64, "f16", swizzle=XorMap.of(Swizzle(3, 4, 3))).layout_name == "Swizzle<3,4,3>"
    assert Tile(8, 32, "f16", pitch=80).layout_name == "pitch 80 (+16 B/row)"
    assert Tile(8, 32, "f16").layout_name == "none"


# -- XorMap ----------------------------------------------------------------------------------------

swizzles = st.tuples(st.integers(0, 4), st.integers(0, 6), st.integers(-8, 8)).filter(
    lambda t: abs(t[2]) >= t[0]).map(lambda t: Swizzle(*t))


@given(swizzles, st.integers(0, 1 << 24))
def test_every_swizzle_is_an_xor_map(sw, off):
    x = XorMap.of(sw)
    assert x(off) == sw(off)
    assert x.is_bijective()
    assert x.swizzle() == (sw if sw.B else Swizzle(0, 0, 0))


def test_xor_notation_and_alignment():
    x = XorMap.xor({4: [7], 5: [8]})
    assert x == XorMap.of(Swizzle(2, 4, 3)) and repr(x) == "XorMap(b4^=b7, b5^=b8)"
    assert x.swizzle() == Swizzle(2, 4, 3) and x.alignment == 512 and x.low_bits_kept == 4
    y = XorMap.xor({4: [7, 9]})
    assert y.swizzle() is None and y(0b1010000000) == 0b1010000000 ^ 0 and y(1 << 7) == (1 << 7) | 16
    assert XorMap([]).is_identity and XorMap([1, 2]).is_identity


def test_xor_map_as_linear_layout_is_the_same_map():
    x = XorMap.xor({4: [7, 9], 6: [8]})
    (out,) = x.as_layout(12).apply(offset=np.arange(4096))
    assert np.array_equal(out, x(np.arange(4096)))


def test_a_singular_xor_map_is_not_bijective():
    assert not XorMap([1, 1]).is_bijective()
    with pytest.raises(ValueError, match="cannot be XORed with itself"):
        XorMap.xor({4: [4]})
