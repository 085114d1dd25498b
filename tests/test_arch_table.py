"""Architectures are data: one row per architecture, and a compute-capability table over the rows."""

import pytest

from fragsim.facts.arch import ALIASES, ARCHS, COMPUTE_CAPABILITIES, arch_for_cc, get_arch
from fragsim.cli import build_parser
from fragsim.gpu_check import bulk, kernels
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
