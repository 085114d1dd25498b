"""The contract fuzz's entry for ``fragsim.approx``: a PTX spelling and word arrays that broadcast."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fragsim
from contract import ERROR, OK
from fuzz_entries import Entry
from fragsim.ptx.semantics.approx import FORMS

WORD = {"f32": (np.uint32, 32), "f16x2": (np.uint32, 32), "bf16x2": (np.uint32, 32), "f16": (np.uint16, 16),
        "bf16": (np.uint16, 16), "f64": (np.uint64, 64)}


def _words(form, n, seed):
    dt, bits = WORD[FORMS[form].type]
    return np.random.default_rng(seed).integers(0, 2**bits, n, dtype=np.uint64, endpoint=False).astype(dt)


def run(kw):
    """b None: one operand (a unary form); else two (div), so that a b given to a unary form errs."""
    return fragsim.approx(kw["instruction"], *((kw["a"],) if kw["b"] is None else (kw["a"], kw["b"])))


def default():
    return {"instruction": "div.full.f32", "a": _words("div.full.f32", 8, 0), "b": _words("div.full.f32", 8, 1)}


@st.composite
def valid(draw):
    form = draw(st.sampled_from(sorted(FORMS)))
    n = draw(st.integers(0, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    a = _words(form, n, seed)
    b = _words(form, n, seed + 1) if FORMS[form].operands == 2 else None
    if draw(st.booleans()) and n:
        a = a.reshape(1, n)                    # broadcasts against b's (n,)
    return {"instruction": form, "a": a, "b": b}


def check(r, kw):
    form = FORMS[kw["instruction"].lstrip(".")]
    dt, _ = WORD[form.type]
    shape = np.broadcast_shapes(*(np.shape(x) for x in (kw["a"], kw["b"]) if x is not None))
    assert r.dtype == dt and r.shape == shape
    flat = np.asarray(kw["a"]).reshape(-1)
    if form.operands == 1 and flat.size:          # elementwise: one word alone gives its own result
        assert r.reshape(-1)[0] == fragsim.approx(kw["instruction"], flat[:1])[0]
    if form.operands == 2 and r.size:
        a, b = np.broadcast_arrays(np.asarray(kw["a"]), np.asarray(kw["b"]))
        assert r.reshape(-1)[0] == fragsim.approx(kw["instruction"], a.reshape(-1)[:1], b.reshape(-1)[:1])[0]


APPROX = Entry(
    "approx", run, default, valid(), names={"instruction": ("instruction", "form", "approx"), "a": ("operand",),
                                            "b": ("operand", "broadcast")},
    check=check,
    accepts={"a": ("0-d array", "64-dim array", "empty array"), "b": ("0-d array", "64-dim array", "empty array", "None")},
    special={"instruction": [("leading dot", lambda kw: ".div.full.f32", OK),
                             ("no such form", lambda kw: "tanh.approx.f64", ERROR),
                             ("upper case", lambda kw: "EX2.APPROX.FTZ.F32", ERROR),
                             ("rounded div", lambda kw: "div.rn.f32", ERROR)],
             "a": [("uint64 words", lambda kw: np.array([0x3F800000], np.uint64), OK),
                   ("a word past 32 bits", lambda kw: np.array([1 << 32], np.uint64), ERROR),
                   ("float32 values", lambda kw: np.array([1.0], np.float32), ERROR),
                   ("negative int", lambda kw: np.array([-1]), ERROR),
                   ("a list of ints", lambda kw: [0x3F800000] * 8, OK)]},
)

ENTRIES = [APPROX]
