"""fragsim.run_kernel: the execution model (SIMT lockstep with divergence, barriers, memory spaces, calls)
and whole kernels compiled by nvcc 13 that must give fragsim's own bit-exact tensor-core results."""

import numpy as np
import pytest

import fragsim
from fragsim.ptx.memory import MALLOC_ALIGN, Buffer
from fragsim.ptx.program import PtxLoadError
from fragsim.ptx.run import run_kernel
from fragsim.ptx.state import PtxRuntimeError

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"
CORPUS = "tests/data/ptx/"


def kernel(params: str, body: str, regs: str = ".reg .pred %p<4>;\n.reg .b32 %r<16>;\n.reg .b64 %rd<16>;") -> str:
    return f"{HEAD}.visible .entry k({params})\n{{\n{regs}\n{body}\n}}\n"


#: out[tid] as a 64-bit address: %rd3 = out + 4 * tid.x
OUT_ADDR = """
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
"""


def test_a_loop_whose_trip_count_differs_per_thread_runs_each_thread_its_own_count():
    """Thread t adds 1 t times: the warp diverges at the loop test and reconverges after it."""
    ptx = kernel(".param .u64 out", OUT_ADDR + """
    mov.u32 %r2, 0;
$L_loop:
    setp.ge.u32 %p1, %r2, %r1;
    @%p1 bra $L_done;
    add.u32 %r2, %r2, 1;
    bra.uni $L_loop;
$L_done:
    st.global.u32 [%rd3], %r2;
    ret;""")
    out = np.zeros(40, np.uint32)
    run_kernel(ptx, "k", block=40, args=[out])
    assert out.tolist() == list(range(40))


def test_divergent_branches_write_each_side_and_reconverge_for_what_follows():
    ptx = kernel(".param .u64 out", OUT_ADDR + """
    and.b32 %r2, %r1, 1;
    setp.eq.u32 %p1, %r2, 0;
    @%p1 bra $L_even;
    mov.u32 %r3, 100;
    bra.uni $L_join;
$L_even:
    mov.u32 %r3, 200;
$L_join:
    add.u32 %r3, %r3, %r1;
    st.global.u32 [%rd3], %r3;
    ret;""")
    out = np.zeros(32, np.uint32)
    run_kernel(ptx, "k", block=32, args=[out])
    assert out.tolist() == [(200 if t % 2 == 0 else 100) + t for t in range(32)]


def test_bar_sync_makes_every_warps_shared_stores_visible_to_every_warp():
    """64 threads: t stores t at smem[t]; after bar.sync, t reads smem[63 - t] (written by the other warp)."""
    ptx = kernel(".param .u64 out", ".shared .align 4 .b8 buf[256];\n" + OUT_ADDR + """
    mov.u32 %r4, buf;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r4, %r5;
    st.shared.u32 [%r6], %r1;
    bar.sync 0;
    sub.u32 %r7, 63, %r1;
    shl.b32 %r8, %r7, 2;
    add.u32 %r9, %r4, %r8;
    ld.shared.u32 %r10, [%r9];
    st.global.u32 [%rd3], %r10;
    ret;""")
    out = np.zeros(64, np.uint32)
    run_kernel(ptx, "k", block=64, args=[out])
    assert out.tolist() == [63 - t for t in range(64)]


def test_a_barrier_only_part_of_the_cta_reaches_is_reported_as_a_deadlock_not_a_hang():
    ptx = kernel(".param .u64 out", OUT_ADDR + """
    setp.ge.u32 %p1, %r1, 32;
    @%p1 bra $L_spin;
    bar.sync 0;
    ret;
$L_spin:
    bar.sync 1;
    ret;""")
    with pytest.raises(PtxRuntimeError, match="deadlock: line .*: 32 thread\\(s\\) wait at barrier"):
        run_kernel(ptx, "k", block=64, args=[np.zeros(64, np.uint32)])


def test_threads_that_exited_count_as_arrived_at_a_barrier():
    ptx = kernel(".param .u64 out", OUT_ADDR + """
    setp.ge.u32 %p1, %r1, 32;
    @%p1 ret;
    bar.sync 0;
    st.global.u32 [%rd3], %r1;
    ret;""")
    out = np.zeros(64, np.uint32)
    run_kernel(ptx, "k", block=64, args=[out])
    assert out[:32].tolist() == list(range(32)) and not out[32:].any()


def test_an_endless_loop_stops_at_the_step_limit_with_its_line():
    ptx = kernel(".param .u64 out", "$L_top:\n    bra.uni $L_top;\n    ret;")
    with pytest.raises(PtxRuntimeError, match=r"stopped after 1000 steps \(max_steps\): at line 10"):
        run_kernel(ptx, "k", block=32, args=[np.zeros(1, np.uint32)], max_steps=1000)


