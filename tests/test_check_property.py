"""Properties of the checker: address maps made from the tile's own layout always pass, and
no wrong address map ever does (random layouts, random corruptions, random lane permutations)."""

import numpy as np
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import fragsim
from fragsim.check import check_copy, check_load, check_store

F16 = "m16n8k16.row.col.f16.f16.f16.f16"
F32 = "m16n8k16.row.col.f32.f16.f16.f32"
LANES = np.arange(32)
FORM = fragsim.lookup(F16)
SWIZZLES = [None, (1, 4, 3), (2, 4, 3), (3, 4, 3), (2, 4, 2), (1, 4, 4), (2, 5, 2)]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tiles(draw, order="row"):
    rows = draw(st.sampled_from([16, 32, 64]))
    cols = draw(st.sampled_from([16, 32, 64]))
    line = (cols if order == "row" else rows) * 2
    pad = draw(st.integers(0, 3)) * 16
    sw = draw(st.sampled_from(SWIZZLES)) if pad == 0 else None
    try:
        t = fragsim.Tile(rows, cols, "f16", order, line + pad, None if sw is None else fragsim.Swizzle(*sw))
    except ValueError:          # a swizzle that is no bijection of this footprint
        assume(False)
    r0 = draw(st.integers(0, rows // 16 - 1)) * 16
    c0 = draw(st.integers(0, cols // 16 - 1)) * 16
    return t, (r0, c0)


def a_ldmatrix(tile, at):
    """ldmatrix.x4 row addresses of the A fragment at ``at`` (lanes 0-15 rows, 16-31 the right half)."""
    return tile.offset(at[0] + LANES % 16, at[1] + (LANES // 16) * 8)


def a_plain(tile, at):
    """ld.shared.b32 addresses of each A register: where its first element lives."""
    rows, cols = FORM.coords("A")
    return [tile.offset(at[0] + rows[:, j, 0], at[1] + cols[:, j, 0]) for j in range(4)]


@SETTINGS
@given(tiles())
def test_addresses_from_the_tiles_own_layout_pass(tc):
    tile, at = tc
    assert check_load(F16, "A", tile, [("ldmatrix.x4", a_ldmatrix(tile, at))], at=at).ok
    assert check_load(F16, "A", tile, [("ld.shared.b32", a) for a in a_plain(tile, at)], at=at).ok


@SETTINGS
@given(tiles(), st.data())
def test_a_corrupted_ldmatrix_address_never_passes(tc, data):
    tile, at = tc
    addrs = a_ldmatrix(tile, at).copy()
    lanes = data.draw(st.lists(st.integers(0, 31), min_size=1, max_size=8, unique=True))
    rows = tile.span // 16
    for lane in lanes:
        new = tile.base + 16 * data.draw(st.integers(0, rows))          # anywhere, even just past the tile
        assume(new != addrs[lane])
        addrs[lane] = new
    r = check_load(F16, "A", tile, [("ldmatrix.x4", addrs)], at=at)
    assert not r.ok and r.diagnosis


@SETTINGS
@given(tiles(), st.data())
def test_a_corrupted_plain_load_address_never_passes(tc, data):
    tile, at = tc
    loads = a_plain(tile, at)
    j = data.draw(st.integers(0, 3))
    lane = data.draw(st.integers(0, 31))
    new = tile.base + 4 * data.draw(st.integers(0, tile.span // 4))
    assume(new != loads[j][lane])
    loads[j] = loads[j].copy()
    loads[j][lane] = new
    assert not check_load(F16, "A", tile, [("ld.shared.b32", a) for a in loads], at=at).ok


@SETTINGS
@given(tiles(), st.permutations(range(32)))
def test_a_permutation_of_the_lanes_addresses_never_passes(tc, perm):
    tile, at = tc
    perm = np.array(perm)
    assume((perm != LANES).any())
    addrs = a_ldmatrix(tile, at)
    assert not check_load(F16, "A", tile, [("ldmatrix.x4", addrs[perm])], at=at).ok


@SETTINGS
@given(tiles(), st.data())
def test_a_corrupted_epilogue_store_never_passes(tc, data):
    """f32 accumulators stored as st.shared.v2.b32 pairs into an f32 tile."""
    tile16, at = tc
    tile = fragsim.Tile(tile16.rows, tile16.cols, "f32", pitch=tile16.cols * 4)
    gid, tig = LANES // 4, LANES % 4
    stores = [tile.offset(at[0] + gid + 8 * h, at[1] + 2 * tig) for h in (0, 1)]
    assert check_store(F32, "C", tile, [("st.shared.v2.b32", a) for a in stores], at=at).ok
    h = data.draw(st.integers(0, 1))
    lane = data.draw(st.integers(0, 31))
    new = 8 * data.draw(st.integers(0, tile.span // 8 - 1))
    assume(new != stores[h][lane])
    stores[h] = stores[h].copy()
    stores[h][lane] = new
    assert not check_store(F32, "C", tile, [("st.shared.v2.b32", a) for a in stores], at=at).ok


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([(None, 0), ((3, 4, 3), 0), (None, 16)]), st.data())
def test_a_copy_with_one_lane_moved_never_passes(layout, data):
    sw, pad = layout
    tile = fragsim.Tile(32, 64, "f16", pitch=128 + pad, swizzle=None if sw is None else fragsim.Swizzle(*sw))
    chunk = np.arange(256).reshape(8, 32)            # 8 instructions, lane l of k copies chunk 32k + l
    row, c8 = chunk // 8, chunk % 8
    dst = tile.offset(row, c8 * 8)
    copies = [("cp.async.cg.16", dst[k]) for k in range(8)]
    assert check_copy(tile, copies).ok
    k, lane = data.draw(st.integers(0, 7)), data.draw(st.integers(0, 31))
    new = 16 * data.draw(st.integers(0, tile.span // 16 - 1))
    assume(new != dst[k, lane])
    moved = dst[k].copy()
    moved[lane] = new
    copies[k] = ("cp.async.cg.16", moved)
    assert not check_copy(tile, copies).ok
