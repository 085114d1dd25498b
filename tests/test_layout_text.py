"""Fragment maps as text (fragsim/instructions/text.py, `fragsim layout`): one renderer for mma.sync (a warp)
and wgmma (a warpgroup of 128 threads) -- header, numbered rows and columns in blocks that fit the
width, --cols, --by-lane, and one JSON schema."""

import json
import re

import numpy as np
import pytest

from fragsim.cli import main
from fragsim.instructions.text import DEFAULT_WIDTH, fragment_grid, fragment_json, lane_list

WG = "m64n64k16.f32.bf16.bf16"
F16 = "m16n8k16.row.col.f16.f16.f16.f16"
B1 = "m16n8k128.row.col.s32.b1.b1.s32.and.popc"


def _out(capsys, *argv) -> str:
    assert main(["layout", *argv]) == 0
    return capsys.readouterr().out


def _error(capsys, *argv) -> str:
    assert main(["layout", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    return err


def _blocks(text: str):
    """(column numbers, {row: cells}) of each block of a grid."""
    out = []
    for line in text.splitlines():
        if line.startswith("row\\col"):
            out.append(([int(x) for x in line.split()[1:]], {}))
        elif out and re.match(r"^\s+\d+ ", line):
            r, *cells = line.split()
            out[-1][1][int(r)] = cells
    return out


def test_wgmma_grid_has_the_mma_header_and_numbered_rows_and_columns(capsys):
    """`fragsim layout m64n64k16.f32.bf16.bf16 D`: the form, operand, shape, registers per thread, the
    warps' rows, then column numbers and numbered rows (D row 16 is warp 1's thread 32)."""
    out = _out(capsys, WG, "D").splitlines()
    assert out[0] == ("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16  operand D: 64x64 f32, "
                      "32 registers x 1 element(s) per thread")
    assert out[1] == "128 threads, 4 warps: thread t is lane t%32 of warp w = t/32, which holds rows 16w..16w+15"
    assert out[2] == "columns 0..7 of 0..63:"
    assert out[3].split() == ["row\\col"] + [str(c) for c in range(8)]
    assert out[4].split() == ["0", "T0:d0", "T0:d1", "T1:d0", "T1:d1", "T2:d0", "T2:d1", "T3:d0", "T3:d1"]
    assert out[4 + 16].split()[:2] == ["16", "T32:d0"]


@pytest.mark.parametrize("form, op", [(WG, "D"), ("m64n256k32.s32.s8.u8", "C"), (WG, "A"), (B1, "A"), (F16, "A")])
@pytest.mark.parametrize("width", [60, 80, DEFAULT_WIDTH])
def test_grid_blocks_fit_the_width_and_show_every_column_once(form, op, width):
    """Each block's lines fit the width; the blocks' column numbers are 0..N-1 in order, each block
    has every row, and its cells are the unwrapped grid's."""
    whole = _blocks(fragment_grid(form, op, width=0))
    assert len(whole) == 1
    cols, cells = whole[0]
    text = fragment_grid(form, op, width=width)
    for line in text.splitlines()[1:]:
        assert len(line) <= width or not line.startswith(("row\\col", " ")), line
    blocks = _blocks(text)
    assert [c for b, _ in blocks for c in b] == cols
    for b, rows in blocks:
        assert sorted(rows) == sorted(cells)
        assert all(rows[r] == [cells[r][c] for c in b] for r in rows)


def test_an_mma_map_that_fits_prints_one_block_without_a_columns_line(capsys):
    out = _out(capsys, F16, "A").splitlines()
    assert not any(line.startswith("columns") for line in out) and len(out) == 2 + 16


def test_cols_prints_only_those_columns(capsys):
    """--cols 30..33: the four columns, said to be a part of 0..63."""
    out = _out(capsys, WG, "D", "--cols", "30..33").splitlines()
    assert out[2] == "columns 30..33 of 0..63:"
    assert out[3].split()[1:] == ["30", "31", "32", "33"]
    assert out[4].split() == ["0", "T3:d12", "T3:d13", "T0:d16", "T0:d17"]
    assert _out(capsys, WG, "D", "--cols", "5").splitlines()[3].split() == ["row\\col", "5"]


def test_width_0_prints_one_block(capsys):
    out = _out(capsys, WG, "D", "--width", "0").splitlines()
    assert out[2].split()[1:] == [str(c) for c in range(64)] and len(out) == 2 + 1 + 64


def test_wgmma_by_lane_lists_each_thread_with_its_warp_and_lane(capsys):
    """128 threads; thread 37 is lane 5 of warp 1: row 16 + 5/4 = 17, columns 2, 3 (+8 per register pair)."""
    out = _out(capsys, "m64n8k16.f16.f16.f16", "C", "--by-lane").splitlines()
    assert len(out) == 128
    assert out[37] == "thread  37 (warp 1, lane  5): r0={(17,2),(17,3)}  r1={(25,2),(25,3)}"


def test_long_by_lane_lines_continue_indented_within_the_width():
    """b1 A: 32 elements per register.  Wrapped, every line fits and the continuation lines, joined,
    give the unwrapped text."""
    whole = lane_list(B1, "A", width=0).splitlines()
    text = lane_list(B1, "A").splitlines()
    assert max(len(line) for line in text) <= DEFAULT_WIDTH < max(len(line) for line in whole)
    joined = []
    for line in text:
        if line.startswith(" "):
            sep = "" if joined[-1].endswith(",") else "  "
            joined[-1] += sep + line.strip()
        else:
            joined.append(line)
    assert joined == whole
    wg = lane_list(WG, "D").splitlines()
    assert wg[0].startswith("thread   0 (warp 0, lane  0): r0={(0,0)}") and wg[1].startswith(" " * 30 + "r")


def test_json_is_one_schema_for_mma_and_wgmma_maps():
    """The same keys; thread = 32*warp + lane; by_lane[t][r][e] is the (row, col) whose thread,
    register and half are (t, r, e)."""
    mma, wg = fragment_json(F16, "C"), fragment_json(WG, "A")
    assert mma.keys() == wg.keys()
    assert (mma["threads"], mma["warps"], wg["threads"], wg["warps"]) == (32, 1, 128, 4)
    for d in (mma, wg):
        thread, lane, warp = (np.array(d[k]) for k in ("thread", "lane", "warp"))
        assert (thread == 32 * warp + lane).all()
        for t, regs in enumerate(d["by_lane"]):
            for r, elems in enumerate(regs):
                for e, (row, col) in enumerate(elems):
                    assert (d["thread"][row][col], d["register"][row][col], d["half"][row][col]) == (t, r, e)


def test_mma_json_keeps_its_keys(capsys):
    """The mma schema's keys and values stay: lane, register, half, by_lane, registers_per_lane."""
    data = json.loads(_out(capsys, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "a", "--json"))
    assert data["shape"] == [16, 8] and data["registers_per_lane"] == 4 and data["elements_per_register"] == 1
    assert data["by_lane"][5][1] == [[9, 1]] and data["lane"][9][1] == 5 and data["register"][9][1] == 1
    assert data["thread"] == data["lane"]


@pytest.mark.parametrize("argv, message", [
    ([WG, "D", "--cols", "0..64"], "--cols 0..64: the matrix has columns 0..63"),
    ([WG, "D", "--cols", "9..3"], "the range is empty"),
    ([WG, "D", "--cols", "x"], "expected LOW..HIGH"),
    ([WG, "D", "--cols", "1", "--json"], "--cols: --json gives the whole map"),
    ([WG, "D", "--cols", "1", "--by-lane"], "--cols selects columns of the grid"),
    ([WG, "D", "--width", "-1"], "--width -1: expected a number of characters"),
    ([WG, "D", "--by-lane", "--png", "x.png"], "--by-lane: --png/--svg draw the whole map"),
    ([WG, "B"], "operand B of wgmma is always in shared memory"),
    (["movmatrix", "--cols", "1"], "movmatrix's grids are 8 columns wide"),
])
def test_options_that_do_not_apply_are_refused_in_one_line(capsys, argv, message):
    assert message in _error(capsys, *argv)


def test_movmatrix_map_still_prints(capsys):
    out = _out(capsys, "movmatrix").splitlines()
    assert out[0].startswith("movmatrix.sync.aligned.m8n8.trans.b16") and out[4].split()[:2] == ["0", "T0:e0"]
