"""Address math from the seed documents, right and with each classic mistake injected.

Each ``Case`` is the arguments of one ``fragsim.check_load`` / ``check_store`` / ``check_copy``
call (tiles as ``Tile.parse`` specs, addresses as C expressions) with the verdict it must get and,
for a mistake, the diagnosis kind that must name it.  The tests run them on the CPU; the GPU
recorder (``record``) runs every one on a GPU and records what the hardware did, which
``tests/test_check_gpu_replay.py`` replays.

Sources (docs in ../shared/seeds of the project's founding material):

- seed 000, an f16 HGEMM: A (BK = 64, 128-byte rows, Swizzle<3,4,3>) by ``ldmatrix.x4`` with
  ``row = (tile_id & 1) * 8 + row_in_tile``, ``col = (tile_id >> 1) * 8``; B (BK x BN row-major)
  by ``ldmatrix.x2.trans`` with ``row = lane & 15``; the direct loads (eight ``ld.shared.u16`` per
  A fragment, ``get_row``/``get_col``); the swizzled ``cp.async.cg`` fill of A by 256 threads.
- seed 001, a bf16 GEMM: A and B_T (128 x 32, 64-byte rows, ``atom ^ (row & 3)`` = Swizzle<2,4,2>)
  by ``ldmatrix.x4`` (B_T without .trans fills the B fragments of two n-tiles), cp.async by 128
  threads in 4 passes.
- seed 004, the smallest m16n8k16 kernel: B by ``ldmatrix.x2.trans``; its A load, ``ldmatrix.x4.trans``
  of a row-major A, delivers A transposed (the case records that).
- an epilogue written in the style of these kernels: f16 accumulators through ``st.shared.b32``;
  and the other element widths: s8 A by ``ldmatrix.x4``, f64 A by ``ld.shared.v2.b32``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    name: str
    check: str                   # "load" | "store" | "copy"
    args: dict                   # keyword arguments of fragsim.check_<check>
    ok: bool
    mistake: str | None = None   # the diagnosis kind that must name it
    note: str = ""
    tags: tuple = field(default=())


F16 = "m16n8k16.row.col.f16.f16.f16.f16"
BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"

# seed 000 ------------------------------------------------------------------------------------
S0_A = "128x64 f16 swizzle=3,4,3"
S0_A_EXPR = ("int tile_id = lane >> 3; int row_in_tile = lane & 7; "
             "int row = m * 16 + (tile_id & 1) * 8 + row_in_tile; int col = k * 16 + (tile_id >> 1) * 8; "
             "swizzle(3, 4, 3, (row * 64 + col) * 2)")
S0_B = "64x128 f16"
S0_B_EXPR = "int row = lane & 15; ((k * 16 + row) * 128 + n * 8) * 2"
S0_COPY = ("int idx = tid + i * 256; int row = idx / 8; int col8 = idx % 8; "
           "swizzle(3, 4, 3, (row * 64 + col8 * 8) * 2)")
S0_COPY_SRC = "int idx = tid + i * 256; int row = idx / 8; int col8 = idx % 8; (row * 4096 + col8 * 8) * 2"


def _direct(expr_row: str, expr_col: str) -> list:
    """Seed 000's load_fragment_direct: element i of lane = smem[get_row(lane, i) * 64 + get_col(lane, i)]."""
    out = []
    for i in range(8):
        row = expr_row.replace("I", str(i))
        col = expr_col.replace("I", str(i))
        out.append(("ld.shared.u16", f"int row = {row}; int col = {col}; (row * 64 + col) * 2"))
    return out


S0_DIRECT = _direct("(lane >> 2) + 8 * ((I >> 1) & 1)", "(lane & 3) * 2 + (I & 1) + 8 * (I >> 2)")


def _a(expr=S0_A_EXPR, **kw):
    return dict(form=F16, operand="A", tile=S0_A, loads=[("ldmatrix.x4", expr)], variables={"m": 1, "k": 2},
                at=(16, 32), **kw)


def _b(expr=S0_B_EXPR, op="ldmatrix.x2.trans", tile=S0_B):
    return dict(form=F16, operand="B", tile=tile, loads=[(op, expr)], variables={"k": 1, "n": 3}, at=(16, 24))


# seed 001 ------------------------------------------------------------------------------------
S1_A = "128x32 bf16 pitch=64 swizzle=2,4,2"
S1_B = "32x128 bf16 col pitch=64 swizzle=2,4,2"        # B_T (N x K) row-major = K x N stored by columns
S1_A_EXPR = ("int row = warp_m * 64 + mf * 16 + (lane & 15); int atom = (kb << 1) + (lane >> 4); "
             "row * 64 + (atom ^ (row & 3)) * 16")
