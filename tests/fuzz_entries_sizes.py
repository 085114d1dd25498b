"""Large sizes for the public entry points (issue 21, "Memory blow-up"): inputs whose work or result
grows with a size the caller picks -- batch dimensions that broadcast, matrix extents, tiles, lists of
instructions, variables that multiply, strings, files.  Each ``Sized`` entry draws valid arguments of
a large size; the call must either give a sane result within the memory cap (contract.memory_cap)
or refuse in one line naming what was too large.  test_contract_fuzz_sizes.py runs them; the inputs
themselves stay below ~100 MB, so that what the cap stops is the entry point's own work; a draw gives
sizes and a seed (what a failure prints), ``run`` makes the arrays."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim import Swizzle, Tile, XorMap
from fragsim.search import access as A
from fragsim.search.addrexpr import evaluate

import fuzz_entries_wgmma

F16 = "m16n8k16.row.col.f32.f16.f16.f32"
F16_ACC16 = "m16n8k16.row.col.f16.f16.f16.f16"
#: Batch extents: small, and past what a result of their product may take.
BIG = [1, 7, 256, 4096, 1 << 16]
#: Tiles that fill most of sm_90's 232448 bytes of shared memory per CTA.
BIG_TILES = ["112x1024 f16", "128x896 f16", "64x896 f32", "128x1024 u8", "224x1024 u8", "16x7168 f16", "128x448 b32"]


@dataclass
class Sized:
    """``draw`` gives valid arguments of a large size, ``extreme`` the largest of them (always run),
    ``run(kw)`` calls the entry point; ``names``: words a refusal must contain one of; ``check(result,
    kw)``: sanity of a result."""

    name: str
    draw: st.SearchStrategy
    extreme: dict
    run: Callable
    names: tuple
    check: Callable = field(default=lambda r, kw: None)


def _ok(sane: bool) -> None:
    assert sane, "the result is not what the arguments ask for"


def _u32(rng, shape):
    return rng.integers(0, 1 << 32, shape, dtype=np.uint64).astype(np.uint32)


def _rng(kw):
    return np.random.default_rng(kw.get("seed", 0))


SEED = st.integers(0, 2**32 - 1)


# -- register operands: batches that broadcast -----------------------------------------------------

@st.composite
def mma_sizes(draw):
    """A (n1, 1), B (1, n2) and C (1 or n2) broadcast to an (n1, n2) batch of warps."""
    return {"n1": draw(st.sampled_from(BIG)), "n2": draw(st.sampled_from(BIG)), "c_wide": draw(st.booleans()),
            "seed": draw(SEED)}


def mma_run(kw):
    rng = _rng(kw)
    n1, n2 = kw["n1"], kw["n2"]
    c = _u32(rng, ((1, n2) if kw["c_wide"] else (1, 1)) + (32, 4))
    return fragsim.mma(F16, _u32(rng, (n1, 1, 32, 4)), _u32(rng, (1, n2, 32, 2)), c)


MMA = Sized("mma", mma_sizes(), {"n1": 1 << 16, "n2": 1 << 16, "c_wide": True, "seed": 0},
            mma_run, ("operand", "batch", "broadcast", "warps"),
            lambda d, kw: _ok(d.shape == (kw["n1"], kw["n2"], 32, 4)))


@st.composite
def wgmma_sizes(draw):
    """A's registers and C (n1, 1) against smem (1, n2): an (n1, n2) batch of warpgroups."""
    sizes = [1, 5, 48, 1 << 17]      # a warpgroup takes ~1 ms: what is accepted stays a few seconds
    return {"n1": draw(st.sampled_from(sizes)), "n2": draw(st.sampled_from(sizes)), "seed": draw(SEED)}


def wgmma_run(kw):
    rng = _rng(kw)
    args = fuzz_entries_wgmma._kw("m64n8k16.f32.f16.f16", rng, True)
    args["a"] = _u32(rng, (kw["n1"], 1, 128, 4))
    args["c"] = _u32(rng, (kw["n1"], 1, 128, 4))
    args["smem"] = rng.integers(0, 256, (1, kw["n2"], 8192), dtype=np.uint8)
    return fuzz_entries_wgmma.wgmma_run(args)


WGMMA = Sized("wgmma", wgmma_sizes(), {"n1": 1 << 17, "n2": 1 << 17, "seed": 0},
              wgmma_run, ("operand", "batch", "broadcast", "smem", "warpgroups"),
              lambda d, kw: _ok(d.shape[:2] == (kw["n1"], kw["n2"])))

