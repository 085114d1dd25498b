"""gpu_check's families: every registered family implements the one protocol (gpu_check/family.py),
its CUDA is generated behind the one prelude and compiles, its recording under tests/data replays
through fragsim without a GPU, and `fragsim gpu-check --family` offers exactly the registry."""

import argparse
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fragsim.cli import gpu_check as cli_gpu_check
from fragsim.cli import main
from fragsim.gpu_check.family import Family, families
from fragsim.gpu_check.prelude import PRELUDE, descriptor_start_field
from fragsim.layout.descriptor import MatrixDescriptor

DATA = Path(__file__).parent / "data"
F16 = "m16n8k16.row.col.f32.f16.f16.f32"
#: family -> its committed recording and a small replay of it (a new family adds its line here)
RECORDINGS = {
    "mma": (DATA / "hw" / "nvidia_h200_sm90", ["--forms", F16, "--cases", "3"]),
    "shared": (DATA / "hw" / "nvidia_h200_sm90", ["--forms", "ldmatrix.x4", "cp.async.ca.16", "--cases", "3"]),
    "movmatrix": (DATA / "hw_movmatrix" / "nvidia_h100_sm90", ["--cases", "50"]),
    "wgmma": (DATA / "wgmma", ["--cases", "1"]),
    "gemm": (DATA / "gemm" / "gemm_h100.json", ["--forms", F16, "--cases", "1"]),
    "ptx_int": (DATA / "ptx" / "int", ["--forms", "prmt", "shfl", "--cases", "8"]),
    "ptx_cvt": (DATA / "ptx" / "cvt", ["--forms", "f16.f32", "--cases", "64"]),
    "ptx_float": (DATA / "ptx" / "float", ["--forms", "add.rn.f32", "setp.CMP.and.f16x2", "--cases", "4096"]),
    "ptx_kernels": (DATA / "ptx" / "kernels", ["--forms", "struct_param", "--cases", "3"]),
    "ptx_ncu": (DATA / "ptx" / "ncu", ["--cases", "3"]),
    "ptx": (DATA / "ptx", ["--forms", "shfl", "struct_param", "--cases", "8"]),
    "tma": (DATA / "tma" / "run1", ["--cases", "40"]),
    "approx": (DATA / "approx" / "approx_h100.npz", ["--forms", "ex2.approx.ftz.f32", "tanh.approx.f16", "--cases", "1"]),
}
FAMILIES = families()
#: families whose kernels are PTX as written, loaded by the driver: their source is a PTX module
PTX_MODULES = ("ptx_cvt", "ptx_ncu")
#: families that run other families (their source is their members'; --cases 0 means each member's default)
AGGREGATES = ("ptx",)


def test_every_registered_family_has_a_recording_here():
    assert set(RECORDINGS) == set(FAMILIES)


@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_family_implements_the_protocol_under_its_name(name):
    fam = FAMILIES[name]
    assert isinstance(fam, Family) and fam.name == name
    assert fam.summary and fam.replay_expects
    assert fam.default_cases > 0 or name in AGGREGATES
    assert fam.options is None or {"cases", "replay", "json"} <= fam.options


@pytest.mark.parametrize("name", [n for n in FAMILIES if n not in PTX_MODULES + AGGREGATES])
def test_each_familys_cuda_starts_with_the_one_prelude(name):
    src = FAMILIES[name].source(90)
    assert src.startswith(PRELUDE) and src.count("fs_smem_addr(const void* p)") == 1
    assert '__global__' in src[len(PRELUDE):]


@pytest.mark.parametrize("name", PTX_MODULES)
def test_a_ptx_familys_source_is_one_module_for_the_device(name):
    src = FAMILIES[name].source(90)
    assert src.startswith(".version ") and "\n.target sm_90\n" in src and ".visible .entry" in src


@pytest.mark.parametrize("name", list(FAMILIES))
def test_each_family_replays_its_recording_bit_for_bit(name, capsys):
    path, argv = RECORDINGS[name]
    assert main(["gpu-check", "--family", name, "--replay", str(path), *argv, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["mismatches"] == 0
    assert (sum(r["cases"] for r in rep["results"]) if "results" in rep else rep["cases"]) > 0


def test_the_command_offers_exactly_the_registered_families():
    p = argparse.ArgumentParser()
    cli_gpu_check.add_arguments(p)
    (family,) = [a for a in p._actions if a.dest == "family"]
    assert tuple(family.choices) == tuple(FAMILIES)
    for name, fam in FAMILIES.items():
        assert f"{name}: {fam.summary}" in family.help


@pytest.mark.parametrize("start", [0, 16, 0x1230, 0x3FFF0])
def test_the_preludes_descriptor_start_field_is_matrix_descriptors(start):
    """fs_rebase's field (shift, mask) is where MatrixDescriptor.encode puts the start address."""
    shift, mask = descriptor_start_field()
    d = MatrixDescriptor(start_address=start, leading_byte_offset=0, stride_byte_offset=0).encode()
    assert d & mask == start >> shift and d & ~mask == 0
    assert f"#define FS_DESC_SHIFT {shift}\n" in PRELUDE and f"#define FS_DESC_MASK {mask:#x}ull\n" in PRELUDE


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("name", ["movmatrix", "wgmma"])
def test_the_cuda_of_the_families_no_other_test_compiles_builds_with_nvcc(name, tmp_path):
    """(The table's, the GEMM's, the access-set and probe kernels compile in their own tests.)"""
    cu = tmp_path / f"{name}.cu"
    cu.write_text(FAMILIES[name].source(90))
    arch = "-gencode=arch=compute_90a,code=sm_90a" if name == "wgmma" else "-arch=sm_90"
    r = subprocess.run(["nvcc", "-cubin", arch, "-o", str(tmp_path / f"{name}.cubin"), str(cu)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
