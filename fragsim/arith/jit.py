"""A word when numba compiles one of fragsim's kernels, and how long it took.

The first call of a kernel after installing (or after its source changed) compiles it: 5-20 s
with nothing to show for it.  numba then keeps the machine code in its on-disk cache and later
processes load it in well under a second, which is silent.  ``listen()`` registers a listener on
numba's compile events (``numba.core.event``: they fire on a real compile, not on a cache load):
on stderr it says "compiling ... (once)" when the outermost compile of a fragsim kernel starts and
the seconds when it ends, and it adds those seconds to ``compile_seconds()`` so that commands can
keep compiling out of the timings they report.  The notice is printed when stderr is a terminal,
or when ``FRAGSIM_COMPILE_NOTICE=1`` (``=0`` silences it).

Elsewhere -- Jupyter, a script whose stderr goes to a file, a pipe -- the first compile of the process
is said once, as a ``CompileNotice`` warning (Python shows warnings there by default, Jupyter under
the cell; the command line prints its one line), naming ``fragsim warmup``, which compiles every
kernel ahead of time.  ``warnings.simplefilter("ignore", CompileNotice)`` or
``FRAGSIM_COMPILE_NOTICE=0`` silences it.  Workers of a process pool leave it to their parent.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import warnings
from types import FrameType

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
    "fragsim.sfu.kernel": "the MUFU kernel (ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh, div)",
}

_lock = threading.Lock()
_state = {"depth": 0, "start": 0.0, "seconds": 0.0, "listening": False, "warned": False}


class CompileNotice(UserWarning):
    """numba is compiling one of fragsim's kernels (said once per process where stderr is no terminal)."""


#: Modules whose frames stand between the user's call and numba's compile event.
_INNER = ("fragsim", "numba", "llvmlite")


def compile_seconds() -> float:
    """Seconds this process has spent compiling fragsim kernels."""
    return _state["seconds"]


def _mode() -> str:
    """"lines": the notice and the seconds on stderr; "warn": one ``CompileNotice`` per process; "off"."""
    flag = os.environ.get("FRAGSIM_COMPILE_NOTICE")
    if flag is not None:
        return "off" if flag in ("", "0") else "lines"
    stream = sys.stderr
    try:
        tty = stream is not None and stream.isatty()
    except (AttributeError, ValueError):      # a stand-in stream without isatty, or a closed one
        tty = False
    if tty:
        return "lines"
    # a worker of a process pool leaves the notice to the process that started it (else one per worker)
    import multiprocessing
    return "off" if multiprocessing.parent_process() is not None else "warn"


def _enabled() -> bool:
    return _mode() == "lines"


def _caller_stacklevel() -> int:
    """``warnings.warn``'s stacklevel (from ``_warn_once``'s caller) of the frame that called into
    fragsim or numba, the outermost such frame of the stack: the user's line that set the compile off."""
    frame: FrameType | None = sys._getframe(2)        # _warn_once's caller
    level, found = 2, 0
    while frame is not None:
        name = frame.f_globals.get("__name__", "") or ""
        if name.partition(".")[0] in _INNER:
            found = level + 1
        frame = frame.f_back
        level += 1
    return found or 1


def _warn_once(what: str) -> None:
    with _lock:
        if _state["warned"]:
            return
        _state["warned"] = True
    notice = CompileNotice(f"fragsim: numba is compiling {what} (5-20 s on a first use, then cached); "
                           f"`fragsim warmup` compiles every kernel ahead of time")
    try:
        warnings.warn(notice, stacklevel=_caller_stacklevel())
    except CompileNotice:        # warnings made errors (-W error): a notice must not fail numba's compile
        pass


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
            mode = _mode()
            what = KERNEL_NAMES.get(module, module)
            if mode == "lines":
                sys.stderr.write(f"fragsim: compiling {what} (once: numba keeps it in its cache) ...\n")
                sys.stderr.flush()
            elif mode == "warn":
                _warn_once(what)

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
