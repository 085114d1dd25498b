"""The wgmma matrix descriptor (PTX ISA 9.7.15.5.1.2.2 "Matrix Descriptor Format") and the map from a
descriptor to shared-memory addresses over the canonical layouts (9.7.15.5.1.2 "Shared Memory Matrix
Layout"; CuTe's make_gmma_desc in cute/atom/mma_traits_sm90_gmma.hpp)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fragsim import Swizzle, Tile
from fragsim.layout.descriptor import MatrixDescriptor, operand_addresses, SWIZZLE_MODES

SWIZZLE = {"128B": Swizzle(3, 4, 3), "64B": Swizzle(2, 4, 3), "32B": Swizzle(1, 4, 3)}
WIDTH = {"128B": 128, "64B": 64, "32B": 32}


def desc(start=0, lbo=16, sbo=1024, base=0, swizzle="128B"):
    return MatrixDescriptor(start, lbo, sbo, base, swizzle)


# -- the 64-bit value ---------------------------------------------------------------------------------

@pytest.mark.parametrize("field, value, bits", [
    ("start_address", 0x10, 1 << 0), ("start_address", 0x3FFF0, 0x3FFF << 0),
    ("leading_byte_offset", 0x10, 1 << 16), ("leading_byte_offset", 0x3FFF0, 0x3FFF << 16),
    ("stride_byte_offset", 0x10, 1 << 32), ("stride_byte_offset", 0x3FFF0, 0x3FFF << 32),
])
def test_address_fields_hold_bits_4_to_17_at_their_documented_positions(field, value, bits):
    """Start address bits 0-13, LBO 16-29, SBO 32-45, each matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4."""
    kw = {"start_address": 0, "leading_byte_offset": 0, "stride_byte_offset": 0, field: value}
    assert MatrixDescriptor(**kw).encode() == bits


@pytest.mark.parametrize("mode, code", [("none", 0), ("128B", 1), ("64B", 2), ("32B", 3)])
def test_swizzle_mode_codes_sit_in_bits_62_63(mode, code):
    """Bits 63-62: 0 no swizzle, 1 128-byte, 2 64-byte, 3 32-byte (PTX; CuTe's LayoutType B128 = 1...)."""
    assert MatrixDescriptor(0, 0, 0, 0, mode).encode() == code << 62


def test_base_offset_sits_in_bits_49_51():
    assert MatrixDescriptor(0, 0, 0, 5, "128B").encode() == (1 << 62) | (5 << 49)


def test_a_cutlass_style_128b_descriptor_decodes_to_its_fields():
    """layout_type 1, LBO 1, SBO 64 (in 16-byte units), start 0x400 >> 4: a K-major SW128 bf16 tile."""
    v = (1 << 62) | (64 << 32) | (1 << 16) | (0x400 >> 4)
    assert MatrixDescriptor.decode(v) == desc(start=0x400, lbo=16, sbo=1024)


descriptors = st.builds(
    lambda s, l, t, sw, b: MatrixDescriptor(s * 16, l * 16, t * 16, b if sw != "none" else 0, sw),
    st.integers(0, 0x3FFF), st.integers(0, 0x3FFF), st.integers(0, 0x3FFF), st.sampled_from(SWIZZLE_MODES),
    st.integers(0, 7))


@settings(max_examples=300, deadline=None)
@given(descriptors)
def test_decode_inverts_encode(d):
    assert MatrixDescriptor.decode(d.encode()) == d
    assert MatrixDescriptor.decode(int(d)).encode() == d.encode()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**64 - 1))
def test_encode_inverts_decode_on_every_value_without_unused_bits(v):
    used = 0x3FFF | 0x3FFF << 16 | 0x3FFF << 32 | 7 << 49 | 3 << 62
    v &= used
    if v >> 62 == 0:
        v &= ~(7 << 49)         # no base offset without a swizzle
    assert MatrixDescriptor.decode(v).encode() == v


def test_an_int64_with_bit_63_set_reads_as_its_bits():
    """The 64B and 32B modes set bit 63: as a signed int64 the value is negative."""
    d = desc(swizzle="32B")
    assert MatrixDescriptor.decode(int(np.uint64(d.encode()).view(np.int64))) == d
    assert MatrixDescriptor.decode(np.uint64(d.encode())) == d


@pytest.mark.parametrize("value, words", [
    (1 << 14, "unused bits 14-15"), (1 << 47, "unused bits 46-48"), (1 << 55, "unused bits 52-61"),
    (1 << 64, "does not fit 64 bits"), (-(1 << 63) - 1, "does not fit 64 bits"),
])
def test_decode_refuses_values_outside_the_fields(value, words):
    with pytest.raises(ValueError, match=words):
        MatrixDescriptor.decode(value)


