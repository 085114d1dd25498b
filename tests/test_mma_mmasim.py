"""Optional: fragsim.mma against MMA-Sim (PyPI ``mmasim``, which needs torch), the published
bit-accurate model, on random bit patterns, especially for sm_80 (no A100 data here).
Skipped when mmasim or torch is not installed; never a CI requirement."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
mmasim_nv = pytest.importorskip("mmasim.nv_ptx")

import fragsim  # noqa: E402
from mma_cases import CLASSES, matrices  # noqa: E402

ARCH = {"sm_80": "Ampere", "sm_90": "Hopper"}
TORCH = {"f16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32, "f32": torch.float32}
VIEW = {16: torch.int16, 32: torch.int32}


def _tensor(bits, fmt):
    f = fragsim.get_format(fmt)
    signed = bits.astype(np.int64)
    signed = np.where(signed >= 1 << (f.storage_bits - 1), signed - (1 << f.storage_bits), signed)
    return torch.from_numpy(signed.astype({16: np.int16, 32: np.int32}[f.storage_bits])).view(TORCH[fmt])


def _bits(t, fmt):
    f = fragsim.get_format(fmt)
    return t.view(VIEW[f.storage_bits]).numpy().astype(np.int64) & ((1 << f.storage_bits) - 1)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("form", list(fragsim.FORMS))
def test_fragsim_equals_mmasim_on_random_operands(form, arch):
    f = fragsim.lookup(form)
    short = form.replace(".row.col", "")
    sim = mmasim_nv.MMA(ARCH[arch], short)
    rng = np.random.default_rng(2024)
    for t in range(40):
        classes = tuple(rng.choice(CLASSES, 3))
        A, B, C = matrices(form, classes, int(rng.integers(2**32)), rng.choice(["none", "cancel", "c_cancels", "sparse"]))
        want = _bits(sim(_tensor(A, f.fmt("A").name), _tensor(B, f.fmt("B").name), _tensor(C, f.fmt("C").name)),
                     f.fmt("D").name)
        d = fragsim.mma(form, fragsim.pack(form, "A", A), fragsim.pack(form, "B", B), fragsim.pack(form, "C", C),
                        arch=arch)
        got = fragsim.unpack(form, "D", d).astype(np.int64)
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"{form} {arch} case {t} {classes}: {len(bad)} elements differ, first "
                               f"D{tuple(bad[0])}: fragsim {got[tuple(bad[0])]:#x}, MMA-Sim {want[tuple(bad[0])]:#x}")
