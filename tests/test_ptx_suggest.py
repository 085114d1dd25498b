"""``run.shared.suggest()`` and ``fragsim run --suggest``: from the traffic report to the swizzle that removes
its bank conflicts, with the store side named and the before/after figures recounted on the run's own
addresses -- and those figures are what the kernel measures once the swizzle is written into it."""

from __future__ import annotations

import json

import numpy as np
import pytest

import fragsim
from fragsim.cli import main

#: One CTA of 4 warps: a 64 x 64 f16 tile (128-byte rows) filled by 16-byte stores, row after row, then
#: each warp reads its 16 rows with ldmatrix.x4 (4 k-steps of 16 columns).  ``{store}``/``{load}``
#: swizzle the byte offset held in %r6 / %r17 before the tile's address is added (nothing by default).
TILE64 = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry tile64(.param .u64 out)
{{
    .reg .b32 %r<40>;
    .reg .b64 %rd<8>;
    .reg .pred %p<4>;
    .shared .align 1024 .b8 tile[8192];

    mov.u32 %r1, %tid.x;
    and.b32 %r30, %r1, 31;
    shr.u32 %r31, %r1, 5;
    mov.u32 %r2, tile;
    mov.u32 %r3, 0;
$store:
    shl.b32 %r4, %r3, 7;
    add.u32 %r5, %r4, %r1;
    shl.b32 %r6, %r5, 4;
{store}
    add.u32 %r7, %r2, %r6;
    shl.b32 %r8, %r5, 2;
    add.u32 %r9, %r8, 1;
    add.u32 %r10, %r8, 2;
    add.u32 %r11, %r8, 3;
    st.shared.v4.b32 [%r7], {{%r8, %r9, %r10, %r11}};
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, 4;
    @%p1 bra $store;
    bar.sync 0;
    and.b32 %r12, %r30, 15;
    shl.b32 %r13, %r31, 4;
    add.u32 %r12, %r12, %r13;
    shl.b32 %r12, %r12, 7;
    shr.u32 %r14, %r30, 4;
    shl.b32 %r14, %r14, 4;
    add.u32 %r14, %r14, %r12;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r15, 0;
$load:
    shl.b32 %r16, %r15, 5;
    add.u32 %r17, %r14, %r16;
{load}
    add.u32 %r17, %r17, %r2;
    ldmatrix.sync.aligned.m8n8.x4.shared.b16 {{%r20, %r21, %r22, %r23}}, [%r17];
    shl.b32 %r18, %r15, 7;
    add.u32 %r18, %r18, %r1;
    mul.wide.u32 %rd3, %r18, 16;
    add.u64 %rd4, %rd2, %rd3;
    st.global.v4.b32 [%rd4], {{%r20, %r21, %r22, %r23}};
    add.u32 %r15, %r15, 1;
    setp.lt.u32 %p2, %r15, 4;
    @%p2 bra $load;
    ret;
}}
"""


def _lines_of(ptx: str, start: str) -> int:
    return next(i for i, ln in enumerate(ptx.split("\n"), 1) if ln.strip().startswith(start))


def _swizzle(reg: str, sw: fragsim.Swizzle) -> str:
    """PTX that applies ``sw`` (S > 0) to the byte offset in ``reg``: off ^= (off >> S) & zzz_mask."""
    return (f"    shr.u32 %r25, {reg}, {sw.S};\n    and.b32 %r25, %r25, {sw.zzz_mask};\n"
            f"    xor.b32 {reg}, {reg}, %r25;")


def run_tile64(sw: fragsim.Swizzle | None = None):
    ptx = TILE64.format(store="" if sw is None else _swizzle("%r6", sw),
                        load="" if sw is None else _swizzle("%r17", sw))
    out = np.zeros((512, 4), np.uint32)
    run = fragsim.run_kernel(ptx, grid=1, block=128, args=[out], report=True)
    return ptx, run, out


@pytest.fixture(scope="module")
def plain():
    return run_tile64()


def test_suggest_proposes_the_swizzle_that_makes_the_8_way_ldmatrix_conflict_free_and_names_the_store_line(plain):
    ptx, run, _ = plain
    ld_line, st_line = _lines_of(ptx, "ldmatrix"), _lines_of(ptx, "st.shared")
    ld = next(r for r in run.shared if r.line == ld_line)
    assert (ld.executions, ld.wavefronts, ld.ideal) == (16, 16 * 32, 16 * 4)     # 8 rows of one bank per phase
    (s,) = run.shared.suggest()
    assert s.swizzle == fragsim.Swizzle(3, 4, 3) and s.name == "tile" and (s.lo, s.hi) == (0, 8192)
    assert [x.line for x in s.stores] == [st_line] and [x.line for x in s.loads] == [ld_line]
    (load,) = s.loads
    assert (load.conflicts_before, load.conflicts_after, load.wavefronts_after) == (448, 0, 64)
    assert s.stores[0].conflicts_after == 0 and s.round_trip is True
    text = str(s)
    assert f"store side: PTX line {st_line}  st.shared.v4.b32 [%r7]" in text
    assert "Swizzle<3,4,3>" in text and "off ^ ((off >> 3) & 0x70)" in text and "448 -> 0" in text


def test_before_figures_are_the_reports_and_after_figures_are_what_the_swizzled_kernel_measures(plain):
    _, run, out = plain
    (s,) = run.shared.suggest()
    by_line = {r.line: r for r in run.shared}
    assert all((by_line[x.line].wavefronts, by_line[x.line].ideal) == (x.wavefronts_before, x.ideal) for x in s.lines)
    ptx2, run2, out2 = run_tile64(s.swizzle)           # the suggestion written into the kernel, both sides
    assert np.array_equal(out2, out)                    # the same data reaches every lane
    st2, ld2 = sorted(run2.shared, key=lambda r: r.line)
    st, ld = s.lines
    assert (st2.wavefronts, st2.ideal, ld2.wavefronts, ld2.ideal) == (st.wavefronts_after, st.ideal,
                                                                      ld.wavefronts_after, ld.ideal)
    assert run2.shared.suggest().text().startswith("suggest: no instruction of the run has bank conflicts")


def test_the_recorded_counts_survive_merging_many_warp_executions_into_distinct_ones():
    ptx = TILE64.format(store="", load="")
    run = fragsim.run_kernel(ptx, grid=260, block=128, args=[np.zeros((512, 4), np.uint32)], report=True)
    rows = {r.line: r for r in run.shared}
    assert all(len(r.recorded.distinct()[0]) == 16 for r in rows.values())    # 4 warps x 4 trips, any CTA
    (s,) = run.shared.suggest()
    assert [(x.executions, x.wavefronts_before, x.ideal) for x in s.lines] == [
        (rows[x.line].executions, rows[x.line].wavefronts, rows[x.line].ideal) for x in s.lines]
    assert s.lines[1].executions == 260 * 16 and s.conflicts_after == 0


#: 32 lanes store to and load from word 0 of their own 128-byte row of a 4096-byte variable (rows 0-31 end at
#: byte 3972): 32 lanes in bank 0 each time.
STRIDE = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry stride()
{
    .reg .b32 %r<8>;
    .shared .align 128 .b8 rows[4096];

    mov.u32 %r1, %tid.x;
    mov.u32 %r2, rows;
    shl.b32 %r3, %r1, 7;
    add.u32 %r4, %r2, %r3;
    st.shared.u32 [%r4], %r1;
    bar.sync 0;
    ld.shared.u32 %r5, [%r4];
    ret;
}
"""


