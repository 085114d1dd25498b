"""Architectures are data: one row per architecture, and a compute-capability table over the rows."""

import inspect

import pytest

import fragsim
from fragsim.arith import plan
from fragsim.arith.explain import explain
from fragsim.facts.arch import (ALIASES, ARCHS, COMPUTE_CAPABILITIES, DEFAULT_ARCH, WGMMA_PARAMS, WgmmaParams,
                                arch_for_cc, get_arch, get_params)
from fragsim.cli import build_parser
from fragsim.gpu_check.table import bulk
from fragsim.gpu_check import kernels
from fragsim.instructions import FORMS, SHARED_OPS


@pytest.mark.parametrize("name", list(ARCHS))
def test_each_row_models_its_own_compute_capability(name):
    row = ARCHS[name]
    assert arch_for_cc(row.cc // 10, row.cc % 10) == name


@pytest.mark.parametrize("alias, name", sorted(ALIASES.items()))
def test_every_alias_resolves_to_its_row(alias, name):
    assert get_arch(alias.upper()) is ARCHS[name]


@pytest.mark.parametrize("cc", [86, 87, 89])
def test_other_ampere_and_ada_gpus_map_to_the_sm_80_row_with_the_reason_recorded(cc):
    row, why = COMPUTE_CAPABILITIES[cc]
    assert row == "sm_80" and "MMA-Sim" in why
    assert arch_for_cc(cc // 10, cc % 10) == "sm_80"


@pytest.mark.parametrize("cc", [70, 75, 100, 120, 61])
def test_compute_capabilities_without_a_row_are_refused_by_name_with_the_reason(cc):
    with pytest.raises(ValueError, match=rf"GPU X has compute capability {cc // 10}\.{cc % 10}: .+; fragsim models"):
        arch_for_cc(cc // 10, cc % 10, "GPU X")


def test_the_command_line_arch_choices_are_the_rows():
    p = build_parser()
    sub = next(a for a in p._actions if a.dest == "command").choices["gpu-check"]
    arch = next(a for a in sub._actions if a.dest == "arch")
    assert tuple(arch.choices) == tuple(ARCHS)


@pytest.mark.parametrize("name", list(ARCHS))
def test_the_dry_run_backend_has_the_instructions_of_the_rows_compute_capability(name):
    row = ARCHS[name]
    ops = set(bulk.ModelBackend(name).available_ops())
    want = {f for f, e in FORMS.items() if e.min_cc <= row.cc} | {n for n, e in SHARED_OPS.items() if e.min_cc <= row.cc}
    assert ops == want == set(kernels.all_ops(row.cc))


@pytest.mark.parametrize("field, value", [("tf32_nan_low_bits", "no"), ("block_16bit", 8.5), ("frac_bits", True),
                                          ("round_f32", 1)])
def test_a_row_refuses_values_of_the_wrong_type(field, value):
    with pytest.raises(TypeError, match=field):
        ARCHS["sm_90"].with_(**{field: value})


def test_the_default_architecture_is_a_row():
    assert DEFAULT_ARCH in ARCHS


@pytest.mark.parametrize("fn", [fragsim.mma, fragsim.gemm, fragsim.wgmma, plan, explain], ids=lambda f: f.__name__)
def test_every_arch_argument_defaults_to_the_default_architecture(fn):
    assert inspect.signature(fn).parameters["arch"].default == DEFAULT_ARCH


@pytest.mark.parametrize("command", ["mma", "gemm", "gpu-check"])
def test_every_arch_option_defaults_to_the_default_architecture(command):
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    assert next(a for a in sub._actions if a.dest == "arch").default == DEFAULT_ARCH


@pytest.mark.parametrize("name", list(WGMMA_PARAMS))
def test_the_wgmma_row_has_the_mma_rows_numbers_for_16_bit_and_tf32_inputs(name):
    """One tensor core per architecture: F, L, rounding and the zero exponents of wgmma's 16-bit and
    tf32 inputs are the mma.sync row's (both confirmed on an H100), read from it."""
    w, m = WGMMA_PARAMS[name], ARCHS[name]
    assert (w.frac_bits_16bit, w.block_16bit, w.frac_bits_tf32, w.block_tf32) == \
        (m.frac_bits, m.block_16bit, m.frac_bits, m.block_tf32)
    assert (w.e_zero_f32, w.e_zero_f16, w.round_f32, w.round_f16) == (m.e_zero_f32, m.e_zero_f16, m.round_f32,
                                                                       m.round_f16)


@pytest.mark.parametrize("alias", ["sm_90", "H100", "hopper"])
def test_get_params_reads_the_names_and_aliases_of_the_rows(alias):
    assert get_params(alias) is WGMMA_PARAMS["sm_90"]
    assert get_params(WGMMA_PARAMS["sm_90"]) is WGMMA_PARAMS["sm_90"]


def test_get_params_refuses_an_architecture_without_wgmma_in_one_line():
    with pytest.raises(ValueError, match=r"^arch 'a100': wgmma is an sm_90a instruction; fragsim models it for sm_90 only$"):
        get_params("a100")


@pytest.mark.parametrize("field, value, error", [("block_fp8", 16.0, TypeError), ("round_f16", "rd", ValueError),
                                                 ("frac_bits_tf32", 41, ValueError)])
def test_a_wgmma_row_refuses_bad_values_by_field(field, value, error):
    with pytest.raises(error, match=field):
        WGMMA_PARAMS["sm_90"].with_(**{field: value})
    assert isinstance(WGMMA_PARAMS["sm_90"].with_(**{field: getattr(WGMMA_PARAMS["sm_90"], field)}), WgmmaParams)
