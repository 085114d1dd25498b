"""Files named on the command line: every read and write check of the subcommands, so that a bad
path is one line naming the option, the file and what was expected -- and outputs are checked
before a long run, not after it."""

from __future__ import annotations

import io
import os
import tempfile
from typing import NoReturn

import numpy as np

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
    f = io.BytesIO(data)
    try:
        # numpy allocates the array its header claims before it reads the data: the claim is checked first
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(f)
    except (ValueError, EOFError, OSError) as e:
        _fail(option, path, f"not a readable .npy array ({_reason(e)})", expected)
    claimed, held = int(np.prod(shape, dtype=object)) * dtype.itemsize, len(data) - f.tell()
    if not dtype.hasobject and claimed > held:
        _fail(option, path, f"not a readable .npy array (its header claims {shape} {dtype}, {claimed:,} bytes; "
                            f"the file holds {held:,})", expected)
    try:
        return np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, EOFError, OSError) as e:
        _fail(option, path, f"not a readable .npy array ({_reason(e)})", expected)


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
