"""fragsim run's mbarriers (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier"),
the cluster barrier and cluster registers for a cluster of one CTA, and elect.sync: one documented
property per test, each observed through what the kernel writes to global memory."""

import numpy as np
import pytest

from fragsim.ptx.program import PtxLoadError
from fragsim.ptx.run import run_kernel
from fragsim.ptx.state import SHARED_WINDOW, PtxRuntimeError

HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"
REGS = ".reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<16>;\n.shared .align 8 .b64 bar;\n.shared .align 8 .b64 bar2;"


def kernel(body: str, directives: str = "") -> str:
    return f"{HEAD}.visible .entry k(.param .u64 out){directives}\n{{\n{REGS}\n    ld.param.u64 %rd1, [out];\n{body}\n}}\n"


def store(slot: int, reg: str) -> str:
    """out[slot] = reg (thread 0 of the CTA's own writes only where the body guards it)."""
    return f"    st.global.u32 [%rd1+{4 * slot}], {reg};\n"


def pred(slot: int, p: str) -> str:
    return f"    selp.u32 %r30, 1, 0, {p};\n" + store(slot, "%r30")


def run(body: str, block: int = 1, slots: int = 8, **kw) -> list[int]:
    out = np.full(slots, 0xEEEEEEEE, np.uint32)
    run_kernel(kernel(body, kw.pop("directives", "")), "k", block=block, args=[out], **kw)
    return out.tolist()


def test_a_phase_completes_when_the_pending_arrivals_reach_zero_and_no_sooner():
    """init 2: after one arrive the phase (parity 0) is incomplete -- the lone thread's test times out
    with False --; after the second it is complete."""
    out = run("""
    mbarrier.init.shared::cta.b64 [bar], 2;
    mbarrier.arrive.shared::cta.b64 _, [bar];
    mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 0;
""" + pred(0, "%p1") + """
    mbarrier.arrive.shared::cta.b64 _, [bar];
    mbarrier.test_wait.parity.shared::cta.b64 %p2, [bar], 0;
""" + pred(1, "%p2") + "    ret;")
    assert out[:2] == [0, 1]


def test_a_phase_with_its_arrivals_in_waits_for_its_tx_count_to_reach_zero():
    """expect_tx 16 then the one arrival: incomplete until complete_tx 16 brings the tx-count to 0."""
    out = run("""
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16;
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
""" + pred(0, "%p1") + """
    mbarrier.complete_tx.shared::cta.b64 [bar], 16;
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
""" + pred(1, "%p2") + "    ret;")
    assert out[:2] == [0, 1]


@pytest.mark.parametrize("first", ["complete", "expect"])
def test_complete_tx_before_expect_tx_makes_a_negative_tx_count_that_the_expect_tx_brings_back(first):
    """tx-count ranges over -(2^20 - 1) .. 2^20 - 1: a complete-tx may come first."""
    ops = {"complete": "    mbarrier.complete_tx.shared::cta.b64 [bar], 64;\n",
           "expect": "    mbarrier.expect_tx.shared::cta.b64 [bar], 64;\n"}
    out = run("    mbarrier.init.shared::cta.b64 [bar], 1;\n" + ops[first] + ops["expect" if first == "complete" else "complete"]
              + """    mbarrier.arrive.shared::cta.b64 _, [bar];
    mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 0;
""" + pred(0, "%p1") + "    ret;")
    assert out[0] == 1


def test_phase_parity_names_the_current_phase_or_the_one_before():
    """In phase 0 parity 1 (the phase before) has completed and parity 0 has not; in phase 1 the reverse."""
    out = run("""
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 1;
    mbarrier.test_wait.parity.shared::cta.b64 %p2, [bar], 0;
    mbarrier.arrive.shared::cta.b64 _, [bar];
    mbarrier.test_wait.parity.shared::cta.b64 %p3, [bar], 0;
    mbarrier.test_wait.parity.shared::cta.b64 %p4, [bar], 1;
""" + pred(0, "%p1") + pred(1, "%p2") + pred(2, "%p3") + pred(3, "%p4") + "    ret;")
    assert out[:4] == [1, 0, 1, 0]


def test_a_consumer_spinning_on_try_wait_waits_for_a_producer_at_a_higher_pc():
    """Lowest-PC-first scheduling would re-run the spin loop forever; the wait suspends the consumers
    until thread 33's arrive (after its store) completes the phase, and they read the store."""
    body = """
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
    bar.sync 0;
    setp.eq.u32 %p2, %r1, 33;
    @%p2 bra $PRODUCER;
$WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
    @!%p3 bra $WAIT;
    ld.shared.u32 %r2, [bar2];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;
$PRODUCER:
    st.shared.u32 [bar2], 42;
    mbarrier.arrive.shared::cta.b64 _, [bar];
    ret;"""
    out = run(body, block=64, slots=64)
    assert out == [42] * 33 + [0xEEEEEEEE] + [42] * 30


