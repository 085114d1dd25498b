"""Shared memory is what one CTA can address (ArchParams.smem_per_cta: 227 KB on sm_90, 163 KB on
sm_80): tiles, smem arrays and lane addresses past it are refused by every shared-memory entry point
with the figure and the limit in one line; a matrix in global memory is a global tile; work that
grows with the input (the swizzle search's layouts x instructions, instances of an expression, a
copy's instructions) is estimated and refused before it starts (issue 21, "Memory blow-up")."""

import re

import numpy as np
import pytest

import fragsim
from fragsim import Swizzle, Tile
from fragsim.check import check_copy, check_load, check_store
from fragsim.check.wgmma import check_wgmma
from fragsim.cli import main
from fragsim.facts.arch import ARCHS
from fragsim.facts.smem import smem_limit, smem_per_cta
from fragsim.search import access as A
from fragsim.search import swizzle_search as SS

F16 = "m16n8k16.row.col.f32.f16.f16.f32"
BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"
SM90 = "sm_90's 232448 bytes (227 KB) of shared memory per CTA"
LIMIT = re.escape(SM90)
LANES = np.arange(32)


def test_each_architecture_row_holds_the_shared_memory_one_cta_can_address():
    """CUDA C++ Programming Guide, maximum shared memory per thread block: 227 KB (9.0), 163 KB (8.0)."""
    assert ARCHS["sm_90"].smem_per_cta == 232448 and ARCHS["sm_80"].smem_per_cta == 166912
    assert smem_per_cta() == 232448 and smem_limit("a100") == "sm_80's 166912 bytes (163 KB) of shared memory per CTA"
    with pytest.raises(ValueError, match="^arch sm_90: smem_per_cta must be in 1..2\\*\\*32-1 bytes, got 0$"):
        ARCHS["sm_90"].with_(smem_per_cta=0)


# -- tiles ---------------------------------------------------------------------------------------

def test_a_tile_past_a_ctas_shared_memory_is_refused_with_its_size_and_the_limit():
    """The issue's tile: 2048x2048 f16 is 8 MiB, 36 times what a CTA can address."""
    with pytest.raises(ValueError) as e:
        Tile(2048, 2048, "f16")
    msg = str(e.value)
    assert msg.startswith("Tile: 2048 rows x 2048 cols of f16 (8 MiB) does not fit in " + SM90)
    assert "space='global'" in msg and "\n" not in msg


@pytest.mark.parametrize("rows, base, fits", [(113, 0, True), (114, 0, False), (113, 1024, True), (113, 1026, False)])
def test_a_tile_fits_when_base_plus_footprint_is_at_most_smem_per_cta(rows, base, fits):
    """113 rows of 2048 bytes = 231424 bytes: 1024 bytes of room before 232448."""
    if fits:
        assert Tile(rows, 1024, "f16", base=base).size <= 232448
    else:
        with pytest.raises(ValueError, match="does not fit in " + LIMIT):
            Tile(rows, 1024, "f16", base=base)


def test_a_padded_pitch_counts_toward_the_footprint():
    with pytest.raises(ValueError, match=r"^Tile: 128 rows x 896 cols of f16 \(245632 bytes, pitch 1920\) does not fit"):
        Tile(128, 896, "f16", pitch=1920)


def test_a_global_tile_is_declared_with_space_global_or_the_spec_word_global():
    t = Tile(2048, 2048, "f16", space="global")
    assert t.space == "global" and t.span == 8 << 20
    assert Tile.parse("2048x2048 f16 global") == t and Tile.parse(t.spec()) == t
    assert repr(t) == "Tile(2048, 2048, 'f16', space='global')" and t.describe().endswith("in global memory")
    assert t != Tile(16, 16, "f16") and Tile(16, 16, "f16", space="global") != Tile(16, 16, "f16")
    assert t.offset(2047, 2047) == 2 * (2048 * 2048 - 1)