@pytest.mark.parametrize("kw, error, words", [
    ({"start_address": 0x108}, ValueError, "start_address 0x108 is not a multiple of 16"),
    ({"start_address": 0x40000}, ValueError, "start_address 0x40000 is outside"),
    ({"leading_byte_offset": -16}, ValueError, "leading_byte_offset -0x10 is outside"),
    ({"stride_byte_offset": 1000}, ValueError, "stride_byte_offset 0x3e8 is not a multiple of 16"),
    ({"base_offset": 8}, ValueError, "base_offset must be 0..7"),
    ({"base_offset": 1, "swizzle": "none"}, ValueError, "valid only for the swizzling modes"),
    ({"swizzle": "16B"}, ValueError, "swizzle must be one of"),
    ({"swizzle": 1}, TypeError, "swizzle must be one of"),
    ({"start_address": 16.0}, TypeError, "start_address must be an integer"),
])
def test_invalid_fields_are_one_line_naming_the_field_and_rule(kw, error, words):
    fields = {"start_address": 0, "leading_byte_offset": 16, "stride_byte_offset": 1024, "base_offset": 0,
              "swizzle": "128B", **kw}
    with pytest.raises(error, match=words) as e:
        MatrixDescriptor(**fields)
    assert "\n" not in str(e.value)


def test_text_names_every_field():
    d = desc(start=0x400, sbo=1024)
    assert repr(d) == ("MatrixDescriptor(start_address=0x400, leading_byte_offset=16, stride_byte_offset=1024, "
                       "base_offset=0, swizzle='128B')")
    assert str(d) == "descriptor 0x4000004000010040: start 0x400, LBO 16 B, SBO 1024 B, base offset 0, swizzle 128B"
    assert eval(repr(d), {"MatrixDescriptor": MatrixDescriptor}) == d


def test_swizzle_names_are_case_insensitive_and_cute_spellings_accepted():
    assert desc(swizzle="128b").swizzle == "128B"
    assert desc(swizzle="B64").swizzle == "64B"
    assert desc(swizzle="INTERLEAVE").swizzle == "none"


# -- canonical layouts --------------------------------------------------------------------------------

def test_k_major_no_swizzle_core_matrix_is_8_rows_of_16_contiguous_bytes():
    """INTERLEAVE ((8,m),2):((1,SBO),LBO) in 16-byte units: rows of a core matrix 16 B apart, the second
    16 B of K at LBO, the next 8 rows at SBO."""
    a = operand_addresses(desc(start=0x100, lbo=0x200, sbo=0x80, swizzle="none"), rows=16, k=16, elem_bits=16)
    assert a[0, 0] == 0x100 and a[0, 7] == 0x100 + 14
    assert a[1, 0] == 0x110 and a[7, 0] == 0x170
    assert a[0, 8] == 0x300                   # k 8..15: the core matrix LBO further
    assert a[8, 0] == 0x180                   # rows 8..15: SBO further


@pytest.mark.parametrize("mode", ["128B", "64B", "32B"])
def test_k_major_swizzled_rows_are_one_swizzle_width_apart_and_lbo_is_unused(mode):
    """((8,m),2):((W,SBO),1): row r of an 8-row group at r * width, K contiguous; "LBO not used"."""
    w = WIDTH[mode]
    a = operand_addresses(desc(lbo=16, sbo=8 * w, swizzle=mode), rows=64, k=16, elem_bits=16)
    b = operand_addresses(desc(lbo=0x3FF0, sbo=8 * w, swizzle=mode), rows=64, k=16, elem_bits=16)
    assert np.array_equal(a, b)
    assert np.array_equal(a[:, 0], SWIZZLE[mode](np.arange(64) * w))   # row r at r * width, swizzled