def test_a_test_wait_spin_loop_on_the_state_an_arrive_returned_ends_when_the_phase_completes():
    """128 threads arrive on init-128 and spin on mbarrier.test_wait with their states; then read a word
    thread 127 stored before its arrive."""
    body = """
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 128;
    bar.sync 0;
    setp.eq.u32 %p2, %r1, 127;
    @%p2 st.shared.u32 [bar2], 7;
    mbarrier.arrive.shared::cta.b64 %rd4, [bar];
$SPIN:
    mbarrier.test_wait.shared::cta.b64 %p3, [bar], %rd4;
    @!%p3 bra $SPIN;
    ld.shared.u32 %r2, [bar2];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;"""
    assert run(body, block=128, slots=128) == [7] * 128


def test_a_wait_on_a_state_two_phases_old_is_refused_naming_the_phases():
    body = """
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.shared::cta.b64 %rd4, [bar];
    mbarrier.arrive.shared::cta.b64 _, [bar];
    mbarrier.test_wait.shared::cta.b64 %p1, [bar], %rd4;
    ret;"""
    with pytest.raises(PtxRuntimeError, match=r"the state of phase 0, and the mbarrier at shared 0x0 .* is in phase 2"
                                              r".*current phase or the immediately preceding one"):
        run(body)


def test_the_state_of_another_mbarrier_is_refused():
    body = """
    mbarrier.init.shared::cta.b64 [bar], 2;
    mbarrier.init.shared::cta.b64 [bar2], 2;
    mbarrier.arrive.shared::cta.b64 %rd4, [bar2];
    mbarrier.test_wait.shared::cta.b64 %p1, [bar], %rd4;
    ret;"""
    with pytest.raises(PtxRuntimeError, match="the state an arrive on another mbarrier returned"):
        run(body)


def test_pending_count_gives_the_pending_arrivals_before_a_no_complete_arrive():
    out = run("""
    mbarrier.init.shared::cta.b64 [bar], 5;
    mbarrier.arrive.noComplete.shared::cta.b64 %rd4, [bar], 1;
    mbarrier.arrive.noComplete.shared::cta.b64 %rd5, [bar], 3;
    mbarrier.pending_count.b64 %r4, %rd4;
    mbarrier.pending_count.b64 %r5, %rd5;
""" + store(0, "%r4") + store(1, "%r5") + "    ret;")
    assert out[:2] == [5, 4]


def test_pending_count_of_a_state_no_no_complete_arrive_made_is_refused():
    body = """
    mbarrier.init.shared::cta.b64 [bar], 5;
    mbarrier.arrive.shared::cta.b64 %rd4, [bar];
    mbarrier.pending_count.b64 %r4, %rd4;
    ret;"""
    with pytest.raises(PtxRuntimeError, match=r"must come from mbarrier.arrive.noComplete or arrive_drop.noComplete"):
        run(body)


def test_a_no_complete_arrive_that_completes_the_phase_is_refused():
    body = """
    mbarrier.init.shared::cta.b64 [bar], 2;
    mbarrier.arrive.noComplete.shared::cta.b64 %rd4, [bar], 2;
    ret;"""
    with pytest.raises(PtxRuntimeError, match=r"completes phase 0 .* must not complete the phase"):
        run(body)


def test_arrive_drop_lowers_the_expected_count_of_the_later_phases():
    """init 2: one arrive_drop and one arrive complete phase 0; phase 1 then completes at one arrive."""
    out = run("""
    mbarrier.init.shared::cta.b64 [bar], 2;
    mbarrier.arrive_drop.shared::cta.b64 _, [bar];
    mbarrier.arrive.shared::cta.b64 _, [bar];
    mbarrier.arrive.shared::cta.b64 _, [bar];
    mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 1;
""" + pred(0, "%p1") + "    ret;")
    assert out[0] == 1


def test_an_arrive_drop_to_zero_expected_arrivals_is_refused():
    with pytest.raises(PtxRuntimeError, match="drops the expected arrival count .* from 1 to 0"):
        run("    mbarrier.init.shared::cta.b64 [bar], 1;\n    mbarrier.arrive_drop.shared::cta.b64 _, [bar];\n    ret;")


def test_more_arrivals_than_the_phase_expects_are_refused():
    """init 1, expect_tx 8, arrive (pending 0, the phase waits for its tx-count), arrive again."""
    body = """
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 8;
    mbarrier.arrive.shared::cta.b64 _, [bar];
    ret;"""
    with pytest.raises(PtxRuntimeError, match=r"an arrive-on with count 1 when .* 0 of 1 arrival\(s\) pending, tx-count 8"):
        run(body)