BATCH = st.fixed_dictionaries({"n": st.sampled_from([1, 4096, 1 << 16, 1 << 18]), "seed": SEED})

MOVMATRIX = Sized("movmatrix", BATCH, {"n": 1 << 18, "seed": 0},
                  lambda kw: fragsim.movmatrix(_u32(_rng(kw), (2 * kw["n"], 32, 1))),
                  ("movmatrix",), lambda r, kw: _ok(r.shape == (2 * kw["n"], 32, 1)))
PACK = Sized("pack", BATCH, {"n": 1 << 18, "seed": 0},
             lambda kw: fragsim.pack(F16, "A", _rng(kw).integers(0, 1 << 16, (kw["n"], 16, 16), dtype=np.uint16)),
             ("operand", "matrix"), lambda r, kw: _ok(r.shape == (kw["n"], 32, 4)))
UNPACK = Sized("unpack", BATCH, {"n": 1 << 18, "seed": 0}, lambda kw: fragsim.unpack(F16, "A", _u32(_rng(kw), (kw["n"], 32, 4))),
               ("operand", "regs"), lambda r, kw: _ok(r.shape == (kw["n"], 16, 16)))


@st.composite
def gemm_sizes(draw):
    """M x K and K x N of at most 4M elements each (8 MB of f16 bits): D can be M x N = 2**28."""
    m = 16 * draw(st.sampled_from([1, 64, 1024]))
    n = 8 * draw(st.sampled_from([1, 128, 2048]))
    k = 16 * draw(st.sampled_from([1, 16, 256]))
    return {"m": m, "n": n, "k": min(k, max(16, (1 << 22) // max(m, n) // 16 * 16)), "seed": draw(SEED)}


def gemm_run(kw):
    rng = _rng(kw)
    return fragsim.gemm(F16, rng.integers(0, 0x3C00, (kw["m"], kw["k"]), dtype=np.uint16),
                        rng.integers(0, 0x3C00, (kw["k"], kw["n"]), dtype=np.uint16))


GEMM = Sized("gemm", gemm_sizes(), {"m": 1 << 14, "n": 1 << 14, "k": 16, "seed": 0}, gemm_run, ("M", "N", "K", "A", "B", "gemm"),
             lambda d, kw: _ok(d.shape == (kw["m"], kw["n"])))

VALUES = st.fixed_dictionaries({"n": st.sampled_from([1, 1 << 16, 1 << 22]), "seed": SEED})

TO_BITS = Sized("to_bits", VALUES, {"n": 1 << 22, "seed": 0},
                lambda kw: fragsim.to_bits(_rng(kw).standard_normal(kw["n"]), "bf16"),
                ("values", "to_bits"), lambda r, kw: _ok(r.shape == (kw["n"],)))
FROM_BITS = Sized("from_bits", VALUES, {"n": 1 << 22, "seed": 0},
                  lambda kw: fragsim.from_bits(_rng(kw).integers(0, 1 << 32, kw["n"], dtype=np.uint64), "f32"),
                  ("bit patterns",), lambda r, kw: _ok(r.shape == (kw["n"],)))


# -- shared memory: batches of instructions ----------------------------------------------------------

def _smem(kw):
    return _rng(kw).integers(0, 256, 232448, dtype=np.uint8)


def _rows(kw, n=None):
    return _rng(kw).integers(0, 232448 // 16, (kw["n"] if n is None else n, 32)) * 16


LDMATRIX = Sized("ldmatrix", BATCH, {"n": 1 << 18, "seed": 0}, lambda kw: fragsim.ldmatrix(_smem(kw), _rows(kw), 4, True),
                 ("addrs", "smem", "instructions"), lambda r, kw: _ok(r.shape == (kw["n"], 32, 4)))
LD_SHARED = Sized("ld_shared", BATCH, {"n": 1 << 18, "seed": 0}, lambda kw: fragsim.ld_shared(_smem(kw), _rows(kw), 16),
                  ("addrs", "smem", "instructions"), lambda r, kw: _ok(r.shape == (kw["n"], 32, 4)))
BANKS = Sized("bank_conflicts", BATCH, {"n": 1 << 18, "seed": 0},
              lambda kw: fragsim.bank_conflicts("ld.shared.v4.b32", _rows(kw, 2 * kw["n"])),
              ("addrs", "instructions"), lambda r, kw: _ok(len(r.wavefronts) == 2 * kw["n"]))
BANKS_CP = Sized("bank_conflicts cp.async", BATCH, {"n": 1 << 18, "seed": 0},
                 lambda kw: fragsim.bank_conflicts("cp.async.cg.16", _rows(kw), None, _rows(kw) * 4096),
                 ("addrs", "src", "instructions"), lambda r, kw: _ok(len(r.wavefronts) == kw["n"]))


# -- tiles and layouts --------------------------------------------------------------------------------

@st.composite
def global_tiles(draw):
    """Global tiles up to MAX_TILE_BYTES (16 MiB), u8 to b64: up to 16M elements."""
    dtype = draw(st.sampled_from(["u8", "f16", "f32", "b64"]))
    eb = fragsim.layout.tile.ELEMENT_BYTES[dtype]
    rows = draw(st.sampled_from([1, 7, 1024, 4096]))
    return {"rows": rows, "cols": max(1, (1 << 24) // eb // rows - draw(st.sampled_from([0, 1]))), "dtype": dtype}


def global_tile_run(kw):
    t = Tile(kw["rows"], kw["cols"], kw["dtype"], space="global")
    a = t.addresses()
    idx, _ = t.locate(a[-1:, -3:])
    return a, idx


GLOBAL_TILE = Sized("Tile (global) addresses/locate", global_tiles(), {"rows": 1, "cols": 1 << 24, "dtype": "u8"},
                    global_tile_run, ("Tile",),
                    lambda r, kw: _ok(r[0].shape == (kw["rows"], kw["cols"]) and (r[1] >= 0).all()))


@st.composite
def shared_tiles(draw):
    spec = draw(st.sampled_from(BIG_TILES + ["16x7168 f16 swizzle=3,4,3", "128x1024 u8 swizzle=3,4,3"]))
    return {"tile": spec, "pitch": draw(st.sampled_from([None, 16, 4096]))}


def shared_tile_run(kw):
    t = Tile.parse(kw["tile"])
    if kw["pitch"] is not None:
        t = t.with_layout(pitch=t.line_bytes + kw["pitch"], swizzle=None)
    smem = np.zeros(t.size, np.uint8)
    t.write(smem, np.zeros((t.rows, t.cols), t.bits_dtype))
    return t.read(smem)


SHARED_TILE = Sized("Tile (shared) write/read", shared_tiles(), {"tile": "224x1024 u8", "pitch": 4096},
                    shared_tile_run, ("Tile", "smem"),
                    lambda r, kw: _ok(r.shape == Tile.parse(kw["tile"]).addresses().shape))


PAIR = st.fixed_dictionaries({"n1": st.sampled_from(BIG), "n2": st.sampled_from(BIG)})

TILE_OFFSET = Sized("Tile.offset", PAIR, {"n1": 1 << 16, "n2": 1 << 16},
                    lambda kw: Tile(16, 64, "f16", swizzle=Swizzle(3, 4, 3)).offset(np.arange(kw["n1"])[:, None] % 16,
                                                                                   np.arange(kw["n2"]) % 64),
                    ("row", "col", "offsets"), lambda r, kw: _ok(r.shape == (kw["n1"], kw["n2"])))


def _offsets(kw):
    return _rng(kw).integers(0, 1 << 40, kw["n"])


XOR_APPLY = Sized("XorMap()", VALUES, {"n": 1 << 22, "seed": 0},
                  lambda kw: XorMap([1 << ((i * 7) % 48) for i in range(48)])(_offsets(kw)),
                  ("offsets", "XorMap"), lambda r, kw: _ok(r.shape == (kw["n"],)))
LAYOUT_TABLE = Sized("LinearLayout.table", st.fixed_dictionaries({"bits": st.sampled_from([4, 12, 20, 30, 48])}),
                     {"bits": 48}, lambda kw: XorMap([1 << ((i * 7) % kw["bits"]) for i in range(kw["bits"])]).layout.table(),
                     ("table", "inputs"), lambda r, kw: _ok(r[0].size == 1 << kw["bits"]))
SWIZZLE_APPLY = Sized("Swizzle()", VALUES, {"n": 1 << 22, "seed": 0},
                      lambda kw: Swizzle(3, 4, 3)(_offsets(kw)), ("offsets", "Swizzle"),
                      lambda r, kw: _ok(r.shape == (kw["n"],)))


# -- the swizzle search and the access sets ------------------------------------------------------------

@st.composite
def search_sizes(draw):
    """A tile that fills shared memory, the presets that fit it, the widest XOR space and padding, and
    optionally the user's own reads over many instances."""
    spec = draw(st.sampled_from(["112x1024 f16", "128x896 f16", "128x1024 u8", "64x64 f16"]))
    return {"tile": spec, "copy": draw(st.sampled_from(["cp.async.ca.16", "cp.async.cg.16", "st.shared.v4.b32"])),
            "threads": draw(st.sampled_from([128, 1024])),
            "a_warps": draw(st.sampled_from([None, (2, 2), (1, 32)])) if ".f16" in spec or "f16" in spec else None,
            "instances": draw(st.sampled_from([0, 64, 4096, 1 << 16])),
            "xor_row_bits": draw(st.sampled_from([None, 4])), "max_padding": draw(st.sampled_from([0, 128, 4096])),
            "top": draw(st.sampled_from([1, 10]))}


def search_run(kw):
    t = Tile.parse(kw["tile"])
    sets = [A.copy(t, kw["copy"], threads=kw["threads"])]
    if kw["a_warps"] is not None:
        sets.append(A.mma_operand(t, F16, "A", warps=kw["a_warps"]))
    if kw["instances"]:
        sets.append(A.from_exprs(t, "ld.shared.v4.b32", f"(i % {t.rows}) * {t.pitch} + (lane % 8) * 16",
                                 variables={"i": range(kw["instances"])}))
    s = A.AccessSet(sets)
    return fragsim.swizzle_search(t, s.reads or None, s.writes, xor_row_bits=kw["xor_row_bits"],
                                  max_padding=kw["max_padding"], top=kw["top"])


SEARCH = Sized("swizzle_search", search_sizes(),
               {"tile": "128x1024 u8", "copy": "cp.async.ca.16", "threads": 1024, "a_warps": None, "instances": 1 << 16,
                "xor_row_bits": 4, "max_padding": 4096, "top": 10}, search_run,
               ("swizzle_search", "xor_row_bits", "layouts", "instructions"),
               lambda r, kw: _ok(r.ranked))


@st.composite
def exprs_sizes(draw):
    counts = draw(st.lists(st.sampled_from([1, 16, 256, 4096, 1 << 16, 10**12]), min_size=1, max_size=3))
    return {"variables": {f"v{i}": range(c) for i, c in enumerate(counts)}}


FROM_EXPRS = Sized("access.from_exprs", exprs_sizes(), {"variables": {"v0": range(10**12)}},
                   lambda kw: A.from_exprs(Tile(64, 64, "f16"), "ldmatrix.x4",
                                           " + ".join(f"({v} % 2) * 0" for v in kw["variables"]) + " + (lane % 64) * 128",
                                           variables=kw["variables"]),
                   ("variables",), lambda r, kw: _ok(len(r) >= 1))


@st.composite
def preset_sizes(draw):
    return {"tile": draw(st.sampled_from(["112x1024 f16", "128x896 f16", "16x7168 f16"])),
            "warps": draw(st.sampled_from([(1, 32), (32, 1), (2, 2), (4, 8)]))}


def preset_run(kw):
    t = Tile.parse(kw["tile"])
    return (A.copy(t, threads=1024) + A.mma_operand(t, F16, "A", warps=kw["warps"])
            + A.mma_operand(Tile(t.cols, t.rows, "f16", order="col"), F16, "B", warps=kw["warps"]))


PRESETS = Sized("access presets", preset_sizes(), {"tile": "16x7168 f16", "warps": (1, 32)},
                preset_run, ("warp", "tile", "fragment"),
                lambda r, kw: _ok(len(r) > 0))


# -- the checks ---------------------------------------------------------------------------------------

@st.composite
def copy_sizes(draw):
    spec = draw(st.sampled_from(["112x1024 f16", "128x1024 u8", "64x64 f16"]))
    threads = draw(st.sampled_from([32, 1024]))
    chunks = Tile.parse(spec).span // 16
    return {"tile": spec, "threads": threads, "passes": draw(st.sampled_from([-(-chunks // threads), 1 << 9, 1 << 15]))}


def copy_run(kw):
    return fragsim.check_copy(kw["tile"], [("cp.async.cg.16", f"(tid + pass * {kw['threads']}) * 16")],
                              variables={"pass": range(kw["passes"])}, threads=kw["threads"])


CHECK_COPY = Sized("check_copy", copy_sizes(), {"tile": "112x1024 f16", "threads": 1024, "passes": 1 << 14},
                   copy_run, ("copies", "variables", "instructions"),
                   lambda r, kw: _ok(isinstance(r.ok, bool)))


@st.composite
def load_sizes(draw):
    n = draw(st.sampled_from([1, 64, 4096, 1 << 14, 1 << 15]))
    return {"n": n}


def load_run(kw):
    t = Tile(16, 16 * kw["n"], "f16", space="shared") if 16 * 16 * kw["n"] * 2 <= 232448 else Tile(16, 7168, "f16")
    loads = [("ldmatrix.x4", f"(lane % 16) * {t.line_bytes} + (lane / 16) * 16 + {32 * i}") for i in range(kw["n"])]
    return fragsim.check_load(F16, "A", t, loads)


CHECK_LOAD = Sized("check_load", load_sizes(), {"n": 1 << 15}, load_run, ("loads", "fragment", "fit", "instructions"),
                   lambda r, kw: _ok(isinstance(r.ok, bool)))


CHECK_WGMMA = Sized("check_wgmma", st.fixed_dictionaries({"cols": st.sampled_from([16, 1024, 1792])}), {"cols": 1792},
                    lambda kw: fragsim.check_wgmma("m64n64k16.f32.f16.f16", "A", Tile(64, kw["cols"], "f16"),
                                                   fragsim.MatrixDescriptor(0, 128, 2 * kw["cols"] * 8, 0, "none"),
                                                   steps=kw["cols"] // 16),
                    ("steps", "descriptor", "tile"), lambda r, kw: _ok(isinstance(r.ok, bool)))


# -- text ----------------------------------------------------------------------------------------------

TEXTS = {"dotted form": lambda n: "m16n8k16" + ".row" * n, "dotted op": lambda n: "ldmatrix" + ".x4" * n,
         "digits": lambda n: "f" + "1" * n, "leading spaces": lambda n: " " * n + "bf16",
         "nested parentheses": lambda n: "(" * n + "lane" + ")" * n, "terms": lambda n: "lane" + " + lane" * n}
LONG_TEXT = st.fixed_dictionaries({"kind": st.sampled_from(sorted(TEXTS)),
                                   "n": st.sampled_from([1 << 10, 1 << 16, 1 << 20, 1 << 23])})


def _text(kw):
    return TEXTS[kw["kind"]](kw["n"])


LOOKUP = Sized("lookup", LONG_TEXT, {"kind": "dotted form", "n": 1 << 23}, lambda kw: fragsim.lookup(_text(kw)), ("form",))
PARSE_OP = Sized("parse_shared_op", LONG_TEXT, {"kind": "dotted op", "n": 1 << 23},
                 lambda kw: fragsim.parse_shared_op(_text(kw)), ("op",))
GET_FORMAT = Sized("get_format", LONG_TEXT, {"kind": "digits", "n": 1 << 23},
                   lambda kw: fragsim.get_format(_text(kw)), ("format",))
TILE_PARSE = Sized("Tile.parse", LONG_TEXT, {"kind": "leading spaces", "n": 1 << 23},
                   lambda kw: Tile.parse(_text(kw)), ("tile spec", "Tile"))
EVALUATE = Sized("addrexpr.evaluate", LONG_TEXT, {"kind": "nested parentheses", "n": 1 << 23}, lambda kw: evaluate(_text(kw)),
                 ("position", "expression", "nest", "long", "deep"))
EVALUATE_BROADCAST = Sized("addrexpr.evaluate broadcast", PAIR, {"n1": 1 << 16, "n2": 1 << 16},
                           lambda kw: evaluate("lane * 16 + k", lane=np.arange(kw["n1"])[:, None] % 32, k=np.arange(kw["n2"])),
                           ("lane", "'k'", "values"), lambda r, kw: _ok(r.shape == (kw["n1"], kw["n2"])))

ENTRIES = [MMA, WGMMA, MOVMATRIX, PACK, UNPACK, GEMM, TO_BITS, FROM_BITS, LDMATRIX, LD_SHARED, BANKS, BANKS_CP,
           GLOBAL_TILE, SHARED_TILE, TILE_OFFSET, XOR_APPLY, LAYOUT_TABLE, SWIZZLE_APPLY, SEARCH, FROM_EXPRS, PRESETS, CHECK_COPY,
           CHECK_LOAD, CHECK_WGMMA, LOOKUP, PARSE_OP, GET_FORMAT, TILE_PARSE, EVALUATE, EVALUATE_BROADCAST]
