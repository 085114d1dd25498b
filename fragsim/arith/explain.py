"""One output element of an mma, computed step by step in plain Python, with every step kept.

``explain(form, A, B, C, row, col, arch)`` takes the operand matrices as raw bits and
returns a trace (a dict, JSON-ready): the parameters used, then per block of L products the
decoded terms (value, nominal exponent), E_max, the grid 2^(E_max - F), each term truncated
to that grid and what the truncation dropped, the exact sum, and the rounding to the output
format; the special-value rule instead when an Inf or NaN takes part.  ``render(trace)``
prints it for people.  Exact integer arithmetic throughout; nothing here is numba.
"""

from __future__ import annotations

import numbers
from fractions import Fraction
from typing import Any

import numpy as np

from fragsim.facts.formats import decompose, get_format, is_inf, is_nan, round_to_format, to_float
from . import Plan, plan

__all__ = ["explain", "render", "to_json"]


def _fmt_value(x) -> str:
    """An exact value for people: a short decimal when float64 holds it exactly."""
    if isinstance(x, str):
        return x
    x = Fraction(x)
    f = float(x)
    if Fraction(f) == x:
        return repr(f) if abs(f) < 1e16 or f != int(f) else f"{f:.17g}"
    return f"{x.numerator}/{x.denominator}"


def _pow2(e: int) -> str:
    return f"2^{e}"


def _element(word: int, fmt, role: str) -> dict:
    """Decode one element: sign, value, nominal exponent (emin for subnormals), class."""
    fmt = get_format(fmt)
    w = np.array([word], dtype=fmt.dtype)
    out = {"role": role, "bits": f"{word:#0{fmt.storage_bits // 4 + 2}x}"}
    if is_nan(w, fmt)[0]:
        return {**out, "class": "nan", "value": "nan"}
    sign, sig, exp = (int(v[0]) for v in decompose(w, fmt))
    if is_inf(w, fmt)[0]:
        return {**out, "class": "inf", "value": "-inf" if sign else "inf", "sign": sign}
    value = Fraction(sig) * Fraction(2) ** exp * (-1 if sign else 1)
    cls = "zero" if sig == 0 else ("subnormal" if sig < (1 << fmt.man_bits) else "normal")
    d = {**out, "class": cls, "sign": sign, "value": value}
    if sig:
        d["exponent"] = exp + fmt.man_bits       # hidden-bit exponent: emin for subnormals
        d["floor_log2"] = exp + sig.bit_length() - 1
    return d


def _input_word(w: int, fmt, nan_low_bits: bool) -> int:
    """tf32: the low 13 bits are dropped (with ``nan_low_bits``, unless they make a NaN)."""
    low = fmt.ignored_low_bits
    if not low:
        return w
    exp_ones = ((1 << fmt.exp_bits) - 1) << fmt.exp_shift
    if nan_low_bits and (w & exp_ones) == exp_ones and (w & ((1 << fmt.exp_shift) - 1)):
        return exp_ones | (1 << (fmt.exp_shift - 1))    # a NaN
    return w & ~((1 << low) - 1)


def _special(terms, c, acc_fmt) -> dict | None:
    """The special-value rule when an Inf or NaN takes part, else None."""
    infs, why = set(), []
    for t in terms:
        a, b = t["a"], t["b"]
        if "nan" in (a["class"], b["class"]):
            return {"result": "nan", "why": f"k={t['k']}: a NaN input"}
        if "inf" in (a["class"], b["class"]):
            if "zero" in (a["class"], b["class"]):
                return {"result": "nan", "why": f"k={t['k']}: Inf * 0"}
            s = a.get("sign", 0) ^ b.get("sign", 0)
            infs.add(s)
            why.append(f"k={t['k']}: {'-' if s else '+'}Inf product")
    if c["class"] == "nan":
        return {"result": "nan", "why": "c is NaN"}
    if c["class"] == "inf":
        infs.add(c["sign"])
        why.append(f"c is {'-' if c['sign'] else '+'}Inf")
    if len(infs) == 2:
        return {"result": "nan", "why": "Inf of both signs: " + "; ".join(why)}
    if infs:
        return {"result": "-inf" if infs.pop() else "inf", "why": "; ".join(why)}
    return None


