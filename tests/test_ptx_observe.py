"""The run's observers (fragsim.ptx.observe): one typed event class per kind, an observer method per
class (on_ and its name in snake case), methods looked up once when the observers are attached, and a
method that names no event kind refused then (a typo would watch nothing)."""

import dataclasses
import inspect

import numpy as np
import pytest

from fragsim.ptx import observe as O
from fragsim.ptx.run import run_kernel

HEAD = ".version 8.0\n.target sm_90\n.address_size 64\n"

#: 64 threads: t stores t at smem[t], bar.sync, then reads smem[63 - t] into out[t]; a guard leaves the
#: odd threads out of a second store
PTX = HEAD + """.visible .entry k(.param .u64 out)
{
.reg .pred %p<4>;
.reg .b32 %r<16>;
.reg .b64 %rd<16>;
.shared .align 4 .b8 buf[256];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    mov.u32 %r4, buf;
    shl.b32 %r5, %r1, 2;
    add.u32 %r6, %r4, %r5;
    st.shared.u32 [%r6], %r1;
    bar.sync 0;
    sub.u32 %r7, 63, %r1;
    shl.b32 %r8, %r7, 2;
    add.u32 %r9, %r4, %r8;
    ld.shared.u32 %r10, [%r9];
    and.b32 %r11, %r1, 1;
    setp.eq.u32 %p1, %r11, 0;
    @%p1 st.shared.u32 [%r6], %r10;
    st.global.u32 [%rd3], %r10;
    ret;
}
"""


def test_every_event_class_is_a_frozen_slotted_dataclass_with_its_observer_method():
    assert len(O.EVENTS) == len(set(O.EVENTS)) == len(O.METHODS)
    protocol = {n for n, _ in inspect.getmembers(O.Observer, inspect.isfunction) if n.startswith("on_")}
    assert protocol == set(O.METHODS)
    for name, kind in O.METHODS.items():
        assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen and "__slots__" in vars(kind)
        assert [f.name for f in dataclasses.fields(kind)][0] == "idx"
        assert kind.__doc__ and kind.__doc__ != O.Event.__doc__
        # the Observer method takes that class
        assert inspect.signature(getattr(O.Observer, name)).parameters["e"].annotation == kind.__name__
    assert O.method_name(O.SharedAccess) == "on_shared_access" and O.method_name(O.CpLand) == "on_cp_land"
    assert O.method_name(O.MbarrierArrive) == "on_mbarrier_arrive"
    e = O.BarRelease(np.arange(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.idx = np.arange(2)  # type: ignore[misc]


class Recorder(O.Observer):
    def __init__(self):
        self.seen: list = []

    def on_shared_access(self, s, e: O.SharedAccess) -> None:
        self.seen.append(("shared", s.op.line, e.idx.tolist(), e.addrs.tolist(), e.width, e.write))

    def on_shared_store(self, s, e: O.SharedStore) -> None:
        self.seen.append(("store", s.op.line, e.idx.tolist(), e.data.tolist()))

    def on_bar_release(self, s, e: O.BarRelease) -> None:
        self.seen.append(("release", e.idx.tolist()))

    def on_bar_arrive(self, s, e: O.BarArrive) -> None:
        self.seen.append(("arrive", e.idx.tolist(), e.wait))

    def on_guard_off(self, s, e: O.GuardOff) -> None:
        self.seen.append(("guard_off", s.op.line, e.idx.tolist(), e.off.tolist()))


def test_an_observer_is_told_each_event_with_its_fields():
    r = Recorder()
    out = np.zeros(64, np.uint32)
    run_kernel(PTX, block=64, args=[out], observers=[r])
    assert out.tolist() == [63 - t for t in range(64)]
    kinds = [e[0] for e in r.seen]
    # the store (its bytes first), the barrier, the load, the guarded store (the guard off for odd threads)
    assert kinds[:3] == ["store", "shared", "arrive"] and "release" in kinds and "guard_off" in kinds
    store = r.seen[0]
    assert store[2] == list(range(64)) and store[3] == [list(np.uint32(t).tobytes()) for t in range(64)]
    st = r.seen[1]
    assert st[2] == list(range(64)) and st[3] == [4 * t for t in range(64)] and st[4:] == (4, True)
    ld = next(e for e in r.seen if e[0] == "shared" and not e[5])
    assert ld[3] == [4 * (63 - t) for t in range(64)] and ld[4] == 4
    off = next(e for e in r.seen if e[0] == "guard_off")
    assert off[2] == list(range(64)) and off[3] == [t % 2 == 1 for t in range(64)]
    last = [e for e in r.seen if e[0] == "shared"][-1]
    assert last[2] == list(range(0, 64, 2)) and last[5] is True


def test_an_observer_need_not_subclass_observer():
    class Plain:
        def __init__(self):
            self.n = 0

        def on_shared_access(self, s, e):
            self.n += len(e.idx)

    p = Plain()
    run_kernel(PTX, block=64, args=[np.zeros(64, np.uint32)], observers=[p])
    assert p.n == 64 + 64 + 32


def test_the_methods_are_looked_up_once_in_the_observers_order_defaults_left_out():
    class A(O.Observer):
        def on_mma(self, s, e: O.Mma) -> None:
            pass

    class B:
        on_mma = None                  # no method

        def on_mma_never(self):
            pass

    a, r = A(), Recorder()
    h = O.handlers([a, r])
    assert set(h) == {O.Mma, O.SharedAccess, O.SharedStore, O.BarRelease, O.BarArrive, O.GuardOff}
    assert h[O.Mma] == (a.on_mma,)
    a2 = A()
    assert O.handlers([a, a2])[O.Mma] == (a.on_mma, a2.on_mma)
    with pytest.raises(TypeError, match="on_mma_never names no event kind; did you mean on_mma"):
        O.handlers([B()])


@pytest.mark.parametrize("name, near", [("on_shared", "on_shared_access"), ("on_cp_lands", "on_cp_land"),
                                        ("on_mbarrier_wiat", "on_mbarrier_wait")])
def test_a_method_naming_no_event_kind_is_refused_when_the_run_attaches_it(name, near):
    """The old string kinds' names and typos alike: a TypeError before the run starts, not a silent no-op."""
    def method(self, s, e):
        raise AssertionError("never called")

    typo = type("Typo", (), {name: method})()
    with pytest.raises(TypeError, match=f"observer Typo: {name} names no event kind; did you mean {near}"):
        run_kernel(PTX, block=64, args=[np.zeros(64, np.uint32)], observers=[typo])


def test_a_non_method_named_like_an_event_is_refused():
    class Odd:
        on_warp_sync = 3

    with pytest.raises(TypeError, match="Odd: on_warp_sync is not a method"):
        O.handlers([Odd()])