@pytest.mark.parametrize("mode", ["128B", "64B", "32B"])
@pytest.mark.parametrize("elem_bits, dtype", [(16, "bf16"), (32, "f32"), (8, "e4m3")])
def test_k_major_swizzled_descriptor_built_the_cute_way_reads_a_tma_box(mode, elem_bits, dtype):
    """A K-major tile written as a TMA box with the same swizzle (Tile with Swizzle<b,4,3>, one swizzle
    width of K per row): descriptor start = k-step * 32 bytes, SBO = 8 rows * width, LBO = 16 (CuTe
    sets it to 1, unused) reads exactly the tile's elements at every k-step."""
    w = WIDTH[mode]
    cols = w * 8 // elem_bits
    t = Tile(128, cols, dtype, swizzle=SWIZZLE[mode], base=2048)
    k = 256 // elem_bits
    for step in range(cols // k):
        d = desc(start=2048 + 32 * step, lbo=16, sbo=8 * w, swizzle=mode)
        got = operand_addresses(d, rows=128, k=k, elem_bits=elem_bits)
        assert np.array_equal(got, t.addresses()[:, step * k:(step + 1) * k]), step


def test_mn_major_no_swizzle_is_8_mn_elements_per_16_bytes_and_8_k_rows():
    """((T,m),(8,k)):((1,SBO),(1,LBO)): T = 8 bf16 along MN in 16 B, the next 8 at SBO; k rows 16 B
    apart, k + 8 at LBO."""
    a = operand_addresses(desc(lbo=0x400, sbo=0x80, swizzle="none"), rows=64, k=16, elem_bits=16, major="MN")
    assert a[1, 0] == 2 and a[7, 0] == 14
    assert a[8, 0] == 0x80 and a[0, 1] == 16 and a[0, 7] == 112
    assert a[0, 8] == 0x400


@pytest.mark.parametrize("mode", ["128B", "64B", "32B"])
def test_mn_major_swizzled_descriptor_built_the_cute_way_reads_a_tma_box(mode):
    """MN-major (imm-trans = 1): ((W*T,m),(8,k)):((1,LBO),(W,SBO)).  A TMA box of one swizzle width of
    M per line and K lines (Tile K x width/2 bf16, Swizzle<b,4,3>) repeated along M every 16 lines:
    LBO = the box's bytes (the next width of M), SBO = 8 lines * width (the next 8 k)."""
    w = WIDTH[mode]
    per = w // 2
    box = Tile(16, per, "bf16", swizzle=SWIZZLE[mode])
    want = np.concatenate([box.addresses().T + j * 16 * w for j in range(64 // per)])
    got = operand_addresses(desc(lbo=16 * w, sbo=8 * w, swizzle=mode), rows=64, k=16, elem_bits=16, major="MN")
    assert np.array_equal(got, want)


def test_the_swizzle_reads_absolute_address_bits_so_a_k_advance_inside_the_atom_keeps_the_pattern():
    """Model hypothesis (for the hardware to settle): start + 32 inside a 1024-byte 128B atom XORs the
    address bits 4-6 of the sum with bits 7-9, as TMA wrote them, not the offset from the start."""
    d = desc(start=32)
    a = operand_addresses(d, rows=8, k=16, elem_bits=16)
    rows = np.arange(8)
    assert np.array_equal(a[:, 0], rows * 128 + ((2 ^ rows) << 4))


def test_base_offset_shifts_the_row_phase_to_a_pattern_starting_off_its_boundary():
    """Model hypothesis: base offset b = (pattern start >> 7) & 7 reads the pattern that starts at
    128 * b as if it started on the 1024-byte boundary."""
    for b in range(8):
        d = desc(start=128 * b, base=b)
        a = operand_addresses(d, rows=64, k=16, elem_bits=16)
        assert np.array_equal(a - 128 * b, operand_addresses(desc(), rows=64, k=16, elem_bits=16)), b


@pytest.mark.parametrize("kw, words", [
    ({"rows": 60}, "rows must be a multiple of 8"),
    ({"rows": 264}, "rows must be a multiple of 8"),
    ({"k": 8}, "k must be 16 for 16-bit elements"),
    ({"elem_bits": 4, "k": 64}, "elem_bits must be 8, 16 or 32"),
    ({"elem_bits": 32, "k": 8, "major": "MN"}, "'MN' .* is for 16-bit elements only"),
    ({"major": "M"}, "major must be one of"),
])
def test_operand_shape_errors_are_one_line(kw, words):
    args = {"rows": 64, "k": 16, "elem_bits": 16, **kw}
    with pytest.raises(ValueError, match=words):
        operand_addresses(desc(), **args)


def test_operand_addresses_take_the_64_bit_value_and_a_dict_of_fields():
    d = desc(start=0x400)
    a = operand_addresses(d, rows=64, k=16, elem_bits=16)
    assert np.array_equal(operand_addresses(d.encode(), rows=64, k=16, elem_bits=16), a)
    fields = {"start_address": 0x400, "leading_byte_offset": 16, "stride_byte_offset": 1024, "swizzle": "128B"}
    assert np.array_equal(operand_addresses(fields, rows=64, k=16, elem_bits=16), a)
    with pytest.raises(TypeError, match="descriptor must be a fragsim.MatrixDescriptor"):
        operand_addresses("0x40", rows=64, k=16, elem_bits=16)
