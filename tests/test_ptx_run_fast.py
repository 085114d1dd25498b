"""fragsim run's fast paths (fragsim.ptx.machine.FAST) change no bit and no step: every kernel of the PTX
corpus leaves the same buffers and takes the same steps with them on and off; mma.sync instructions
run as one batch exactly when none depends on an earlier one; and the 128x128-tile bf16 GEMM of
benchmarks/bench_run.py gives fragsim.gemm's bits."""

import numpy as np
import pytest

import fragsim
from fragsim.facts.arch import get_arch
from fragsim.gpu_check import ptx_kernels as P
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