def _block(pl, a_words, b_words, ks, c_word) -> dict:
    in_fmt, acc_fmt, arch = pl.in_fmt, pl.acc_fmt, pl.arch
    F, e_zero = pl.frac_bits, pl.e_zero
    a_words = [_input_word(w, in_fmt, arch.tf32_nan_low_bits) for w in a_words]
    b_words = [_input_word(w, in_fmt, arch.tf32_nan_low_bits) for w in b_words]
    terms = [{"k": k, "a": _element(aw, in_fmt, "a"), "b": _element(bw, in_fmt, "b")}
             for k, aw, bw in zip(ks, a_words, b_words)]
    c = _element(c_word, acc_fmt, "c")
    blk: dict[str, Any] = {"k": [ks[0], ks[-1]], "c": c, "terms": terms}
    sp = _special(terms, c, acc_fmt)
    if sp is not None:
        word = acc_fmt.canonical_nan if sp["result"] == "nan" else (
            ((1 if sp["result"] == "-inf" else 0) << acc_fmt.sign_shift) | (((1 << acc_fmt.exp_bits) - 1) << acc_fmt.exp_shift))
        blk.update(special=sp, result=word)
        return blk
    # Terms: exact products with exponent e_a + e_b (not renormalised); zeros take e_zero.
    for t in terms:
        v = t["a"]["value"] * t["b"]["value"]
        t["product"] = v
        t["sign"] = t["a"]["sign"] ^ t["b"]["sign"]
        t["exponent"] = e_zero if v == 0 else t["a"]["exponent"] + t["b"]["exponent"]
        t["exponent_from"] = "e_zero (zero term)" if v == 0 else "e_a + e_b"
    ct = {"k": "c", "product": c["value"], "sign": c["sign"]}
    if c["value"] == 0:
        ct.update(exponent=e_zero, exponent_from="e_zero (zero term)")
    elif arch.c_subnormal_exp == "exact":
        ct.update(exponent=c["floor_log2"], exponent_from="floor(log2|c|)")
    else:
        ct.update(exponent=c["exponent"], exponent_from="e_c (emin if subnormal)")
    all_terms = terms + [ct]
    E = max(t["exponent"] for t in all_terms)
    unit = Fraction(2) ** (E - F)
    S = 0
    for t in all_terms:
        v = t["product"]
        n = int(abs(v) / unit)                      # truncated toward zero, sign-magnitude
        t["kept_units"] = -n if v < 0 else n
        t["dropped"] = abs(v) - n * unit
        S += t["kept_units"]
    blk.update(all_terms=all_terms, E_max=E, grid_exponent=E - F, sum_units=S, sum=S * unit)
    rounding = pl.rounding
    if S == 0:
        neg = arch.zero_sign == "ieee" and all(t["kept_units"] == 0 and t["sign"] == 1 for t in all_terms)
        word = int(neg) << acc_fmt.sign_shift
    else:
        word = int(round_to_format(int(S < 0), abs(S), E - F, acc_fmt, rounding, overflow="inf"))
        if arch.zero_sign == "positive" and word == 1 << acc_fmt.sign_shift:
            word = 0
    blk["result"] = word
    return blk


def explain(form, A, B, C, row: int, col: int, arch="sm_90") -> dict:
    """The trace of D[row, col] = sum_k A[row, k] * B[k, col] + C[row, col] (bits in)."""
    pl = plan(form, arch)
    f = pl.form
    if not isinstance(pl, Plan):
        raise ValueError(f"form {f.name}: explain retraces the truncated fused dot product of the f16/bf16/tf32 "
                         f"forms; integer and f64 forms are exact sums and fma chains (fragsim.arith.exact), fp8 forms "
                         f"two f16 mma plus an IEEE add of C (fragsim.arith.fp8), m8n8k4 .f16 a tree of binary32 "
                         f"operations (fragsim.arith.chain)")
    M, N, K = f.shape
    for name, v in (("row", row), ("col", col)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{f.name}: {name} must be an integer, got {type(v).__name__} {v!r:.40}")
    row, col = int(row), int(col)
    if not (0 <= row < M and 0 <= col < N):
        raise ValueError(f"{f.name}: element ({row}, {col}) is outside D ({M}x{N})")
    A, B, C = (np.asarray(x) for x in (A, B, C))
    for op, x in (("A", A), ("B", B), ("C", C)):
        fmt = f.fmt(op)
        if x.dtype.kind not in "ui":
            raise TypeError(f"operand {op} of {f.name}: expected {fmt.name} bits (unsigned integers), "
                            f"got dtype {x.dtype}")
        if x.shape != f.matrix_shape(op):
            raise ValueError(f"operand {op} of {f.name}: expected {fmt.name} bits shaped "
                             f"{f.matrix_shape(op)}, got {x.shape}")
        bad = (x < 0) | (x >= (1 << fmt.storage_bits))
        if bad.any():
            r, c = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"operand {op} of {f.name}: {fmt.name} words must lie in "
                             f"[0, 2**{fmt.storage_bits}), got {int(x[r, c])} at row {r}, col {c}")
    arch_row = pl.arch
    trace: dict[str, Any] = {
        "form": f.ptx, "arch": arch_row.name, "arch_description": arch_row.description, "element": [row, col],
        "params": {"products_per_block": pl.block, "blocks": len(pl.blocks), "F": pl.frac_bits,
                   "e_zero": pl.e_zero, "rounding": pl.rounding, "output": pl.acc_fmt.name,
                   "zero_sign": arch_row.zero_sign, "c_subnormal_exp": arch_row.c_subnormal_exp,
                   "tf32_nan_low_bits": arch_row.tf32_nan_low_bits},
        "blocks": [],
    }
    c_word = int(C[row, col])
    for k0, k1 in pl.blocks:
        ks = list(range(k0, k1))
        blk = _block(pl, [int(A[row, k]) for k in ks], [int(B[k, col]) for k in ks], ks, c_word)
        trace["blocks"].append(blk)
        c_word = blk["result"]
    trace["d"] = _element(c_word, pl.acc_fmt, "d")
    return trace


