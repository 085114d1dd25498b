"""The error contract that the contract fuzz (test_contract_fuzz_*.py) holds every public entry point
and subcommand to, with the adversarial values it feeds them and the figures it counts.

A call either returns a result that passes the entry's sanity check, or raises ``ValueError`` /
``TypeError`` (or fragsim's own subclass of them) whose message is one line and names the parameter.
Anything else -- IndexError, OverflowError, AttributeError, RecursionError, a NumPy subclass such as
AxisError, a numba error, a multi-line message, a message naming no parameter, or a result for a
value marked clearly invalid -- fails the test.

Every call runs under a memory cap (``memory_cap``): an entry point whose work grows with its input
must estimate it and refuse, not allocate until the machine runs out.  The cap is the kernel's
RLIMIT_AS (address space), lowered around each call to what the process has mapped plus
``MEMORY_CAP`` and raised back after: an allocation past it fails at once (NumPy, numba's runtime
and Python raise MemoryError), so a runaway call is stopped before it can take the machine down,
which tracemalloc (it counts, after the fact, only what Python and NumPy allocate -- not numba's
arrays or LLVM) cannot do.  With numba and llvmlite loaded, address space is reserved well beyond
what is used -- a compilation, each worker thread's stack and malloc arena -- so the kernels are
compiled and the thread pool started (``warm_up``) before the first capped call, and the cap is
relative to what is mapped at the moment of the call.
"""

from __future__ import annotations

import contextlib
import math
import os
import resource
from collections import Counter

import numpy as np

ERROR, EITHER, OK = "error", "either", "ok"

# figures for the closing note: fixed input classes tried, Hypothesis calls made, and how many of
# each kept the contract (a failing call fails its test, so a green run has clean == tried)
FIGURES: Counter = Counter()


class Refused(Exception):
    """The call raised the documented error; ``message`` is its text."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


# fragsim's own one-line errors about the machine, not the input (asked to use a GPU that is not there)
ENVIRONMENT_ERRORS = ("GpuUnavailable", "NcuUnavailable")


def documented_error(e: BaseException) -> bool:
    t = type(e)
    if t in (ValueError, TypeError):
        return True
    if t.__name__ in ENVIRONMENT_ERRORS and t.__module__.startswith("fragsim"):
        return True
    # fragsim's own subclasses (AddrExprError); not NumPy's AxisError, UnicodeDecodeError, ...
    return issubclass(t, (ValueError, TypeError)) and t.__module__.startswith("fragsim")


# -- the memory cap -----------------------------------------------------------------------------

#: Address space one call may map beyond what the process has mapped when it starts: above the 2 GiB
#: of arrays fragsim lets one call allocate (fragsim.validate.MAX_WORKING_BYTES), with room for what
#: its estimates leave out.
MEMORY_CAP = 3 << 30


def _mapped() -> int:
    """Bytes of address space the process has mapped (VmSize)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmSize in /proc/self/status")


_WARM = False


def warm_up() -> None:
    """Compile the numba kernels and start the thread pool, uncapped: what LLVM and the workers
    reserve is then part of what is mapped, not of a call's share."""
    global _WARM
    if _WARM:
        return
    _WARM = True
    import fragsim

    f = "m16n8k16.row.col.f32.f16.f16.f32"
    z = np.zeros((2, 32, 4), np.uint32)
    fragsim.mma(f, z, z[..., :2], z, parallel=True)
    fragsim.gemm(f, np.zeros((16, 16), np.uint16), np.zeros((16, 8), np.uint16))
    fragsim.bank_conflicts("ldmatrix.x4", np.arange(64).reshape(2, 32) * 16)
    fragsim.bank_conflicts("cp.async.ca.16", np.arange(64).reshape(2, 32) * 16)


@contextlib.contextmanager
def memory_cap(extra: int = MEMORY_CAP):
    """Run the body with at most ``extra`` more bytes of address space (Linux; elsewhere no cap)."""
    if not os.path.exists("/proc/self/status"):
        yield
        return
    warm_up()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _mapped() + extra
    for outer in (soft, hard):               # a cap already in force stays
        if outer != resource.RLIM_INFINITY:
            limit = min(limit, outer)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class OverCap(AssertionError):
    """A call reached the memory cap."""


def capped(fn, what=""):
    """``fn()`` under the memory cap; a MemoryError (the cap reached) breaks the contract."""
    try:
        with memory_cap():
            return fn()
    except MemoryError as e:
        raise OverCap(f"{what}: needed more than the memory cap ({MEMORY_CAP >> 30} GiB of address "
                             f"space) instead of refusing: MemoryError {e!s:.200}") from None


def call(fn, names, expect=EITHER, what=""):
    """Run ``fn()`` under the contract and the memory cap.  ``names``: words of which the error
    message must contain one (the parameter's name as the messages spell it).  Returns the result,
    or raises ``Refused`` for a documented error; an AssertionError for a broken contract."""
    try:
        result = capped(fn, what)
    except OverCap:
        raise
    except BaseException as e:
        if not documented_error(e):
            raise AssertionError(f"{what}: {type(e).__name__} instead of ValueError/TypeError: {e!s:.300}") from e
        msg = str(e)
        assert msg.strip() and "\n" not in msg, f"{what}: the message is not one line: {msg!r}"
        assert any(n in msg for n in names), f"{what}: the message names none of {names}: {msg!r}"
        assert expect != OK, f"{what}: a valid input was refused: {msg}"
        raise Refused(msg) from None
    assert expect != ERROR, f"{what}: a clearly invalid value was accepted (result {result!r:.200})"
    return result


def outcome(fn, names, expect=EITHER, what="", check=None):
    """``call`` and then ``check(result)``; returns "result" or "refused"."""
    try:
        r = call(fn, names, expect, what)
    except Refused:
        return "refused"
    if check is not None:
        check(r)
    return "result"


# -- adversarial values ---------------------------------------------------------------------------
# Every parameter gets these wrong types and edge values; a parameter lists the labels it accepts
# (e.g. None for a mask) so that those are held to "either" instead of "error".

def generic_values():
    return [
        ("None", None), ("str", "4"), ("empty str", ""), ("float 4.0", 4.0), ("float NaN", math.nan),
        ("float inf", math.inf), ("bool True", True), ("complex", 1 + 2j), ("nested list", [[1, [2]]]),
        ("dict", {}), ("object array", np.array([1, None], dtype=object)), ("bytes", b"4"),
        ("int -1", -1), ("int 2**63", 2**63), ("int 2**64", 2**64), ("int -2**63-1", -2**63 - 1),
        ("0-d array", np.array(4)), ("empty array", np.zeros(0, np.int64)),
        ("64-dim array", np.zeros((1,) * 64, np.int64)), ("unicode digits", "\uff14"),
        ("str array", np.array(["4"])), ("datetime64", np.datetime64("2020-01-01")),
    ]


INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
OTHER_DTYPES = ("float16", "float32", "float64", "bool", "complex64", "object", "U3")


def as_dtype(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` (non-negative ints) as ``dtype``, values wrapped where it is narrower."""
    if dtype in ("object", "U3"):
        return x.astype(np.int64).astype(dtype)
    with np.errstate(over="ignore"):          # float16 cannot hold every address: that is the point
        return x.astype(np.uint64).astype(dtype) if dtype in INT_DTYPES else x.astype(dtype)


def fits(x: np.ndarray, dtype: str) -> bool:
    return dtype in INT_DTYPES and np.array_equal(as_dtype(x, dtype).astype(np.float64), x.astype(np.float64))