def test_a_buffer_alone_in_its_variable_takes_the_whole_variable_so_a_swizzle_may_use_its_unused_bytes():
    run = fragsim.run_kernel(STRIDE, grid=1, block=32, args=[], report=True)
    (s,) = run.shared.suggest()
    assert (s.name, s.lo, s.hi) == ("rows", 0, 4096)          # not the 3972 bytes the lanes touched
    assert s.swizzle == fragsim.Swizzle(5, 2, 5) and (s.conflicts_before, s.conflicts_after) == (62, 0)


#: One warp fills 512 bytes with 16-byte stores, then reads one word of every 16 bytes: 4 lanes per bank.
#: A swizzle must keep the 16-byte stores whole (it moves 16-byte chunks), so each word stays at offset 0 of
#: its chunk, in one of 8 banks: no swizzle can help.
CHUNKS = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry chunks(.param .u64 out)
{
    .reg .b32 %r<12>;
    .reg .b64 %rd<6>;
    .shared .align 16 .b8 buf[512];

    mov.u32 %r1, %tid.x;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 4;
    add.u32 %r4, %r2, %r3;
    st.shared.v4.b32 [%r4], {%r1, %r1, %r1, %r1};
    bar.sync 0;
    ld.shared.b32 %r5, [%r4];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mul.wide.u32 %rd3, %r1, 4;
    add.u64 %rd4, %rd2, %rd3;
    st.global.u32 [%rd4], %r5;
    ret;
}
"""


def test_when_no_swizzle_helps_the_suggestion_says_so_and_changes_nothing():
    run = fragsim.run_kernel(CHUNKS, grid=1, block=32, args=[np.zeros(32, np.uint32)], report=True)
    (s,) = run.shared.suggest()
    assert s.swizzle is None and s.conflicts_before == 3 and s.conflicts_after == 3
    assert "no swizzle suggested: none of the" in s.text() and "lowers its wavefronts" in s.text()


#: A tile of 32 rows of 128 bytes, each lane storing to its own row's word 0 (32 lanes in bank 0), then
#: an atomic on the same tile.
ATOMIC = """
.version 8.0
.target sm_90
.address_size 64

