"""fragsim.swizzle_search: known answers, ranking, the round trip, what no layout can change."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fragsim
from fragsim import Swizzle, Tile, XorMap
from fragsim.search import access as A
from fragsim.search.swizzle_search import round_trip, swizzle_search

F16 = "m16n8k16.row.col.f32.f16.f16.f32"
BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"


@pytest.mark.parametrize("cols,want", [(64, Swizzle(3, 4, 3)), (32, Swizzle(2, 4, 3)), (16, Swizzle(1, 4, 3))])
def test_known_answers_for_a_by_ldmatrix_x4_and_cp_async_row_writes(cols, want):
    """fp16 rows of 128, 64 and 32 bytes, A read by ldmatrix.x4 and written by cp.async rows:
    the best layout is conflict-free and is Swizzle<3,4,3>, <2,4,3>, <1,4,3> (SW128, SW64, SW32)."""
    t = Tile(128, cols, "f16")
    r = swizzle_search(t, A.mma_operand(t, F16, "A"), A.copy(t, "cp.async.ca.16"))
    assert r.best.conflicts == 0 and r.best.wavefronts == r.floor == r.ideal
    assert r.best.tile.swizzle == want and r.best.overhead == 0
    assert r.nothing.conflicts > 0


def test_best_figures_agree_with_the_per_instruction_bank_model():
    t = Tile(64, 32, "bf16")
    reads, writes = A.mma_operand(t, BF16, "A"), A.copy(t, "cp.async.ca.16", global_pitch=256)
    r = swizzle_search(t, reads, writes, top=3)
    for c in (r.best, r.nothing):
        total = 0
        for g in (writes + reads):
            a = g.addresses(c.tile)
            for i in range(len(g)):
                rep = fragsim.bank_conflicts(g.op, a[i], None if g.op.kind == "ldsm" else g.mask[i],
                                             g.src[i] if g.src is not None else None)
                total += rep.wavefronts
        assert total == c.wavefronts


@st.composite
def problems(draw):
    rows = draw(st.sampled_from([16, 32]))
    cols = draw(st.sampled_from([8, 16, 32, 64]))
    t = Tile(rows, cols, "f16")
    sets = []
    if draw(st.booleans()) or cols < 16:
        size = draw(st.sampled_from([4, 8, 16]))
        sets.append(A.copy(t, f"cp.async.ca.{size}", threads=64, global_pitch=draw(st.sampled_from([None, 1024]))))
    if cols >= 16:
        sets.append(A.mma_operand(t, F16, "A", warps=(1, 1)))
    if cols >= 16 and draw(st.booleans()):
        sets.append(A.mma_operand(t, F16, "B", dims="nk", warps=(1, 1)))
    return t, A.AccessSet(sets)


@settings(max_examples=8, deadline=None)
@given(problems())
def test_ranking_never_puts_a_layout_above_one_with_fewer_wavefronts_and_every_ranked_one_round_trips(p):
    t, s = p
    r = swizzle_search(t, s.reads, s.writes, top=None)
    wf = [c.wavefronts for c in r.ranked]
    assert wf == sorted(wf)
    keys = [c.key() for c in r.ranked]
    assert keys == sorted(keys)
    assert all(round_trip(c.tile, s).ok for c in r.ranked)
    assert r.ranked[0].wavefronts <= r.nothing.wavefronts
    assert len(r.ranked) + len(r.rejected) >= r.scored


def test_the_search_is_exhaustive_within_its_space():
    """Brute force with the per-instruction model over every layout of the stated space: nothing beats rank 1."""
    t = Tile(16, 64, "f16")
    s = A.mma_operand(t, F16, "A", warps=(1, 1)) + A.copy(t, "cp.async.ca.16", threads=32)
    r = swizzle_search(t, s.reads, s.writes, top=None)
    best = min(c.wavefronts for c in r.ranked)
    assert r.best.wavefronts == best
    for b in range(1, 4):
        for m in range(4, 8):
            for sft in range(b, 11 - m - b + 1):
                try:
                    cand = t.with_layout(swizzle=Swizzle(b, m, sft))
                except ValueError:
                    continue
                total = sum(fragsim.bank_conflicts(g.op, g.addresses(cand)[i],
                                                   None if g.op.kind == "ldsm" else g.mask[i],
                                                   g.src[i] if g.src is not None else None).wavefronts
                            for g in s for i in range(len(g)))
                assert total >= best


def test_cp_async_source_lines_are_reported_as_what_no_layout_changes():
    """64-byte rows copied from a global matrix 8 KiB wide: every row is its own 128-byte source line, so
    each 16-byte cp.async takes 8 phases whatever the layout; the floor says so."""
    t = Tile(128, 32, "bf16")
    r = swizzle_search(t, A.mma_operand(t, BF16, "A"), A.copy(t, "cp.async.cg.16", global_pitch=8192))
    assert r.floor - r.ideal == 16 * 4
    assert r.best.wavefronts == r.floor and r.best.tile.swizzle == Swizzle(2, 4, 3)
    assert any("no layout can remove 64 wavefronts" in n for n in r.notes)
    assert any(".cg copies" in n for n in r.notes)
    assert r.best.ncu_wavefronts == r.best.wavefronts - int(r.best.figures[0].wavefronts.sum())


def test_when_the_plain_tile_is_already_at_the_floor_the_search_says_no_layout_helps():
    t = Tile(64, 64, "f16")
    r = swizzle_search(t, None, A.copy(t, "cp.async.ca.16"))
    assert r.best.name == "none" and r.best.rank == 1
    assert any("no layout helps" in n for n in r.notes)


def test_b_k_by_n_with_ldmatrix_trans_and_the_epilogue_find_conflict_free_layouts():
    b = Tile(32, 128, "f16")
    rb = swizzle_search(b, A.mma_operand(b, F16, "B"), A.copy(b))
    assert rb.best.conflicts == 0 and rb.groups[1].op.name == "ldmatrix.x4.trans"
    c = Tile(128, 128, "bf16")
    ep = A.epilogue(c, BF16)
    rc = swizzle_search(c, ep.reads, ep.writes)
    assert rc.best.conflicts == 0 and rc.nothing.conflicts > 0


def test_compare_mode_scores_just_the_named_layouts():
    t = Tile(128, 32, "bf16")
    r = swizzle_search(t, A.mma_operand(t, BF16, "A"), A.copy(t),
                       candidates=[None, Swizzle(2, 4, 2), Swizzle(2, 4, 3), ("pitch", 80)], top=None)
    # padding by 16 bytes fixes the reads but not the 16-byte copy (two rows of a source line collide)
    assert [c.name for c in r.ranked] == ["Swizzle<2,4,3>", "pitch 80 (+16 B/row)", "Swizzle<2,4,2>", "none"]
    assert [c.conflicts for c in r.ranked] == [0, 64, 128, 384] and r.ranked[1].overhead == 128 * 16


def test_a_layout_that_scrambles_16_byte_rows_is_not_ranked():
    """bit 7 ^= bit 3 keeps every ldmatrix row address aligned but moves the second half of each row:
    fast (no more conflicts than none) and wrong, so it fails the round trip."""
    t = Tile(64, 64, "f16")
    r = swizzle_search(t, A.mma_operand(t, F16, "A"), None, candidates=[XorMap.xor({7: [3]})], top=None)
    assert [c.name for c in r.ranked] == ["none"]
    (name, why), = r.rejected
    assert name == "Swizzle<1,3,-4>" and "holds element" in why and "wants" in why


def test_misaligned_candidates_are_rejected_with_the_reason():
    t = Tile(64, 64, "f16")
    r = swizzle_search(t, A.mma_operand(t, F16, "A"), None, candidates=[Swizzle(2, 3, 3)])
    assert any("not 16-byte aligned" in why for _, why in r.rejected)


def test_round_trip_names_the_lane_that_reads_the_wrong_element():
    t = Tile(16, 16, "f16")
    s = A.mma_operand(t, F16, "A", warps=(1, 1))
    wrong = s.groups[0].addresses(t)
    wrong[0, 16:] += 0         # matrices 2 and 3 read ...
    wrong[0, 1], wrong[0, 2] = wrong[0, 2], wrong[0, 1]   # ... and rows 1 and 2 of matrix 0 swap
    rt = round_trip(t, s, addresses={0: wrong})
    assert not rt.ok and rt.message.startswith("A ldmatrix.x4 warp=0 k=0 i=0 (instruction 0), lane 4, register 0")


def test_reads_and_writes_that_disagree_about_the_layout_are_named():
    t = Tile(128, 32, "bf16", swizzle=Swizzle(2, 4, 2))
    reads = A.from_exprs(t, "ldmatrix.x4", "int row = wm*64 + mf*16 + (lane & 15); int atom = kb*2 + (lane >> 4); "
                         "row*64 + ((atom ^ (row & 3))*16)", variables={"wm": range(2), "mf": range(4), "kb": range(2)},
                         name="A")
    writes = A.from_exprs(t, "cp.async.cg.16", "int t = w*32 + lane; int r = t/4 + p*32; r*64 + (((t%4) ^ ((r>>1)&3))*16)",
                          src="int t = w*32 + lane; int r = t/4 + p*32; r*8192 + (t%4)*16", global_pitch=8192,
                          variables={"w": range(4), "p": range(4)}, name="copy")
    r = swizzle_search(t, reads, writes, top=2)
    note = next(n for n in r.notes if "disagree" in n)
    assert "copy (cp.async.cg.16) follow Swizzle<2,4,3>" in note and "A (ldmatrix.x4) follow Swizzle<2,4,2>" in note
    assert r.as_written is not None and r.as_written.verified is False
    assert r.best.tile.swizzle == Swizzle(2, 4, 3) and r.yours.name == "Swizzle<2,4,2>"


@pytest.mark.parametrize("call,exc,msg", [
    (lambda t, s: swizzle_search(t, s.writes, None), ValueError, r"reads: group 'copy' \(cp.async.ca.16\) writes"),
    (lambda t, s: swizzle_search(Tile(64, 64, "bf16"), s.reads, None), ValueError, "was built for a 64x32 bf16"),
    (lambda t, s: swizzle_search(t, None, None), ValueError, "needs at least one read or write"),
    (lambda t, s: swizzle_search(t, s.reads, s.writes, top=0), ValueError, "top must be >= 1"),
    (lambda t, s: swizzle_search("64x32 bf16", s.reads), TypeError, "tile must be a fragsim.Tile"),
    (lambda t, s: swizzle_search(t, s.reads, xor_row_bits=9), ValueError,
     r"xor_row_bits must be in 1..6 for this tile \(6 row bits"),
])
def test_bad_searches_are_refused_in_one_line(call, exc, msg):
    t = Tile(64, 32, "bf16")
    s = A.mma_operand(t, BF16, "A") + A.copy(t)
    with pytest.raises(exc, match=msg):
        call(t, s)


def test_public_api_and_json():
    assert fragsim.swizzle_search is swizzle_search
    t = Tile(64, 32, "bf16")
    d = swizzle_search(t, A.mma_operand(t, BF16, "A"), top=2).to_dict()
    assert d["ranked"][0]["layout"] == "Swizzle<2,4,3>" and d["ranked"][0]["round_trip"] is True
    assert d["ranked"][0]["groups"][0]["instructions"][0]["wavefronts"] == 4
    assert np.isfinite(d["seconds"])
