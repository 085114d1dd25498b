"""The contract fuzz's entry for ``fragsim.movmatrix`` (issue 13; see fuzz_entries.py for the form of
an entry)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fragsim

from contract import EITHER, ERROR, OK
from fuzz_entries import Entry, dtype_cases, layout_variants, rng_words


def _valid(kw):
    return rng_words(np.random.default_rng(3), (32, 1))


@st.composite
def movmatrix_valid(draw):
    lead = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    return {"regs": rng_words(np.random.default_rng(draw(st.integers(0, 2**32 - 1))), lead + (32, 1))}


def movmatrix_check(d, kw):
    r = np.asarray(kw["regs"])
    assert d.dtype == np.uint32 and d.shape == r.shape
    assert np.array_equal(fragsim.movmatrix(d), r.astype(np.uint32))     # the transpose is an involution


REG_CASES = dtype_cases(_valid) + layout_variants(_valid) + [
    ("negative int32 word", lambda kw: -_valid(kw).astype(np.int64).clip(1), ERROR),
    ("word 2**32 in int64", lambda kw: _valid(kw).astype(np.int64) + (1 << 32), ERROR),
    ("one lane", lambda kw: _valid(kw)[0], ERROR), ("two registers", lambda kw: np.zeros((32, 2), np.uint32), ERROR),
    ("empty batch", lambda kw: np.zeros((0, 32, 1), np.uint32), OK),
    ("62 batch dims", lambda kw: np.zeros((1,) * 62 + (32, 1), np.uint32), EITHER),
    ("list of lists", lambda kw: _valid(kw).tolist(), OK)]

MOVMATRIX = Entry("movmatrix", lambda kw: fragsim.movmatrix(kw["regs"]), lambda: {"regs": _valid({})}, movmatrix_valid(),
                  names={"regs": ("movmatrix",)}, check=movmatrix_check, special={"regs": REG_CASES})

ENTRIES = [MOVMATRIX]