def test_a_store_outside_every_buffer_names_the_line_the_thread_and_the_address():
    ptx = kernel(".param .u64 out", OUT_ADDR + "    st.global.u32 [%rd3], %r1;\n    ret;")
    with pytest.raises(PtxRuntimeError, match=r"line 15: CTA \(0,0,0\) thread \(8,0,0\) \(warp 0, lane 8\): global "
                                              r"store of 4 bytes at 0x[0-9a-f]+ is outside every buffer"):
        run_kernel(ptx, "k", block=32, args=[np.zeros(8, np.uint32)])


def test_a_misaligned_access_is_refused_as_the_hardware_faults():
    ptx = kernel(".param .u64 out", OUT_ADDR + "    st.global.u32 [%rd3+2], %r1;\n    ret;")
    with pytest.raises(PtxRuntimeError, match="is not 4-byte aligned"):
        run_kernel(ptx, "k", block=1, args=[np.zeros(8, np.uint32)])


def test_an_instruction_fragsim_does_not_run_is_refused_before_running_naming_its_line():
    ptx = kernel(".param .u64 out", "    tex.1d.v4.s32.s32 {%r1, %r2, %r3, %r4}, [tex, {%r5}];\n    ret;")
    with pytest.raises(PtxLoadError, match="line 9: tex.1d.v4.s32.s32: textures and surfaces are not modelled"):
        run_kernel(ptx, "k", args=[np.zeros(1, np.uint32)])


def test_a_pinned_buffer_is_passed_at_its_address():
    ptx = kernel(".param .u64 out", """
    ld.param.u64 %rd1, [out];
    st.global.u64 [%rd1], %rd1;
    ret;""")
    out = np.zeros(2, np.uint64)
    run_kernel(ptx, "k", args=[Buffer(out, address=0x7F12_3456_7800)])
    assert int(out[0]) == 0x7F12_3456_7800


def test_default_placement_is_aligned_as_cudamalloc_aligns():
    ptx = kernel(".param .u64 a, .param .u64 b", """
    ld.param.u64 %rd1, [a];
    ld.param.u64 %rd2, [b];
    st.global.u64 [%rd1], %rd2;
    ret;""")
    a, b = np.zeros(3, np.uint64), np.zeros(5, np.uint8)
    run_kernel(ptx, "k", args=[a, b])
    assert int(a[0]) % MALLOC_ALIGN == 0


def test_the_argument_count_must_match_the_entry():
    ptx = kernel(".param .u64 out", "    ret;")
    with pytest.raises(ValueError, match=r"k takes 1 parameter\(s\) \(.u64 out\), got 2 args"):
        run_kernel(ptx, "k", args=[np.zeros(1), 3])


def test_mma_1warp_gives_the_bits_of_fragsim_gemm():
    """nvcc 13 -O3: one warp stages A and B^T through shared memory, ldmatrix.x4/.x2, mma.m16n8k16 bf16."""
    rng = np.random.default_rng(0)
    K = 64
    A = fragsim.to_bits(rng.standard_normal((16, K)), "bf16")
    Bt = fragsim.to_bits(rng.standard_normal((8, K)), "bf16")
    D = np.zeros((16, 8), np.float32)
    run_kernel(CORPUS + "mma_1warp.sm90a.ptx", block=32, args=[A, Bt, D, K])
    assert np.array_equal(D.view(np.uint32), fragsim.gemm("m16n8k16.row.col.f32.bf16.bf16.f32", A, Bt.T.copy()))


@pytest.mark.parametrize("ctas", [None, [(1, 1)]])
def test_hgemm_with_cp_async_zero_fill_gives_the_bits_of_fragsim_gemm(ctas):
    """4 warps per 64x64 tile, cp.async.cg with src-size 0 past M (zero fill), Swizzle<3,3,3>-style XOR,
    ldmatrix, mma.m16n8k16 f16; a 96-row M leaves the second tile row half empty.  With ``ctas`` only
    that CTA's tile is written."""
    rng = np.random.default_rng(1)
    M, N, K = 96, 128, 128
    A = fragsim.to_bits(rng.standard_normal((M, K)), "f16")
    Bt = fragsim.to_bits(rng.standard_normal((N, K)), "f16")
    D = np.zeros((M, N), np.float32)
    run_kernel(CORPUS + "hgemm_cpasync.sm90a.ptx", grid=(2, 2), block=128, dynamic_smem=16384,
               args=[A, Bt, D, M, N, K], ctas=ctas)
    want = fragsim.gemm("m16n8k16.row.col.f32.f16.f16.f32", A, Bt.T.copy())
    if ctas is None:
        assert np.array_equal(D.view(np.uint32), want)
    else:
        assert np.array_equal(D[64:, 64:].view(np.uint32), want[64:, 64:]) and not D[:64].any()