def _json_ready(x):
    if isinstance(x, dict):
        return {k: _json_ready(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_ready(v) for v in x]
    if isinstance(x, Fraction):
        return _fmt_value(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    return x


def to_json(trace: dict) -> dict:
    """The trace with exact values as strings (short decimals, or p/q when needed)."""
    return _json_ready(trace)


def render(trace: dict) -> str:
    p = trace["params"]
    row, col = trace["element"]
    out = [f"{trace['form']} on {trace['arch']} ({trace['arch_description']}): D[{row},{col}]",
           f"  model: blocks of {p['products_per_block']} products (+ c), F = {p['F']} fractional bits, "
           f"e_zero = {p['e_zero']}, then {'round to nearest even' if p['rounding'] == 'rne' else 'round toward zero'}"
           f" to {p['output']} (overflow -> Inf)"]
    for i, blk in enumerate(trace["blocks"], 1):
        k0, k1 = blk["k"]
        src = "C" if i == 1 else f"block {i - 1}'s result"
        out.append(f"block {i} of {len(trace['blocks'])}: k = {k0}..{k1}, c = {src} = {blk['c']['bits']} "
                   f"({_fmt_value(blk['c']['value'])})")
        if "special" in blk:
            sp = blk["special"]
            out.append(f"  special values: {sp['why']} -> {sp['result']}")
            out.append(f"  result: {blk['result']:#x}")
            continue
        E, g = blk["E_max"], blk["grid_exponent"]
        out.append(f"  {'term':>7}  {'a':>22}  {'b':>22}  {'exact term':>24}  {'exp':>5}  "
                   f"{'kept (x 2^' + str(g) + ')':>16}  dropped")
        rows, run = [], []
        for t in blk["all_terms"]:      # runs of zero products print as one line
            if t["k"] != "c" and t["product"] == 0:
                run.append(t)
                continue
            if run:
                rows.append(run)
                run = []
            rows.append(t)
        for t in rows:
            if isinstance(t, list):
                ks = f"k={t[0]['k']}" + (f"..{t[-1]['k']}" if len(t) > 1 else "")
                what = "zero products" if len(t) > 1 else "zero product"
                out.append(f"  {ks:>7}  {what:>22}  {'':>22}  {'0':>24}  {t[0]['exponent']:>5}  "
                           f"{0:>16}  -   (exponent e_zero)")
                continue
            if t["k"] == "c":
                a_s, b_s, name = "", "", "c"
            else:
                a_s = f"{t['a']['bits']} {_fmt_value(t['a']['value'])}"
                b_s = f"{t['b']['bits']} {_fmt_value(t['b']['value'])}"
                name = f"k={t['k']}"
            mark = "*" if t["exponent"] == E else " "
            out.append(f"  {name:>7}  {a_s:>22}  {b_s:>22}  {_fmt_value(t['product']):>24}  {t['exponent']:>5}{mark} "
                       f"{t['kept_units']:>16}  {_fmt_value(t['dropped']) if t['dropped'] else '-'}")
        out.append(f"  E_max = {E} (*), so every term is cut to a multiple of 2^(E_max - F) = {_pow2(g)}, "
                   f"toward zero")
        out.append(f"  sum of kept terms = {blk['sum_units']} x {_pow2(g)} = {_fmt_value(blk['sum'])} (exact)")
        res_fmt = p["output"]
        word = blk["result"]
        val = to_float(np.array([word], get_format(res_fmt).dtype), res_fmt)[0]
        how = "to nearest even" if p["rounding"] == "rne" else "toward zero"
        out.append(f"  rounded {how} to {res_fmt}: {word:#0{get_format(res_fmt).storage_bits // 4 + 2}x} "
                   f"({_fmt_value(float(val)) if np.isfinite(val) else val})")
    d = trace["d"]
    out.append(f"D[{row},{col}] = {d['bits']} ({_fmt_value(d['value'])})")
    return "\n".join(out)