def test_a_global_tile_takes_no_swizzle_and_stays_under_max_tile_bytes():
    with pytest.raises(ValueError, match=r"a global tile \(space=.global.\) takes no swizzle"):
        Tile(64, 64, "f16", swizzle=Swizzle(3, 4, 3), space="global")
    with pytest.raises(ValueError, match=r"^Tile: a global tile of 4096 rows x 4096 cols of f16 \(32 MiB\) exceeds 16 MiB"):
        Tile(4096, 4096, "f16", space="global")
    with pytest.raises(ValueError, match="Tile space"):
        Tile(16, 16, "f16", space="local")


def test_tile_read_and_write_refuse_an_smem_array_larger_than_a_ctas():
    t = Tile(16, 16, "f16")
    with pytest.raises(ValueError, match=f"^smem of 300000 bytes is larger than {LIMIT}$"):
        t.read(np.zeros(300000, np.uint8))
    g = Tile(16, 16, "f16", space="global")       # global memory: any array that holds it
    assert g.read(np.zeros(300000, np.uint8)).shape == (16, 16)


GLOBAL = Tile(64, 64, "f16", space="global")
REFUSERS = {
    "swizzle_search": lambda t: fragsim.swizzle_search(t, None, A.copy(Tile(64, 64, "f16"))),
    "access set": lambda t: A.copy(t),
    "check_load": lambda t: check_load(F16, "A", t, [("ldmatrix.x4", "lane * 16")]),
    "check_store": lambda t: check_store(F16, "C", t, [("st.shared.v2.b32", "lane * 8")]),
    "check_copy": lambda t: check_copy(t, [("cp.async.ca.16", "lane * 16")]),
    "check_wgmma": lambda t: check_wgmma("m64n64k16.f32.f16.f16", "A", t, 0),
}


@pytest.mark.parametrize("entry", REFUSERS)
def test_shared_memory_entry_points_refuse_a_global_tile(entry):
    with pytest.raises(ValueError, match=r"the tile 64 rows x 64 cols of f16 \(8192 bytes\) is in global memory; .* works on a "
                                         "tile in shared memory$"):
        REFUSERS[entry](GLOBAL)


def test_check_copy_takes_its_source_as_a_global_tile_of_the_same_matrix():
    """The source's pitch is the global pitch: the same report as global_pitch=."""
    t = Tile(32, 32, "f16")
    copies = [("cp.async.ca.16", "(32 * k + lane) / 4 * 64 + (32 * k + lane) % 4 * 16",
               "(32 * k + lane) / 4 * 4096 + (32 * k + lane) % 4 * 16")]
    src = Tile(32, 32, "f16", pitch=4096, space="global")
    a = check_copy(t, copies, variables={"k": range(4)}, source=src)
    b = check_copy(t, copies, variables={"k": range(4)}, global_pitch=4096)
    assert a.ok and b.ok and a.layout == b.layout
    with pytest.raises(ValueError, match="is a shared-memory tile; the copies' source is global"):
        check_copy(t, copies, variables={"k": range(4)}, source=Tile(32, 32, "f16"))
    with pytest.raises(ValueError, match="is not the tile's matrix"):
        check_copy(t, copies, variables={"k": range(4)}, source=Tile(32, 64, "f16", space="global"))
    with pytest.raises(ValueError, match="give the source's pitch once"):
        check_copy(t, copies, variables={"k": range(4)}, source=src, global_pitch=4096)


# -- addresses and smem arrays ---------------------------------------------------------------------

def test_bank_conflicts_refuse_a_shared_address_past_a_ctas_shared_memory():
    """The issue's addresses: 300000 + lane * 16, single and batched."""
    a = 300000 + LANES * 16
    with pytest.raises(ValueError, match=f"^lane 0: ldmatrix row address 300000 \\(0x493e0\\) is beyond {LIMIT}$"):
        fragsim.bank_conflicts("ldmatrix.x4", a)
    with pytest.raises(ValueError, match=f"^instruction 1, lane 0: ldmatrix row address 300000 .* is beyond {LIMIT}$"):
        fragsim.bank_conflicts("ldmatrix.x4", np.stack([LANES * 16, a]))


