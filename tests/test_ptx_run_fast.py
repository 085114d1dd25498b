"""fragsim run's fast paths (fragsim.ptx.machine.FAST) change no bit and no step: every kernel of the PTX
corpus leaves the same buffers and takes the same steps with them on and off; mma.sync instructions
run as one batch exactly when none depends on an earlier one; and the 128x128-tile bf16 GEMM of
benchmarks/bench_run.py gives fragsim.gemm's bits."""

import numpy as np
import pytest

import fragsim
from fragsim.facts.arch import get_arch
from fragsim.gpu_check.ptx import kernels as P
from fragsim.ptx import machine
from fragsim.ptx.parse import parse
from fragsim.ptx.program import Compiler
from fragsim.ptx.run import run_kernel
from fragsim.ptx.semantics.tensor import mma_batches

CORPUS = "tests/data/ptx/"
BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"
#: One launch of every PTX file of the corpus (its kernel's first shape and seed), whole grid and the
#: last CTA alone.
FILES = [c for c in P.cases() if c.shape == 0 and c.seed == P.BY_NAME[c.kernel].seeds[0]]


def run_case(c: P.Case, fast: bool, monkeypatch) -> tuple[dict[str, np.ndarray], list[int]]:
    monkeypatch.setattr(machine, "FAST", fast)
    steps: list[int] = []
    execute = machine.execute

    def counted(program, s, max_steps=machine.MAX_STEPS):
        steps.append(execute(program, s, max_steps))
        return steps[-1]

    monkeypatch.setattr("fragsim.ptx.run.execute", counted)
    return P.fragsim_outputs(c, c.launch()), steps


@pytest.mark.parametrize("case", FILES, ids=[c.id for c in FILES])
def test_the_fast_paths_leave_every_buffer_and_the_step_count_as_the_plain_machine_does(case, monkeypatch):
    fast, fast_steps = run_case(case, True, monkeypatch)
    slow, slow_steps = run_case(case, False, monkeypatch)
    assert fast_steps == slow_steps
    for name in slow:
        assert np.array_equal(fast[name].view(np.uint8), slow[name].view(np.uint8)), name


def mma_kernel(second_c: str) -> str:
    """Two mma.sync m16n8k16 bf16 one after the other; the second accumulates into ``second_c``."""
    mma = f"mma.sync.aligned.{BF16}"
    return f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k()
{{
.reg .b32 %r<16>;
.reg .f32 %f<16>;
    {mma} {{%f1, %f2, %f3, %f4}}, {{%r1, %r2, %r3, %r4}}, {{%r5, %r6}}, {{%f1, %f2, %f3, %f4}};
    {mma} {{%f5, %f6, %f7, %f8}}, {{%r1, %r2, %r3, %r4}}, {{%r7, %r8}}, {second_c};
    ret;
}}
"""


def batches(text: str) -> dict:
    module = parse(text)
    return mma_batches(Compiler(module, module.entries["k"], get_arch("sm_90")).compile().ops)


def test_independent_mma_sync_instructions_in_a_row_run_as_one_batch():
    assert {pc: b.count for pc, b in batches(mma_kernel("{%f5, %f6, %f7, %f8}")).items()} == {0: 2}


def test_an_mma_sync_that_reads_an_earlier_ones_d_is_not_batched_with_it():
    assert batches(mma_kernel("{%f5, %f6, %f7, %f1}")) == {}


def two_mmas(form: str) -> str:
    """The registers of two independent mma.sync (A, B, C each) loaded from ``regs`` (register r of lane
    l at word 32 r + l), both D stored to ``out`` alike, by the last warp of the block (the others exit
    first)."""
    loads = "\n".join(f"    ld.global.u32 %r{k + 1}, [%rd4+{128 * k}];" for k in range(20))
    stores = "\n".join(f"    st.global.u32 [%rd5+{128 * k}], %r{k + 21};" for k in range(8))
    mma = f"mma.sync.aligned.{form}"
    return f""".version 8.0
.target sm_90
.address_size 64
.visible .entry k(.param .u64 regs, .param .u64 out)
{{
.reg .pred %p<2>;
.reg .b32 %r<40>;
.reg .b64 %rd<8>;
    mov.u32 %r30, %tid.x;
    mov.u32 %r31, %ntid.x;
    add.u32 %r32, %r30, 32;
    setp.lt.u32 %p1, %r32, %r31;
    @%p1 ret;
    ld.param.u64 %rd1, [regs];
    ld.param.u64 %rd2, [out];
    mov.u32 %r0, %laneid;
    mul.wide.u32 %rd3, %r0, 4;
    add.s64 %rd4, %rd1, %rd3;
    add.s64 %rd5, %rd2, %rd3;
{loads}
    {mma} {{%r21, %r22, %r23, %r24}}, {{%r1, %r2, %r3, %r4}}, {{%r5, %r6}}, {{%r7, %r8, %r9, %r10}};
    {mma} {{%r25, %r26, %r27, %r28}}, {{%r11, %r12, %r13, %r14}}, {{%r15, %r16}}, {{%r17, %r18, %r19, %r20}};
{stores}
    ret;
}}
"""


@pytest.mark.parametrize("warps", [1, 3])
@pytest.mark.parametrize("form", [BF16, "m16n8k32.row.col.s32.s8.s8.s32"])
def test_two_independent_mma_sync_run_as_one_batch_give_fragsim_mma_bits_each(form, warps):
    """The float kernel takes the batch's words register by register, the integer one lane by lane; with
    3 warps the batch runs for the last one alone (threads 64-95)."""
    assert [b.count for b in batches(two_mmas(form)).values()] == [2]
    rng = np.random.default_rng(5)
    regs = rng.integers(0, 2**32, (20, 32), dtype=np.uint64).astype(np.uint32)
    if "bf16" in form:      # bf16 A and B: random normal numbers (random words are mostly NaN and Inf)
        regs[[0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15]] = fragsim.to_bits(
            rng.standard_normal((12, 32, 2)).astype(np.float32), "bf16").view(np.uint32)[..., 0]
    out = np.zeros((8, 32), np.uint32)
    run_kernel(two_mmas(form), "k", block=32 * warps, args=[regs, out])
    for i, first in enumerate((0, 10)):
        a, b, c = regs[first:first + 4].T, regs[first + 4:first + 6].T, regs[first + 6:first + 10].T
        assert np.array_equal(out[4 * i:4 * i + 4].T, fragsim.mma(form, a, b, c))


def test_the_128x128_tile_bf16_gemm_gives_the_bits_of_fragsim_gemm():
    """bgemm_128x128 (src/bgemm_128x128.cu): 2x2 CTAs, M and N past the last tile's rows (cp.async zero
    fill, stores skipped), a two-stage cp.async pipeline over K = 96 (three k-tiles)."""
    rng = np.random.default_rng(4)
    M, N, K = 208, 136, 96
    A = fragsim.to_bits(rng.standard_normal((M, K)), "bf16")
    Bt = fragsim.to_bits(rng.standard_normal((N, K)), "bf16")
    D = np.zeros((M, N), np.float32)
    run_kernel(CORPUS + "bgemm_128x128.sm90a.ptx", grid=(2, 2), block=128, args=[A, Bt, D, M, N, K])
    assert np.array_equal(D.view(np.uint32), fragsim.gemm(BF16, A, Bt.T.copy()))
