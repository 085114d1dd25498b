"""Warp-collective PTX instructions (fragsim.ptx.semantics.warp): shfl.sync, vote.sync, match.sync,
redux.sync and elect.sync as the PTX ISA defines them over the lanes that execute, one property or
documented case each; what the H100 does where the ISA leaves it open; the refusals; and the H100
warp recording replayed bit for bit."""

import json
from pathlib import Path

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.facts.hardware import WARP_LANES
from fragsim.gpu_check import record
from fragsim.gpu_check.ptx import integer as ptx_int
from fragsim.ptx.isa import table
from fragsim.ptx.semantics import Spec, UnsupportedInstruction

DATA = Path(__file__).parent / "data" / "ptx" / "int"
LANES = np.arange(WARP_LANES, dtype=np.uint32)
FULL = np.ones((1, WARP_LANES), bool)
rng = np.random.default_rng(3)


def sem(text: str, ndst: int = 1, nsrc: int = 2):
    op, *mods = text.split(".")
    return table.resolve(Spec(op, tuple(mods), ndst, nsrc))


def lanes(x, dtype=np.uint32) -> np.ndarray:
    """A per-lane operand of one warp from a value for every lane or one for all."""
    return np.broadcast_to(np.asarray(x, dtype), (1, WARP_LANES)).copy()


def mask_of(bits: int) -> np.ndarray:
    return ((bits >> LANES.astype(np.int64)) & 1).astype(bool)[None, :]


def shfl(mode, a, b, c, mask=FULL):
    d, p = sem(f"shfl.sync.{mode}.b32", 2, 4).fn(mask, lanes(a), lanes(b), lanes(c), lanes(0xFFFFFFFF))
    return d[0].tolist(), p[0].tolist()


def test_every_semantic_here_is_warp_collective():
    for text, nd, ns in [("shfl.sync.idx.b32", 1, 4), ("vote.sync.any.pred", 1, 2), ("match.any.sync.b64", 1, 2),
                         ("redux.sync.add.u32", 1, 2), ("elect.sync", 2, 1)]:
        assert sem(text, nd, ns).warp


# --- shfl.sync -------------------------------------------------------------------------------

def test_shfl_idx_reads_lane_b_of_the_whole_warp():
    d, p = shfl("idx", LANES * 10, 7, 0x1F)
    assert d == [70] * WARP_LANES and all(p)


def test_shfl_up_out_of_range_keeps_the_own_value_and_clears_p():
    """shfl.up: j = lane - b, in range when j >= maxLane (the segment's first lane)."""
    d, p = shfl("up", LANES, 3, 0)
    assert d == [0, 1, 2] + list(range(29)) and p == [False] * 3 + [True] * 29


def test_shfl_down_clamps_at_c():
    d, p = shfl("down", LANES, 4, 15)
    assert d[:12] == list(range(4, 16)) and d[12:16] == [12, 13, 14, 15] and not any(p[12:16])


def test_shfl_bfly_xors_the_lane():
    d, _ = shfl("bfly", LANES, 0b10101, 0x1F)
    assert d == [i ^ 0b10101 for i in range(WARP_LANES)]


def test_shfl_segment_mask_keeps_idx_inside_16_lane_segments():
    """c = ((32 - width) << 8) | 0x1f: width-16 segments, b indexes within the segment."""
    d, p = shfl("idx", LANES, 3, (16 << 8) | 0x1F)
    assert d == [3] * 16 + [19] * 16 and all(p)


def test_shfl_reads_only_the_five_low_bits_of_b():
    assert shfl("idx", LANES, 32 + 5, 0x1F)[0] == [5] * WARP_LANES


def test_shfl_from_a_lane_that_does_not_execute_gives_the_zero_the_machine_passes():
    """PTX: undefined. The machine zeroes non-executing lanes' sources; p says only 'in range'."""
    m = mask_of(0xFFFFFFFE)
    a = np.where(m, lanes(LANES + 100), 0).astype(np.uint32)
    d, p = sem("shfl.sync.idx.b32", 2, 4).fn(m, a, lanes(0), lanes(0x1F), lanes(0xFFFFFFFE))
    assert d[0, 1:].tolist() == [0] * 31 and p[0, 1:].all()


# --- vote.sync -------------------------------------------------------------------------------

def test_vote_reduces_over_the_executing_lanes_only():
    m = mask_of(0x0000FFFF)
    a = mask_of(0xFFFF0000 | 0x3)
    on = lambda mode: bool(sem(f"vote.sync.{mode}.pred").fn(m, a & m, lanes(0xFFFF))[0][0, 0])  # noqa: E731
    assert (on("all"), on("any"), on("uni")) == (False, True, False)
    a = mask_of(0xFFFF0000)
    assert not bool(sem("vote.sync.any.pred").fn(m, a & m, lanes(0xFFFF))[0][0, 0])
    assert bool(sem("vote.sync.uni.pred").fn(m, a & m, lanes(0xFFFF))[0][0, 0])


