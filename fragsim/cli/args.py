"""Arguments of the command line, parsed and checked once for every subcommand: integers,
``--var NAME=VALUES`` (an integer, ``LOW..HIGH`` or a comma list, in every subcommand), ``ROW,COL`` pairs,
register maps and lane masks; and the files named on it (every read and write check, so that a bad
path is one line naming the option, the file and what was expected -- and outputs are checked before
a long run, not after it).  Messages name the option and say what was expected, in the command line's
own spelling."""

from __future__ import annotations

import itertools
import os
import re
import tempfile
from typing import NoReturn

import numpy as np

from fragsim.facts.hardware import WARP_LANES
from fragsim.validate import load_npy_bytes

#: Values of one ``--var``: each value issues the instructions once more.
MAX_VALUES = 1 << 14
#: Combinations of all ``--var`` values a command runs (the product of their counts).
MAX_COMBINATIONS = 1 << 14
INT64 = range(-(1 << 63), 1 << 63)
_NAME = re.compile(r"[A-Za-z_]\w*")
_RANGE = re.compile(r"\s*(-?\w+)\s*\.\.\s*(-?\w+)\s*")


def integer(text: str, what: str) -> int:
    """A decimal or 0x-hex integer that fits in 64-bit signed (C's long)."""
    t = text.strip()
    try:
        v = int(t, 0)
    except ValueError:
        if re.fullmatch(r"[-+]?(\d+\.\d*|\.\d+|\d+)([eE][-+]?\d+)?", t):
            raise ValueError(f"{what}: {t!r} is not an integer (floats are not addresses or indices; "
                             "write decimal or 0x hex)") from None
        raise ValueError(f"{what}: {t!r} is not an integer (decimal or 0x hex)") from None
    if v not in INT64:
        raise ValueError(f"{what}: {t} does not fit in 64-bit signed (long)")
    return v


def values(text: str, what: str) -> list[int]:
    """'3' -> [3]; '0..3' -> [0, 1, 2, 3] (both ends included); '0,2,4' -> [0, 2, 4]."""
    m = _RANGE.fullmatch(text)
    if not m:
        if not text.strip():
            raise ValueError(f"{what}: no value; expected an integer, LOW..HIGH or a comma list, e.g. 0..3")
        out = [integer(x, what) for x in text.split(",")]
    else:
        lo, hi = (integer(x, what) for x in m.groups())
        if hi < lo:
            raise ValueError(f"{what}={text.strip()}: the range is empty (write LOW..HIGH, both included)")
        if hi - lo >= MAX_VALUES:
            raise ValueError(f"{what}={text.strip()}: {hi - lo + 1} values, more than {MAX_VALUES}")
        out = list(range(lo, hi + 1))
    if len(out) > MAX_VALUES:
        raise ValueError(f"{what}: {len(out)} values, more than {MAX_VALUES}")
    return out


def variables(pairs) -> dict[str, list[int]]:
    """``--var`` items -> name -> its values, in the order given (``lane`` is the lane index, never a variable)."""
    out: dict[str, list[int]] = {}
    given: dict[str, str] = {}
    for item in pairs:
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq:
            raise ValueError(f"--var {item!r}: expected NAME=VALUES, e.g. --var k=2 or --var warp=0..3")
        if not _NAME.fullmatch(name):
            raise ValueError(f"--var {item!r}: {name!r} is not a C identifier")
        if name == "lane":
            raise ValueError(f"--var lane=...: lane is the lane index 0..{WARP_LANES - 1} and cannot be set")
        if name in out:
            raise ValueError(f"--var {name} given twice ({given[name]} and {item.strip()}); give each variable once "
                             f"(several values: --var {name}=0..3)")
        out[name] = values(value, f"--var {name}")
        given[name] = item.strip()
    return out


def one_value_each(pairs, why: str) -> dict[str, int] | None:
    """``--var`` items where each variable takes one value (``why``: what iterates over none)."""
    many = variables(pairs)
    several = [k for k, v in many.items() if len(v) > 1]
    if several:
        raise ValueError(f"--var {several[0]}: {why}; give each variable one value")
    return {k: v[0] for k, v in many.items()} or None


def combinations(variables: dict[str, list[int]]) -> list[dict[str, int]]:
    """Every assignment of one value to each variable (the first variable varies slowest)."""
    n = 1
    for v in variables.values():
        n *= len(v)
    if n > MAX_COMBINATIONS:
        counts = " x ".join(f"{len(v)} ({k})" for k, v in variables.items())
        raise ValueError(f"--var: {counts} = {n} combinations, more than {MAX_COMBINATIONS}")
    names = list(variables)
    return [dict(zip(names, vs)) for vs in itertools.product(*variables.values())]


