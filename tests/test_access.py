"""Access sets: presets for mma operands, copies and epilogues, and the user's own address math."""

import numpy as np
import pytest

from fragsim import FORMS, Swizzle, Tile, lookup
from fragsim.search import access as A
from fragsim.search.swizzle_search import round_trip

F16 = "m16n8k16.row.col.f32.bf16.bf16.f32"
LANE = np.arange(32)


def test_a_by_ldmatrix_x4_gives_the_seeds_row_addresses():
    """Warp (wm, wn), m-tile i, k-step kb: lane l addresses row wm*64 + 16i + l%16, column 16*kb + 8*(l/16)
    (seed 001's ``a_ldsm_row``/``a_ldsm_col_in_frag``)."""
    t = Tile(128, 32, "bf16")
    g = A.mma_operand(t, F16, "A", warps=(2, 2)).groups[0]
    assert g.op.name == "ldmatrix.x4" and len(g) == 4 * 2 * 4
    for i in range(len(g)):
        lab = g.labels[i]
        wm = lab["warp"] // 2
        row = wm * 64 + 16 * lab["i"] + LANE % 16
        col = 16 * lab["k"] + 8 * (LANE // 16)
        assert np.array_equal(g.addresses(t)[i], row * 64 + col * 2)


def test_b_from_a_k_by_n_tile_is_ldmatrix_trans_with_two_n_tiles_per_x4():
    t = Tile(32, 64, "f16")
    g = A.mma_operand(t, "m16n8k16.row.col.f16.f16.f16.f16", "B", warps=(1, 2)).groups[0]
    assert g.op.name == "ldmatrix.x4.trans"
    # registers 0,1: n-tile 0 (k 0-7, 8-15), registers 2,3: n-tile 1 (columns 8-15)
    rows, cols = np.divmod(g.elems[0], t.cols)            # (32, 8): 4 registers x 2 halves
    assert set(cols[:, :4].ravel()) == set(range(8)) and set(cols[:, 4:].ravel()) == set(range(8, 16))
    assert set(rows.ravel()) == set(range(16))


def test_b_from_an_n_by_k_tile_is_plain_ldmatrix():
    t = Tile(64, 32, "bf16")
    g = A.mma_operand(t, F16, "B", dims="nk").groups[0]
    assert g.op.name == "ldmatrix.x4"


WHOLE_BYTE_FORMS = sorted(n for n, f in FORMS.items() if f.fmt("A").storage_bits in (8, 16, 32) and f.groups == 1)


def test_m8n8k4_f16_quad_pair_forms_are_refused_by_the_presets():
    with pytest.raises(ValueError, match="4 independent products per warp"):
        A.mma_operand(Tile(32, 32, "f16"), lookup("m8n8k4.row.col.f32.f16.f16.f32"), "A", dims="mk", warps=(1, 1))


@pytest.mark.parametrize("form", WHOLE_BYTE_FORMS)
@pytest.mark.parametrize("operand,dims", [("A", "mk"), ("A", "km"), ("B", "kn"), ("B", "nk")])
def test_every_operand_preset_round_trips_through_the_simulator(form, operand, dims):
    """The registers ldmatrix delivers are exactly what the fragment map asks of the tile's blocks;
    .trans (A stored K x M, B stored K x N) exists for 16-bit elements only (it moves 16-bit halves)."""
    f = lookup(form)
    fmt = f.fmt(operand)
    k = f.shape[2]
    t = Tile(64, 2 * k, fmt.name, swizzle=Swizzle(2, 4, 3)) if dims in ("mk", "nk") else \
        Tile(2 * k, 64, fmt.name, swizzle=Swizzle(2, 4, 3) if 64 * fmt.storage_bits >= 512 * 8 else None)
    if fmt.storage_bits != 16 and dims in ("km", "kn"):
        with pytest.raises(ValueError, match="cannot move these|cannot be transposed"):
            A.mma_operand(t, f, operand, dims=dims, warps=(2, 2))
        return
    s = A.mma_operand(t, f, operand, dims=dims, warps=(2, 2))
    assert round_trip(t, s).ok


def test_sub_byte_and_64_bit_operands_are_refused():
    with pytest.raises(ValueError, match="Tile: (s4 elements are 4 bits; a tile holds whole bytes|unknown dtype 's4')"):
        Tile(64, 64, "s4")
    f64 = next((n for n, f in FORMS.items() if f.fmt("A").storage_bits == 64), None)
    if f64 is not None:
        with pytest.raises(ValueError, match="64-bit elements; the presets move 8-, 16- and 32-bit"):
            A.mma_operand(Tile(64, 64, "f64"), f64, "A")


def test_ldmatrix_registers_are_pack_of_the_fragment():
    """Independent of the search: read a random tile with the preset's addresses and compare with pack()."""
    t = Tile(16, 16, "bf16", swizzle=Swizzle(1, 4, 3))
    g = A.mma_operand(t, F16, "A", warps=(1, 1)).groups[0]
    import fragsim
    x = np.random.default_rng(1).integers(0, 1 << 16, (16, 16)).astype(np.uint16)
    smem = np.zeros(t.size, np.uint8)
    t.write(smem, x)
    assert np.array_equal(fragsim.ldmatrix(smem, g.addresses(t)[0], 4), fragsim.pack(F16, "A", x))


def test_plain_loads_of_whole_registers_and_their_refusal():
    t = Tile(64, 32, "f16")
    s = A.mma_operand(t, "m16n8k16.row.col.f16.f16.f16.f16", "A", op="ld.shared.b32")
    assert round_trip(t, s).ok
    with pytest.raises(ValueError, match=r"ld.shared.v2.b32 moves 8 contiguous bytes per lane, but .* \(0, 0\) and \(8, 0\)"):
        A.mma_operand(t, "m16n8k16.row.col.f16.f16.f16.f16", "A", op="ld.shared.v2.b32")


def test_copy_maps_thread_t_to_chunk_t_plus_pass_times_threads():
    t = Tile(128, 32, "bf16")
    g = A.copy(t, "cp.async.cg.16", threads=128, global_pitch=8192, global_base=0x10000).groups[0]
    assert len(g) == 16 and g.mask.all()
    for i, lab in enumerate(g.labels):
        chunk = lab["pass"] * 128 + lab["warp"] * 32 + LANE
        row, c = np.divmod(chunk, 4)
        assert np.array_equal(g.addresses(t)[i], row * 64 + c * 16)
        assert np.array_equal(g.src[i], 0x10000 + row * 8192 + c * 16)


def test_copy_of_a_tile_smaller_than_a_pass_masks_the_extra_lanes():
    g = A.copy(Tile(8, 16, "f16"), "cp.async.ca.8", threads=64).groups[0]
    assert len(g) == 1 and g.mask[0].sum() == 8 * 32 // 8


@pytest.mark.parametrize("dtype,store,n", [("bf16", None, 64), ("f32", None, 256), ("f16", "st.shared.b32", 256)])
def test_epilogue_stores_then_reads_rows_and_round_trips(dtype, store, n):
    t = Tile(128, 128, dtype, swizzle=Swizzle(3, 4, 3))
    s = A.epilogue(t, F16, warps=(2, 2), store_op=store)
    assert [g.name for g in s] == ["C store", "C read"] and len(s.groups[0]) == n
    assert s.groups[1].op.name == "ld.shared.v4.b32"
    assert round_trip(t, s).ok


def test_epilogue_refuses_non_contiguous_stores():
    with pytest.raises(ValueError, match="st.shared.v2.b32 moves 8 contiguous bytes"):
        A.epilogue(Tile(64, 64, "f16"), F16, store_op="st.shared.v2.b32")


@pytest.mark.parametrize("call,msg", [
    (lambda: A.mma_operand(Tile(64, 32, "f32"), F16, "A"), r"tile holds 4-byte f32, but operand A .* 2-byte bf16"),
    (lambda: A.mma_operand(Tile(48, 32, "bf16"), F16, "A", warps=(2, 1)),
     r"warp tile 24 along M is not a multiple of the fragment's 16"),
    (lambda: A.mma_operand(Tile(64, 32, "bf16"), F16, "A", k_steps=3), r"k_steps must be in 1..2"),
    (lambda: A.mma_operand(Tile(64, 24, "bf16"), F16, "A"), r"K extent 24 is not a multiple of m16n8k16's k = 16"),
    (lambda: A.mma_operand(Tile(64, 32, "bf16"), F16, "C"), r"operand must be 'A' or 'B'"),
    (lambda: A.mma_operand(Tile(64, 32, "bf16"), F16, "A", dims="kn"), r"dims for operand A must be one of mk, km"),
    (lambda: A.mma_operand(Tile(64, 32, "bf16"), F16, "A", op="ldmatrix.x4.trans"), r"try without .trans"),
    (lambda: A.mma_operand(Tile(64, 32, "bf16"), F16, "A", op="stmatrix.x4"), r"writes shared memory"),
    (lambda: A.copy(Tile(64, 32, "bf16"), global_base=64), r"global_base 0x40 must be a non-negative multiple of 128"),
    (lambda: A.copy(Tile(64, 32, "bf16"), global_pitch=48), r"global_pitch 48 is smaller than a row"),
    (lambda: A.copy(Tile(64, 36, "bf16")), r"a row of 72 bytes does not split into 16-byte chunks"),
    (lambda: A.copy(Tile(64, 32, "bf16"), "ldmatrix.x4"), r"copy writes shared memory with cp.async or st.shared"),
    (lambda: A.copy(Tile(64, 32, "bf16"), threads=100), r"threads must be a positive multiple of 32"),
])
def test_preset_refusals_name_the_rule(call, msg):
    with pytest.raises(ValueError, match=msg):
        call()


# -- from the user's address expressions ---------------------------------------------------------

SEED_A = ("int row = warp_m*64 + mf*16 + (lane & 15); int atom = kb*2 + (lane >> 4); "
          "row*64 + ((atom ^ (row & 3))*16)")


def test_seed_address_math_reaches_the_same_elements_as_the_preset():
    """seed 001's ldmatrix math on its own swizzle (atom ^ (row & 3) = Swizzle<2,4,2>) reads exactly
    the A fragments of the preset, instance for instance."""
    t = Tile(128, 32, "bf16", swizzle=Swizzle(2, 4, 2))
    user = A.from_exprs(t, "ldmatrix.x4", SEED_A, variables={"warp_m": range(2), "kb": range(2), "mf": range(4)})
    preset = A.mma_operand(t, F16, "A", warps=(2, 1)).groups[0]
    assert np.array_equal(user.groups[0].elems, preset.elems)
    assert np.array_equal(user.groups[0].user_addrs, preset.addresses(t))


def test_expression_errors_name_the_instance_and_lane():
    t = Tile(128, 32, "bf16")
    with pytest.raises(ValueError, match=r"k=1, lane 0: ldmatrix row address 0x2000 holds no element"):
        A.from_exprs(t, "ldmatrix.x4", "k * 8192 + lane * 64", variables={"k": range(2)})
    with pytest.raises(ValueError, match=r"lane 0: ldmatrix row address 0x8 is not 16-byte aligned"):
        A.from_exprs(t, "ldmatrix.x4", "lane * 64 + 8")
    with pytest.raises(ValueError, match=r"variable 'k' has no value"):
        A.from_exprs(t, "ldmatrix.x4", "lane * 64 + k")
    with pytest.raises(ValueError, match="mask: ldmatrix.x4 is .sync.aligned"):
        A.from_exprs(t, "ldmatrix.x4", "lane * 64", mask="lane < 8")


def test_cp_async_sources_that_disagree_with_the_tile_are_reported():
    """Writes swizzled with (row>>1)&3 into a tile declared Swizzle<2,4,2>: the sources say which element
    each lane copies, and most land where the tile does not hold them."""
    t = Tile(128, 32, "bf16", swizzle=Swizzle(2, 4, 2))
    dst = "int t = warp*32 + lane; int r = t/4 + pass*32; r*64 + (((t%4) ^ ((r>>1)&3))*16)"
    src = "int t = warp*32 + lane; int r = t/4 + pass*32; r*8192 + (t%4)*16"
    g = A.from_exprs(t, "cp.async.cg.16", dst, src=src, global_pitch=8192,
                     variables={"warp": range(4), "pass": range(4)}).groups[0]
    assert g.note.startswith("384 of 512 lanes write their element elsewhere")
    # the group now holds what the sources say: laid out by Swizzle<2,4,3> it gives the user's addresses
    assert np.array_equal(g.addresses(t.with_layout(swizzle=Swizzle(2, 4, 3))), g.user_addrs)