APPROX = kernel(".param .u64 out, .param .u64 x", """
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd4, [x];
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    add.s64 %rd5, %rd4, %rd2;
    ld.global.f32 %f1, [%rd5];
    ex2.approx.ftz.f32 %f2, %f1;
    div.approx.f32 %f3, %f2, %f1;
    st.global.f32 [%rd3], %f3;
    ret;""", ".reg .b32 %r<4>;\n.reg .b64 %rd<8>;\n.reg .f32 %f<4>;")


def test_modelled_approx_instructions_run_the_mufu_bits():
    """ex2.approx.ftz.f32 and div.approx.f32 give what fragsim.approx says the H100 returns."""
    x = np.array([1.0, 2.0, -3.0, 0.3], np.float32)
    out = np.zeros(4, np.float32)
    r = run_kernel(APPROX, "k", block=4, args=[out, x])
    e = fragsim.approx("ex2.approx.ftz.f32", x.view(np.uint32))
    assert r.approximate == []
    assert np.array_equal(out.view(np.uint32), fragsim.approx("div.approx.f32", e, x.view(np.uint32)))


TANH = APPROX.replace("ex2.approx.ftz.f32", "tanh.approx.f32")


def test_tanh_runs_the_mufu_bits_too():
    x = np.array([0.1, 1.0, -3.0, 9.0], np.float32)
    out = np.zeros(4, np.float32)
    run_kernel(TANH, "k", block=4, args=[out, x])
    t = fragsim.approx("tanh.approx.f32", x.view(np.uint32))
    assert np.array_equal(out.view(np.uint32), fragsim.approx("div.approx.f32", t, x.view(np.uint32)))


def test_ieee_stand_ins_compute_the_rounded_function_and_name_their_lines():
    """approx="ieee": every MUFU form, modelled or not, runs its IEEE stand-in, flagged by line."""
    x = np.array([1.0, 2.0, -3.0, 0.5], np.float32)
    out = np.zeros(4, np.float32)
    r = run_kernel(APPROX, "k", block=4, args=[out, x], approx="ieee")
    assert r.approximate == [17, 18]
    assert np.array_equal(out, (np.exp2(x.astype(np.float64)).astype(np.float32) / x))


def test_cp_async_with_ignore_src_copies_zeros_where_the_predicate_is_true():
    """cp.async's fourth operand may be the predicate ignore-src (PTX ISA 9.7.9.25.3): where true the
    source is ignored and zeros are copied, as with src-size 0; odd threads set it here."""
    ptx = kernel(".param .u64 out, .param .u64 src", OUT_ADDR + """
    .shared .align 16 .b8 sm[256];
    ld.param.u64 %rd4, [src];
    cvta.to.global.u64 %rd4, %rd4;
    add.s64 %rd5, %rd4, %rd2;
    mov.u32 %r2, sm;
    shl.b32 %r3, %r1, 2;
    add.s32 %r4, %r2, %r3;
    and.b32 %r5, %r1, 1;
    setp.ne.u32 %p1, %r5, 0;
    cp.async.ca.shared.global [%r4], [%rd5], 4, %p1;
    cp.async.wait_all;
    ld.shared.u32 %r6, [%r4];
    st.global.u32 [%rd3], %r6;
    ret;""")
    src = np.arange(100, 132, dtype=np.uint32)
    out = np.full(32, 0xDEADBEEF, np.uint32)
    run_kernel(ptx, "k", block=32, args=[out, src])
    assert out.tolist() == [v if i % 2 == 0 else 0 for i, v in enumerate(src.tolist())]


@pytest.mark.parametrize("order", list(__import__("itertools").permutations(("u8", "u16", "f32", "ptr"))))
def test_kernel_parameters_sit_at_their_natural_alignment_in_every_order(order):
    """The parameter buffer puts each parameter at its type's alignment (a 4-byte one before a pointer
    leaves a gap); a .ptr's .align is its pointee's (Triton writes .ptr .global .align 1)."""
    decl = {"u8": ".param .u8 p_u8", "u16": ".param .u16 p_u16", "f32": ".param .f32 p_f32",
            "ptr": ".param .u64 .ptr .global .align 1 out"}
    body = """
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    ld.param.u8 %rs1, [p_u8];
    ld.param.u16 %rs2, [p_u16];
    ld.param.f32 %f1, [p_f32];
    cvt.u32.u16 %r1, %rs1;
    cvt.u32.u16 %r2, %rs2;
    st.global.u32 [%rd1], %r1;
    st.global.u32 [%rd1+4], %r2;
    st.global.f32 [%rd1+8], %f1;
    ret;"""
    ptx = kernel(", ".join(decl[t] for t in order), body,
                 ".reg .b16 %rs<4>;\n.reg .b32 %r<4>;\n.reg .f32 %f<2>;\n.reg .b64 %rd<4>;")
    out = np.zeros(3, np.uint32)
    value = {"u8": 0xAB, "u16": 0xBEEF, "f32": np.float32(-1.5), "ptr": out}
    run_kernel(ptx, "k", block=1, args=[value[t] for t in order])
    assert out[:2].tolist() == [0xAB, 0xBEEF] and out[2:].view(np.float32)[0] == np.float32(-1.5)