@pytest.mark.parametrize("count", [0, 1 << 20])
def test_an_init_count_outside_one_to_two_to_the_twenty_minus_one_is_refused(count):
    with pytest.raises(PtxRuntimeError, match=rf"count {count} is outside 1 .. 2\^20 - 1"):
        run(f"    mov.u32 %r2, {count};\n    mbarrier.init.shared::cta.b64 [bar], %r2;\n    ret;")


def test_a_tx_count_past_two_to_the_twenty_minus_one_is_refused():
    body = "    mbarrier.init.shared::cta.b64 [bar], 1;\n    mbarrier.expect_tx.shared::cta.b64 [bar], 1048576;\n    ret;"
    with pytest.raises(PtxRuntimeError, match=r"tx-count .* to 1048576, outside -\(2\^20 - 1\) .. 2\^20 - 1"):
        run(body)


def test_an_operation_after_inval_is_refused_naming_the_inval():
    body = """
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.inval.shared::cta.b64 [bar];
    mbarrier.arrive.shared::cta.b64 _, [bar];
    ret;"""
    with pytest.raises(PtxRuntimeError, match=r"which was invalidated by mbarrier.inval at line 14"):
        run(body)


def test_init_after_inval_starts_a_new_mbarrier_at_phase_zero():
    out = run("""
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.shared::cta.b64 _, [bar];
    mbarrier.inval.shared::cta.b64 [bar];
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 1;
""" + pred(0, "%p1") + "    ret;")
    assert out[0] == 1


@pytest.mark.parametrize("body, message", [
    ("    mbarrier.init.shared::cta.b64 [bar], 1;\n    mbarrier.init.shared::cta.b64 [bar], 1;\n",
     "on a valid mbarrier .* mbarrier.inval it first|invalidate it with mbarrier.inval first"),
    ("    mbarrier.arrive.shared::cta.b64 _, [bar];\n", "which was never initialized"),
    ("    mbarrier.init.shared::cta.b64 [bar+4], 1;\n", "is not 8-byte aligned"),
])
def test_undefined_uses_of_an_mbarrier_are_refused(body, message):
    with pytest.raises(PtxRuntimeError, match=message):
        run(body + "    ret;")


def test_generic_addressing_names_the_mbarrier_through_the_shared_window():
    out = run("""
    mov.u64 %rd2, bar;
    cvta.shared.u64 %rd3, %rd2;
    mbarrier.init.b64 [%rd3], 1;
    mbarrier.arrive.b64 _, [%rd3];
    mbarrier.test_wait.parity.shared::cta.b64 %p1, [bar], 0;
""" + pred(0, "%p1") + "    ret;")
    assert out[0] == 1


def test_a_generic_address_outside_the_shared_window_is_refused():
    with pytest.raises(PtxRuntimeError, match=r"is not a generic address of .shared::cta memory"):
        run("    mbarrier.init.b64 [%rd1], 1;\n    ret;")
    assert SHARED_WINDOW > 0


def test_a_wait_that_can_never_complete_is_a_deadlock_naming_the_mbarrier_its_phase_and_counts():
    """The one arrival and expect_tx 128 happen, no copy completes them: the wait times out, loops, and
    the run stops (never hangs) with the mbarrier's state."""
    body = """
    mbarrier.init.shared::cta.b64 [bar2], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar2], 128;
$WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar2], 0;
    @!%p1 bra $WAIT;
    ret;"""
    with pytest.raises(PtxRuntimeError, match=r"deadlock: line 16: CTA \(0,0,0\): 1 thread\(s\) wait "
                                              r"\(mbarrier.try_wait.parity.shared::cta.b64\) for phase 0 to complete; "
                                              r"the mbarrier at shared 0x8 .* 0 of 1 arrival\(s\) pending, tx-count 128"):
        run(body)


def test_elect_sync_elects_the_lowest_lane_of_the_member_mask():
    """Lanes 5..31 of a warp execute elect.sync with member mask 0xffffffe0: lane 5 is elected, and every
    lane gets its laneid in d."""
    body = """
    mov.u32 %r1, %tid.x;
    setp.lt.u32 %p1, %r1, 5;
    @%p1 ret;
    elect.sync %r2|%p2, 0xffffffe0;
    selp.u32 %r3, 1, 0, %p2;
    shl.b32 %r4, %r2, 8;
    or.b32 %r5, %r4, %r3;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r5;
    ret;"""
    out = run(body, block=32, slots=32)
    assert out[5:] == [(5 << 8) | (lane == 5) for lane in range(5, 32)]


