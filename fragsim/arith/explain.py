"""One output element of an mma, computed step by step in plain Python, with every step kept.

``explain(form, A, B, C, row, col, arch)`` takes the operand matrices as raw bits and returns a
trace (a dict, JSON-ready; ``model`` names its kind) of the arithmetic that ``plan(form, arch)``
resolves, read from the same plan and architecture row the kernels read:

* ``fused dot product`` (f16/bf16/tf32, ``Plan``): per block of L products the decoded terms
  (value, nominal exponent), E_max, the grid 2^(E_max - F), each term truncated to that grid and
  what the truncation dropped, the exact sum, and the rounding to the output format; the
  special-value rule instead when an Inf or NaN takes part.
* ``fp8`` (``Fp8Plan``): each byte's exact f16 value (``fp8.byte_table``), the f16 HMMAs over the
  k of the row's ``fp8_split`` (the blocks of the plan's f16 form), each block as above, from
  c = +0 when the row's ``fp8_c`` adds C last by one IEEE addition rounded to nearest even.
* ``integer`` (``IntPlan``): the exact products (b1: popc of the AND/XOR of 32-k words), their
  exact sum with C, then wraparound modulo 2^32 or, under .satfinite, the clamp after every
  ``sat_block`` products.
* ``f64`` (``F64Plan``): the chain of IEEE binary64 multiply-adds in the row's k order, with its
  subnormal and NaN rules.
* ``binary32 tree`` (f16 m8n8k4, ``ChainPlan``): the row's tree of binary32 operations, one
  rounding to nearest even each, then D.

``render(trace)`` prints it for people.  Exact arithmetic (int, Fraction) throughout; nothing here
is numba.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

import numpy as np

from fragsim.facts.arch import DEFAULT_ARCH
from fragsim.facts.formats import (FloatFormat, IntFormat, decompose, get_format, int_from_bits, is_inf, is_nan, round_to_format,
                                   to_float)
from . import Plan, plan
from .chain import ChainPlan
from .exact import OP_AND, OP_MUL, F64Plan, IntPlan
from .fp8 import Fp8Plan, byte_table

__all__ = ["explain", "render", "to_json"]


def _fmt_value(x) -> str:
    """An exact value for people: a short decimal when float64 holds it exactly."""
    if isinstance(x, str):
        return x
    x = Fraction(x)
    try:
        f = float(x)
    except OverflowError:                        # an exact binary64 sum beyond the largest float64
        return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
    if Fraction(f) == x:
        return repr(f) if abs(f) < 1e16 or f != int(f) else f"{f:.17g}"
    return f"{x.numerator}/{x.denominator}"


def _pow2(e: int) -> str:
    return f"2^{e}"


def _element(word: int, fmt, role: str) -> dict:
    """Decode one element: sign, value, nominal exponent (emin for subnormals), class."""
    return {"role": role, **_decoded(int(word), get_format(fmt))}


@lru_cache(maxsize=1 << 16)
def _decoded(word: int, fmt) -> dict:
    """``_element`` but the role (remembered: a trace decodes the same words again and again;
    callers get copies)."""
    w = np.array([word], dtype=fmt.dtype)
    out = {"bits": f"{word:#0{fmt.storage_bits // 4 + 2}x}"}
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


# -- IEEE arithmetic on exact values (the fp8 add of C, the f64 chain, the binary32 trees) ------------

@dataclass(frozen=True)
class _X:
    """An IEEE value: a number (exact; ``sign`` also tells a zero's sign), an Inf or a NaN."""
    kind: str                      # 'num', 'inf' or 'nan'
    sign: int = 0
    value: Fraction = Fraction(0)


def _x(el: dict) -> _X:
    if el["class"] == "nan":
        return _X("nan")
    if el["class"] == "inf":
        return _X("inf", el["sign"])
    return _X("num", el["sign"], el["value"])


def _mul(a: _X, b: _X) -> _X:
    """a * b, exact (Inf * 0 is NaN)."""
    if "nan" in (a.kind, b.kind):
        return _X("nan")
    s = a.sign ^ b.sign
    if "inf" in (a.kind, b.kind):
        zero = (a.kind == "num" and a.value == 0) or (b.kind == "num" and b.value == 0)
        return _X("nan") if zero else _X("inf", s)
    return _X("num", s, a.value * b.value)


def _add(a: _X, b: _X) -> _X:
    """a + b, exact: Inf - Inf is NaN; an exact zero is -0 only as the sum of two -0 (the sign of a
    zero sum under round to nearest), so fma(a, b, c) = _add(_mul(a, b), c)."""
    if "nan" in (a.kind, b.kind) or (a.kind == b.kind == "inf" and a.sign != b.sign):
        return _X("nan")
    if "inf" in (a.kind, b.kind):
        return a if a.kind == "inf" else b
    v = a.value + b.value
    if v == 0:
        return _X("num", a.sign & b.sign if a.value == 0 == b.value else 0, v)
    return _X("num", int(v < 0), v)


def _round(x: _X, fmt: FloatFormat) -> int:
    """x rounded to nearest even into ``fmt`` (overflow to Inf, subnormals kept) as a word; a NaN
    is the format's canonical NaN."""
    if x.kind == "nan":
        return fmt.canonical_nan
    if x.kind == "inf":
        return (x.sign << fmt.sign_shift) | (((1 << fmt.exp_bits) - 1) << fmt.exp_shift)
    if x.value == 0:
        return x.sign << fmt.sign_shift
    sig, den = abs(x.value.numerator), x.value.denominator
    assert den & (den - 1) == 0, "an IEEE value is a dyadic fraction"
    exp = 1 - den.bit_length()
    extra = sig.bit_length() - 60
    if extra > 0:        # 60 bits and a sticky bit: the rounding point lies at least 7 bits above it
        sig = (sig >> extra) | int(sig & ((1 << extra) - 1) != 0)
        exp += extra
    return int(round_to_format(int(x.value < 0), sig, exp, fmt, "rne", "ieee"))


def _exact(x: _X):
    """An exact value for the trace: a Fraction, or 'nan', 'inf', '-inf', '0.0', '-0.0'."""
    if x.kind == "nan":
        return "nan"
    if x.kind == "inf":
        return "-inf" if x.sign else "inf"
    return x.value if x.value else ("-0.0" if x.sign else "0.0")


def _word(el: dict) -> int:
    return int(el["bits"], 16)


# -- the families --------------------------------------------------------------------------------

def _float_params(pl: Plan) -> dict:
    arch_row = pl.arch
    return {"products_per_block": pl.block, "blocks": len(pl.blocks), "F": pl.frac_bits,
            "e_zero": pl.e_zero, "rounding": pl.rounding, "output": pl.acc_fmt.name,
            "zero_sign": arch_row.zero_sign, "c_subnormal_exp": arch_row.c_subnormal_exp,
            "tf32_nan_low_bits": arch_row.tf32_nan_low_bits}


def _explain_float(pl: Plan, A, B, C, row: int, col: int, trace: dict) -> None:
    trace["params"] = _float_params(pl)
    trace["blocks"] = []
    c_word = int(C[row, col])
    for k0, k1 in pl.blocks:
        ks = list(range(k0, k1))
        blk = _block(pl, [int(A[row, k]) for k in ks], [int(B[k, col]) for k in ks], ks, c_word)
        trace["blocks"].append(blk)
        c_word = blk["result"]
    trace["d"] = _element(c_word, pl.acc_fmt, "d")


@lru_cache(maxsize=None)
def _fp8_k_order(f, vf) -> tuple[int, ...]:
    """The real k of each k of the fp8 form f's f16 form vf (whose blocks are the HMMAs), read off
    the two maps: bytes 0, 1 of fp8 register j are vf's register j, bytes 2, 3 its register j + n."""
    order: dict[int, int] = {}
    for op in "AB":
        n = f.nregs(op)
        rows, cols = f.coords(op)                 # (32, n, 4)
        vrows, vcols = vf.coords(op)              # (32, 2n, 2)
        k, x, vk, vx = (cols, rows, vcols, vrows) if op == "A" else (rows, cols, vrows, vcols)
        for byte in range(4):
            vreg = np.arange(n) + n * (byte // 2)
            assert (vx[:, vreg, byte % 2] == x[:, :, byte]).all(), f"{f.name}: byte {byte} of {op} moves its element"
            for v, kk in zip(vk[:, vreg, byte % 2].ravel().tolist(), k[:, :, byte].ravel().tolist()):
                assert order.setdefault(v, kk) == kk, f"{f.name}: virtual k {v} is two k"
    return tuple(order[v] for v in range(f.shape[2]))


def _explain_fp8(pl: Fp8Plan, A, B, C, row: int, col: int, trace: dict) -> None:
    f, inner, arch_row = pl.form, pl.inner, pl.arch
    K = f.shape[2]
    fa, fb, f16 = f.fmt("A"), f.fmt("B"), inner.in_fmt
    ta, tb = byte_table(fa.name), byte_table(fb.name)
    order = _fp8_k_order(f, inner.form)
    per_hmma = K if arch_row.fp8_split == "none" else K // 2
    trace["params"] = {**_float_params(inner), "a": fa.name, "b": fb.name, "fp8_split": arch_row.fp8_split,
                       "fp8_c": arch_row.fp8_c, "hmmas": K // per_hmma, "products_per_hmma": per_hmma}
    trace["conversions"] = [{"k": k, "a": _element(int(A[row, k]), fa, "a"),
                             "a_f16": _element(int(ta[A[row, k]]), f16, "a"),
                             "b": _element(int(B[k, col]), fb, "b"), "b_f16": _element(int(tb[B[k, col]]), f16, "b")}
                            for k in range(K)]
    trace["blocks"] = []
    acc = inner.acc_fmt
    c_word = 0 if pl.c_last else int(C[row, col])         # +0: the first HMMA starts from zero
    for k0, k1 in inner.blocks:
        ks = list(order[k0:k1])
        blk = _block(inner, [int(ta[A[row, k]]) for k in ks], [int(tb[B[k, col]]) for k in ks], ks, c_word)
        blk["k"] = ks
        blk["hmma"] = k0 // per_hmma + 1
        trace["blocks"].append(blk)
        c_word = blk["result"]
    if pl.c_last:
        c, x = _element(int(C[row, col]), acc, "c"), _element(c_word, acc, "x")
        s = _add(_x(c), _x(x))
        c_word = _round(s, acc)
        trace["c_add"] = {"c": c, "x": x, "sum": _exact(s), "result": c_word}
    trace["d"] = _element(c_word, acc, "d")


def _int_element(word: int, fmt, role: str) -> dict:
    value = int(int_from_bits(np.array([word], fmt.dtype), fmt)[0])
    return {"role": role, "bits": f"{word:#0{max(fmt.storage_bits // 4, 1) + 2}x}", "value": value}


def _explain_int(pl: IntPlan, A, B, C, row: int, col: int, trace: dict) -> None:
    f = pl.form
    K = f.shape[2]
    acc = f.fmt("D")
    assert isinstance(acc, IntFormat)
    a = [int(v) for v in int_from_bits(A[row, :], pl.a_fmt)]
    b = [int(v) for v in int_from_bits(B[:, col], pl.b_fmt)]
    op = {OP_MUL: "mul", OP_AND: "and"}.get(pl.op, "xor")
    trace["params"] = {"a": pl.a_fmt.name, "b": pl.b_fmt.name, "op": op, "satfinite": pl.satfinite,
                       "products_per_step": pl.sat_block if pl.satfinite else K, "output": acc.name,
                       "min": acc.min, "max": acc.max}
    if pl.op == OP_MUL:
        parts = [x * y for x, y in zip(a, b)]
        trace["terms"] = [{"k": k, "a": a[k], "b": b[k], "product": parts[k]} for k in range(K)]
    else:
        parts = [(x & y) if pl.op == OP_AND else (x ^ y) for x, y in zip(a, b)]
        w = f.elems_per_reg("A")                 # the hardware counts the bits of whole register words
        words = []
        for j in range(0, K, w):
            aw, bw, cw = (sum(v[k] << (k - j) for k in range(j, j + w)) for v in (a, b, parts))
            words.append({"k": [j, j + w - 1], "a": aw, "b": bw, op: cw, "popc": sum(parts[j:j + w])})
        trace["words"] = words
    c = _int_element(int(C[row, col]), acc, "c")
    trace["c"] = c
    s, steps = c["value"], []
    block = trace["params"]["products_per_step"]
    for k0 in range(0, K, block):
        part = sum(parts[k0:k0 + block])
        step = {"k": [k0, min(k0 + block, K) - 1], "before": s, "sum": part, "exact": s + part}
        s = min(max(s + part, acc.min), acc.max) if pl.satfinite else s + part
        step["result"] = s
        steps.append(step)
    trace["steps"] = steps
    span = 1 << acc.storage_bits
    trace["wrapped"] = (s - acc.min) % span + acc.min      # two's complement of the low 32 bits
    trace["d"] = _int_element(trace["wrapped"] % span, acc, "d")


def _explain_f64(pl: F64Plan, A, B, C, row: int, col: int, trace: dict) -> None:
    f = pl.form
    K = f.shape[2]
    fmt = f.fmt("D")
    assert isinstance(fmt, FloatFormat)
    trace["params"] = {"order": "descending" if pl.descending else "ascending", "fused": pl.fused,
                       "subnormals": "ftz" if pl.ftz else "ieee", "nan_order": pl.nan_order,
                       "default_nan": f"{pl.default_nan:#018x}"}

    def ftz(el: dict) -> dict:       # f64_subnormals 'ftz': a subnormal reads (and ends) as a zero of its sign
        if pl.ftz and el["class"] == "subnormal":
            return {**_element(_word(el) & (1 << fmt.sign_shift), fmt, el["role"]), "flushed_from": el["bits"]}
        return el

    acc = ftz(_element(int(C[row, col]), fmt, "c"))
    trace["c"] = acc
    steps = []
    for k in (range(K - 1, -1, -1) if pl.descending else range(K)):
        a, b = ftz(_element(int(A[row, k]), fmt, "a")), ftz(_element(int(B[k, col]), fmt, "b"))
        step: dict[str, Any] = {"k": k, "a": a, "b": b, "acc": acc}
        if pl.fused:
            exact = _add(_mul(_x(a), _x(b)), _x(acc))
        else:                       # the product rounded first
            step["product"] = _element(_round(_mul(_x(a), _x(b)), fmt), fmt, "product")
            exact = _add(_x(step["product"]), _x(acc))
        step["exact"] = _exact(exact)
        word = _round(exact, fmt)
        if exact.kind == "nan":
            nans = [] if pl.nan_order == "canonical" else [n for n in pl.nan_order
                                                           if {"a": a, "b": b, "c": acc}[n]["class"] == "nan"]
            if nans:
                word = _word({"a": a, "b": b, "c": acc}[nans[0]]) | (1 << (fmt.man_bits - 1))
                step["nan"] = f"{'acc' if nans[0] == 'c' else nans[0]}'s NaN, quieted"
            else:
                word = pl.default_nan
                step["nan"] = "the default NaN" + ("" if pl.nan_order == "canonical" else " (no NaN operand)")
        step["result"] = acc = ftz(_element(word, fmt, "acc"))
        steps.append(step)
    trace["steps"] = steps
    trace["d"] = {**acc, "role": "d"}


def _tree_text(t) -> str:
    if t in ("c", "+0"):
        return t
    if t[0] == "mul":
        return f"a{t[1]}*b{t[1]}"
    if t[0] == "fma":
        return f"fma(a{t[1]}, b{t[1]}, {_tree_text(t[2])})"
    return f"({_tree_text(t[1])} + {_tree_text(t[2])})"


def _explain_chain(pl: ChainPlan, A, B, C, row: int, col: int, trace: dict) -> None:
    f = pl.form
    M, _, K = f.shape
    q = row // M                              # the quad pair whose product this row belongs to
    f16, f32 = f.fmt("A"), get_format("f32")
    fd = f.fmt("D")
    assert isinstance(f16, FloatFormat) and isinstance(f32, FloatFormat) and isinstance(fd, FloatFormat)
    a = [_element(int(A[row, k]), f16, "a") for k in range(K)]
    b = [_element(int(B[q * K + k, col]), f16, "b") for k in range(K)]
    c = _element(int(C[row, col]), f.fmt("C"), "c")
    trace["params"] = {"tree": _tree_text(pl.tree).removeprefix("(").removesuffix(")") if pl.tree[0] == "add"
                       else _tree_text(pl.tree), "field": f"m884_{fd.name}", "output": fd.name, "group": q,
                       "b_rows": [q * K, q * K + K - 1]}
    trace["inputs"] = {"a": a, "b": b, "c": c}
    steps: list[dict] = []

    def run(t) -> tuple[_X, str]:
        """The binary32 value of the subtree t and its name (c, +0, or step i's s<i>)."""
        if t == "c":
            return _x(c), "c"
        if t == "+0":
            return _X("num"), "+0"
        if t[0] == "add":
            (x, xn), (y, yn) = run(t[1]), run(t[2])
            exact, what, ops = _add(x, y), f"{xn} + {yn}", [xn, yn]
        elif t[0] == "mul":
            k = t[1]
            exact, what, ops = _mul(_x(a[k]), _x(b[k])), f"a{k}*b{k}", []
        else:
            k = t[1]
            x, xn = run(t[2])
            exact, what, ops = _add(_mul(_x(a[k]), _x(b[k])), x), f"fma(a{k}, b{k}, {xn})", [xn]
        res = _element(_round(exact, f32), f32, "s")
        steps.append({"op": t[0], "k": t[1] if t[0] != "add" else None, "expr": what, "operands": ops,
                      "exact": _exact(exact), "result": res})
        return _x(res), f"s{len(steps)}"

    root, _ = run(pl.tree)
    word = _round(root, f32)               # exact: the root is a binary32 value (NaN: the canonical one)
    if fd.name != f32.name:
        trace["to_output"] = {"from": _element(word, f32, "s"), "rounding": "rne"}
        word = _round(_x(_element(word, f32, "s")), fd)
    trace["steps"] = steps
    trace["d"] = _element(word, fd, "d")


def explain(form, A, B, C, row: int, col: int, arch=DEFAULT_ARCH) -> dict:
    """The trace of D[row, col] = sum_k A[row, k] * B[k, col] + C[row, col] (bits in), as the form's
    plan on ``arch`` computes it."""
    pl = plan(form, arch)
    f = pl.form
    M, N = f.matrix_shape("D")
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
    trace: dict[str, Any] = {"form": f.ptx, "arch": pl.arch.name, "arch_description": pl.arch.description,
                             "element": [row, col]}
    if isinstance(pl, Plan):
        trace["model"] = "fused dot product"
        _explain_float(pl, A, B, C, row, col, trace)
    elif isinstance(pl, Fp8Plan):
        trace["model"] = "fp8"
        _explain_fp8(pl, A, B, C, row, col, trace)
    elif isinstance(pl, IntPlan):
        trace["model"] = "integer"
        _explain_int(pl, A, B, C, row, col, trace)
    elif isinstance(pl, F64Plan):
        trace["model"] = "f64"
        _explain_f64(pl, A, B, C, row, col, trace)
    else:
        trace["model"] = "binary32 tree"
        _explain_chain(pl, A, B, C, row, col, trace)
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


# -- rendering -----------------------------------------------------------------------------------

def _short(x) -> str:
    """An exact value for a line of text: exact when short, else ~ and 21 significant digits."""
    s = _fmt_value(x)
    if len(s) <= 40 or isinstance(x, str):
        return s
    from decimal import Context
    ctx = Context(prec=21)
    x = Fraction(x)
    return "~" + format(ctx.divide(ctx.create_decimal(x.numerator), ctx.create_decimal(x.denominator)), ".20e")


def _el(el: dict) -> str:
    return f"{el['bits']} ({_short(el['value'])})"


def _how(p: dict) -> str:
    return "to nearest even" if p["rounding"] == "rne" else "toward zero"


def _render_block(blk: dict, p: dict, out: list[str]) -> None:
    """A block's terms, E_max, truncation, sum and rounding (the fused dot-product model)."""
    if "special" in blk:
        sp = blk["special"]
        out.append(f"  special values: {sp['why']} -> {sp['result']}")
        out.append(f"  result: {blk['result']:#x}")
        return
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
            spread = [x["k"] for x in t] != list(range(t[0]["k"], t[0]["k"] + len(t)))   # fp8's k % 4 halves
            if spread:
                ks = f"{len(t)} k"
            out.append(f"  {ks:>7}  {what:>22}  {'':>22}  {'0':>24}  {t[0]['exponent']:>5}  "
                       f"{0:>16}  -   (exponent e_zero)")
            if spread:
                out.append(f"  {'':>7}  (k = {', '.join(str(x['k']) for x in t)})")
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
    out.append(f"  rounded {_how(p)} to {res_fmt}: {word:#0{get_format(res_fmt).storage_bits // 4 + 2}x} "
               f"({_fmt_value(float(val)) if np.isfinite(val) else val})")


def _block_model(p: dict) -> str:
    return (f"blocks of {p['products_per_block']} products (+ c), F = {p['F']} fractional bits, "
            f"e_zero = {p['e_zero']}, then {'round to nearest even' if p['rounding'] == 'rne' else 'round toward zero'}"
            f" to {p['output']} (overflow -> Inf)")


def _render_float(trace: dict, out: list[str]) -> None:
    p = trace["params"]
    out.append(f"  model: {_block_model(p)}")
    for i, blk in enumerate(trace["blocks"], 1):
        k0, k1 = blk["k"]
        src = "C" if i == 1 else f"block {i - 1}'s result"
        out.append(f"block {i} of {len(trace['blocks'])}: k = {k0}..{k1}, c = {src} = {blk['c']['bits']} "
                   f"({_fmt_value(blk['c']['value'])})")
        _render_block(blk, p, out)


_FP8_SPLIT = {"pairs": "first the k with k % 4 in {0, 1} (the low halves of the registers), then k % 4 in {2, 3}",
              "halves": "first the k below K/2, then the rest", "none": "one over all k"}


def _render_fp8(trace: dict, out: list[str]) -> None:
    p = trace["params"]
    conv = trace["conversions"]
    ta, tb = p["a"], p["b"]
    c_last = p["fp8_c"] == "add"
    kinds = ta if ta == tb else f"{ta} and {tb}"
    out.append(f"  model: the {kinds} inputs convert exactly to f16, then {p['hmmas']} f16 HMMA of "
               f"{p['products_per_hmma']} products,")
    out.append(f"         fp8_split '{p['fp8_split']}': {_FP8_SPLIT[p['fp8_split']]};")
    out.append("         " + ("the first from c = +0" if c_last else "the first from C")
               + (", the next from the one before" if p["hmmas"] > 1 else "") + f"; each: {_block_model(p)}")
    if c_last:
        out.append(f"         then C + the last HMMA's result: one IEEE addition rounded to nearest even in "
                   f"{p['output']} (fp8_c 'add')")
    out.append("conversion to f16 (exact):")
    out.append(f"  {'k':>5}  {'a (' + ta + ')':>20}  {'f16':>6}   {'b (' + tb + ')':>20}  {'f16':>6}")
    for t in conv:
        out.append(f"  {t['k']:>5}  {t['a']['bits'] + ' ' + _fmt_value(t['a']['value']):>20}  {t['a_f16']['bits']:>6}   "
                   f"{t['b']['bits'] + ' ' + _fmt_value(t['b']['value']):>20}  {t['b_f16']['bits']:>6}")
    blocks = trace["blocks"]
    per: dict[int, int] = {}
    for blk in blocks:
        per[blk["hmma"]] = per.get(blk["hmma"], 0) + 1
    for i, blk in enumerate(blocks):
        h = blk["hmma"]
        j = sum(1 for b in blocks[:i] if b["hmma"] == h) + 1
        where = f"HMMA {h} of {p['hmmas']}" + (f", block {j} of {per[h]}" if per[h] > 1 else "")
        if i == 0:
            src = "+0 (C comes last)" if c_last else "C"
        else:
            src = f"HMMA {h - 1}'s result" if j == 1 else f"block {j - 1}'s result"
        out.append(f"{where}: k = {', '.join(map(str, blk['k']))}, c = {src} = {_el(blk['c'])}")
        _render_block(blk, p, out)
    if "c_add" in trace:
        ca = trace["c_add"]
        word = _element(ca["result"], get_format(p["output"]), "d")
        out.append(f"C + HMMA {p['hmmas']}'s result, one IEEE addition rounded to nearest even in {p['output']}:")
        out.append(f"  {_el(ca['c'])} + {_el(ca['x'])} = {_short(ca['sum'])} -> {_el(word)}")


def _render_int(trace: dict, out: list[str]) -> None:
    p = trace["params"]
    lo, hi = p["min"], p["max"]
    steps = trace["steps"]
    if p["satfinite"]:
        when = "once, on the whole sum" if len(steps) == 1 else f"after every {p['products_per_step']} products"
        fin = f".satfinite: the running sum clamped to {lo}..{hi} ({when})"
    else:
        fin = f"then wrapped modulo 2^{p['output'][1:]} into {p['output']}"
    if p["op"] == "mul":
        out.append(f"  model: exact products of {p['a']} and {p['b']} elements, summed exactly with C; {fin}")
        out.append(f"  {'k':>7}  {'a':>6}  {'b':>6}  {'product':>8}")
        run: list[dict] = []
        terms = trace["terms"] + [None]
        for t in terms:
            if t is not None and t["product"] == 0:
                run.append(t)
                continue
            if run:
                ks = f"k={run[0]['k']}" + (f"..{run[-1]['k']}" if len(run) > 1 else "")
                out.append(f"  {ks:>7}  zero product{'s' if len(run) > 1 else ''}")
                run = []
            if t is not None:
                out.append(f"  {t['k']:>7}  {t['a']:>6}  {t['b']:>6}  {t['product']:>8}")
    else:
        op = p["op"]
        words = trace["words"]
        per = words[0]["k"][1] + 1
        hexw = per // 4 + 2
        out.append(f"  model: popc(a {op.upper()} b) over k, a register word of {per} k at a time "
                   f"(bit i: k = {per}j + i), added to C; {fin}")
        out.append(f"  {'k':>9}  {'a':>{hexw}}  {'b':>{hexw}}  {'a ' + op.upper() + ' b':>{hexw}}  popc")
        for w in words:
            out.append(f"  {str(w['k'][0]) + '..' + str(w['k'][1]):>9}  {w['a']:#0{hexw}x}  {w['b']:#0{hexw}x}  "
                       f"{w[op]:#0{hexw}x}  {w['popc']:>4}")
    c = trace["c"]
    out.append(f"  c = {c['bits']} ({c['value']})")
    for s in steps:
        what = "popc" if p["op"] != "mul" else "products"
        span = "" if len(steps) == 1 else f"k = {s['k'][0]}..{s['k'][1]}: "
        line = f"  {span}{s['before']} + {s['sum']} ({what}) = {s['exact']}"
        if s["result"] != s["exact"]:
            line += f", clamped to {s['result']}"
        out.append(line)
    last = steps[-1]["result"]
    if trace["wrapped"] != last:
        out.append(f"  {last} is outside {p['output']} ({lo}..{hi}): wraps modulo 2^{p['output'][1:]} to "
                   f"{trace['wrapped']}")


def _render_f64(trace: dict, out: list[str]) -> None:
    p = trace["params"]
    op = "fused multiply-add acc = a*b + acc, rounded once" if p["fused"] else \
        "multiply, rounded, then add acc = round(a*b) + acc, rounded"
    nan = ("every NaN result is the default NaN " + p["default_nan"]) if p["nan_order"] == "canonical" else (
        f"a NaN result carries the first NaN operand of {', '.join('acc' if n == 'c' else n for n in p['nan_order'])}"
        f" (f64_nan_order '{p['nan_order']}'), quieted, else the default NaN {p['default_nan']}")
    sub = "subnormals kept" if p["subnormals"] == "ieee" else "subnormal inputs and results read as zeros of their sign"
    out.append(f"  model: c first, then one IEEE binary64 {op} to nearest even per k, k {p['order']} (f64_order);")
    out.append(f"         {sub} (f64_subnormals); {nan}")
    c = trace["c"]
    out.append(f"  acc = C = {_el(c)}" + (f", flushed from {c['flushed_from']}" if "flushed_from" in c else ""))
    for s in trace["steps"]:
        out.append(f"  k={s['k']}: a = {_el(s['a'])}, b = {_el(s['b'])}"
                   + "".join(f", {x} flushed from {s[x]['flushed_from']}" for x in "ab" if "flushed_from" in s[x]))
        if "product" in s:
            out.append(f"       a*b rounded: {_el(s['product'])}")
        line = f"       {'a*b' if 'product' not in s else 'that'} + acc = {_short(s['exact'])}"
        r = s["result"]
        if "nan" in s:
            line += f" -> NaN: {s['nan']} -> {r['bits']}"
        else:
            same = s["exact"] == r["value"] or (isinstance(s["exact"], str) and r["class"] in ("zero", "inf"))
            line += f" -> {_el(r)}" + ("" if same else " (rounded)")
        if "flushed_from" in r:
            line += f", flushed from {r['flushed_from']}"
        out.append(line)


def _render_chain(trace: dict, out: list[str]) -> None:
    p = trace["params"]
    q, (b0, b1) = p["group"], p["b_rows"]
    out.append(f"  model: {trace['arch']} computes this m8n8k4 form with binary32 operations (arch row {p['field']}):")
    out.append(f"         D = {p['tree']},")
    out.append("         each operation rounded to nearest even in binary32 (the f16 inputs widened exactly, their "
               "products exact)" + (f", then D rounded to nearest even to {p['output']}" if p["output"] != "f32" else "")
               + "; a NaN D is the canonical NaN")
    out.append(f"  quad pair {q}: row {trace['element'][0]} of A and C, rows {b0}..{b1} of B")
    inp = trace["inputs"]
    for k, (a, b) in enumerate(zip(inp["a"], inp["b"])):
        out.append(f"  a{k} = {_el(a)}   b{k} = {_el(b)}")
    out.append(f"  c = {_el(inp['c'])}")
    for i, s in enumerate(trace["steps"], 1):
        expr = s["expr"]
        if s["op"] == "fma":
            expr += f" = a{s['k']}*b{s['k']} + {s['operands'][0]}"
        r = s["result"]
        exact = s["exact"] == r["value"] or (isinstance(s["exact"], str) and r["class"] in ("zero", "inf", "nan"))
        out.append(f"  s{i} = {expr} = {_short(s['exact'])} -> {_el(r)}" + ("" if exact else " (rounded)"))
    if "to_output" in trace:
        out.append(f"  D: s{len(trace['steps'])} rounded to nearest even to {p['output']}")


def render(trace: dict) -> str:
    row, col = trace["element"]
    out = [f"{trace['form']} on {trace['arch']} ({trace['arch_description']}): D[{row},{col}]"]
    {"fused dot product": _render_float, "fp8": _render_fp8, "integer": _render_int, "f64": _render_f64,
     "binary32 tree": _render_chain}[trace.get("model", "fused dot product")](trace, out)
    d = trace["d"]
    value = d["value"] if trace.get("model") == "integer" else _fmt_value(d["value"])
    out.append(f"D[{row},{col}] = {d['bits']} ({value})")
    return "\n".join(out)