@pytest.mark.parametrize("target, arch, row", [
    ("sm_90a", None, "sm_90"), ("sm_90", None, "sm_90"), ("sm_80", None, "sm_80"), ("sm_86", None, "sm_80"),
    ("sm_89", None, "sm_80"), ("sm_80", "sm_90", "sm_90"), ("sm_90a", "h100", "sm_90"),
])
def test_the_arch_defaults_to_the_ptx_target_and_a_newer_one_may_run_it(target, arch, row):
    from fragsim.ptx.run import load_module, target_arch
    module = load_module(f".version 8.0\n.target {target}\n.address_size 64\n.visible .entry k() {{ ret; }}\n")
    assert target_arch(module, arch).name == row


@pytest.mark.parametrize("target, arch, why", [
    ("sm_90a", "sm_80", r"arch=sm_80: the PTX's .target sm_90a needs compute capability 9\.0 or newer"),
    ("sm_75", None, r"\.target sm_75 has compute capability 7\.5: Turing"),
])
def test_an_arch_the_target_rules_out_is_an_error(target, arch, why):
    with pytest.raises(ValueError, match=why):
        run_kernel(f".version 8.0\n.target {target}\n.address_size 64\n.visible .entry k() {{ ret; }}\n", "k",
                   arch=arch)


def _entry(directive: str) -> str:
    return f".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k() {directive}\n{{ ret; }}\n"


@pytest.mark.parametrize("directive, grid, block, why", [
    (".reqntid 128", 1, 256, r"\.reqntid 128: the block must be \(128, 1, 1\), got \(256, 1, 1\)"),
    (".reqntid 64, 2", 1, 128, r"the block must be \(64, 2, 1\)"),
    (".maxntid 128, 1, 1", 1, 160, r"\.maxntid 128, 1, 1: at most 128 threads per CTA, the block \(160, 1, 1\) has 160"),
    (".reqnctapercluster 2, 1, 1", 3, 32, r"the grid \(3, 1, 1\) is not a whole number of clusters of \(2, 1, 1\)"),
])
def test_a_launch_the_kernels_directives_rule_out_is_refused_as_the_gpu_refuses_it(directive, grid, block, why):
    with pytest.raises(ValueError, match=why):
        run_kernel(_entry(directive), "k", grid=grid, block=block)


@pytest.mark.parametrize("directive, block", [(".reqntid 128", 128), (".maxntid 128, 1, 1", 96),
                                               (".reqnctapercluster 2, 1, 1", 32)])
def test_a_launch_the_directives_allow_runs(directive, block):
    assert run_kernel(_entry(directive), "k", grid=2, block=block).steps >= 1


def test_too_much_shared_memory_names_dynamic_smem_and_what_fits():
    ptx = (".version 8.0\n.target sm_90\n.address_size 64\n.extern .shared .align 16 .b8 dyn[];\n"
           ".visible .entry k() { .shared .align 16 .b8 st[1024]; ret; }\n")
    with pytest.raises(ValueError, match=r"1024 static and alignment \+ dynamic_smem=300000\), more than sm_90's "
                                         r"232448 per CTA; at most dynamic_smem=231424 fits"):
        run_kernel(ptx, "k", dynamic_smem=300000)


def test_a_cuda_source_given_as_ptx_is_named_with_the_nvcc_command(tmp_path):
    with pytest.raises(ValueError, match=r"gemm64\.cu is CUDA C\+\+ source, not PTX: .* nvcc -arch=sm_90a -lineinfo -ptx "
                                         r"gemm64\.cu -o gemm64\.ptx"):
        run_kernel("gemm64.cu", "k")


def test_a_local_array_beyond_what_a_thread_may_have_is_named():
    ptx = kernel("", ".local .align 4 .b8 small[16];\n.local .align 4 .b8 huge[4294967296];\nret;")
    with pytest.raises(ValueError, match=r"4,294,967,312 bytes of \.local memory per thread \(huge the largest\), "
                                         r"more than the 524,288"):
        run_kernel(ptx, "k")


def test_local_memory_of_too_many_threads_at_once_names_ctas():
    ptx = kernel("", ".local .align 4 .b8 frame[262144];\nret;")
    with pytest.raises(ValueError, match=r"262,144 bytes of \.local memory for each of 16,384 thread slots, .* ctas="):
        run_kernel(ptx, "k", grid=64, block=256)
