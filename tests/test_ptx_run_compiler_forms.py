"""fragsim.run_kernel on forms that real compilers emit and the whole-kernel GPU validation met: a scalar
load written with braces (Triton), .func parameters after a kernel parameter list of odd size (nvcc),
assert() as a call of the external __assertfail (CUTLASS), and atom.add.f32 with its flush to zero."""

import numpy as np
import pytest

from fragsim.ptx.run import run_kernel
from fragsim.ptx.state import PtxRuntimeError

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"


def test_a_one_element_vector_in_braces_loads_a_scalar():
    """Triton's inline asm writes ``ld.global.b16 { %rs1 }, [a]``; ptxas takes it as a scalar load."""
    ptx = HEAD + """.visible .entry k(.param .u64 out)
{
    .reg .b16 %rs<2>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    ld.global.b16 { %rs1 }, [ %rd1 + 2 ];
    st.global.b16 [%rd1], %rs1;
    ret;
}
"""
    out = np.array([0, 0xBEEF], np.uint16)
    run_kernel(ptx, "k", args=[out])
    assert out.tolist() == [0xBEEF, 0xBEEF]


def test_func_parameters_are_aligned_after_kernel_parameters_of_odd_size():
    """Kernel parameters of 12 bytes, then a .b64 call argument: its .param address is 8-byte aligned."""
    ptx = HEAD + """.func (.param .b64 r) twice(.param .b64 x)
{
    .reg .b64 %rd<3>;
    ld.param.b64 %rd1, [x];
    add.s64 %rd2, %rd1, %rd1;
    st.param.b64 [r], %rd2;
    ret;
}
.visible .entry k(.param .u64 out, .param .u32 n)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u32 %r1, [n];
    cvt.u64.u32 %rd2, %r1;
    {
    .param .b64 a0;
    st.param.b64 [a0], %rd2;
    .param .b64 r0;
    call.uni (r0), twice, (a0);
    ld.param.b64 %rd3, [r0];
    }
    st.global.u64 [%rd1], %rd3;
    ret;
}
"""
    out = np.zeros(1, np.uint64)
    run_kernel(ptx, "k", args=[out, 21])
    assert int(out[0]) == 42


ASSERTING = HEAD + """.extern .func __assertfail
(
    .param .b64 p0, .param .b64 p1, .param .b32 p2, .param .b64 p3, .param .b64 p4
)
;
.global .align 1 .b8 msg[9] = {110, 32, 62, 32, 48, 32, 63, 63, 0};
.global .align 1 .b8 file[6] = {107, 46, 99, 117, 32, 0};
.visible .entry k(.param .u32 n)
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    ld.param.u32 %r1, [n];
    setp.gt.s32 %p1, %r1, 0;
    @%p1 bra $L_ok;
    mov.u64 %rd1, msg;
    cvta.global.u64 %rd1, %rd1;
    mov.u64 %rd2, file;
    cvta.global.u64 %rd2, %rd2;
    {
    .param .b64 a0;
    st.param.b64 [a0], %rd1;
    .param .b64 a1;
    st.param.b64 [a1], %rd2;
    .param .b32 a2;
    st.param.b32 [a2], 7;
    .param .b64 a3;
    st.param.b64 [a3], 0;
    .param .b64 a4;
    st.param.b64 [a4], 1;
    call.uni __assertfail, (a0, a1, a2, a3, a4);
    }
$L_ok:
    ret;
}
"""


def test_an_assert_that_holds_lets_the_kernel_run_to_its_end():
    assert run_kernel(ASSERTING, "k", block=32, args=[5]).steps > 0


def test_an_assert_that_fails_stops_the_run_with_its_message_file_and_line():
    with pytest.raises(PtxRuntimeError, match=r"line \d+: CTA \(0,0,0\) thread \(0,0,0\) .*: assertion failed "
                                              r"\(k\.cu :7\): n > 0 \?\?"):
        run_kernel(ASSERTING, "k", block=32, args=[0])


@pytest.mark.parametrize("old, add, want", [
    (0x00000000, 0x00000001, 0x00000000),     # a subnormal input is flushed
    (0x80000000, 0x80000005, 0x80000000),     # ... to a zero of its sign
    (0x00C00000, 0x80800000, 0x00000000),     # a subnormal result of normal inputs is flushed
    (0x3F800000, 0x7FC12345, 0x7FFFFFFF),     # a NaN comes back canonical
])
def test_atom_add_f32_rounds_to_nearest_and_flushes_subnormals_to_signed_zero(old, add, want):
    """PTX ISA, atom: 'atom.add.f32 rounds to nearest even and flushes subnormal inputs and results to
    sign-preserving zero' (SASS on the H100: RED.E.ADD.F32.FTZ.RN)."""
    ptx = HEAD + """.visible .entry k(.param .u64 out, .param .f32 x)
{
    .reg .f32 %f<3>;
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    ld.param.f32 %f1, [x];
    atom.global.add.f32 %f2, [%rd1], %f1;
    ret;
}
"""
    out = np.array([old], np.uint32)
    run_kernel(ptx, "k", args=[out, np.uint32(add).view(np.float32)])
    assert hex(int(out[0])) == hex(want)