S1_B_EXPR = ("int row = warp_n * 64 + np * 16 + ((lane >> 4) << 3) + (lane & 7); "
             "int atom = (kb << 1) + ((lane >> 3) & 1); row * 64 + (atom ^ (row & 3)) * 16")
S1_COPY = "int row = (tid >> 2) + pass * 32; int chunk = tid & 3; row * 64 + (chunk ^ (row & 3)) * 16"
S1_COPY_SRC = "int row = (tid >> 2) + pass * 32; (row * 4096 + (tid & 3) * 8) * 2"


def _s1a(expr=S1_A_EXPR):
    return dict(form=BF16, operand="A", tile=S1_A, loads=[("ldmatrix.x4", expr)],
                variables={"warp_m": 1, "mf": 2, "kb": 1}, at=("warp_m * 64 + mf * 16", "kb * 16"))


def _s1b(expr=S1_B_EXPR, op="ldmatrix.x4"):
    return dict(form=BF16, operand="B", tile=S1_B, loads=[(op, expr)],
                variables={"warp_n": 1, "np": 1, "kb": 1}, at=("kb * 16", "warp_n * 64 + np * 16"))


def _s1copy(dst=S1_COPY, src=S1_COPY_SRC, passes=4):
    return dict(tile=S1_A, copies=[("cp.async.cg.16", dst, src)], variables={"pass": range(passes)},
                threads=128, global_pitch=4096 * 2)


# seed 004 ------------------------------------------------------------------------------------
S4_A_EXPR = ("int q = lane >> 3; int r = lane & 7; int col_block = (q & 1) * 8; int row_block = (q >> 1) * 8; "
             "((row_block + r) * 16 + col_block) * 2")
S4_B_EXPR = ("int q = lane >> 3; int lower = lane & 15; int lg = lower >> 3; "
             "int kb = q > 1 ? (lg & 1) * 8 : (q & 1) * 8; int r = q > 1 ? lower & 7 : lane & 7; (kb + r) * 8 * 2")

# an epilogue: f16 accumulators (2 registers: rows gid and gid + 8), one st.shared.b32 each
EPI_TILE = "64x64 f16 swizzle=3,4,3"
EPI_ROW0 = "int gid = lane >> 2; int tig = lane & 3; swizzle(3, 4, 3, ((m * 16 + gid) * 64 + n * 8 + tig * 2) * 2)"
EPI_ROW8 = "int gid = lane >> 2; int tig = lane & 3; swizzle(3, 4, 3, ((m * 16 + gid + 8) * 64 + n * 8 + tig * 2) * 2)"
EPI_STSM = ("int row = m * 16 + (lane & 7) + ((lane >> 3) & 1) * 8; int col = n * 8 + (lane >> 4) * 8; "
            "swizzle(3, 4, 3, (row * 64 + col) * 2)")


def _epi(stores, **kw):
    return dict(form=F16, operand="C", tile=EPI_TILE, stores=stores, variables={"m": 1, "n": 2}, at=(16, 16), **kw)


