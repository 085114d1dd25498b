"""ldmatrix / stmatrix and the plain shared-memory accesses, as the PTX ISA defines them."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fragsim
from fragsim.sim.smem import cp_async, ld_shared, st_shared

F16 = "m16n8k16.row.col.f16.f16.f16.f16"
K8 = "m16n8k8.row.col.f16.f16.f16.f16"
LANE = np.arange(32)
SMEM = 8192


def tiles(shape):
    return hnp.arrays(np.uint16, shape, elements=st.integers(0, 0xFFFF))


def place(tile, base, stride_bytes):
    """Write a row-major tile into fresh smem at ``base`` with a row pitch of ``stride_bytes``."""
    smem = np.random.default_rng(0).integers(0, 256, SMEM).astype(np.uint8)
    for r in range(tile.shape[0]):
        smem[base + r * stride_bytes: base + r * stride_bytes + 2 * tile.shape[1]] = tile[r].view(np.uint8)
    return smem


bases = st.integers(0, 64).map(lambda x: 16 * x)
pitches = st.integers(2, 8).map(lambda x: 16 * x)   # row pitch, >= 32 bytes, 16-byte multiple


@settings(max_examples=60, deadline=None)
@given(tiles((16, 16)), bases, pitches)
def test_ldmatrix_x4_of_a_row_major_16x16_tile_is_the_a_fragment(tile, base, pitch):
    smem = place(tile, base, pitch)
    # lanes 0-15 give rows 0-15 at col 0, lanes 16-31 rows 0-15 at col 8 (matrices 0..3 = A's quadrants)
    addrs = base + (LANE % 16) * pitch + (LANE // 16) * 16
    assert np.array_equal(fragsim.ldmatrix(smem, addrs, 4), fragsim.pack(F16, "A", tile))


@settings(max_examples=60, deadline=None)
@given(tiles((16, 8)), bases, pitches)
def test_ldmatrix_x2_trans_of_a_row_major_16x8_k_by_n_tile_is_the_b_fragment(tile, base, pitch):
    smem = place(tile, base, pitch)
    addrs = base + (LANE % 16) * pitch
    assert np.array_equal(fragsim.ldmatrix(smem, addrs, 2, trans=True), fragsim.pack(F16, "B", tile))


@settings(max_examples=40, deadline=None)
@given(tiles((8, 8)), bases, pitches)
def test_ldmatrix_x1_trans_of_an_8x8_tile_is_the_m16n8k8_b_fragment(tile, base, pitch):
    smem = place(tile, base, pitch)
    addrs = base + (LANE % 8) * pitch
    assert np.array_equal(fragsim.ldmatrix(smem, addrs, 1, trans=True), fragsim.pack(K8, "B", tile))


row_slots = st.permutations(list(range(64))).map(lambda p: np.array(p[:32]) * 16)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 4]), st.booleans(), row_slots, st.data())
def test_stmatrix_then_ldmatrix_at_the_same_addresses_is_the_identity(num, trans, addrs, data):
    regs = data.draw(hnp.arrays(np.uint32, (32, num), elements=st.integers(0, 2**32 - 1)))
    smem = np.zeros(1024, np.uint8)
    fragsim.stmatrix(smem, addrs, regs, num, trans)
    assert np.array_equal(fragsim.ldmatrix(smem, addrs, num, trans), regs)


@settings(max_examples=60, deadline=None)
@given(st.booleans(), row_slots, st.data())
def test_one_x4_equals_four_x1(trans, addrs, data):
    smem = data.draw(hnp.arrays(np.uint8, 1024, elements=st.integers(0, 255)))
    x4 = fragsim.ldmatrix(smem, addrs, 4, trans)
    for i in range(4):
        lanes_of_matrix_i = np.roll(addrs, -8 * i)  # matrix i's row addresses moved to lanes 0-7
        assert np.array_equal(x4[:, i], fragsim.ldmatrix(smem, lanes_of_matrix_i, 1, trans)[:, 0])


def _matrices_from_regs(regs):
    """Per matrix i the 8x8 elements as non-trans ldmatrix delivers them: lane l holds row l//4."""
    halves = np.stack([regs & 0xFFFF, regs >> 16], -1)          # (32, num, 2)
    return halves.transpose(1, 0, 2).reshape(regs.shape[1], 8, 8)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 4]), row_slots, st.data())
def test_trans_is_the_per_matrix_transpose(num, addrs, data):
    smem = data.draw(hnp.arrays(np.uint8, 1024, elements=st.integers(0, 255)))
    plain = _matrices_from_regs(fragsim.ldmatrix(smem, addrs, num))
    trans = _matrices_from_regs(fragsim.ldmatrix(smem, addrs, num, trans=True))
    assert np.array_equal(trans, plain.transpose(0, 2, 1))


@pytest.mark.parametrize("num", [1, 2])
def test_x1_and_x2_ignore_the_other_lanes_addresses(num):
    smem = np.arange(4096, dtype=np.int64).astype(np.uint8)
    addrs = LANE * 16
    wild = addrs.copy()
    wild[8 * num:] = 0x7FFF_FFF3   # misaligned and out of range: must not matter
    assert np.array_equal(fragsim.ldmatrix(smem, wild, num), fragsim.ldmatrix(smem, addrs, num))


def test_misaligned_row_address_names_the_lane():
    addrs = LANE * 16
    addrs[9] = 0x1238
    with pytest.raises(ValueError, match="lane 9: ldmatrix row address 0x1238 is not 16-byte aligned"):
        fragsim.ldmatrix(np.zeros(8192, np.uint8), addrs, 4)


