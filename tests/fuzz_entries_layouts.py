"""The contract fuzz's entries for tiles and layouts: ``Tile`` (and its offset/locate/write/read),
``XorMap``, ``swizzle_search`` and ``check_load``/``check_store``/``check_copy`` (see
fuzz_entries.py for the form of an entry)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim import Swizzle, Tile, XorMap
from fragsim.search import access as A

from contract import EITHER, ERROR, OK
from fuzz_entries import Entry

F16 = "m16n8k16.row.col.f16.f16.f16.f16"
A_X4 = "(lane % 16) * 32 + (lane / 16) * 16"          # the A fragment of a 16x16 row-major f16 tile
DTYPES = ["f16", "bf16", "f32", "u8", "b64", "e4m3"]

# -- Tile ----------------------------------------------------------------------------------------

def int_arrays(values, max_size):
    return st.lists(values, max_size=max_size).map(lambda v: np.array(v, np.int64))



def tile_default():
    return {"rows": 16, "cols": 64, "dtype": "f16", "order": "row", "pitch": None, "swizzle": Swizzle(3, 4, 3), "base": 0,
            "space": "shared"}


@st.composite
def tile_valid(draw):
    dtype = draw(st.sampled_from(DTYPES))
    eb = fragsim.layout.tile.ELEMENT_BYTES[dtype]
    rows, cols = draw(st.integers(1, 64)), draw(st.integers(1, 64))
    order = draw(st.sampled_from(["row", "col"]))
    line = (cols if order == "row" else rows) * eb
    pitch = draw(st.one_of(st.none(), st.integers(0, 8).map(lambda p: line + p * eb)))
    # a swizzle that moves whole 16-byte chunks within 1024-byte blocks: a bijection of a footprint
    # of whole blocks without padding; other footprints take none
    span = ((pitch or line) * ((rows if order == "row" else cols) - 1)) + line
    swizzle = None
    if span % 1024 == 0 and (pitch or line) == line and draw(st.booleans()):
        swizzle = draw(st.sampled_from([Swizzle(3, 4, 3), XorMap.of(Swizzle(2, 4, 3)), XorMap.xor({4: [7], 6: [8]})]))
    base = draw(st.integers(0, 4)) * (1024 if swizzle is not None else eb)
    space = "global" if swizzle is None and draw(st.booleans()) else "shared"
    return {"rows": rows, "cols": cols, "dtype": dtype, "order": order, "pitch": pitch, "swizzle": swizzle, "base": base,
            "space": space}


def make_tile(kw):
    return Tile(kw["rows"], kw["cols"], kw["dtype"], kw["order"], kw["pitch"], kw["swizzle"], kw["base"], kw["space"])


def tile_check(t, kw):
    addrs = t.addresses()
    assert addrs.shape == (t.rows, t.cols) and addrs.dtype == np.int64
    assert addrs.min() >= t.base and addrs.max() + t.elem_bytes <= t.base + t.span
    idx, byte = t.locate(addrs)
    assert np.array_equal(idx, np.arange(t.rows * t.cols).reshape(t.rows, t.cols)) and not byte.any()   # one-to-one


TILE = Entry("Tile", make_tile, tile_default, tile_valid(),
             names={**{p: (p,) for p in ("rows", "cols", "dtype", "order", "base", "space")},
                    # the footprint a pitch gives can break the swizzle's bijection: that error is the swizzle's
                    "pitch": ("pitch", "bijection"), "swizzle": ("swizzle", "Swizzle", "XorMap", "bijection")},
             check=tile_check,
             accepts={"pitch": ("None",), "swizzle": ("None",)},
             special={"rows": [("1", lambda kw: 1, OK), ("0", lambda kw: 0, ERROR), ("numpy int", lambda kw: np.int32(8), OK),
                               ("footprint past 16 MiB", lambda kw: 1 << 20, ERROR),
                               ("footprint past a CTA's shared memory", lambda kw: 1 << 12, ERROR)],
                      "cols": [("0", lambda kw: 0, ERROR), ("3", lambda kw: 3, EITHER)],
                      "dtype": [("upper case", lambda kw: "F16", EITHER), ("numpy float16", lambda kw: np.float16, OK),
                                ("numpy dtype", lambda kw: np.dtype("uint16"), OK), ("tf32", lambda kw: "tf32", EITHER),
                                ("float128", lambda kw: np.longdouble, ERROR), ("complex", lambda kw: np.complex64, ERROR),
                                ("object", lambda kw: object, ERROR), ("f16 with dot", lambda kw: ".f16", EITHER)],
                      "order": [("ROW", lambda kw: "ROW", EITHER), ("column", lambda kw: "column", ERROR)],
                      "pitch": [("line + 16", lambda kw: 144, EITHER), ("odd", lambda kw: 129, ERROR),
                                ("numpy int", lambda kw: np.int64(128), OK)],
                      "swizzle": [("Swizzle<2,4,-6> (moves bytes past the footprint)", lambda kw: Swizzle(2, 4, -6), ERROR),
                                  ("XorMap of the same", lambda kw: XorMap.of(Swizzle(3, 4, 3)), OK),
                                  ("callable", lambda kw: (lambda off: off ^ ((off >> 3) & 0x70)), OK),
                                  ("callable that fails", lambda kw: (lambda off: 1 // 0), ERROR),
                                  ("callable returning floats", lambda kw: (lambda off: off * 1.0), ERROR),
                                  ("callable returning a scalar", lambda kw: (lambda off: 0), ERROR),
                                  ("non-bijective XorMap", lambda kw: XorMap([1, 2, 4, 8, 16, 32, 64, 64]), ERROR),
                                  ("LinearLayout", lambda kw: Swizzle(3, 4, 3).as_layout(), EITHER)],
                      "base": [("1024", lambda kw: 1024, OK), ("16 (under the swizzle's alignment)", lambda kw: 16, ERROR),
                               ("odd", lambda kw: 1, ERROR), ("past a CTA's shared memory", lambda kw: 232448, ERROR)],
                      # a global tile takes no swizzle (the default has one)
                      "space": [("global", lambda kw: "global", EITHER), ("local", lambda kw: "local", ERROR),
                                ("GLOBAL", lambda kw: "GLOBAL", EITHER)]})


def tile_offset_run(kw):
    return Tile(16, 64, "f16", swizzle=Swizzle(3, 4, 3)).offset(kw["row"], kw["col"])


def tile_offset_check(r, kw):
    t = Tile(16, 64, "f16", swizzle=Swizzle(3, 4, 3))
    want = t.addresses()[np.asarray(kw["row"]), np.asarray(kw["col"])]
    assert np.array_equal(np.asarray(r), want)


TILE_OFFSET = Entry("Tile.offset", tile_offset_run, lambda: {"row": 3, "col": 5},
                    st.fixed_dictionaries({"row": st.one_of(st.integers(0, 15), int_arrays(st.integers(0, 15), 5)),
                                           "col": st.integers(0, 63)}),
                    names={"row": ("row",), "col": ("col",)}, check=tile_offset_check,
                    accepts={p: ("0-d array", "empty array", "64-dim array") for p in ("row", "col")},
                    special={"row": [("16", lambda kw: 16, ERROR), ("array", lambda kw: np.arange(16), OK),
                                     ("float array", lambda kw: np.arange(3.0), ERROR)],
                             "col": [("64", lambda kw: 64, ERROR),
                                     ("(2, 1) against (3,)", lambda kw: np.zeros((2, 1), int), EITHER)]})


def tile_locate_check(r, kw):
    idx, byte = r
    a = np.asarray(kw["addrs"])
    assert idx.shape == byte.shape == a.shape and np.all(idx >= -1) and np.all((byte >= 0) & (byte < 2))


TILE_LOCATE = Entry("Tile.locate", lambda kw: Tile(16, 64, "f16", pitch=144).locate(kw["addrs"]),
                    lambda: {"addrs": np.arange(0, 4096, 7)},
                    st.fixed_dictionaries({"addrs": int_arrays(st.integers(-100, 5000), 40)}),
                    names={"addrs": ("addresses",)}, check=tile_locate_check,
                    accepts={"addrs": ("int -1", "0-d array", "empty array", "64-dim array", "int 2**63", "int 2**64",
                                       "int -2**63-1")},
                    special={"addrs": [("uint64 past 2**63", lambda kw: np.array([2**63 + 5], np.uint64), EITHER),
                                       ("floats", lambda kw: np.arange(3.0), ERROR)]})


def tile_write_run(kw):
    t = Tile(8, 16, "bf16", pitch=48, swizzle=None)
    t.write(kw["smem"], kw["matrix"])
    return t.read(kw["smem"])


TILE_WRITE = Entry("Tile.write/read", tile_write_run,
                   lambda: {"smem": np.zeros(512, np.uint8), "matrix": np.arange(128, dtype=np.uint16).reshape(8, 16)},
                   st.fixed_dictionaries({"smem": st.integers(400, 600).map(lambda n: np.zeros(n, np.uint8)),
                                          "matrix": st.lists(st.integers(0, 0xFFFF), min_size=128, max_size=128)
                                          .map(lambda v: np.array(v, np.uint16).reshape(8, 16))}),
                   names={"smem": ("smem",), "matrix": ("matrix", "element", "Tile.write")},
                   check=lambda r, kw: np.testing.assert_array_equal(r, np.asarray(kw["matrix"])),
                   special={"smem": [("too small", lambda kw: np.zeros(100, np.uint8), ERROR),
                                     ("int8", lambda kw: np.zeros(512, np.int8), ERROR),
                                     ("read-only", lambda kw: _read_only(512), ERROR)],
                            "matrix": [("floats", lambda kw: np.zeros((8, 16)), ERROR),
                                       ("17 bits", lambda kw: np.full((8, 16), 1 << 16), ERROR),
                                       ("negative", lambda kw: np.full((8, 16), -1), ERROR),
                                       ("transposed", lambda kw: np.zeros((16, 8), np.uint16), ERROR),
                                       ("list", lambda kw: np.asarray(kw["matrix"]).tolist(), OK),
                                       ("int64", lambda kw: np.asarray(kw["matrix"]).astype(np.int64), OK)]})


def _read_only(n):
    a = np.zeros(n, np.uint8)
    a.setflags(write=False)
    return a


# -- XorMap ----------------------------------------------------------------------------------------

@st.composite
def xor_images(draw):
    """Images of a bijective map: identity plus XORs of lower bits into higher ones (triangular)."""
    n = draw(st.integers(0, 20))
    return {"images": [(1 << i) | sum(draw(st.booleans()) << j for j in range(i + 1, n)) for i in range(n)]}


def xor_check(x, kw):
    assert isinstance(x, XorMap)
    offs = np.arange(1 << min(x.bits, 12), dtype=np.int64)
    out = x(offs)
    assert out.dtype == np.int64 and out.shape == offs.shape
    assert [int(v) for v in out[:50]] == [x(int(v)) for v in offs[:50]]


XORMAP = Entry("XorMap", lambda kw: XorMap(kw["images"]), lambda: {"images": [1, 2, 4, 8, 16 | 128, 32 | 256, 64, 128, 256]},
               xor_images(), names={"images": ("image", "XorMap")}, check=xor_check,
               accepts={"images": ("empty array",)},
               special={"images": [("63 bits", lambda kw: [1 << i for i in range(63)], OK),
                                   ("64 bits", lambda kw: [1 << i for i in range(64)], ERROR),
                                   ("image 2**63", lambda kw: [1 << 63], ERROR), ("negative image", lambda kw: [-1], ERROR),
                                   ("bool image", lambda kw: [True], ERROR), ("numpy ints", lambda kw: np.array([1, 2, 4]), OK),
                                   ("float image", lambda kw: [1.0], ERROR),
                                   ("generator", lambda kw: (1 << i for i in range(4)), OK),
                                   ("not bijective", lambda kw: [1, 1], OK)]})


XOR_TERMS = Entry("XorMap.xor", lambda kw: XorMap.xor(kw["terms"]), lambda: {"terms": {4: [7], 5: [8]}},
                  st.fixed_dictionaries({"terms": st.dictionaries(st.integers(0, 20), st.lists(st.integers(21, 40), max_size=3),
                                                                  max_size=4)}),
                  names={"terms": ("bit", "XorMap.xor", "terms")}, check=xor_check, accepts={"terms": ("dict",)},
                  special={"terms": [("bit with itself", lambda kw: {4: [4]}, ERROR), ("bit 63", lambda kw: {63: [1]}, ERROR),
                                     ("negative bit", lambda kw: {4: [-1]}, ERROR),
                                     ("sources not a list", lambda kw: {4: 7}, ERROR),
                                     ("str bit", lambda kw: {"4": [7]}, ERROR), ("bool bit", lambda kw: {True: [7]}, ERROR)]})

XOR_APPLY = Entry("XorMap()", lambda kw: XorMap.xor({4: [7], 5: [8]})(kw["offset"]), lambda: {"offset": np.arange(0, 4096, 16)},
                  st.fixed_dictionaries({"offset": st.one_of(st.integers(0, 2**62), st.lists(st.integers(0, 2**40), max_size=20)
                                                             .map(lambda v: np.array(v, np.int64)))}),
                  names={"offset": ("offset",)},
                  check=lambda r, kw: np.testing.assert_array_equal(XorMap.xor({4: [7], 5: [8]})(r), kw["offset"]),
                  accepts={"offset": ("0-d array", "empty array", "64-dim array", "int 2**63", "int 2**64")},
                  special={"offset": [("negative int8", lambda kw: np.array([-1], np.int8), ERROR),
                                      ("list", lambda kw: [16, 32], OK),
                                      ("floats", lambda kw: np.arange(3.0), ERROR),
                                      ("uint64", lambda kw: np.array([2**63 + 16], np.uint64), EITHER)]})


# -- swizzle_search ------------------------------------------------------------------------------

SEARCH_TILE = Tile(16, 64, "f16")


def search_default():
    return {"tile": SEARCH_TILE, "reads": A.row_reads(SEARCH_TILE, threads=32), "writes": None, "top": 2, "max_padding": 32}


@st.composite
def search_valid(draw):
    rows, cols = draw(st.sampled_from([(16, 64), (8, 32), (32, 64)]))
    t = Tile(rows, cols, "f16")
    reads = draw(st.sampled_from(["rows", "mma A", None] if rows % 16 == 0 else ["rows", None]))
    writes = draw(st.sampled_from(["copy", None] if reads else ["copy"]))
    make = {"rows": lambda: A.row_reads(t, threads=32), "mma A": lambda: A.mma_operand(t, F16, "A", warps=(1, 1)),
            None: lambda: None}
    return {"tile": t, "reads": make[reads](),
            "writes": A.copy(t, "cp.async.ca.16", threads=32) if writes else None,
            "top": draw(st.sampled_from([1, 3, None])), "max_padding": draw(st.sampled_from([0, 16, 64]))}


def search_check(r, kw):
    w = [c.wavefronts for c in r.ranked] if hasattr(r, "ranked") else None
    assert w is None or w == sorted(w)


SEARCH = Entry("swizzle_search",
               lambda kw: fragsim.swizzle_search(kw["tile"], kw["reads"], kw["writes"], top=kw["top"],
                                                 max_padding=kw["max_padding"], xor_maps=False),
               search_default, search_valid(),
               names={"tile": ("tile",), "reads": ("read", "access", "group"), "writes": ("write", "access", "group"),
                      "top": ("top",), "max_padding": ("max_padding",)},
               check=search_check, accepts={"writes": ("None",), "top": ("None", "int 2**63", "int 2**64"), "reads": ("None",)},
               special={"tile": [("another tile", lambda kw: Tile(16, 32, "f16"), ERROR),
                                 ("tile spec", lambda kw: "16x64 f16", EITHER)],
                        "reads": [("writes as reads", lambda kw: A.copy(SEARCH_TILE, "cp.async.ca.16", threads=32), ERROR)],
                        "top": [("0", lambda kw: 0, ERROR), ("numpy int", lambda kw: np.int64(2), OK)],
                        "max_padding": [("8", lambda kw: 8, EITHER), ("-16", lambda kw: -16, ERROR)]})


# -- check_load / check_store / check_copy ---------------------------------------------------------

A16 = Tile(16, 16, "f16")


def check_load_default():
    return {"form": F16, "operand": "A", "tile": A16, "loads": [("ldmatrix.x4", A_X4)], "variables": None, "at": None,
            "gpu": False}


@st.composite
def check_load_valid(draw):
    form = draw(st.sampled_from([F16, "m16n8k16.row.col.f32.bf16.bf16.f32"]))
    dtype = "f16" if ".f16." in form else "bf16"
    t = Tile(16, 16, dtype, swizzle=draw(st.sampled_from([None, Swizzle(1, 4, 1)])))
    expr = "(lane % 16) * 32 + (lane / 16) * 16 + k" if draw(st.booleans()) else "(lane % 16) * 32 + (lane / 16) * 16"
    loads = [("ldmatrix.x4", draw(st.sampled_from([expr, fragsim.search.addrexpr.evaluate(expr, k=0) if "k" in expr
                                                   else fragsim.search.addrexpr.evaluate(expr)])))]
    variables = {"k": draw(st.sampled_from([0, 16, 2]))} if "k" in expr else None
    return {"form": form, "operand": "A", "tile": t, "loads": loads, "variables": variables, "at": None, "gpu": False}


def report_check(r, kw):
    assert isinstance(r.ok, bool) and isinstance(str(r), str)


CHECK_LOAD = Entry("check_load",
                   lambda kw: fragsim.check_load(kw["form"], kw["operand"], kw["tile"], kw["loads"], variables=kw["variables"],
                                                 at=kw["at"], gpu=kw["gpu"]),
                   check_load_default, check_load_valid(),
                   names={"form": ("form",), "operand": ("operand",), "tile": ("tile", "Tile"),
                          "loads": ("load", "ldmatrix", "op"),
                          "variables": ("variable",), "at": ("at", "fit"), "gpu": ("gpu", "GPU", "CuPy")},
                   check=report_check, accepts={"variables": ("None", "dict"), "at": ("None",), "gpu": ("None", "bool True")},
                   special={"loads": [("a store", lambda kw: [("stmatrix.x4", A_X4)], ERROR),
                                      ("16 addresses", lambda kw: [("ldmatrix.x4", np.arange(16))], ERROR),
                                      ("a mask on ldmatrix", lambda kw: [("ldmatrix.x4", A_X4, 0xFF)], ERROR),
                                      ("a tuple of one", lambda kw: [("ldmatrix.x4",)], ERROR),
                                      ("not a list", lambda kw: ("ldmatrix.x4", A_X4), EITHER),
                                      ("unknown variable", lambda kw: [("ldmatrix.x4", "k * 16")], ERROR),
                                      ("callable failing", lambda kw: [("ldmatrix.x4", lambda lane: 1 / 0)], ERROR),
                                      ("ragged addresses", lambda kw: [("ldmatrix.x4", [[1, [2]]])], ERROR),
                                      ("float addresses", lambda kw: [("ldmatrix.x4", np.arange(32.0))], ERROR)],
                            "at": [("(8, 0)", lambda kw: (8, 0), ERROR), ("expression", lambda kw: ("0 * 4", 0), OK),
                                   ("one number", lambda kw: 0, ERROR), ("three numbers", lambda kw: (0, 0, 0), ERROR)],
                            "variables": [("a range", lambda kw: {"k": range(2)}, ERROR),
                                          ("float", lambda kw: {"k": 1.5}, ERROR)],
                            "gpu": [("yes", lambda kw: "yes", ERROR)],
                            "tile": [("spec", lambda kw: "16x16 f16", OK), ("bad spec", lambda kw: "16x16 f16 nope", ERROR),
                                     ("f32 tile", lambda kw: Tile(16, 16, "f32"), ERROR)]})


def check_store_default():
    t = Tile(16, 8, "bf16")
    return {"form": "m16n8k16.row.col.f32.bf16.bf16.f32", "operand": "C", "tile": t,
            "stores": [("st.shared.b32", "((lane / 4) * 8 + (lane % 4) * 2) * 2"),
                       ("st.shared.b32", "((lane / 4 + 8) * 8 + (lane % 4) * 2) * 2")]}


CHECK_STORE = Entry("check_store", lambda kw: fragsim.check_store(kw["form"], kw["operand"], kw["tile"], kw["stores"]),
                    check_store_default, st.builds(check_store_default),
                    names={"form": ("form",), "operand": ("operand",), "tile": ("tile", "Tile", "bf16"),
                           "stores": ("store", "op", "st.shared")},
                    check=report_check,
                    special={"operand": [("A", lambda kw: "A", ERROR), ("D", lambda kw: "D", EITHER)],
                             "stores": [("one store", lambda kw: kw["stores"][:1], EITHER),
                                        ("a load", lambda kw: [("ld.shared.b32", "lane * 4")] * 2, ERROR),
                                        ("empty", lambda kw: [], ERROR)]})


def check_copy_default():
    return {"tile": Tile(32, 64, "f16"), "copies": [("st.shared.v4.b32", "(tid + pass * 64) * 16")],
            "variables": {"pass": range(4)}, "threads": 64, "global_pitch": None, "source": None}


CHECK_COPY = Entry("check_copy",
                   lambda kw: fragsim.check_copy(kw["tile"], kw["copies"], variables=kw["variables"], threads=kw["threads"],
                                                 global_pitch=kw["global_pitch"], source=kw["source"]),
                   check_copy_default, st.builds(check_copy_default),
                   names={"tile": ("tile", "Tile"), "copies": ("cop", "op", "st.shared"), "variables": ("variable", "pass"),
                          "threads": ("threads", "'tid'"), "global_pitch": ("global_pitch",), "source": ("source",)},
                   check=report_check, accepts={"global_pitch": ("None",), "threads": ("None",), "source": ("None",)},
                   special={"threads": [("48", lambda kw: 48, ERROR), ("0", lambda kw: 0, ERROR)],
                            "global_pitch": [("8", lambda kw: 8, ERROR), ("256", lambda kw: 256, OK)],
                            "source": [("the matrix in global memory",
                                        lambda kw: Tile(32, 64, "f16", pitch=256, space="global"), OK),
                                       ("a spec", lambda kw: "32x64 f16 global", OK),
                                       ("a shared tile", lambda kw: Tile(32, 64, "f16"), ERROR),
                                       ("another matrix", lambda kw: Tile(64, 32, "f16", space="global"), ERROR)],
                            "variables": [("empty range", lambda kw: {"pass": range(0)}, EITHER),
                                          ("huge range", lambda kw: {"pass": range(10**9)}, ERROR)],
                            "copies": [("cp.async with a source",
                                        lambda kw: [("cp.async.cg.16", "(tid + pass * 64) * 16", "(tid + pass * 64) * 16")], OK),
                                       ("an ldmatrix", lambda kw: [("ldmatrix.x4", "lane * 16")], ERROR)]})

ENTRIES = [TILE, TILE_OFFSET, TILE_LOCATE, TILE_WRITE, XORMAP, XOR_TERMS, XOR_APPLY, SEARCH, CHECK_LOAD, CHECK_STORE, CHECK_COPY]
