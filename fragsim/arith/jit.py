"""A word when numba compiles one of fragsim's kernels, and how long it took.

The first call of a kernel after installing (or after its source changed) compiles it: 5-20 s
with nothing to show for it.  numba then keeps the machine code in its on-disk cache and later
processes load it in well under a second, which is silent.  ``listen()`` registers a listener on
numba's compile events (``numba.core.event``: they fire on a real compile, not on a cache load):
on stderr it says "compiling ... (once)" when the outermost compile of a fragsim kernel starts and
the seconds when it ends, and it adds those seconds to ``compile_seconds()`` so that commands can
keep compiling out of the timings they report.  The notice is printed when stderr is a terminal,
or when ``FRAGSIM_COMPILE_NOTICE=1`` (``=0`` silences it).
"""

from __future__ import annotations

import os
import sys
import threading
import time

#: What each kernel module computes, as the notice names it.
KERNEL_NAMES = {
    "fragsim.arith.kernel": "the mma.sync kernel (f16/bf16/tf32)",
    "fragsim.arith.kernel16": "the m16n8 mma.sync kernel (f16/bf16/tf32; once per form and architecture)",
    "fragsim.arith.kernel_exact": "the integer and f64 mma.sync kernel",
    "fragsim.arith.kernel_fp8": "the fp8 mma.sync kernel",
    "fragsim.arith.kernel_chain": "the m8n8k4 .f16 mma.sync kernel",
    "fragsim.arith.kernel_gemm": "the whole-GEMM kernel",
    "fragsim.arith.kernel_wgmma": "the wgmma kernel (once per input and accumulator type)",
    "fragsim.banks.kernel_generated": "the bank-conflict kernel",
}

_lock = threading.Lock()
_state = {"depth": 0, "start": 0.0, "seconds": 0.0, "listening": False}


def compile_seconds() -> float:
    """Seconds this process has spent compiling fragsim kernels."""
    return _state["seconds"]


def _enabled() -> bool:
    flag = os.environ.get("FRAGSIM_COMPILE_NOTICE")
    if flag is not None:
        return flag not in ("", "0")
    return sys.stderr is not None and sys.stderr.isatty()


def _module(ev) -> str:
    dispatcher = ev.data.get("dispatcher") if isinstance(ev.data, dict) else None
    func = getattr(dispatcher, "py_func", None)
    return getattr(func, "__module__", "") or ""


def listen() -> None:
    """Register the listener once per process (numba loads here, at the first kernel call)."""
    with _lock:
        if _state["listening"]:
            return
        _state["listening"] = True
    from numba.core import event

    class _Notice(event.Listener):
        def on_start(self, ev) -> None:
            module = _module(ev)
            if not module.startswith("fragsim."):
                return
            with _lock:
                _state["depth"] += 1
                if _state["depth"] > 1:           # a callee compiled inside the kernel's own compile
                    return
                _state["start"] = time.perf_counter()
            if _enabled():
                what = KERNEL_NAMES.get(module, module)
                sys.stderr.write(f"fragsim: compiling {what} (once: numba keeps it in its cache) ...\n")
                sys.stderr.flush()

        def on_end(self, ev) -> None:
            if not _module(ev).startswith("fragsim."):
                return
            with _lock:
                _state["depth"] -= 1
                if _state["depth"]:
                    return
                took = time.perf_counter() - _state["start"]
                _state["seconds"] += took
            if _enabled():
                sys.stderr.write(f"fragsim: compiled in {took:.1f} s\n")
                sys.stderr.flush()

    event.register("numba:compile", _Notice())
