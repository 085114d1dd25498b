"""Property: the fp8 kernel (``fragsim.arith.kernel_fp8``, decoding the fp8 bytes itself) is bit for bit
the NumPy model it replaced (the oracle of tests/test_mma_fast_paths.py: bytes -> f16 registers by
table, the float kernel over the virtual f16 form, C added by one NumPy IEEE addition), on register
words whose bytes mix uniform bytes with every special one of both formats (NaN, Inf, max, subnormals,
signed zeros) and whose C holds special f32/f16 words.

``FRAGSIM_FP8_WARPS`` sets the warps per form (CI: 2000; the local check ran 100000)."""

import os
import zlib

import numpy as np
import pytest

import fragsim
from fragsim import FORMS, lookup
from fragsim.arith import plan
from test_mma_fast_paths import F16_SPECIAL, F32_SPECIAL, fp8_reference

FP8 = [n for n, f in FORMS.items() if f.types["A"] in ("e4m3", "e5m2")]
WARPS = int(os.environ.get("FRAGSIM_FP8_WARPS", "2000"))
# every byte with an all-ones or all-zeros exponent field in e4m3 or e5m2, the largest finite ones, 1.0
SPECIAL_BYTES = sorted({s | b for s in (0, 0x80) for b in [*range(8), 0x78, *range(0x7C, 0x80), 0x7B, 0x7E, 0x38, 0x3C]})


def _fp8_words(rng, shape):
    """Words of 4 bytes: per warp a share p of special bytes (p uniform in [0, 1)), the rest uniform."""
    n = int(np.prod(shape))
    p = rng.random((shape[0], 1)).repeat(n // shape[0], axis=1).ravel()
    special = np.array(SPECIAL_BYTES, np.uint32)[rng.integers(0, len(SPECIAL_BYTES), (n, 4))]
    uniform = rng.integers(0, 256, (n, 4), dtype=np.uint32)
    b = np.where(rng.random((n, 4)) < p[:, None], special, uniform)
    return (b << (8 * np.arange(4, dtype=np.uint32))).sum(axis=1, dtype=np.uint32).reshape(shape)


def _c_words(rng, shape, f32):
    n = int(np.prod(shape))
    if f32:
        sp = np.array(F32_SPECIAL, np.uint32)[rng.integers(0, len(F32_SPECIAL), n)]
        w = np.where(rng.random(n) < 0.5, sp, rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32))
    else:
        h = np.array(F16_SPECIAL, np.uint32)[rng.integers(0, len(F16_SPECIAL), (n, 2))]
        h = np.where(rng.random((n, 2)) < 0.5, h, rng.integers(0, 2**16, (n, 2), dtype=np.uint32))
        w = h[:, 0] | (h[:, 1] << np.uint32(16))
    return w.reshape(shape)


@pytest.mark.parametrize("form", FP8)
def test_fp8_kernel_is_the_f16_register_model_on_mixed_special_bytes(form):
    f = lookup(form)
    pl = plan(form, "sm_90")
    rng = np.random.default_rng(zlib.crc32(form.encode()))
    a = _fp8_words(rng, (WARPS, 32 * f.nregs("A")))
    b = _fp8_words(rng, (WARPS, 32 * f.nregs("B")))
    c = _c_words(rng, (WARPS, 32 * f.nregs("C")), f.types["C"] == "f32")
    want = fp8_reference(pl, a, b, c).reshape(WARPS, 32, -1)
    got = fragsim.arith.run(pl, a, b, c)
    bad = np.flatnonzero((got != want).any(axis=(1, 2)))
    assert bad.size == 0, f"{bad.size} of {WARPS} warps differ, first warp {bad[:1]}"