@pytest.mark.parametrize("op", ["ldmatrix.x4", "ld.shared.v4.b32", "st.shared.b32", "cp.async.ca.8"])
def test_the_last_bytes_a_cta_can_address_are_accepted_and_one_byte_more_is_not(op):
    o = fragsim.parse_shared_op(op)
    last = 232448 - o.bytes_per_addr
    ok = LANES * o.bytes_per_addr + last - 31 * o.bytes_per_addr
    assert int(np.sum(fragsim.bank_conflicts(o, ok).wavefronts)) >= 1
    bad = ok + o.bytes_per_addr
    with pytest.raises(ValueError, match=f"lane 31: {o.what} 232448 \\(0x38c00\\) is beyond {LIMIT}$"):
        fragsim.bank_conflicts(o, bad)
    with pytest.raises(ValueError, match=f"^instruction 0, lane 31: .* is beyond {LIMIT}$"):
        fragsim.bank_conflicts(o, bad[None])


def test_a_masked_lane_past_shared_memory_is_not_an_access():
    a = LANES * 4
    a[31] = 10**6
    assert fragsim.bank_conflicts("ld.shared.b32", a, mask=0x7FFFFFFF).wavefronts == 1
    assert fragsim.bank_conflicts("ld.shared.b32", a[None], mask=0x7FFFFFFF).wavefronts[0] == 1


SIM = {
    "ldmatrix": lambda s, a: fragsim.ldmatrix(s, a, 4),
    "stmatrix": lambda s, a: fragsim.stmatrix(s, a, np.zeros((32, 4), np.uint32), 4),
    "ld_shared": lambda s, a: fragsim.ld_shared(s, a, 16),
    "st_shared": lambda s, a: fragsim.st_shared(s, a, np.zeros((32, 4), np.uint32), 16),
    "cp_async": lambda s, a: fragsim.cp_async(s, a, np.zeros((32, 16), np.uint8), 16),
}


@pytest.mark.parametrize("fn", SIM)
def test_the_simulator_refuses_an_smem_array_or_an_address_past_a_ctas_shared_memory(fn):
    with pytest.raises(ValueError, match=f"^smem of 232464 bytes is larger than {LIMIT}$"):
        SIM[fn](np.zeros(232448 + 16, np.uint8), LANES * 16)
    with pytest.raises(ValueError, match=f"^lane 0: .* 300000 \\(0x493e0\\) is beyond {LIMIT}$"):
        SIM[fn](np.zeros(4096, np.uint8), 300000 + LANES * 16)
    SIM[fn](np.zeros(232448, np.uint8), 232448 - 512 + LANES * 16)     # the last 512 bytes: fine


