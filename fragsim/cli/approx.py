"""fragsim approx: what the GPU's MUFU returns for a PTX ``.approx`` form on given words.

    fragsim approx ex2.approx.ftz.f32 0x3fc00000 0x42fe0000
    fragsim approx div.full.f32 0x3f800000 0x40400000         (pairs: dividend divisor)
    fragsim approx rsqrt.approx.f32 --values 2 1e-40

Each line: the input, the result bits and value, and how far the result is from the exact function
(float64), in units in the last place of the result's format: ``correctly rounded`` when no nearer
word exists.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np

NAME = "approx"
HELP = "the bits an H100's MUFU returns for an .approx form (ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh, div)"

#: function -> its exact value in float64 (one or two operands)
EXACT: dict[str, Callable[..., Any]] = {"ex2": np.exp2, "lg2": np.log2, "rcp": lambda x: 1.0 / x,
                                      "rsqrt": lambda x: 1.0 / np.sqrt(x), "sqrt": np.sqrt,
         "sin": np.sin, "cos": np.cos, "tanh": np.tanh,
                                      "div": lambda a, b: a / b}
_FLOAT = {"f32": np.float32, "f16": np.float16, "f64": np.float64}
_WORD = {"f32": np.uint32, "f16": np.uint16, "f64": np.uint64}


def add_arguments(p):
    p.add_argument("form", help="a modelled PTX spelling, e.g. ex2.approx.ftz.f32, div.full.f32, ex2.approx.f16")
    p.add_argument("words", nargs="+", metavar="WORD",
                   help="input words (hex 0x3f800000 or decimal); two per result for div (dividend divisor)")
    p.add_argument("--values", action="store_true", help="the inputs are numbers (1.5, -2e-40, inf, nan), "
                   "rounded to the form's type")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _elem(form: str) -> str:
    t = form.split(".")[-1]
    return {"f16x2": "f16", "bf16x2": "bf16"}.get(t, t)


def _to_float(word: int, t: str) -> float:
    if t == "bf16":
        return float(np.array([word << 16], np.uint32).view(np.float32)[0])
    return float(np.array([word], _WORD[t]).view(_FLOAT[t])[0])


def _from_value(text: str, t: str) -> int:
    v = float(text)
    if t == "bf16":
        w = int(np.array([v], np.float32).view(np.uint32)[0])
        return (w + 0x7FFF + ((w >> 16) & 1)) >> 16 if (w & 0x7FFFFFFF) <= 0x7F800000 else 0x7FFF
    return int(np.array([v], _FLOAT[t]).view(_WORD[t])[0])


def _ulps(result: float, exact, t: str) -> float | None:
    """(result - exact) in units in the last place of ``t`` at the exact value."""
    if not (np.isfinite(result) and np.isfinite(exact)):
        return None
    exact = np.longdouble(exact)
    bits = {"f32": 24, "f16": 11, "bf16": 8, "f64": 53}[t]
    emin = {"f32": -126, "f16": -14, "bf16": -126, "f64": -1022}[t]
    e = max(int(np.floor(np.log2(abs(exact)))) if exact else emin, emin)
    return float((np.longdouble(result) - exact) / np.longdouble(2.0) ** (e - bits + 1))


def run(args) -> int:
    from fragsim.ptx.semantics.approx import FORMS, approx

    form = args.form.strip().lstrip(".")
    if form not in FORMS:
        raise ValueError(f"{args.form!r} is not a modelled MUFU form; modelled: {', '.join(FORMS)}")
    t = _elem(form)
    if form.endswith("x2"):
        raise ValueError(f"{form}: give the scalar form ({form[:-2]}); each half of an x2 pair is computed alone")
    n = FORMS[form].operands
    try:
        words = [_from_value(w, t) if args.values else int(w, 0) for w in args.words]
    except ValueError:
        raise ValueError(f"WORD: expected {'numbers' if args.values else 'integers (0x3f800000 or 1065353216)'}, "
                         f"got {' '.join(args.words)}") from None
    if len(words) % n:
        raise ValueError(f"{form} takes {n} operands per result: give WORDs in {'pairs' if n == 2 else 'ones'}")
    bits = 16 if t in ("f16", "bf16") else (64 if t == "f64" else 32)
    for w in words:
        if not 0 <= w < 1 << bits:
            raise ValueError(f"WORD {w:#x}: not a {bits}-bit word")
    ops = [np.array(words[k::n], np.uint64) for k in range(n)]
    out = approx(form, *ops)
    fn = EXACT.get(form.split(".")[0])
    rows: list[dict[str, Any]] = []
    for k in range(len(out)):
        words_in = [int(o[k]) for o in ops]
        vals = [_to_float(w, t) for w in words_in]
        r = int(out[k])
        with np.errstate(all="ignore"):     # an f64 form's exact value in x87's 64-bit significand
            precise = fn(*np.array(vals, np.longdouble if t == "f64" else np.float64)) if fn else None
        rv = _to_float(r, t)
        hexw = f"#0{bits // 4 + 2}x"
        rows.append({"inputs": [format(w, hexw) for w in words_in], "input_values": vals, "result": format(r, hexw),
                     "value": rv, "exact": None if precise is None else float(precise),
                     "ulps": None if precise is None else _ulps(rv, precise, t)})
    if args.json:
        print(json.dumps({"form": form, "results": rows}, default=str))
        return 0
    for row in rows:
        ins = ", ".join(f"{w} ({v:.9g})" for w, v in zip(row["inputs"], row["input_values"]))
        line = f"{form} {ins} -> {row['result']} ({row['value']:.9g})"
        if row["ulps"] is not None:
            u = row["ulps"]
            line += f"; exact {row['exact']:.9g}: {u:+.3f} ulp" + (" (correctly rounded)" if abs(u) <= 0.5 else "")
        print(line)
    return 0