def describe(env: dict[str, int]) -> str:
    """One combination as the options that select it: ``--var k=2 --var warp=1``."""
    return " ".join(f"--var {k}={v}" for k, v in env.items())


def pair(text: str, option: str) -> tuple:
    """``ROW,COL``: integers, or C expressions where the option takes them."""
    parts = text.split(",")
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise ValueError(f"{option} {text!r}: expected ROW,COL, e.g. {option} 0,16")
    return tuple(int(p) if re.fullmatch(r"\s*-?\d+\s*", p) else p.strip() for p in parts)


def regmap(text: str) -> list[tuple[int, int]]:
    """``--regmap F:R,...``: which fragment register each loaded register is, in order."""
    out = []
    for item in text.split(","):
        f, sep, r = item.partition(":")
        if not sep:
            raise ValueError(f"--regmap {text!r}: expected FRAGMENT:REGISTER pairs, e.g. --regmap 0:0,0:1,1:0,1:1")
        out.append((integer(f, "--regmap fragment"), integer(r, "--regmap register")))
    return out


def lane_mask(text: str | None, variables: dict):
    """``--mask``: an int bit mask (bit i = lane i) or a C condition in ``lane`` and the variables
    (evaluated to the 32 lanes' booleans)."""
    if text is None:
        return None
    try:
        v = int(text, 0)
    except ValueError:
        from fragsim.search.addrexpr import evaluate

        return np.broadcast_to(evaluate(text, **variables) != 0, (WARP_LANES,)).copy()
    if not 0 <= v < 1 << WARP_LANES:
        raise ValueError(f"--mask {text}: does not fit in {WARP_LANES} bits (bit i = lane i)")
    return v


# ---- files ----------------------------------------------------------------------------------

NPY_MAGIC = b"\x93NUMPY"


def _fail(option: str, path: str, problem: str, expected: str) -> NoReturn:
    raise ValueError(f"{option} {path}: {problem}; expected {expected}")


def _reason(e: BaseException) -> str:
    return " ".join(str(getattr(e, "strerror", None) or e).split())   # one line, whatever the library wrote


def read_bytes(path: str, option: str, expected: str) -> bytes:
    """The whole file; an empty one is refused (no format this command reads is empty)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        _fail(option, path, f"cannot read it ({_reason(e)})", expected)
    if not data:
        _fail(option, path, "the file is empty", expected)
    return data


def read_text(path: str, option: str, expected: str) -> str:
    data = read_bytes(path, option, expected)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        _fail(option, path, f"not a text file (byte {data[e.start]:#04x} at offset {e.start} is not UTF-8)", expected)


def load_npy(path: str, option: str, expected: str = "one array saved by numpy.save (.npy)") -> np.ndarray:
    """One array from a .npy file (never pickled objects)."""
    data = read_bytes(path, option, expected)
    if not data.startswith(NPY_MAGIC):
        what = "a .npz archive of several arrays" if data.startswith(b"PK\x03\x04") else "not a .npy file"
        _fail(option, path, what, expected)
    try:
        return load_npy_bytes(data, "not a readable .npy array")
    except (ValueError, EOFError, OSError) as e:
        _fail(option, path, str(e) if str(e).startswith("not a readable") else f"not a readable .npy array "
              f"({_reason(e)})", expected)


def readable_dir(path: str, option: str, expected: str) -> str:
    if not os.path.isdir(path):
        _fail(option, path, "no such folder" if not os.path.exists(path) else "not a folder", expected)
    return path


def writable_file(path: str, option: str) -> str:
    """Checked by opening it for appending (nothing is truncated; a file made here is removed)."""
    expected = "a file path this user can write"
    if os.path.isdir(path):
        _fail(option, path, "is a folder", expected)
    existed = os.path.exists(path)
    try:
        with open(path, "ab"):
            pass
    except OSError as e:
        _fail(option, path, f"cannot write there ({_reason(e)})", expected)
    if not existed:
        os.unlink(path)
    return path


def writable_dir(path: str, option: str) -> str:
    """Made if missing (the run writes into it anyway), then checked with a temporary file."""
    expected = "a folder this user can write into"
    if os.path.exists(path) and not os.path.isdir(path):
        _fail(option, path, "exists and is not a folder", expected)
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        _fail(option, path, f"cannot write there ({_reason(e)})", expected)
    return path
