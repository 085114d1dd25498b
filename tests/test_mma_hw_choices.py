"""The H200 corpus (tests/data/hw, recorded by gpu_check) settles every open choice of the
sm_90 row: the row reproduces every recorded case (tests/test_hw_replay.py), and flipping
any one parameter to the alternative the sources left open breaks at least one case."""

import numpy as np
import pytest

import fragsim
from fragsim.arch import ARCHS
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
