"""Contract fuzz of fragsim.run_kernel and `fragsim run`: bad PTX, wrong argument counts and types,
kernels that run out of bounds or forever, huge launches -- each one clear error (ValueError or
TypeError, one line), never a traceback from inside, never a hang."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fragsim
from contract import memory_cap
from fragsim.cli import main
from fragsim.ptx.memory import Buffer
from fragsim.ptx.run import run_kernel

CORPUS = "tests/data/ptx/"
SMALL = open(CORPUS + "mma_1warp.sm90a.ptx").read()
LOOP = open(CORPUS + "gemm_ldshared.sm90a.ptx").read()


def clean(call) -> None:
    """``call`` returns, or raises a one-line ValueError/TypeError, within the contract fuzz's memory cap."""
    try:
        with memory_cap():
            call()
    except (ValueError, TypeError) as e:
        assert str(e) and "\n" not in str(e), repr(e)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(SMALL) - 1), st.integers(0, 200), st.sampled_from(["", "}", "{", ";", "%r9999", "@", "[", "0x"]))
def test_mutated_ptx_is_run_or_refused_in_one_line(cut, length, insert):
    """A corpus kernel cut, spliced or given a stray token anywhere."""
    text = SMALL[:cut] + insert + SMALL[cut + length:]
    A, Bt = np.zeros((16, 16), np.uint16), np.zeros((8, 16), np.uint16)
    clean(lambda: run_kernel(text, None, block=32, args=[A, Bt, np.zeros((16, 8), np.float32), 16], max_steps=20_000))


ARG = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True), st.text(max_size=3),
                st.just(np.zeros(3, np.float32)), st.just(np.zeros((2, 2), np.uint8)[:, :1]), st.just(b"\0" * 5),
                st.just([1, 2]))


@settings(max_examples=60, deadline=None)
@given(ARG, st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=2)))
def test_a_buffer_of_anything_at_any_address_is_made_or_refused_in_one_line(array, address):
    clean(lambda: Buffer(array, address=address))


@settings(max_examples=40, deadline=None)
@given(st.lists(ARG, max_size=6))
def test_any_argument_list_is_run_or_refused_in_one_line(args):
    clean(lambda: run_kernel(SMALL, None, block=32, args=args, max_steps=20_000))


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.integers(-3, 1 << 40), st.tuples(st.integers(-1, 1 << 20), st.integers(-1, 1 << 20)), st.text(max_size=3)),
       st.one_of(st.integers(-3, 1 << 20), st.tuples(st.integers(-1, 2048), st.integers(-1, 64)), st.floats()))
def test_any_launch_shape_is_run_or_refused_in_one_line(grid, block):
    """(A grid of 2**40 CTAs once built its CTA list before refusing: 24 GB.)"""
    """Huge grids and blocks are refused by size before anything is allocated."""
    A, Bt = np.zeros((16, 16), np.uint16), np.zeros((8, 16), np.uint16)
    clean(lambda: run_kernel(SMALL, None, grid=grid, block=block, args=[A, Bt, np.zeros((16, 8), np.float32), 16],
                             max_steps=20_000))


def test_a_kernel_reading_past_its_buffers_is_refused_not_a_crash():
    """gemm_ldshared with K larger than the arrays: its loads leave the buffers."""
    A, B, C = np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32), np.zeros((16, 16), np.float32)
    with pytest.raises(ValueError, match="outside every buffer of the launch"):
        run_kernel(LOOP, None, grid=(1, 1), block=(16, 16), args=[A, B, C, 16, 16, 4096])


def test_a_kernel_that_runs_too_long_stops_with_the_step_limit():
    A, B, C = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    with pytest.raises(ValueError, match="max_steps"):
        run_kernel(LOOP, None, grid=(4, 4), block=(16, 16), args=[A, B, C, 64, 64, 64], max_steps=50)


@pytest.mark.parametrize("argv,message", [
    (["run", "missing.ptx"], "missing.ptx"),
    (["run", CORPUS + "mma_1warp.sm90a.ptx", "--grid", "0"], "grid"),
    (["run", CORPUS + "mma_1warp.sm90a.ptx", "--grid", "1,x"], "--grid"),
    (["run", CORPUS + "mma_1warp.sm90a.ptx", "--block", "32", "--arg", "1"], "takes 4 parameter(s)"),
    (["run", CORPUS + "mma_1warp.sm90a.ptx", "--kernel", "nope"], "no such .entry"),
    (["run", CORPUS + "mma_1warp.sm90a.ptx", "--arg", "hex:zz"], "hex:BYTES"),
])
def test_fragsim_run_refuses_bad_input_in_one_line_with_exit_2(argv, message, capsys, tmp_path):
    assert main([*argv, "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_grid_of_2_to_the_40_ctas_is_refused_by_its_size_before_anything_is_built():
    with pytest.raises(ValueError, match=r"35,184,372,088,832 thread slots, more than 1,048,576 in one run"):
        with memory_cap():
            run_kernel(SMALL, None, grid=(1 << 20, 1 << 20), block=32,
                       args=[np.zeros((16, 16), np.uint16), np.zeros((8, 16), np.uint16), np.zeros((16, 8), np.float32), 16])


# ---- mbarriers and the TMA ----------------------------------------------------------------------

BULK = open(CORPUS + "tma_bulk.sm90a.ptx").read()
MBAR_HEAD = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .u64 out)\n{\n"
             ".reg .pred %p<4>;\n.reg .b32 %r<8>;\n.reg .b64 %rd<8>;\n.shared .align 8 .b64 bar;\n")
#: One mbarrier operation each, as a lone thread may do them in any order.
MBAR_OPS = ["mbarrier.init.shared::cta.b64 [bar], {n};", "mbarrier.arrive.shared::cta.b64 %rd1, [bar];",
            "mbarrier.arrive.shared::cta.b64 _, [bar], {n};", "mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {n};",
            "mbarrier.arrive.noComplete.shared::cta.b64 %rd2, [bar], {n};", "mbarrier.arrive_drop.shared::cta.b64 _, [bar];",
            "mbarrier.expect_tx.shared::cta.b64 [bar], {n};", "mbarrier.complete_tx.shared::cta.b64 [bar], {n};",
            "mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], {n};", "mbarrier.try_wait.shared::cta.b64 %p1, [bar], %rd1;",
            "mbarrier.pending_count.b64 %r1, %rd2;", "mbarrier.inval.shared::cta.b64 [bar];",
            "$L: mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], {n};\n@!%p2 bra $L;"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, len(MBAR_OPS) - 1), st.sampled_from([0, 1, 2, 3, 16, 1 << 20, (1 << 32) - 1])),
                max_size=8))
