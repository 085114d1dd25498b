"""fragsim.mma's interface: PTX operands in and out, spellings, architectures, batching,
and bad input refused with a message that names what was expected."""

import subprocess
import sys

import numpy as np
import pytest

import fragsim
from fragsim.facts.arch import ARCHS, get_arch

F32 = "m16n8k16.row.col.f32.f16.f16.f32"


def regs(form, batch=(), seed=0):
    f = fragsim.lookup(form)
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 2**32, batch + (32, f.nregs(op)), dtype=np.uint64).astype(np.uint32) for op in "ABC"]


def test_import_fragsim_does_not_load_numba():
    code = "import sys, fragsim; fragsim.pack; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("form", list(fragsim.FORMS))
def test_d_registers_have_the_ptx_shape(form):
    d = fragsim.mma(form, *regs(form))
    assert d.dtype == np.uint32 and d.shape == (32, fragsim.lookup(form).nregs("D"))


def test_the_mma_sync_aligned_prefix_is_optional():
    a, b, c = regs(F32)
    assert np.array_equal(fragsim.mma(F32, a, b, c), fragsim.mma("mma.sync.aligned." + F32, a, b, c))


@pytest.mark.parametrize("alias, name", [("A100", "sm_80"), ("ampere", "sm_80"), ("sm80", "sm_80"),
                                         ("H100", "sm_90"), ("h200", "sm_90"), ("Hopper", "sm_90"),
                                         ("sm_90a", "sm_90")])
def test_friendly_arch_names(alias, name):
    assert get_arch(alias) is ARCHS[name]
    a, b, c = regs(F32)
    assert np.array_equal(fragsim.mma(F32, a, b, c, arch=alias), fragsim.mma(F32, a, b, c, arch=name))


def test_default_arch_is_sm90():
    a, b, c = regs(F32)
    assert np.array_equal(fragsim.mma(F32, a, b, c), fragsim.mma(F32, a, b, c, arch="sm_90"))


def test_unsupported_arch_lists_the_supported_ones():
    with pytest.raises(ValueError, match=r"unsupported arch 'sm_70'; supported: sm_80, sm_90"):
        fragsim.mma(F32, *regs(F32), arch="sm_70")


def test_unknown_form_is_refused_with_the_reason():
    with pytest.raises(ValueError, match="D and C types must match"):
        fragsim.mma("m16n8k16.row.col.f32.f16.f16.f16", *regs(F32))


def test_a_valid_ptx_form_fragsim_lacks_is_not_modelled():
    with pytest.raises(ValueError, match="m8n8k16.row.col.s32.s8.u8.s32 is a valid PTX form but is not modelled"):
        fragsim.mma("m8n8k16.row.col.s32.s8.u8.s32", *regs(F32))


def test_wrong_register_count_names_operand_and_shape():
    a, b, c = regs(F32)
    with pytest.raises(ValueError, match=r"operand B of m16n8k16.row.col.f32.f16.f16.f32: expected registers "
                                         r"shaped \(\.\.\., 32, 2\)"):
        fragsim.mma(F32, a, a, c)


def test_float_registers_are_a_type_error():
    a, b, c = regs(F32)
    with pytest.raises(TypeError, match="operand C .* uint32"):
        fragsim.mma(F32, a, b, c.astype(np.float32))


def test_batch_dimensions_broadcast():
    a, b, c = regs(F32, (4,))
    d = fragsim.mma(F32, a, b[0], c[:, None], arch="sm_80")       # (4,) x () x (4, 1)
    assert d.shape == (4, 4, 32, 4)
    assert np.array_equal(d[2, 1], fragsim.mma(F32, a[1], b[0], c[2], arch="sm_80"))


def test_an_empty_batch_gives_an_empty_result():
    a, b, c = regs(F32, (0,))
    assert fragsim.mma(F32, a, b, c).shape == (0, 32, 4)


def test_batch_dimensions_that_do_not_broadcast_are_refused():
    a, b, c = regs(F32, (4,))
    with pytest.raises(ValueError, match="do not broadcast"):
        fragsim.mma(F32, a, b[:3], c)


def test_serial_and_parallel_paths_agree():
    a, b, c = regs(F32, (300,), seed=5)
    assert np.array_equal(fragsim.mma(F32, a, b, c, parallel=False), fragsim.mma(F32, a, b, c, parallel=True))


def test_an_arch_row_can_be_passed_directly():
    a, b, c = regs(F32, seed=2)
    row = ARCHS["sm_90"].with_(name="sm_90_copy")
    assert np.array_equal(fragsim.mma(F32, a, b, c, arch=row), fragsim.mma(F32, a, b, c, arch="sm_90"))


def test_a_bad_arch_row_is_refused():
    with pytest.raises(ValueError, match="zero_sign must be 'positive' or 'ieee'"):
        ARCHS["sm_90"].with_(zero_sign="negative")


def test_registers_are_not_modified():
    a, b, c = regs(F32, (3,))
    keep = [x.copy() for x in (a, b, c)]
    fragsim.mma(F32, a, b, c)
    assert all(np.array_equal(x, y) for x, y in zip((a, b, c), keep))



def test_one_numba_specialization_whatever_the_operand_layout():
    """Batched, broadcast, read-only and strided operands reach the kernel as one array type:
    numba compiles once per kernel (per configuration of fragsim.arith.kernel16), not once per mix."""
    import numba
    from fragsim.arith import kernel16

    a, b, c = regs(F32, (2 * numba.get_num_threads() * kernel16.PER_THREAD + 1,), seed=7)
    ro = a.copy()
    ro.setflags(write=False)
    strided = np.repeat(b, 2, axis=0)[::2]
    mixes = [(a, b, c), (a, b[0], c), (ro, b, c[0]), (a, strided, np.broadcast_to(c[0], c.shape))]
    for parallel in (False, True):
        for ops in mixes:
            dense = [np.array(np.broadcast_to(x, a.shape[:1] + x.shape[-2:])) for x in ops]
            assert np.array_equal(fragsim.mma(F32, *ops, parallel=parallel), fragsim.mma(F32, *dense, parallel=parallel))
    pl = fragsim.arith.plan(F32)
    assert kernel16.supports(pl)
    assert len(kernel16.compiled_for(pl).signatures) == 1
