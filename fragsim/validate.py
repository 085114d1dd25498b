"""Checks of scalar parameters at the public boundary: exact types, one-line errors naming the parameter;
and arrays read from files without trusting their headers."""

from __future__ import annotations

import contextlib
import contextvars
import io
import numbers
import zipfile
from collections.abc import Iterator
from typing import IO

import numpy as np


def integer(value, name: str, choices=None, hint: str = "") -> int:
    """An int (not a bool, not a float that happens to be whole, not an array)."""
    why = f" ({hint})" if hint else ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{_among(choices)}{why}, got {show(value)}")
    v = int(value)
    if choices is not None and v not in choices:
        raise ValueError(f"{name} must be{_among(choices)}{why}, got {v}")
    return v


def boolean(value, name: str) -> bool:
    """True or False (a NumPy bool too); not 0/1, not a string, not an array."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {show(value)}")
    return bool(value)


def choice(value, name: str, choices) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, choices))}, got {show(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def array(value, name: str) -> np.ndarray:
    """``np.asarray(value)``; nested sequences of unequal lengths are refused naming the parameter
    (NumPy's own text names none)."""
    try:
        return np.asarray(value)
    except ValueError as e:
        raise ValueError(f"{name} must be a rectangular array, got nested sequences of unequal lengths "
                         f"({' '.join(str(e).split())})") from None


def broadcast_shape(shapes, names, what: str = "") -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes`` for any number of dimensions (``np.broadcast_shapes`` stops
    at 32); a mismatch names the parameters (``names[i]`` has ``shapes[i]``)."""
    shapes = [tuple(s) for s in shapes]
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(ndim):
        size, owner = 1, None
        for s, name in zip(shapes, names):
            d = s[i - ndim + len(s)] if i - ndim + len(s) >= 0 else 1
            if d == 1:
                continue
            if owner is None:
                size, owner = d, (name, s)
            elif d != size:
                raise ValueError(f"{what}{owner[0]} shaped {owner[1]} and {name} shaped {s} do not broadcast together")
        out.append(size)
    return tuple(out)


def hex_int(v) -> str:
    """An integer in hex for messages, with its sign in front (-0x3, not 0x-3)."""
    v = int(v)
    return f"-{-v:#x}" if v < 0 else f"{v:#x}"


def _among(choices) -> str:
    if choices is None:
        return ""
    c = [str(x) for x in choices]
    return " " + (", ".join(c[:-1]) + " or " + c[-1] if len(c) > 1 else c[0])


def show(value) -> str:
    """A value for a one-line message: arrays by shape, others by type and a short repr."""
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    r = repr(value)[:40].replace("\n", " ")
    return f"{type(value).__name__} {r}"


# How a message tells the user to pass a parameter: Python's spelling (at=(0, 16)) from the library,
# the option's (--at 0,16) when the command line called it (fragsim.cli sets this around a subcommand).
_COMMAND_LINE: contextvars.ContextVar[bool] = contextvars.ContextVar("fragsim_command_line", default=False)


@contextlib.contextmanager
def command_line_spelling() -> Iterator[None]:
    """Within this block, ``spell`` gives the command line's spelling."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)


def spell(python: str, cli: str) -> str:
    """The way to give a parameter, as the caller writes it: ``spell("at=(0, 16)", "--at 0,16")``."""
    return cli if _COMMAND_LINE.get() else python


#: Bytes of arrays one call may allocate: an entry point whose arrays grow with its input (batch
#: dimensions that broadcast, a GEMM's M x N, every (row, col) pair of a tile) estimates them first
#: and refuses work past this, so that a call is never left to grow until the machine runs out.
MAX_WORKING_BYTES = 2 << 30


def working_memory(nbytes: int, what: str, split: str) -> None:
    """Refuse ``what`` ("mma: 4,096 x 65,536 warps") if it would allocate more than MAX_WORKING_BYTES;
    ``split``: how to do the same work in parts."""
    if nbytes > MAX_WORKING_BYTES:
        raise ValueError(f"{what} would need ~{human_bytes(nbytes)} of working memory; the limit is "
                         f"{human_bytes(MAX_WORKING_BYTES)} (fragsim.validate.MAX_WORKING_BYTES): {split}")


def human_bytes(n: int) -> str:
    """Bytes in binary units, two significant figures past 10: "8 MiB", "1.5 GiB", "227 KiB", "96 B"."""
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024 or unit == "TiB":
            break
        v /= 1024
    return f"{v:.0f} {unit}" if v >= 10 or v == int(v) else f"{v:.1f} {unit}"


#: Characters a name may have (a PTX spelling, a number format, a tile spec): the longest is ~60.
MAX_NAME = 256


def name_length(text: str, what: str) -> str:
    """``text`` if it is short enough to be a name; else a one-line refusal that quotes only its start
    (a message does not echo megabytes, and nothing scans them)."""
    if len(text) > MAX_NAME:
        raise ValueError(f"{what} {text[:40]!r}... is {len(text):,} characters long; no {what} has more than "
                         f"{MAX_NAME}")
    return text


#: Element sizes an address expression may have counted in instead of bytes (f16/bf16, f32).
ELEMENT_BYTES = (2, 4)


def element_units_hint(addrs, align: int) -> str:
    """When misaligned addresses would all be ``align``-byte aligned multiplied by an element size, the
    likely slip: an expression in elements, not bytes ("" otherwise).  Only when some addresses are
    aligned and others not, as element offsets of a row's halves are; a constant misalignment (every
    address off by the same bytes) is an offset slip, not a unit one."""
    a = np.asarray(addrs, dtype=np.int64).ravel()
    if not a.size or (a % align).all() or not (a % align).any():
        return ""
    for e in ELEMENT_BYTES:
        if not ((a * e) % align).any():
            return (f" (every address times {e} would be {align}-byte aligned: is the expression counting "
                    f"{e}-byte elements instead of bytes?)")
    return ""


# ---- arrays read from files ----------------------------------------------------------------------
# NumPy allocates the array a .npy header claims before it reads the data, so a damaged or hostile file
# that claims 10**12 elements asks for terabytes.  Every array fragsim reads from a file (--arg A.npy,
# GPU recordings, check recordings) is read here: the claim is checked against the bytes that hold the
# data first (a .npz member's uncompressed size as its archive records it; the archive's reader stops
# there), and the whole archive against MAX_WORKING_BYTES.

def check_header(f: IO[bytes], held: int, what: str) -> None:
    """Read the .npy header at ``f``'s position; ValueError unless the data it claims fits in ``held``
    bytes (the data and header together) and contains no Python objects."""
    start = f.tell()
    version = np.lib.format.read_magic(f)
    read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read(f)
    if dtype.hasobject:
        raise ValueError(f"{what}: holds Python objects (dtype {dtype}); fragsim reads numeric arrays only")
    claimed = int(np.prod(shape, dtype=object)) * dtype.itemsize
    data = held - (f.tell() - start)
    if claimed > data:
        raise ValueError(f"{what}: its header claims {shape} {dtype}, {claimed:,} bytes; the file holds {data:,}")


def load_npy_bytes(data: bytes, what: str) -> np.ndarray:
    """The one array of a .npy file's bytes."""
    check_header(io.BytesIO(data), len(data), what)
    return np.load(io.BytesIO(data), allow_pickle=False)


def load_npz(path: str) -> dict[str, np.ndarray]:
    """Every array of a .npz archive, by name; ValueError (naming ``path`` and the member) for a member
    whose header claims more than it holds, or an archive larger than the working-memory limit."""
    with zipfile.ZipFile(path) as z:
        infos = [i for i in z.infolist() if i.filename.endswith(".npy")]
        working_memory(sum(i.file_size for i in infos), f"{path}: {len(infos)} arrays",
                       "is this the file you meant?")
        out = {}
        for info in infos:
            with z.open(info) as f:
                check_header(f, info.file_size, f"{path}: {info.filename}")
            with z.open(info) as f:
                out[info.filename[:-len(".npy")]] = np.lib.format.read_array(f, allow_pickle=False)
        return out