def test_row_outside_smem_names_the_lane():
    addrs = LANE * 16
    addrs[31] = 4096
    with pytest.raises(ValueError, match="lane 31: .* outside smem of 4096 bytes"):
        fragsim.ldmatrix(np.zeros(4096, np.uint8), addrs, 4)


def test_num_must_be_1_2_or_4():
    with pytest.raises(ValueError, match="num must be 1, 2 or 4"):
        fragsim.ldmatrix(np.zeros(1024, np.uint8), LANE * 16, 3)


def test_smem_must_be_bytes():
    with pytest.raises(TypeError, match="1-D uint8"):
        fragsim.ldmatrix(np.zeros(256, np.uint16), LANE * 16, 4)


def test_addrs_must_be_32_lanes():
    with pytest.raises(ValueError, match="32 byte offsets"):
        fragsim.ldmatrix(np.zeros(1024, np.uint8), np.arange(16) * 16, 4)


# Overlapping stores are undefined in PTX; fragsim follows what an H200 did in gpu_check's
# overlap probes (all 32 lanes on one address): later phases overwrite, the lowest lane of a phase wins.
def test_overlapping_stmatrix_rows_later_matrix_wins():
    smem = np.zeros(256, np.uint8)
    regs = np.zeros((32, 2), np.uint32)
    regs[:, 1] = 0xFFFFFFFF
    addrs = (LANE % 8) * 16   # matrix 1's rows land on matrix 0's rows
    fragsim.stmatrix(smem, addrs, regs, 2)
    assert (smem[:128] == 0xFF).all()


def test_overlapping_stmatrix_rows_within_a_matrix_lowest_row_wins():
    smem = np.zeros(16, np.uint8)
    # lane l holds row l//4 of the (non-trans) matrix: fill each row with its row number
    regs = np.repeat((LANE // 4 * 0x00010001)[:, None], 1, axis=1).astype(np.uint32)
    fragsim.stmatrix(smem, np.zeros(32, int), regs, 1)
    assert (smem == 0).all()


@pytest.mark.parametrize("nbytes, winner", [(1, 0), (2, 0), (4, 0), (8, 16), (16, 24)])
def test_st_shared_one_address_lowest_lane_of_the_last_phase_wins(nbytes, winner):
    smem = np.zeros(16, np.uint8)
    vals = np.repeat(LANE[:, None], max(1, nbytes // 4), axis=1).astype(np.uint32)
    st_shared(smem, np.zeros(32, int), vals, nbytes)
    assert ld_shared(smem, np.zeros(32, int), nbytes)[0, 0] == winner


@pytest.mark.parametrize("level, nbytes, winner", [("ca", 4, 31), ("ca", 16, 31), ("cg", 16, 24)])
def test_cp_async_one_address_winner(level, nbytes, winner):
    smem = np.zeros(16, np.uint8)
    src = np.repeat(LANE[:, None], nbytes, axis=1).astype(np.uint8)
    cp_async(smem, np.zeros(32, int), src, nbytes, level=level)
    assert (smem[:nbytes] == winner).all()


def test_cp_async_cg_copies_16_bytes_only():
    with pytest.raises(ValueError, match="cp.async.cg copies 16 bytes"):
        cp_async(np.zeros(256, np.uint8), LANE * 8, np.zeros((32, 8), np.uint8), 8, level="cg")


@pytest.mark.parametrize("nbytes", [1, 2, 4, 8, 16])
def test_st_shared_then_ld_shared_round_trips(nbytes):
    rng = np.random.default_rng(nbytes)
    nw = max(1, nbytes // 4)
    vals = rng.integers(0, 1 << min(32, 8 * nbytes), (32, nw), dtype=np.uint64).astype(np.uint32)
    addrs = rng.permutation(64)[:32] * nbytes
    smem = np.zeros(64 * 16, np.uint8)
    st_shared(smem, addrs, vals, nbytes)
    assert np.array_equal(ld_shared(smem, addrs, nbytes), vals)


def test_ld_shared_is_little_endian_and_zero_extends():
    smem = np.arange(64, dtype=np.uint8)
    assert ld_shared(smem, np.zeros(32, int), 4)[0, 0] == 0x03020100
    assert ld_shared(smem, np.full(32, 2), 2)[0, 0] == 0x0302
    assert ld_shared(smem, np.zeros(32, int), 16)[0, 3] == 0x0F0E0D0C


def test_masked_lanes_neither_store_nor_need_valid_addresses():
    smem = np.zeros(256, np.uint8)
    addrs = LANE * 4
    addrs[1::2] = -3
    st_shared(smem, addrs, np.full((32, 1), 0xAB, np.uint32), 1, mask=0x55555555)
    assert smem[0] == 0xAB and smem[4] == 0 and smem[8] == 0xAB


def test_cp_async_writes_the_copied_bytes():
    smem = np.zeros(512, np.uint8)
    src = np.arange(32 * 16, dtype=np.int64).reshape(32, 16).astype(np.uint8)
    cp_async(smem, LANE * 16, src, 16)
    assert np.array_equal(smem, src.ravel())


def test_misaligned_plain_access_names_the_lane():
    addrs = LANE * 8
    addrs[5] = 44
    with pytest.raises(ValueError, match="lane 5: ld.shared.v2.b32 address 0x2c is not 8-byte aligned"):
        ld_shared(np.zeros(512, np.uint8), addrs, 8)
