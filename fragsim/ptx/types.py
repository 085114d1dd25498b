"""PTX's fundamental types: width, kind and the NumPy array that holds their raw bits."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PtxType:
    name: str          # as PTX spells it, without the dot: "u32", "f16x2", "pred"
    bits: int
    kind: str          # "b" bits, "u" unsigned, "s" signed, "f" float, "pred"

    @property
    def dtype(self) -> np.dtype:
        """The array type holding the raw bits (a predicate is a bool)."""
        return np.dtype(bool) if self.kind == "pred" else np.dtype(f"uint{self.bits}")

    @property
    def bytes(self) -> int:
        return self.bits // 8


def _t(name: str, bits: int, kind: str) -> PtxType:
    return PtxType(name, bits, kind)


TYPES: dict[str, PtxType] = {t.name: t for t in (
    *(_t(f"b{n}", n, "b") for n in (8, 16, 32, 64, 128)),
    *(_t(f"u{n}", n, "u") for n in (8, 16, 32, 64)),
    *(_t(f"s{n}", n, "s") for n in (8, 16, 32, 64)),
    _t("f16", 16, "f"), _t("bf16", 16, "f"), _t("f32", 32, "f"), _t("f64", 64, "f"), _t("tf32", 32, "f"),
    _t("f16x2", 32, "f"), _t("bf16x2", 32, "f"), _t("e4m3", 8, "f"), _t("e5m2", 8, "f"),
    _t("e4m3x2", 16, "f"), _t("e5m2x2", 16, "f"),
    PtxType("pred", 1, "pred"),
)}


def ptx_type(name: str) -> PtxType:
    """A type by its PTX name, with or without the dot."""
    t = TYPES.get(name.lstrip("."))
    if t is None:
        raise ValueError(f"unknown PTX type .{name.lstrip('.')}")
    return t


def type_of(mods) -> PtxType | None:
    """The last modifier that names a type (PTX puts the instruction type last), or None."""
    for m in reversed(mods):
        if m in TYPES:
            return TYPES[m]
    return None