CASES = [
    # seed 000
    Case("s000-A-ldmatrix.x4-swizzled", "load", _a(), True),
    Case("s000-B-ldmatrix.x2.trans", "load", _b(), True),
    Case("s000-A-direct-ld.shared.u16", "load",
         dict(form=F16, operand="A", tile="128x64 f16", loads=S0_DIRECT), True),
    Case("s000-A-copy-cp.async.cg", "copy",
         dict(tile=S0_A, copies=[("cp.async.cg.16", S0_COPY, S0_COPY_SRC)], variables={"i": range(4)},
              threads=256, global_pitch=4096 * 2), True),
    Case("s000-A-copy-chunk-order", "copy",
         dict(tile=S0_A, copies=[("cp.async.cg.16", S0_COPY)], variables={"i": range(4)}, threads=256), True),
    # seed 001
    Case("s001-A-ldmatrix.x4", "load", _s1a(), True),
    Case("s001-B-ldmatrix.x4-two-n-tiles", "load", _s1b(), True),
    Case("s001-A-copy-cp.async.cg", "copy", _s1copy(), True),
    # seed 004
    Case("s004-B-ldmatrix.x2.trans", "load",
         dict(form=F16, operand="B", tile="16x8 f16", loads=[("ldmatrix.x2.trans", S4_B_EXPR)]), True),
    Case("s004-A-ldmatrix.x4.trans-as-written", "load",
         dict(form=F16, operand="A", tile="16x16 f16", loads=[("ldmatrix.x4.trans", S4_A_EXPR)]), False,
         "transposed", "the seed's A load delivers A transposed (As is row-major)"),
    Case("s004-A-copy", "copy", dict(tile="16x16 f16", copies=[("cp.async.cg.16", "lane * 16", "lane * 16")]), True),
    Case("s004-B-copy", "copy", dict(tile="16x8 f16", copies=[("cp.async.cg.16", "lane * 16", "lane * 32", "lane < 16")],
                                     global_pitch=32), True),
    # epilogue
    Case("epi-C-st.shared.b32", "store", _epi([("st.shared.b32", EPI_ROW0), ("st.shared.b32", EPI_ROW8)]), True),
    Case("epi-C-stmatrix.x4-two-n-tiles", "store", _epi([("stmatrix.x4", EPI_STSM)]), True),
    # other element widths
    Case("s8-A-ldmatrix.x4", "load", dict(form="m16n8k32.row.col.s32.s8.s8.s32", operand="A", tile="16x32 s8",
                                          loads=[("ldmatrix.x4", "(lane % 16) * 32 + (lane / 16) * 16")]), True),
    Case("f64-A-ld.shared.v2.b32", "load", dict(form="m8n8k4.row.col.f64.f64.f64.f64", operand="A", tile="8x4 f64",
                                                loads=[("ld.shared.v2.b32", "((lane / 4) * 4 + lane % 4) * 8")]), True),

    # the mistakes, each injected into a right recipe
    Case("transposed-trans-missing", "load", _b(op="ldmatrix.x2"), False, "transposed"),
    Case("transposed-trans-extra", "load", _s1b(op="ldmatrix.x4.trans"), False, "transposed"),
    Case("x4-matrices-in-wrong-order", "load",
         _a(S0_A_EXPR.replace("(tile_id & 1) * 8 + row_in_tile", "(tile_id >> 1) * 8 + row_in_tile")
            .replace("k * 16 + (tile_id >> 1) * 8", "k * 16 + (tile_id & 1) * 8")), False, "matrix order"),
    Case("rows-off-by-8", "load", _a(S0_A_EXPR.replace("(tile_id & 1) * 8 + row_in_tile", "row_in_tile")),
         False, "offset"),
    Case("cols-off-by-8", "load", _s1a(S1_A_EXPR.replace("(kb << 1) + (lane >> 4)", "(kb << 1)")), False, "offset"),
    Case("k-halves-swapped", "load", _s1b(S1_B_EXPR.replace("((lane >> 3) & 1)", "(((lane >> 3) & 1) ^ 1)")),
         False, "k-halves swapped"),
    Case("read-swizzle-differs", "load", _s1a(S1_A_EXPR.replace("(row & 3)", "((row >> 1) & 3)")),
         False, "swizzle differs"),
    Case("swizzle-missing", "load", _a(S0_A_EXPR.replace("swizzle(3, 4, 3, (row * 64 + col) * 2)", "(row * 64 + col) * 2")),
         False, "swizzle missing"),
    Case("swizzle-before-offset", "load",
         _a(S0_A_EXPR.replace("swizzle(3, 4, 3, (row * 64 + col) * 2)", "swizzle(3, 4, 3, row * 128) + col * 2")),
         False, "swizzle before offset"),
    Case("wrong-pitch", "load", _b(S0_B_EXPR.replace("* 128 +", "* 64 +")), False, "pitch"),
    Case("misaligned", "load", _a(S0_A_EXPR.replace("(row * 64 + col) * 2)", "(row * 64 + col) * 2) + 8")),
         False, "address"),
    Case("outside-the-tile", "load", _b(S0_B_EXPR.replace("(k * 16 + row)", "(k * 16 + row + 48)")),
         False, "address"),
    Case("copy-swizzle-missing", "copy",
         dict(tile=S0_A, copies=[("cp.async.cg.16", S0_COPY.replace("swizzle(3, 4, 3, (row * 64 + col8 * 8) * 2)",
                                                                   "(row * 64 + col8 * 8) * 2"), S0_COPY_SRC)],
              variables={"i": range(4)}, threads=256, global_pitch=4096 * 2), False, "swizzle missing"),
    Case("copy-pass-stride-wrong", "copy", _s1copy(S1_COPY.replace("pass * 32", "pass * 16")), False, "holes"),
    Case("copy-unmasked-lanes", "copy",
         dict(tile="16x8 f16", copies=[("cp.async.cg.16", "lane * 16", "lane * 32")], global_pitch=32),
         False, "address"),
    Case("store-rows-off-by-8", "store", _epi([("st.shared.b32", EPI_ROW0), ("st.shared.b32", EPI_ROW0)]),
         False, "offset"),
    Case("store-trans-extra", "store", _epi([("stmatrix.x4.trans", EPI_STSM)]), False, "transposed"),
]
