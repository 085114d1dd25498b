"""The H200 and H100 corpora (tests/data/hw, recorded by gpu_check) settle every open choice of
the sm_90 row: the row reproduces every recorded case (tests/test_hw_replay.py), and flipping
any one parameter to the alternative the sources left open breaks at least one case."""

import numpy as np
import pytest

import fragsim
from fragsim.facts.arch import ARCHS
from fragsim.gpu_check import corpus

from pathlib import Path

DATA = Path(__file__).parent / "data" / "hw"
SM90 = [p for p in corpus.find(str(DATA)) if corpus.load(p).arch == "sm_90" and corpus.load(p).kind == "mma"]

ALTERNATIVES = {
    "e_zero_f16=-20": dict(e_zero_f16=-20), "e_zero_f16=-22": dict(e_zero_f16=-22),
    "e_zero_f32=-132": dict(e_zero_f32=-132), "e_zero_f32=-134": dict(e_zero_f32=-134),
    "frac_bits=24": dict(frac_bits=24), "frac_bits=26": dict(frac_bits=26),
    "zero_sign=ieee": dict(zero_sign="ieee"), "c_subnormal_exp=exact": dict(c_subnormal_exp="exact"),
    "tf32_nan_low_bits": dict(tf32_nan_low_bits=True), "round_f16=rz": dict(round_f16="rz"),
    "round_f32=rne": dict(round_f32="rne"), "block_16bit=8": dict(block_16bit=8),
    "block_tf32=4": dict(block_tf32=4),
    # integer forms under .satfinite (H100): a clamp after every 8, 16 or 32 products instead of once
    "sat_block_8bit=8": dict(sat_block_8bit=8), "sat_block_8bit=16": dict(sat_block_8bit=16),
    "sat_block_4bit=8": dict(sat_block_4bit=8), "sat_block_4bit=16": dict(sat_block_4bit=16),
    "sat_block_4bit=32": dict(sat_block_4bit=32),
    # f64 forms (H100): the chain's order, fusedness, subnormals, NaN operand priority, default NaN
    "f64_order=descending": dict(f64_order="descending"), "f64_fused=False": dict(f64_fused=False),
    "f64_subnormals=ftz": dict(f64_subnormals="ftz"),
    **{f"f64_nan_order={o}": dict(f64_nan_order=o) for o in ("abc", "acb", "bac", "cab", "cba", "canonical")},
    "f64_default_nan=0x7FF8000000000000": dict(f64_default_nan=0x7FF8000000000000),
    "f64_default_nan=0x7FFFFFFFFFFFFFFF": dict(f64_default_nan=0x7FFFFFFFFFFFFFFF),
}


@pytest.mark.skipif(not SM90, reason="no sm_90 mma corpus under tests/data/hw")
@pytest.mark.parametrize("alt", list(ALTERNATIVES))
def test_hardware_rejects_the_alternative(alt):
    arch = ARCHS["sm_90"].with_(**ALTERNATIVES[alt])
    for path in SM90:
        c = corpus.load(path)
        inp = c.inputs()
        d = fragsim.mma(c.op, inp["a"], inp["b"], inp["c"], arch=arch)
        if not np.array_equal(d, c.outputs()["d"]):
            return
    pytest.fail(f"every recorded sm_90 case also agrees with {alt}: the corpus does not settle it")