.visible .entry atomic()
{
    .reg .b32 %r<8>;
    .shared .align 128 .b8 rows[4096];

    mov.u32 %r1, %tid.x;
    mov.u32 %r2, rows;
    shl.b32 %r3, %r1, 7;
    add.u32 %r4, %r2, %r3;
    st.shared.u32 [%r4], %r1;
    bar.sync 0;
    atom.shared.add.u32 %r5, [%r4], 1;
    ret;
}
"""


def test_a_buffer_an_atomic_also_touches_is_not_remapped_and_the_reason_names_the_atomic_line():
    run = fragsim.run_kernel(ATOMIC, grid=1, block=32, args=[], report=True)
    (s,) = run.shared.suggest()
    atom = _lines_of(ATOMIC, "atom.shared")
    assert s.swizzle is None and f"the atomic at PTX line {atom}" in s.reason
    assert s.conflicts_before == 31                      # the store: 32 lanes in one bank


def test_a_line_is_named_by_ptx_line_or_as_the_report_prints_it_and_a_wrong_one_says_what_was_expected(plain):
    ptx, run, _ = plain
    ld_line = _lines_of(ptx, "ldmatrix")
    assert [s.swizzle for s in run.shared.suggest(line=ld_line)] == [fragsim.Swizzle(3, 4, 3)]
    assert len(run.shared.suggest(line=f"PTX line {ld_line}")) == 1
    with pytest.raises(ValueError, match=r"line 3: no shared-memory instruction of the run is there; the report's "
                                         r"lines are PTX line"):
        run.shared.suggest(line=3)
    with pytest.raises(TypeError, match=r"line must be a PTX line number \(int\) or a line as the report prints it"):
        run.shared.suggest(line=2.5)


def test_fragsim_run_report_suggest_prints_the_report_then_the_suggestion(tmp_path, capsys):
    ptx = tmp_path / "tile64.ptx"
    ptx.write_text(TILE64.format(store="", load=""))
    np.save(tmp_path / "out.npy", np.zeros((512, 4), np.uint32))
    argv = ["run", str(ptx), "--block", "128", "--arg", str(tmp_path / "out.npy"), "-o", str(tmp_path / "o")]
    assert main(argv + ["--report", "--suggest"]) == 0
    out = capsys.readouterr().out
    assert out.index("shared-memory traffic of tile64") < out.index("shared buffer tile: bytes 0x0..0x1fff")
    assert "suggestion: Swizzle<3,4,3>" in out and "store side: PTX line" in out
    assert main(argv + ["--suggest", "--json"]) == 0
    (b,) = json.loads(capsys.readouterr().out)["suggest"]["buffers"]
    assert (b["swizzle"], b["conflicts_before"], b["conflicts_after"]) == ("Swizzle<3,4,3>", 448, 0)
    assert main(argv + ["--suggest", "--trace", "A=0,B=0,D=0"]) == 2
    assert "--suggest reads the traffic of a plain run" in capsys.readouterr().err
