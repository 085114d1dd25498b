"""ld/st.shared vectors of 8- and 16-bit elements (.v2.u8, .v4.u8, .v2.u16, .v4.u16), as the PTX ISA
defines them: ``ld{.ss}{.vec}.type d, [a]`` reads the elements from consecutive addresses, the
vector aligned to its whole size, one element per register (zero-extended for .u8/.u16)."""

import numpy as np
import pytest

import fragsim
from fragsim.instructions.shared_ops import SHARED_OPS, parse_shared_op, plain_op
from fragsim.sim.smem import ld_shared, st_shared

LANE = np.arange(32)
# (spelling, bytes per lane, bytes per element)
VECTORS = [("v2.u8", 2, 1), ("v4.u8", 4, 1), ("v2.u16", 4, 2), ("v4.u16", 8, 2)]


@pytest.mark.parametrize("suffix, nbytes, elem", VECTORS)
def test_register_i_holds_element_i_zero_extended(suffix, nbytes, elem):
    smem = np.random.default_rng(nbytes + elem).integers(0, 256, 1024).astype(np.uint8)
    addrs = np.random.default_rng(1).permutation(1024 // nbytes)[:32] * nbytes
    regs = ld_shared(smem, addrs, nbytes, element_bytes=elem)
    assert regs.shape == (32, nbytes // elem)
    for lane in (0, 7, 31):
        raw = smem[addrs[lane]: addrs[lane] + nbytes]
        want = [int.from_bytes(raw[i * elem:(i + 1) * elem].tobytes(), "little") for i in range(nbytes // elem)]
        assert regs[lane].tolist() == want


@pytest.mark.parametrize("suffix, nbytes, elem", VECTORS)
def test_a_vector_load_moves_the_bytes_of_the_scalar_load_of_its_width(suffix, nbytes, elem):
    smem = np.random.default_rng(2).integers(0, 256, 2048).astype(np.uint8)
    addrs = np.random.default_rng(3).integers(0, 2048 // nbytes, (5, 32)) * nbytes
    whole = ld_shared(smem, addrs, nbytes)                          # .u16, .b32 or .v2.b32 words
    split = ld_shared(smem, addrs, nbytes, element_bytes=elem)
    as_bytes = whole.astype("<u4").view(np.uint8).reshape(5, 32, -1)[..., :nbytes]
    assert np.array_equal(as_bytes, split.astype("<u4").view(np.uint8).reshape(5, 32, -1, 4)[..., :elem]
                          .reshape(5, 32, nbytes))


@pytest.mark.parametrize("suffix, nbytes, elem", VECTORS)
def test_st_then_ld_round_trips(suffix, nbytes, elem):
    rng = np.random.default_rng(nbytes * elem)
    vals = rng.integers(0, 1 << (8 * elem), (32, nbytes // elem)).astype(np.uint32)
    addrs = rng.permutation(128)[:32] * nbytes
    smem = np.zeros(128 * nbytes, np.uint8)
    st_shared(smem, addrs, vals, nbytes, element_bytes=elem)
    assert np.array_equal(ld_shared(smem, addrs, nbytes, element_bytes=elem), vals)


def test_st_shared_v4_u8_writes_the_low_byte_of_each_register_in_order():
    smem = np.zeros(128, np.uint8)
    vals = np.tile(np.array([0x11, 0x22, 0x33, 0x44], np.uint32), (32, 1))
    st_shared(smem, LANE * 4, vals, 4, element_bytes=1)
    assert smem[:8].tolist() == [0x11, 0x22, 0x33, 0x44] * 2


def test_an_element_too_wide_for_its_type_names_the_lane_and_register():
    vals = np.zeros((32, 2), np.uint32)
    vals[3, 1] = 0x100
    with pytest.raises(ValueError, match=r"lane 3: st.shared.v2.u8 value 1 = 0x100 does not fit in 1 byte\(s\)"):
        st_shared(np.zeros(128, np.uint8), LANE * 2, vals, 2, element_bytes=1)


def test_the_vector_must_be_aligned_to_its_whole_size():
    addrs = LANE * 4
    addrs[9] = 38                                      # 2-byte aligned: enough for a u16, not for a v2.u16
    with pytest.raises(ValueError, match="lane 9: ld.shared.v2.u16 address 0x26 is not 4-byte aligned"):
        ld_shared(np.zeros(256, np.uint8), addrs, 4, element_bytes=2)


def test_a_shape_ptx_lacks_is_refused_with_the_shapes_it_has():
    with pytest.raises(ValueError, match="no access of 16 bytes per lane in 1-byte elements.*8/2 \\(v4.u16\\)"):
        ld_shared(np.zeros(256, np.uint8), LANE * 16, 16, element_bytes=1)


@pytest.mark.parametrize("direction", ["ld", "st"])
@pytest.mark.parametrize("suffix, nbytes, elem", VECTORS)
def test_every_spelling_of_a_vector_names_one_entry(direction, suffix, nbytes, elem):
    entry = plain_op(direction, nbytes, elem)
    kind = suffix.split(".")[1][0]
    spellings = [f"{direction}.shared.{suffix}", f"{direction}.shared::cta.{suffix}",
                 f"{direction}.shared.{suffix.replace(kind, 'b')}", f"{direction}.shared.{suffix.replace(kind, 's')}"]
    assert {parse_shared_op(s) for s in spellings} == {entry}
    assert (entry.name, entry.nregs, entry.element_bytes) == (f"{direction}.shared.{suffix}", nbytes // elem, elem)
    assert SHARED_OPS[entry.name] is entry


@pytest.mark.parametrize("op", ["ld.shared.f16", "st.shared.f16", "ld.shared.v2.f16", "ld.shared.v4.bf16"])
def test_ptx_has_no_half_float_loads_or_stores(op):
    """ptxas refuses them ("Unexpected instruction types specified for 'ld'"); a half moves as .b16."""
    with pytest.raises(ValueError, match="PTX has no .f16 loads or stores: .b16"):
        parse_shared_op(op)


@pytest.mark.parametrize("suffix, nbytes, elem", VECTORS)
def test_bank_figures_are_those_of_the_scalar_access_of_the_vectors_width(suffix, nbytes, elem):
    rng = np.random.default_rng(4)
    addrs = rng.integers(0, 4096 // nbytes, (200, 32)) * nbytes
    addrs[::3] = (addrs[::3, ::2].repeat(2, axis=1))          # partner lanes on one address: merges
    masks = rng.integers(0, 1 << 32, 200)
    for d in ("ld", "st"):
        vec = fragsim.bank_conflicts(f"{d}.shared.{suffix}", addrs, masks)
        scalar = fragsim.bank_conflicts(plain_op(d, nbytes), addrs, masks)
        assert np.array_equal(vec.wavefronts, scalar.wavefronts) and np.array_equal(vec.conflicts, scalar.conflicts)