def test_cluster_registers_describe_a_cluster_of_one_cta():
    body = """
    mov.u32 %r1, %ctaid.x;
    setp.ne.u32 %p1, %r1, 2;
    @%p1 ret;
    mov.u32 %r2, %cluster_ctarank;
    mov.u32 %r3, %cluster_nctarank;
    mov.u32 %r4, %clusterid.x;
    mov.u32 %r5, %nclusterid.x;
    mov.u32 %r6, %cluster_ctaid.x;
    mov.u32 %r7, %cluster_nctaid.x;
    mov.pred %p2, %is_explicit_cluster;
""" + "".join(store(i, f"%r{i + 2}") for i in range(6)) + pred(6, "%p2") + "    ret;"
    assert run(body, grid=3)[:7] == [0, 1, 2, 3, 0, 1, 0]
    assert run(body, grid=3, directives="\n.reqnctapercluster 1, 1, 1")[6] == 1


def test_a_kernel_that_asks_for_clusters_of_several_ctas_is_refused():
    body = "    mbarrier.init.shared::cta.b64 [bar], 1;\n    ret;"
    with pytest.raises(PtxLoadError, match=r"clusters of \(2, 1, 1\) CTAs .* fragsim runs clusters of one CTA"):
        run(body, directives="\n.reqnctapercluster 2, 1, 1", grid=2)


def test_barrier_cluster_wait_waits_for_every_thread_of_the_cluster_to_arrive():
    """Thread 40 stores a word before it arrives; every thread reads the word after its wait."""
    body = """
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 40;
    @!%p1 bra $ARRIVE;
    st.shared.u32 [bar2], 9;
$ARRIVE:
    barrier.cluster.arrive.release.aligned;
    barrier.cluster.wait.acquire.aligned;
    ld.shared.u32 %r2, [bar2];
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    ret;"""
    assert run(body, block=64, slots=64) == [9] * 64


def test_barrier_cluster_wait_without_an_arrive_is_refused():
    with pytest.raises(PtxRuntimeError, match="barrier.cluster.wait without a barrier.cluster.arrive before it"):
        run("    barrier.cluster.wait;\n    ret;")


def test_mapa_maps_an_address_to_cta_rank_zero_and_refuses_another_rank():
    out = run("""
    mov.u32 %r2, bar;
    mapa.shared::cluster.u32 %r3, %r2, 0;
    sub.u32 %r4, %r3, %r2;
""" + store(0, "%r4") + "    ret;")
    assert out[0] == 0
    with pytest.raises(PtxRuntimeError, match="CTA rank 1 of the cluster; fragsim runs clusters of one CTA"):
        run("    mov.u32 %r2, bar;\n    mapa.shared::cluster.u32 %r3, %r2, 1;\n    ret;")


@pytest.mark.parametrize("noinc", [False, True])
def test_cp_async_mbarrier_arrive_makes_the_phase_wait_for_the_threads_cp_async_copies(noinc):
    """The PTX ISA's two examples: 32 threads copy 16 bytes each with cp.async, cp.async.mbarrier.arrive
    (counted in init with .noinc), arrive and spin on test_wait; then every copy has landed."""
    body = f"""
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], {64 if noinc else 32};
    bar.sync 0;
    ld.param.u64 %rd9, [out];
    mul.wide.u32 %rd2, %r1, 16;
    add.s64 %rd3, %rd9, %rd2;
    mov.u32 %r2, buf;
    shl.b32 %r3, %r1, 4;
    add.u32 %r4, %r2, %r3;
    cp.async.ca.shared.global [%r4], [%rd3], 16;
    cp.async.mbarrier.arrive{'.noinc' if noinc else ''}.shared.b64 [bar];
    mbarrier.arrive.shared.b64 %rd4, [bar];
$SPIN:
    mbarrier.test_wait.shared.b64 %p2, [bar], %rd4;
    @!%p2 bra $SPIN;
    xor.b32 %r5, %r1, 31;
    shl.b32 %r6, %r5, 4;
    add.u32 %r7, %r2, %r6;
    ld.shared.u32 %r8, [%r7];
    mul.wide.u32 %rd5, %r1, 4;
    add.s64 %rd6, %rd9, %rd5;
    add.s64 %rd7, %rd6, 512;
    st.global.u32 [%rd7], %r8;
    ret;"""
    ptx = kernel(body).replace(".shared .align 8 .b64 bar2;", ".shared .align 16 .b8 buf[512];")
    out = np.arange(256, dtype=np.uint32)
    run_kernel(ptx, "k", block=32, args=[out])
    assert out[128:160].tolist() == [4 * (31 - t) for t in range(32)]
