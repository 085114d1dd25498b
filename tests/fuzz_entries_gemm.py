"""The contract fuzz's entry for ``fragsim.gemm`` (see fuzz_entries.py for the form of an entry)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim.facts.arch import ARCHS
from fragsim.arith import plan

from contract import EITHER, ERROR, OK
from fuzz_entries import ARCH_CASES, Entry, dtype_cases, form_cases, read_only, rng_words

F32 = "m16n8k16.row.col.f32.f16.f16.f32"


def _matrix(form, op, rows, cols, rng):
    fmt = fragsim.lookup(form).fmt(op)
    return rng_words(rng, (rows, cols), fmt.storage_bits).astype(fmt.dtype)


def _operands(form, mt, nt, ks, rng):
    m, n, k = fragsim.lookup(form).shape
    return (_matrix(form, "A", m * mt, k * ks, rng), _matrix(form, "B", k * ks, n * nt, rng),
            _matrix(form, "C", m * mt, n * nt, rng))


def gemm_default():
    a, b, c = _operands(F32, 2, 2, 3, np.random.default_rng(0))
    return {"form": F32, "a": a, "b": b, "c": c, "arch": "sm_90", "k_order": "ascending", "tile": None}


def _modelled(form, arch):
    try:
        plan(form, arch)
        return True
    except ValueError:
        return False


@st.composite
def gemm_valid(draw):
    arch = draw(st.sampled_from(["sm_80", "sm_90", "H100", " hopper ", ARCHS["sm_80"]]))
    form = draw(st.sampled_from(sorted(fragsim.FORMS)).filter(lambda f: _modelled(f, arch)))
    f = fragsim.lookup(form)
    mt, nt = draw(st.integers(0, 2)), draw(st.integers(0, 2))
    ks = draw(st.integers(1, 3)) if f.fmt("C") == f.fmt("D") else 1      # else D cannot be the next C
    a, b, c = _operands(form, mt, nt, ks, np.random.default_rng(draw(st.integers(0, 2**32 - 1))))
    order = draw(st.sampled_from(["ascending", "descending", "list", "array"]))
    if order in ("list", "array"):
        perm = draw(st.permutations(range(ks)))
        order = list(perm) if order == "list" else np.array(perm, np.int32)
    tile = None
    if mt and nt and draw(st.booleans()):
        tile = (f.shape[0] * draw(st.sampled_from([d for d in (1, 2) if mt % d == 0])),
                f.shape[1] * draw(st.sampled_from([d for d in (1, 2) if nt % d == 0])))
    return {"form": draw(st.sampled_from([form, "mma.sync.aligned." + form, form.upper(), f])), "a": a, "b": b,
            "c": draw(st.sampled_from([c, None])), "arch": arch, "k_order": order, "tile": tile}


def gemm_check(d, kw):
    f = fragsim.lookup(kw["form"])
    assert d.dtype == f.fmt("D").dtype and d.shape == (np.shape(kw["a"])[0], np.shape(kw["b"])[1])


def _variants(op):
    """The valid matrix in other dtypes and memory layouts, and wrong shapes and values."""
    def valid(kw):
        return gemm_default()[op]

    def strided(kw):
        a = valid(kw)
        big = np.zeros((a.shape[0], 2 * a.shape[1]), a.dtype)
        big[:, ::2] = a
        return big[:, ::2]
    return dtype_cases(valid) + [
        ("read-only", lambda kw: read_only(valid(kw)), OK), ("strided view", strided, OK),
        ("Fortran order", lambda kw: np.asfortranarray(valid(kw)), OK),
        ("list of lists", lambda kw: valid(kw).tolist(), OK),
        ("floats", lambda kw: valid(kw).astype(np.float32), ERROR),
        ("word past the format", lambda kw: valid(kw).astype(np.int64) | (1 << 40), ERROR),
        ("negative word", lambda kw: -valid(kw).astype(np.int64).clip(1), ERROR),
        ("one row fewer", lambda kw: valid(kw)[1:], ERROR), ("one column fewer", lambda kw: valid(kw)[:, 1:], ERROR),
        ("transposed", lambda kw: valid(kw).T, ERROR), ("a batch of one", lambda kw: valid(kw)[None], ERROR),
        ("a row", lambda kw: valid(kw)[0], ERROR), ("ragged", lambda kw: [[0] * 16, [0] * 15], ERROR)]


K_ORDER_CASES = [("descending", lambda kw: "descending", OK), ("permutation", lambda kw: [2, 0, 1], OK),
                 ("numpy uint8 permutation", lambda kw: np.array([1, 2, 0], np.uint8), OK),
                 ("tuple", lambda kw: (0, 1, 2), OK), ("missing step", lambda kw: [0, 1], ERROR),
                 ("repeated step", lambda kw: [0, 1, 1], ERROR), ("step past the end", lambda kw: [0, 1, 3], ERROR),
                 ("negative step", lambda kw: [-1, 0, 1], ERROR), ("floats", lambda kw: [0.0, 1.0, 2.0], ERROR),
                 ("bools", lambda kw: [True, False, True], ERROR), ("Ascending", lambda kw: "Ascending", ERROR),
                 ("2-d", lambda kw: [[0, 1, 2]], ERROR), ("huge index", lambda kw: [0, 1, 2**70], ERROR)]

TILE_CASES = [("form tile", lambda kw: (16, 8), OK), ("whole D", lambda kw: (32, 16), OK),
              ("numpy ints", lambda kw: np.array([32, 8]), OK), ("rows not a multiple", lambda kw: (24, 8), ERROR),
              ("larger than D", lambda kw: (64, 8), ERROR), ("zero", lambda kw: (0, 8), ERROR),
              ("negative", lambda kw: (-16, 8), ERROR), ("three numbers", lambda kw: (16, 8, 16), ERROR),
              ("floats", lambda kw: (16.0, 8.0), ERROR), ("string", lambda kw: "16x8", ERROR)]

GEMM = Entry(
    "gemm", lambda kw: fragsim.gemm(kw["form"], kw["a"], kw["b"], kw["c"], kw["arch"], kw["k_order"], kw["tile"]),
    gemm_default, gemm_valid(),
    names={"form": ("form",), "a": ("A",), "b": ("B",), "c": ("C",), "arch": ("arch",), "k_order": ("k_order",),
           "tile": ("tile",)},
    check=gemm_check, accepts={"c": ("None",), "tile": ("None",)},
    special={"form": form_cases() + [("another form's shapes", lambda kw: "m16n8k32.row.col.s32.s8.s8.s32", ERROR),
                                     ("a form of the same shapes", lambda kw: "m16n8k16.row.col.f16.f16.f16.f16", EITHER)],
             "a": _variants("a"), "b": _variants("b"), "c": _variants("c"), "arch": ARCH_CASES,
             "k_order": K_ORDER_CASES, "tile": TILE_CASES})

ENTRIES = [GEMM]
