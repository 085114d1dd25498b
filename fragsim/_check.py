"""Checks of scalar parameters at the public boundary: exact types, one-line errors naming the parameter."""

from __future__ import annotations

import numbers

import numpy as np


def integer(value, name: str, choices=None, hint: str = "") -> int:
    """An int (not a bool, not a float that happens to be whole, not an array)."""
    why = f" ({hint})" if hint else ""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer{_among(choices)}{why}, got {_show(value)}")
    v = int(value)
    if choices is not None and v not in choices:
        raise ValueError(f"{name} must be{_among(choices)}{why}, got {v}")
    return v


def boolean(value, name: str) -> bool:
    """True or False (a NumPy bool too); not 0/1, not a string, not an array."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {_show(value)}")
    return bool(value)


def choice(value, name: str, choices) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, choices))}, got {_show(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def hex_int(v) -> str:
    """An integer in hex for messages, with its sign in front (-0x3, not 0x-3)."""
    v = int(v)
    return f"-{-v:#x}" if v < 0 else f"{v:#x}"


def _among(choices) -> str:
    if choices is None:
        return ""
    c = [str(x) for x in choices]
    return " " + (", ".join(c[:-1]) + " or " + c[-1] if len(c) > 1 else c[0])


def _show(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape}"
    r = repr(value)
    return f"{type(value).__name__} {r[:40]}"
