"""What real GPUs said, replayed through fragsim on the CPU: every recorded case bit-exact.

tests/data/hw/<device>_<arch>/ holds corpora recorded with ``fragsim gpu-check --record``
(register-level inputs, the hardware's outputs, and the device, driver and CUDA version
that produced them).  The second half checks the pieces of the cross-check that need no
GPU: the input generators, the recorder, and the command's behaviour without a GPU.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fragsim
from fragsim import FORMS, lookup
from fragsim.cli import main
from fragsim.gpu_check.table import bulk, generate as G
from fragsim.gpu_check import corpus, kernels as K
from fragsim.facts.arch import arch_for_cc
from fragsim.gpu_check.prelude import TILE_BYTES

DATA = Path(__file__).parent / "data" / "hw"
FILES = corpus.find(str(DATA))
ROOT = Path(__file__).resolve().parents[1]


def _id(path):
    return os.path.relpath(path, DATA)


# ---------------------------------------------------------------------------------------
# replay

def test_an_sm90_corpus_covers_every_form_and_shared_variant():
    ops = {corpus.load(p).op for p in FILES if corpus.load(p).arch == "sm_90"}
    assert set(FORMS) <= ops
    assert set(K.SHARED_OPS) <= ops


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_recorded_hardware_output_is_reproduced_bit_for_bit(path):
    c = corpus.load(path)
    inp, hw = c.inputs(), c.outputs()
    exp = bulk.model_outputs(c.op, inp, c.arch)
    bad = np.flatnonzero(bulk.mismatching(hw, exp))
    details = "\n".join(bulk.format_detail(bulk.describe(c.op, inp, hw, exp, int(i), int(i))) for i in bad[:3])
    assert bad.size == 0, f"{bad.size} of {len(c)} recorded cases differ from {c.meta['device']}:\n{details}"


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_each_corpus_names_the_hardware_that_produced_it(path):
    c = corpus.load(path)
    for key in ("device", "driver", "cuda_runtime", "date"):
        assert c.meta.get(key) not in (None, "", "-", "unknown"), key
    major, minor = (int(x) for x in c.meta["cc"].split("."))
    assert c.arch == arch_for_cc(major, minor)
    assert len(c) == c.meta["cases"] > 0


# ---------------------------------------------------------------------------------------
# input generators

@pytest.mark.parametrize("form", list(FORMS))
def test_fast_packing_is_fragsim_pack(form):
    A, B, C, _ = G.mma_matrices(form, 16, np.random.default_rng(1))
    for op, M in (("A", A), ("B", B), ("C", C)):
        assert np.array_equal(G.pack_fast(form, op, M), fragsim.pack(form, op, M))


def test_generation_is_a_function_of_the_seed():
    f = "m16n8k16.row.col.f32.bf16.bf16.f32"
    x = G.mma_inputs(f, 200, np.random.default_rng(7))
    y = G.mma_inputs(f, 200, np.random.default_rng(7))
    assert all(np.array_equal(x[k], y[k]) for k in "abc")


@pytest.mark.parametrize("form", ["m16n8k16.row.col.f16.f16.f16.f16", "m16n8k8.row.col.f32.tf32.tf32.f32"])
def test_special_class_reaches_nan_inf_zero_and_subnormal(form):
    f = lookup(form)
    A, _, _, _ = G.mma_matrices(form, 400, np.random.default_rng(2), classes=("special",))
    kinds = set(fragsim.facts.formats.classify(A, f.fmt("A")).ravel())
    assert {"nan", "inf", "zero", "subnormal", "normal"} <= kinds


def test_tf32_words_carry_garbage_and_nan_payloads_in_the_ignored_bits():
    f = lookup("m16n8k8.row.col.f32.tf32.tf32.f32")
    A, _, _, _ = G.mma_matrices(f, 400, np.random.default_rng(3), classes=("special",))
    low = A & 0x1FFF
    assert 0.3 < (low != 0).mean() < 0.9
    low_only_nan = ((A & 0x7F800000) == 0x7F800000) & ((A & 0x007FE000) == 0) & (low != 0)
    assert low_only_nan.any()


@pytest.mark.parametrize("form", ["m16n8k16.row.col.f32.f16.f16.f32", "m16n8k8.row.col.f32.bf16.bf16.f32"])
def test_cancellation_class_pairs_products_that_cancel_exactly(form):
    f = lookup(form)
    A, B, _, _ = G.mma_matrices(f, 50, np.random.default_rng(4), classes=("cancel",))
    sb = 1 << f.fmt("A").sign_shift
    k = f.shape[2]
    for a, b in zip(A.astype(np.int64), B.astype(np.int64)):
        pairs = [(i, j) for i in range(k) for j in range(k)
                 if i != j and np.array_equal(a[:, i] ^ sb, a[:, j]) and np.array_equal(b[i], b[j])]
        assert pairs, "no column pair of A (negated) with equal rows of B"


def test_zeros_class_includes_all_negative_zero_terms():
    f = lookup("m16n8k16.row.col.f32.f16.f16.f32")
    A, B, C, _ = G.mma_matrices(f, 60, np.random.default_rng(5), classes=("zeros",))
    all_neg = (A == 0x8000).all(axis=(1, 2)) & (B == 0).all(axis=(1, 2)) & (C == 0x80000000).all(axis=(1, 2))
    assert all_neg.any()


@pytest.mark.parametrize("op", K.SHARED_OPS)
def test_address_sets_are_aligned_inside_the_tile_and_stores_never_overlap(op):
    sop = fragsim.parse_shared_op(op)
    inp = G.shared_inputs(op, 300, np.random.default_rng(6))
    a = inp["addrs"].astype(np.int64)
    unit = sop.bytes_per_addr
    assert (a % unit == 0).all() and (a >= 0).all() and (a + unit <= TILE_BYTES).all()
    if sop.is_store:
        act = a[:, :sop.address_lanes]
        for row, m in zip(act, inp["mask"]):
            lanes = [i for i in range(row.size) if sop.num or (int(m) >> i) & 1]
            assert len(set(row[lanes].tolist())) == len(lanes)


def test_probe_cases_repeat_one_dot_product_everywhere():
    f = lookup("m16n8k16.row.col.f16.f16.f16.f16")
    for name, A, B, C in G.mma_probes(f):
        assert (A == A[0]).all() and (B == B[:, :1]).all() and (C == C[0, 0]).all(), name


def test_worked_example_probe_spells_the_reference_inputs():
    f = lookup("m16n8k16.row.col.f32.f16.f16.f32")
    probes = {name: (A, B, C) for name, A, B, C in G.mma_probes(f)}
    A, B, C = probes["example: c=2^23, a=[-2^13,-.5,-.25,-.125], b=[2^10,1,1,1]"]
    assert list(A[0, :5]) == [0xF000, 0xB800, 0xB400, 0xB000, 0]
    assert list(B[:5, 0]) == [0x6400, 0x3C00, 0x3C00, 0x3C00, 0]
    assert C[0, 0] == 0x4B000000


# ---------------------------------------------------------------------------------------
# recorder and command (no GPU)

def test_recorded_corpus_loads_back_identically(tmp_path):
    backend = bulk.ModelBackend("sm_90")
    info = dict(backend.info, driver="test-driver", cuda_runtime="0.0")
    rec = bulk.Recorder(str(tmp_path), info, max_cases=40)
    for op in ("ldmatrix.x2.trans", "st.shared.u16"):
        inp = G.shared_inputs(op, 64, np.random.default_rng(8))
        hw = backend.run(op, inp)
        rec.add(op, inp, hw)
        path = rec.flush(op)
        c = corpus.load(path)
        assert len(c) == 40 and c.meta["driver"] == "test-driver" and c.arch == "sm_90"
        want = corpus.subset(hw, np.arange(40))
        got = c.outputs()
        assert all(np.array_equal(got[k], want[k]) for k in want)
        assert np.array_equal(c.arrays["addrs"], inp["addrs"][:40])


def test_dry_run_checks_the_pipeline_without_a_gpu(capsys):
    rc = main(["gpu-check", "--dry-run", "--cases", "40", "--forms", "ldmatrix.x4", "st.shared.v2.b32",
               "--jobs", "1", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert [(r["op"], r["cases"], r["mismatches"]) for r in out["results"]] == [
        ("ldmatrix.x4", 40, 0), ("st.shared.v2.b32", 40, 0)]


@pytest.mark.skipif(not FILES, reason="no hardware corpus committed")
def test_replay_mode_compares_recorded_hardware_without_a_gpu(capsys):
    d = os.path.dirname(next(p for p in FILES if os.path.basename(p).startswith("ldmatrix")))
    rc = main(["gpu-check", "--replay", d, "--forms", "ldmatrix", "--cases", "30", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["mismatches"] == 0
    assert {r["op"] for r in out["results"]} == {o for o in K.LDMATRIX_OPS}
    assert all(r["cases"] == 30 for r in out["results"])


def test_without_cupy_the_command_says_so_in_one_line_and_exits_2(tmp_path):
    fake = tmp_path / "cupy"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('No module named cupy (test stand-in)')\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))  # the installed fragsim, not the source tree
    r = subprocess.run([sys.executable, "-m", "fragsim", "gpu-check", "--cases", "1"],
                       capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "CuPy is not installed" in lines[0], r.stderr


def test_devices_outside_sm80_and_sm90_are_refused_by_name():
    assert arch_for_cc(8, 6) == "sm_80" and arch_for_cc(9, 0) == "sm_90"
    with pytest.raises(ValueError, match=r"compute capability 12\.0.*sm_80.*sm_90"):
        arch_for_cc(12, 0, "RTX 5090")


@pytest.mark.skipif(not FILES, reason="no hardware corpus committed")
def test_replay_reports_a_single_flipped_output_bit(tmp_path, capsys):
    # The comparison is bit-exact: one flipped bit in one recorded output is one mismatch,
    # named with its case, lane and register, and the command exits 1.
    src = next(p for p in FILES if p.endswith("ldmatrix.x2.trans.npz"))
    c = corpus.load(src)
    c.arrays["out"] = c.arrays["out"].copy()
    c.arrays["out"][7, 13, 1] ^= np.uint32(1 << 20)
    corpus.write(str(tmp_path), c)
    rc = main(["gpu-check", "--replay", str(tmp_path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1
    (r,) = out["results"]
    assert r["mismatches"] == 1
    d = r["first_mismatches"][0]
    assert (d["case"], d["lane"], d["reg"]) == (7, 13, 1)
    assert int(d["got"], 16) ^ int(d["expected"], 16) == 1 << 20
