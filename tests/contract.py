"""The error contract that the contract fuzz (test_contract_fuzz_*.py) holds every public entry point
and subcommand to, with the adversarial values it feeds them and the figures it counts.

A call either returns a result that passes the entry's sanity check, or raises ``ValueError`` /
``TypeError`` (or fragsim's own subclass of them) whose message is one line and names the parameter.
Anything else -- IndexError, OverflowError, AttributeError, RecursionError, a NumPy subclass such as
AxisError, a numba error, a multi-line message, a message naming no parameter, or a result for a
value marked clearly invalid -- fails the test.
"""

from __future__ import annotations

import math
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


def call(fn, names, expect=EITHER, what=""):
    """Run ``fn()`` under the contract.  ``names``: words of which the error message must contain
    one (the parameter's name as the messages spell it).  Returns the result, or raises
    ``Refused`` for a documented error; an AssertionError for a broken contract."""
    try:
        result = fn()
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