def test_the_conflicts_command_prints_the_limit_in_one_line(capsys):
    code = main(["conflicts", "ldmatrix.x4", "--addrs", "300000 + lane * 16"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and f"ldmatrix row address 300000 (0x493e0) is beyond {SM90}" in err


def test_the_checker_reports_an_address_past_shared_memory_as_a_fault():
    r = check_load(F16, "A", "16x16 f16", [("ldmatrix.x4", "300000 + lane * 16")])
    assert not r.ok
    assert any(f"lane 0: ldmatrix row address 300000 (0x493e0) is beyond {SM90}" in str(f) for f in r.findings)


# -- work estimated before it starts -------------------------------------------------------------

def test_the_swizzle_command_refuses_the_issues_tile_in_one_line(capsys):
    """fragsim swizzle --tile "2048x2048 f16" grew to 23.7 GB: now one line with the size and the limit."""
    code = main(["swizzle", "--tile", "2048x2048 f16", "--preset", "copy"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "2048 rows x 2048 cols of f16 (8 MiB) does not fit in " + SM90 in err


def test_the_swizzle_search_refuses_more_work_than_its_limit_before_scoring():
    """~600 layouts x 8192 instructions x 32 lanes = ~157 million addresses, past 2**27."""
    t = Tile(64, 64, "f16")
    reads = A.from_exprs(t, "ld.shared.v4.b32", "(k % 64) * 128 + (lane % 8) * 16", variables={"k": range(8192)})
    with pytest.raises(ValueError) as e:
        fragsim.swizzle_search(t, reads)
    msg = str(e.value)
    assert msg.startswith("swizzle_search: ") and " x 8,192 instructions x 32 lanes = " in msg
    assert f"the limit is {SS.MAX_SCORED_ADDRESSES:,} addresses" in msg and "of working memory" in msg
    assert "swizzles=False" in msg and "\n" not in msg
    assert len(fragsim.swizzle_search(t, reads, candidates=[Swizzle(3, 4, 3)]).candidates) == 2   # compare mode fits


def test_the_swizzle_search_scores_in_chunks_with_the_same_figures(monkeypatch):
    """Scoring a chunk of layouts at a time gives every layout the figures of scoring all at once."""
    t = Tile(64, 64, "f16")
    s = A.copy(t) + A.mma_operand(t, F16, "A")
    whole = fragsim.swizzle_search(t, s.reads, s.writes, top=1)
    monkeypatch.setattr(SS, "SCORE_CHUNK", 5000)     # 9 layouts of the copy, 4 of the reads, per chunk
    chunked = fragsim.swizzle_search(t, s.reads, s.writes, top=1)
    assert [(c.name, c.wavefronts, c.ideal) for c in whole.candidates] == \
        [(c.name, c.wavefronts, c.ideal) for c in chunked.candidates]
    assert len(whole.candidates) > 100


def test_the_search_leaves_out_paddings_that_no_longer_fit_in_shared_memory():
    t = Tile(113, 1024, "f16")                 # 231424 bytes: 16 bytes more per row do not fit
    r = fragsim.swizzle_search(t, None, A.copy(t), swizzles=False, xor_maps=False, max_padding=64)
    assert dict((f, (n, d)) for f, n, d in r.space)["padding"][0] == 0
    assert "4 of them too large for shared memory (not scored)" in dict((f, d) for f, _, d in r.space)["padding"]


def test_an_expression_over_too_many_instances_is_refused_before_they_are_listed():
    t = Tile(64, 64, "f16")
    with pytest.raises(ValueError, match=r"^variables: 300 x 300 = 90,000 combinations of a, b \(one instruction "
                                         r"each\); the limit is 65,536$"):
        A.from_exprs(t, "ld.shared.b32", "lane * 4", variables={"a": range(300), "b": range(300)})
    with pytest.raises(ValueError, match="^variables: k has more than 65,536 values"):
        A.from_exprs(t, "ld.shared.b32", "lane * 4", variables={"k": range(10**15)})


def test_a_copy_over_too_many_instructions_is_refused_before_they_are_built():
    """check_copy: items x combinations x warps, each instruction simulated one by one."""
    with pytest.raises(ValueError, match=r"^copies: 1 item\(s\) x 1024 combination\(s\) of the variables x 32 "
                                         r"warp\(s\) = 32,768 instructions; the limit is 16,384"):
        check_copy("64x64 f16", [("cp.async.ca.16", "tid * 16")], variables={"k": range(1024)}, threads=1024)


# -- a tile as a view (issue 21, "Tile as a view") ---------------------------------------------------

def test_a_fragment_of_a_swizzled_tile_is_told_to_declare_the_whole_tile_and_place_itself_with_at():
    with pytest.raises(ValueError) as e:
        Tile(16, 16, "bf16", pitch=64, swizzle=Swizzle(2, 4, 2))
    msg = str(e.value)
    assert "is not a bijection on the tile's footprint" in msg
    assert "declare the whole tile (16 x 32), Tile(16, 32, 'bf16', swizzle=Swizzle(2, 4, 2))" in msg
    assert msg.endswith("place the fragment in it with at=(row, col)")


def test_the_whole_tile_the_message_names_checks_the_fragment_at_its_place():
    """The fragment of the issue, loaded at column 16 of the whole 16 x 32 tile, checks out."""
    whole = Tile(16, 32, "bf16", swizzle=Swizzle(2, 4, 2))
    r = check_load(BF16, "A", whole, [("ldmatrix.x4", "swizzle(2, 4, 2, (lane % 16) * 64 + 32 + (lane / 16) * 16)")],
                   at=(0, 16))
    assert r.ok


def test_a_swizzle_that_splits_the_tile_itself_gets_no_whole_tile_hint():
    """Without padding or missing lines there is no larger tile to name."""
    with pytest.raises(ValueError) as e:
        Tile(8, 8, "u8", swizzle=lambda o: o ^ 64)
    assert "not a bijection" in str(e.value) and "whole tile" not in str(e.value)
