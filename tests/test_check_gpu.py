"""fragsim check --gpu: the program the hardware runs, the comparison with fragsim, recordings,
and the replay of what real GPUs did with the seed cases (tests/data/check/*.npz).

No GPU is needed: a stand-in machine (fragsim's own simulator, or one that flips a bit) drives the
comparison, and the recorded hardware runs replay through ``fragsim.check.gpu.Recorded``.
"""

import shutil
import subprocess
from pathlib import Path

import pytest

import fragsim
import fragsim.check as C
from fragsim.check.gpu import Recorded, Recording, recorded_names
from fragsim.check.machine import Simulator
from fragsim.cli import main
from fragsim.gpu_check.check.cases import CASES
from fragsim.gpu_check.check.program import program_source
from fragsim.instructions import SHARED_OPS

DATA = Path(__file__).parent / "data" / "check"
RECORDS = sorted(DATA.glob("*.npz"))
F16 = "m16n8k16.row.col.f16.f16.f16.f16"
A16 = "16x16 f16"
A_X4 = "(lane % 16) * 32 + (lane / 16) * 16"


class StandIn(Simulator):
    """fragsim in the GPU's place (what a GPU that agrees would return)."""

    info = {"device": "stand-in", "arch": "sm_90"}


class FlipsABit(StandIn):
    """A 'GPU' whose first load returns one register bit flipped."""

    def run(self, instrs, smem, payloads):
        outs, mem = super().run(instrs, smem, payloads)
        outs[0] = outs[0].copy()
        outs[0][0, 5, 1] ^= 1
        return outs, mem


def run(case, gpu):
    return getattr(C, "check_" + case.check)(**case.args, gpu=gpu)


def test_a_gpu_that_agrees_confirms_fragsim_and_gives_the_verdict_on_its_own_output():
    r = fragsim.check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)], gpu=StandIn())
    # 32 lanes x 4 registers of 4 bytes, and the 512 bytes of shared memory (one tag pass)
    assert r.gpu.agrees and r.gpu.ok and r.gpu.compared == 512 + 512
    assert "the hardware delivered exactly what fragsim says" in str(r)


def test_a_gpu_that_differs_is_reported_register_by_register():
    r = fragsim.check_load(F16, "A", A16, [("ldmatrix.x4", A_X4)], gpu=FlipsABit())
    assert not r.gpu.agrees and not r.gpu.ok and r.ok
    # lane 5 r1 holds A(9, 2) and A(9, 3): tags 9 * 16 + 2 + 1 = 0x93 and 0x94
    assert r.gpu.differences == ["load 0 (ldmatrix.x4) lane 5 r1: GPU 0x00940092, fragsim 0x00940093 (1 registers differ)"]


def test_the_command_exits_3_when_the_gpu_disagrees(monkeypatch, capsys):
    monkeypatch.setattr("fragsim.gpu_check.check.program.GpuMachine", FlipsABit)
    assert main(["check", "--form", F16, "--operand", "A", "--tile", A16, "--load", f"ldmatrix.x4: {A_X4}",
                 "--gpu"]) == 3
    assert "the hardware DISAGREES with fragsim" in capsys.readouterr().out


def test_a_recording_replays_and_refuses_another_program(tmp_path):
    rec = Recording(StandIn())
    for case in CASES[:3]:
        rec.name = case.name
        run(case, rec)
    path = tmp_path / "stand_in.npz"
    rec.save(path, {"device": "stand-in", "arch": "sm_90"})
    for case in CASES[:3]:
        r = run(case, Recorded(path, case.name))
        assert r.gpu.agrees and r.gpu.ok == r.ok == case.ok
    with pytest.raises(ValueError, match="was made for another program"):
        run(CASES[1], Recorded(path, CASES[0].name))
    with pytest.raises(ValueError, match="no recording of 'nope'"):
        Recorded(path, "nope")


def test_the_program_runs_every_op_with_the_tables_asm_and_syncs_between_instructions():
    src = program_source(list(SHARED_OPS.values()))
    for k, op in enumerate(SHARED_OPS.values()):
        assert f"case {k}: {{" in src and op.ptx in src
    body = src.split("void fs_check_program")[1]
    assert body.count("__syncwarp();") == 3      # after the tile comes in, after each instruction, before it goes out
    assert src.count("cp.async.wait_group 0;") == sum(op.family == "cp.async" for op in SHARED_OPS.values())


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not found on PATH")
def test_the_program_compiles_with_nvcc_for_sm_90(tmp_path):
    cu = tmp_path / "check_program.cu"
    cu.write_text(program_source(list(SHARED_OPS.values())))
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(tmp_path / "p.cubin"), str(cu)], check=True,
                   capture_output=True, timeout=600)


@pytest.mark.parametrize("record", RECORDS, ids=[p.stem for p in RECORDS])
def test_recorded_gpu_runs_of_the_seed_cases_agree_with_fragsim(record):
    """What an H100/H200 did with the seed cases: fragsim's registers and shared memory bit for bit,
    and the same verdict on the hardware's output (cases added after the recording wait for the next)."""
    names = recorded_names(record)
    assert set(names) <= {c.name for c in CASES} and len(names) >= 31
    for case in (c for c in CASES if c.name in names):
        r = run(case, Recorded(record, case.name))
        assert r.gpu.agrees, (case.name, r.gpu.differences)
        assert r.gpu.ok == r.ok == case.ok, case.name



@pytest.mark.parametrize("op", [o for o in SHARED_OPS.values()
                                if o.kind in ("ld", "st") and o.element_bytes < min(4, o.bytes_per_addr)],
                         ids=lambda o: o.name)
def test_the_gpu_program_moves_vector_elements_as_the_checkers_packed_words(op):
    """ld/st.shared.v2/.v4 of 8/16-bit elements hold one element a register on the GPU; the checker
    (fragsim.check.machine) moves a lane's bytes as packed words: the GPU machine converts both ways."""
    import numpy as np

    from fragsim.gpu_check.check.program import to_elements, to_words

    rng = np.random.default_rng(op.bytes_per_addr)
    smem = rng.integers(0, 256, 4096).astype(np.uint8)
    addrs = rng.permutation(4096 // op.bytes_per_addr)[:32] * op.bytes_per_addr
    if op.kind == "ld":
        elements = fragsim.ld_shared(smem, addrs, op.bytes_per_addr, element_bytes=op.element_bytes)
        packed = fragsim.ld_shared(smem, addrs, op.bytes_per_addr)
        assert np.array_equal(to_words(op, elements), packed) and np.array_equal(to_elements(op, packed), elements)
    else:
        packed = fragsim.ld_shared(smem, np.roll(addrs, 1), op.bytes_per_addr)   # another lane's bytes
        a, b = smem.copy(), smem.copy()
        fragsim.st_shared(a, addrs, to_elements(op, packed), op.bytes_per_addr, element_bytes=op.element_bytes)
        fragsim.st_shared(b, addrs, packed, op.bytes_per_addr)
        assert np.array_equal(a, b) and not np.array_equal(a, smem)
