"""Optional: fragsim.mma against MMA-Sim itself (PyPI ``mmasim`` 2.1.1, which needs torch), the
published bit-accurate model.  Skipped when mmasim or torch is not installed: CI compares with
the committed MMA-Sim corpus instead (test_mma_mmasim_corpus.py); this file checks that the
corpus is what its generator makes, and draws fresh operands beyond it."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("mmasim.nv_ptx")

import fragsim  # noqa: E402
from fragsim.gpu_check import mmasim_corpus  # noqa: E402
from mma_cases import CLASSES, FLOAT_FORMS, SCENARIOS, matrices  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).parent / "data" / "mmasim"


def test_committed_corpus_is_what_its_command_regenerates(tmp_path):
    meta = mmasim_corpus.load(str(next(DATA.glob("*.npz"))))["meta"]
    cmd = meta["command"].split()
    assert cmd[:3] == ["python", "-m", "fragsim.gpu_check.mmasim_corpus"]
    r = subprocess.run([sys.executable, *cmd[1:3], str(tmp_path), *cmd[4:]], capture_output=True, text=True,
                       cwd=str(ROOT), timeout=300, env=dict(os.environ, PYTHONHASHSEED="random"))
    assert r.returncode == 0, r.stderr
    for path in sorted(DATA.glob("*.npz")):
        want, got = mmasim_corpus.load(str(path)), mmasim_corpus.load(str(tmp_path / path.name))
        differ = [k for k in want if k != "meta" and not np.array_equal(want[k], got[k])]
        assert not differ, f"{path.name}: regenerated {differ} differ from the committed corpus"


@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("form", FLOAT_FORMS)
def test_fragsim_equals_mmasim_on_fresh_random_operands(form, arch):
    nv, torch = mmasim_corpus.load_mmasim()
    f = fragsim.lookup(form)
    fa, fb, fc, fd = (f.fmt(x) for x in "ABCD")
    sim = nv.MMA(mmasim_corpus.ARCHS[arch], form.replace(".row.col", ""))
    rng = np.random.default_rng(2024)
    for t in range(40):
        classes = tuple(str(x) for x in rng.choice(CLASSES, 3))
        scenario = str(rng.choice(SCENARIOS))
        A, B, C = matrices(form, classes, int(rng.integers(2**32)), scenario)
        want = mmasim_corpus.from_torch(torch, sim(*(mmasim_corpus.to_torch(torch, M, fm)
                                                for M, fm in ((A, fa), (B, fb), (C, fc)))), fd)
        d = fragsim.mma(form, fragsim.pack(form, "A", A), fragsim.pack(form, "B", B), fragsim.pack(form, "C", C),
                        arch=arch)
        got = fragsim.unpack(form, "D", d)
        bad = np.argwhere(got != want)
        assert bad.size == 0, (f"{form} {arch} case {t} {classes} {scenario}: {len(bad)} elements differ, first "
                               f"D{tuple(bad[0])}: fragsim {int(got[tuple(bad[0])]):#x}, "
                               f"MMA-Sim {int(want[tuple(bad[0])]):#x}")