def test_any_sequence_of_mbarrier_operations_runs_or_is_refused_in_one_line_never_a_hang(ops):
    """Undefined orders (arrive before init, stale states, too many arrivals, a wait that cannot complete)
    each end in one error naming the mbarrier; a spin loop that cannot end is a deadlock report."""
    body = "\n".join(MBAR_OPS[i].format(n=n).replace("$L", f"$L{k}") for k, (i, n) in enumerate(ops))
    clean(lambda: run_kernel(MBAR_HEAD + body + "\nret;\n}\n", "k", args=[np.zeros(1, np.uint32)], max_steps=20_000))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, len(BULK) - 1), st.integers(0, 120),
       st.sampled_from(["", "}", ";", "0", "16", "[%r45]", "%rd9", "mbarrier.inval.shared::cta.b64 [%r51];"]))
def test_a_mutated_bulk_copy_kernel_runs_or_is_refused_in_one_line(cut, length, insert):
    text = BULK[:cut] + insert + BULK[cut + length:]
    clean(lambda: run_kernel(text, None, grid=2, block=128, max_steps=50_000,
                             args=[np.zeros(2048, np.uint32), np.zeros(2048, np.uint32), np.zeros(4, np.uint32),
                                   np.zeros(2, np.uint32), 2048]))


TMAP_ARG = st.one_of(ARG, st.just(b"\0" * 128), st.just(b"\1" * 256),
                     st.builds(lambda base: fragsim.TensorMap("bf16", (64, 64), (128,), (64, 64), swizzle="128B", base=base),
                               st.sampled_from([0, 16, 0x7F8000000000, 1 << 50])))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TMAP_ARG, TMAP_ARG, st.one_of(TMAP_ARG, st.tuples(TMAP_ARG, ARG)))
def test_any_tensor_map_arguments_are_run_or_refused_in_one_line(a, b, placed):
    """tma_wgmma's two CUtensorMap parameters given anything: maps of tensors placed or not, bytes, junk."""
    clean(lambda: run_kernel(CORPUS + "tma_wgmma.sm90a.ptx", None, block=128, max_steps=50_000,
                             args=[placed if isinstance(placed, tuple) else a, b, np.zeros((64, 64), np.float32),
                                   64, 64, 64]))


TMA_HEAD = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(.param .align 64 .b8 tm[128])\n{\n"
            ".reg .pred %p<2>;\n.reg .b32 %r<4>;\n.reg .b64 %rd<4>;\n.shared .align 1024 .b8 a[2048];\n"
            ".shared .align 8 .b64 bar;\n    mov.b64 %rd1, tm;\n    cvta.param.u64 %rd1, %rd1;\n"
            "    mbarrier.init.shared::cta.b64 [bar], 1;\n")
TMA_MODS = ["tensor", "1d", "2d", "6d", "shared::cluster", "shared::cta", "global", "tile", "im2col",
            "mbarrier::complete_tx::bytes", "bulk_group", "multicast::cluster", "L2::cache_hint", "prefetch", "L2",
            "commit_group", "wait_group", "read", "add", "u32", "f32", "noinc", "arrive", "mbarrier"]
TMA_OPERANDS = ["[a]", "[bar]", "[%rd1, {%r1}]", "[%rd1, {%r1, %r2}]", "[%rd2]", "16", "%r1", "%rd3", "_", "{%r1}"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["cp.async.bulk", "cp.reduce.async.bulk", "cp.async", "mbarrier", "barrier.cluster"]),
       st.lists(st.sampled_from(TMA_MODS), max_size=6), st.lists(st.sampled_from(TMA_OPERANDS), max_size=5))
def test_any_bulk_copy_or_mbarrier_line_is_run_or_refused_in_one_line(opcode, mods, operands):
    """Made-up cp.async.bulk{.tensor} / cp.reduce / mbarrier lines over a tensor-map parameter of zeros."""
    line = ".".join([opcode, *mods]) + (" " + ", ".join(operands) if operands else "") + ";"
    clean(lambda: run_kernel(TMA_HEAD + "    " + line + "\n    ret;\n}\n", "k", args=[bytes(128)], max_steps=20_000))