def test_vote_ballot_sets_the_bit_of_each_lane_whose_predicate_is_true_inactive_lanes_zero():
    m, a = mask_of(0x00FF00FF), mask_of(0x0F0F0F0F)
    d = sem("vote.sync.ballot.b32").fn(m, a & m, lanes(0x00FF00FF))[0]
    assert (d == 0x000F000F).all()


# --- match.sync ------------------------------------------------------------------------------

def test_match_any_gives_each_lane_the_lanes_with_its_value():
    a = lanes(LANES % 3)
    d = sem("match.any.sync.b32").fn(FULL, a, lanes(0xFFFFFFFF))[0][0]
    want = [sum(1 << k for k in range(WARP_LANES) if k % 3 == i % 3) for i in range(WARP_LANES)]
    assert d.tolist() == want


def test_match_all_gives_the_mask_and_p_only_when_every_lane_agrees():
    m = mask_of(0xF0F0F0F0)
    d, p = sem("match.all.sync.b32", 2).fn(m, np.where(m, 9, 0).astype(np.uint32), lanes(0xF0F0F0F0))
    assert (d[m] == 0xF0F0F0F0).all() and p[m].all()
    a = np.where(m, LANES, 0).astype(np.uint32)
    d, p = sem("match.all.sync.b32", 2).fn(m, a, lanes(0xF0F0F0F0))
    assert (d[m] == 0).all() and not p[m].any()


def test_match_b64_compares_all_64_bits():
    a = lanes(np.where(LANES < 16, 5, 5 | (1 << 40)), np.uint64)
    d = sem("match.any.sync.b64").fn(FULL, a, lanes(0xFFFFFFFF))[0][0]
    assert d[0] == 0x0000FFFF and d[31] == 0xFFFF0000


# --- redux.sync ------------------------------------------------------------------------------

def test_redux_reduces_the_executing_lanes_and_broadcasts():
    m = mask_of(0x80000001)
    a = lanes([0xFFFFFFFF] + [7] * 30 + [2])
    run = lambda t: int(sem(f"redux.sync.{t}").fn(m, np.where(m, a, 0).astype(np.uint32), lanes(0))[0][0, 0])  # noqa: E731
    assert run("add.u32") == 1, "the sum is truncated to 32 bits"
    assert (run("min.u32"), run("min.s32"), run("max.u32"), run("max.s32")) == (2, 0xFFFFFFFF, 0xFFFFFFFF, 2)
    assert (run("and.b32"), run("or.b32"), run("xor.b32")) == (2, 0xFFFFFFFF, 0xFFFFFFFD)


# --- elect.sync ------------------------------------------------------------------------------

def test_elect_chooses_the_lowest_executing_lane_as_the_h100_does():
    d, p = sem("elect.sync", 2, 1).fn(mask_of(0x00F0F000), lanes(0x00F0F000))
    assert (d == 12).all() and np.flatnonzero(p[0]).tolist() == [12]


# --- refusals --------------------------------------------------------------------------------

@pytest.mark.parametrize("text, ndst, nsrc, why", [
    ("shfl.idx.b32", 1, 3, "without .sync is not supported"),
    ("vote.ballot.b32", 1, 1, "without .sync is not supported"),
    ("shfl.sync.idx.b64", 1, 4, r"nearest: shfl\.sync\.mode\.b32"),
    ("vote.sync.any.b32", 1, 2, r"vote\.sync\.mode\.pred   \.mode = \{\.all, \.any, \.uni\}"),
    ("match.any.sync.b32", 2, 2, "takes 1 destination"),
    ("match.any.sync.u32", 1, 2, r"match\.any\.sync\.type   \.type = \{\.b32, \.b64\}"),
    ("redux.sync.max.f32", 1, 2, "sm_100a"),
    ("redux.sync.xor.u32", 1, 2, r"redux\.sync\.op\.b32   \.op = \{\.and, \.or, \.xor\}"),
    ("redux.sync.add.b32", 1, 2, r"\.op = \{\.add, \.min, \.max\}   \.type = \{\.u32, \.s32\}"),
    ("elect.sync", 1, 1, "takes 2 destination"),
])
def test_variants_ptx_does_not_define_are_refused_with_the_rule(text, ndst, nsrc, why):
    with pytest.raises(UnsupportedInstruction, match=why):
        sem(text, ndst, nsrc)


# --- the H100 recording ----------------------------------------------------------------------

def test_the_h100_warp_recording_replays_bit_for_bit(capsys):
    assert main(["gpu-check", "--family", "ptx_int", "--replay", str(DATA), "--forms", "sync", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    meta, _ = record.load(str(DATA / "warp.npz"), (ptx_int.KIND,))
    recorded = [v for v in meta["variants"] if "sync" in v["ptx"]]
    assert rep["mismatches"] == 0 and rep["variants"] == len(recorded) and rep["cases"] >= 16 * len(recorded)


def test_the_recording_covers_diverged_and_exited_lanes_and_exited_lanes_in_the_member_mask():
    meta, arrays = record.load(str(DATA / "warp.npz"), (ptx_int.KIND,))
    act, mem, how = arrays["w"].T.astype(np.uint64)
    assert (act == 0xFFFFFFFF).any() and ((act != 0xFFFFFFFF) & (how == 0)).any()
    assert ((how == 1) & (mem != act)).any()
