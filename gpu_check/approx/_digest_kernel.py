"""numba's loop of ``digest.block_digests`` for 32-bit outputs (the constants are repeated here so the
cached machine code depends on this file alone; tests/test_approx_digest.py holds the two equal)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=False)   # two import names (gpu_check, fragsim.gpu_check) would share one cache entry
def digests32(out, first, block):
    n = out.shape[0] // block
    d = np.zeros(n, np.uint64)
    m1 = np.uint64(0xBF58476D1CE4E5B9)
    m2 = np.uint64(0x94D049BB133111EB)
    for b in range(n):
        acc = np.uint64(0)
        for j in range(block):
            k = b * block + j
            z = (np.uint64(out[k]) << np.uint64(32)) | ((first + np.uint64(k)) & np.uint64(0xFFFFFFFF))
            z ^= z >> np.uint64(30)
            z *= m1
            z ^= z >> np.uint64(27)
            z *= m2
            z ^= z >> np.uint64(31)
            acc += z
        d[b] = acc
    return d
