"""fragsim.search.addrexpr as C computes it: no recursion limit, C's integer types, undefined behaviour
reported as an error, let-bindings and swizzle() (issue 9, items 2-6)."""


import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fragsim.search.addrexpr import MAX_TOKENS, AddrExprError, evaluate, parse
from fragsim.layout.swizzle import Swizzle

LANE = np.arange(32)


def ev(src, **kw):
    """The value of an expression that is the same on every lane."""
    v = evaluate(src, **kw)
    assert v.shape == (32,) and (v == v[0]).all()
    return int(v[0])


# ---- item 2: no Python recursion limit -----------------------------------------------------------

@pytest.mark.parametrize("depth", [248, 1000, 20000])
def test_deeply_nested_parentheses_parse_and_evaluate(depth):
    assert np.array_equal(evaluate("(" * depth + "lane + 1" + ")" * depth), LANE + 1)


@pytest.mark.parametrize("src,expect", [
    ("+".join(["lane"] * 5000), 5000 * LANE),                                 # flat, left-deep
    ("lane" + " - 1" * 1000, LANE - 1000),
    ("lane" + " << 0" * 1000, LANE),
    ("lane" + " & lane" * 1000, LANE),
    ("1" + " && lane" * 1000, (LANE != 0).astype(int)),
    ("-" * 1001 + "lane", -LANE),
    ("~" * 1000 + "lane", LANE),
    ("(int)" * 1000 + "lane", LANE),
    ("lane == 0 ? 0 : " * 1000 + "lane", LANE),                               # right-nested ?:
    ("lane ? " * 1000 + "lane" + " : 0" * 1000, LANE),                        # nested in the middle
])
def test_thousands_of_chained_operators_and_conditionals(src, expect):
    assert np.array_equal(evaluate(src), expect)


def test_more_tokens_than_the_limit_is_one_error_naming_the_limit_and_the_position():
    src = "+".join(["1"] * (MAX_TOKENS // 2 + 1))
    with pytest.raises(AddrExprError, match=rf"position {MAX_TOKENS}: .*more than {MAX_TOKENS} tokens"):
        parse(src)


def test_a_5000_term_expression_over_32_lanes_evaluates_without_recursion():
    """The flat node list has no Python recursion: 5,000 terms evaluate (their speed: benchmarks)."""
    src = " + ".join(f"(lane * {i % 7} ^ {i})" for i in range(5000))
    assert np.array_equal(evaluate(src), sum((LANE * (i % 7)) ^ i for i in range(5000)))


# ---- item 3: literals and shift counts at and beyond 2**63 ---------------------------------------

def test_a_hex_literal_of_2_63_is_unsigned_long_as_in_c():
    assert ev("0x8000000000000000 >> 60") == 8
    assert ev("0xFFFFFFFFFFFFFFFF / 0x100000000") == 0xFFFFFFFF


@pytest.mark.parametrize("src,msg", [
    ("1 + 9223372036854775808", r"position 4: literal 9223372036854775808 is too large for long .*9223372036854775808u"),
    ("lane + 0x10000000000000000", r"position 7: literal 0x10000000000000000 does not fit in 64 bits"),
    ("1 << 0x8000000000000000", r"position 2: shift count 9223372036854775808 out of range 0..31 for int"),
    ("1LL << 64", r"position 4: shift count 64 out of range 0..63 for long"),
    ("lane << 32", r"position 5: shift count 32 out of range 0..31 for int"),
    ("1 >> (lane - 1)", r"position 2: shift count -1 out of range 0..31 for int .*\(at lane=0\)"),
    ("1lL", r"invalid suffix 'lL'"),
])
def test_literals_and_shift_counts_out_of_range_are_errors_with_the_position(src, msg):
    with pytest.raises(AddrExprError, match=msg):
        evaluate(src)


def test_a_huge_decimal_literal_with_u_is_unsigned_long():
    assert ev("9223372036854775808u >> 62") == 2


@pytest.mark.parametrize("src,value", [
    ("-1 < 2147483648", 1),        # decimal beyond int: long
    ("-1 < 0x80000000", 0),        # hex beyond int: unsigned int, so -1 converts to 4294967295
    ("0xFFFFFFFF + 1", 0),         # unsigned int wraps
    ("4294967295 + 1", 4294967296),  # decimal: long
    ("0xFFFFFFFFL + 1", 4294967296),
    ("1u - 2", 4294967295),
    ("1ul - 2 > 0", 1),
])
def test_literal_types_follow_c(src, value):
    assert ev(src) == value


# ---- item 4: overflow is an error, C at INT64_MIN ------------------------------------------------

INT64_MIN = "(-9223372036854775807 - 1)"


def test_the_issue_example_overflows_at_the_multiplication_on_every_lane():
    with pytest.raises(AddrExprError, match=r"position 12: 4294967296 \* 4294967296 overflows long .*"
                                            r"\(at lane=0; 32 lanes in all\)"):
        evaluate("0x100000000 * 0x100000000 + lane*4")


@pytest.mark.parametrize("src,msg", [
    ("9223372036854775807 + lane", r"position 20: 9223372036854775807 \+ 1 overflows long .*at lane=1; 31 lanes"),
    (f"{INT64_MIN} - lane", r"position 27: -9223372036854775808 - 1 overflows long .*at lane=1"),
    (f"-({INT64_MIN} + lane)", r"position 0: -\(-9223372036854775808\) overflows long .*at lane=0\)"),
    ("3037000500LL * (3037000499 + lane)", r"position 13: 3037000500 \* 3037000500 overflows long .*at lane=1"),
    (f"{INT64_MIN} * (lane - 1)", r"position 27: -9223372036854775808 \* -1 overflows long .*at lane=0; 30 lanes"),
    ("(lane + 1LL) << 62", r"position 13: 2 << 62 overflows long .*at lane=1"),
    ("2147483647 + lane", r"position 11: 2147483647 \+ 1 overflows int .*at lane=1"),
    ("lane * 0x10000000", r"position 5: 8 \* 268435456 overflows int .*at lane=8"),
    ("1 << 31", r"position 2: 1 << 31 overflows int"),
    ("-(-2147483647 - 1)", r"position 0: -\(-2147483648\) overflows int"),
    (f"{INT64_MIN} / -1", r"position 27: -9223372036854775808 / -1 overflows long"),
    (f"{INT64_MIN} % -1", r"position 27: -9223372036854775808 % -1 overflows long"),
    ("(-2147483647 - 1) / -(lane + 1)", r"position 18: -2147483648 / -1 overflows int .*at lane=0\)"),
])
def test_signed_overflow_is_an_error_naming_the_operator_position_and_the_lane(src, msg):
    with pytest.raises(AddrExprError, match=msg):
        evaluate(src)


@pytest.mark.parametrize("src,value", [
    (f"{INT64_MIN} / 3", -3074457345618258602),     # truncates toward zero
    (f"{INT64_MIN} % 3", -2),                        # the dividend's sign
    (f"{INT64_MIN} / 7 * 7 + {INT64_MIN} % 7", -(1 << 63)),
    (f"{INT64_MIN} / {INT64_MIN}", 1),
    (f"{INT64_MIN} >> 63", -1),
    ("9223372036854775807 * -1 - 1", -(1 << 63)),
    ("3037000499LL * 3037000499", 3037000499 ** 2),
    ("-1 << 4", -16),
])
def test_the_extremes_of_long_follow_c(src, value):
    assert ev(src) == value


@pytest.mark.parametrize("src,msg", [
    ("64 / (lane - 3)", r"position 3: division by zero \(at lane=3\)"),
    ("64 % (lane & 1)", r"position 3: remainder by zero \(at lane=0; 16 lanes in all\)"),
    ("64u / (lane - 3)", r"position 4: division by zero \(at lane=3\)"),
])
def test_division_by_zero_names_the_position_and_the_lane(src, msg):
    with pytest.raises(AddrExprError, match=msg):
        evaluate(src)


def test_overflow_in_a_branch_no_lane_takes_is_no_error():
    assert np.array_equal(evaluate("lane < 1 ? 2147483647 + lane : 0"), LANE * 0 + (LANE < 1) * 2147483647)
    assert np.array_equal(evaluate("lane > 0 && 9223372036854775807 + (1 - lane)"), (LANE > 0).astype(int))


# ---- item 5: casts have C's meaning ------------------------------------------------------------

@pytest.mark.parametrize("src,value", [
    ("(unsigned char)256", 0), ("(char)200", -56), ("(signed char)-129", 127), ("(short)40000", -25536),
    ("(unsigned short)-1", 65535), ("(int)4294967295", -1), ("(int8_t)255", -1), ("(uint8_t)-1", 255),
    ("(int16_t)0x18000", -32768), ("(uint32_t)-1", 4294967295), ("(long long)4294967296", 4294967296),
    ("(size_t)5", 5), ("(bool)7", 1), ("(bool)0", 0), ("(const unsigned int)-2", 4294967294),
    ("(unsigned long)-1 >> 1", (1 << 63) - 1), ("(long unsigned)-1 >> 60", 15),
])
def test_a_cast_wraps_to_the_width_and_sign_extends_signed_types(src, value):
    assert ev(src) == value


def test_the_issue_unsigned_cast_of_lane_minus_one():
    assert np.array_equal(evaluate("(unsigned)(lane - 1)"), np.where(LANE == 0, 4294967295, LANE - 1))
    assert np.array_equal(evaluate("(unsigned)lane - 1"), np.where(LANE == 0, 4294967295, LANE - 1))


@pytest.mark.parametrize("src,value", [
    ("(unsigned)(lane - 2) / 2", 2147483647),        # unsigned division
    ("(unsigned)(lane - 2) >> 1", 2147483647),       # logical shift
    ("(unsigned)(lane - 2) % 10", 4),
    ("-1 < 0u", 0),                                  # -1 converts to unsigned
    ("-1 < (long long)0u", 1),                       # long holds every unsigned int
    ("-1 < (unsigned char)0", 1),                    # promoted to int
    ("(unsigned char)200 + (unsigned char)100", 300),
    ("(char)(unsigned char)200", -56),
    ("lane ? 1u : -1", 4294967295),                  # ?: takes the common type
    ("~0u", 4294967295),
    ("-(unsigned)1", 4294967295),
    ("0x80000000u * 2", 0),
    ("(lane + 1u) << 31", 2147483648),
    ("(unsigned)(lane - 2) * 0x10000", 4294836224),
])
def test_unsigned_arithmetic_and_the_usual_conversions_follow_c_at_lane_0(src, value):
    assert int(evaluate(src)[0]) == value


def test_promoted_unsigned_short_operands_overflow_int_as_in_c():
    with pytest.raises(AddrExprError, match="65535 \\* 65535 overflows int"):
        evaluate("(unsigned short)65535 * (unsigned short)65535")


def test_an_unsigned_long_result_of_2_63_or_more_is_an_error_not_a_negative_offset():
    with pytest.raises(AddrExprError, match=r"position 8: the result is 18446744073709551600 \(unsigned long\)"
                                            r".*at lane=0; 8 lanes in all"):
        evaluate("(lane-8)*sizeof(half)")
    assert np.array_equal(evaluate("(lane + 8) * sizeof(half)"), (LANE + 8) * 2)


@pytest.mark.parametrize("src,msg", [
    ("(float)lane", r"position 0: 'float' is not an integer type"),
    ("(half)lane", r"'half' is not an integer type"),
    ("(char *)lane", r"position 6: expected '\)' to close the cast"),
    ("(unsigned short long)lane", r"'unsigned short long' is not a valid C type"),
    ("(auto)lane", r"\(auto\) is not a cast"),
    ("int + 1", "position 0: a statement starting with a type is a binding"),
])
def test_casts_to_other_types_are_refused(src, msg):
    with pytest.raises(AddrExprError, match=msg):
        evaluate(src)


def test_variables_are_int_unless_their_values_need_long():
    assert ev("k * 2", k=1 << 40) == 1 << 41
    with pytest.raises(AddrExprError, match="overflows int"):
        evaluate("k * 2", k=1 << 30)
    with pytest.raises(AddrExprError, match=r"variable 'k': value 9223372036854775808 does not fit"):
        evaluate("k", k=np.array([1 << 63], dtype=np.uint64))
    with pytest.raises(AddrExprError, match="variable 'k' = 36893488147419103232 does not fit"):
        evaluate("k", k=1 << 65)


# ---- item 6: let-bindings and swizzle() -----------------------------------------------------------

def test_the_issue_let_binding_example():
    got = evaluate("row = lane % 16; col = lane / 16; row * 64 + (col ^ (row >> 1 & 3)) * 16")
    row, col = LANE % 16, LANE // 16
    assert np.array_equal(got, row * 64 + (col ^ (row >> 1 & 3)) * 16)


def test_pasted_kernel_lines_with_types_and_a_trailing_semicolon():
    got = evaluate("const int row = lane % 16;\n int col = (lane / 16) * kb;\n row * pitch + col * 16;",
                   kb=2, pitch=128)
    assert np.array_equal(got, (LANE % 16) * 128 + (LANE // 16) * 2 * 16)


def test_a_typed_binding_converts_like_a_cast():
    assert np.array_equal(evaluate("unsigned char b = lane * 16; b"), (LANE * 16) % 256)
    assert np.array_equal(evaluate("unsigned u = lane - 1; u / 2"), np.where(LANE == 0, 2147483647, (LANE - 1) // 2))
    assert np.array_equal(evaluate("auto a = lane - 1; a / 2"), np.where(LANE == 0, 0, (LANE - 1) // 2))


def test_variables_lists_only_the_free_names():
    e = parse("row = lane % 16; col = row + k; int x = col * stride; x + row")
    assert e.variables == ("lane", "k", "stride")


@pytest.mark.parametrize("src,msg", [
    ("lane = 3; lane", r"position 0: cannot bind 'lane'"),
    ("a = 1; a = 2; a", r"position 7: 'a' is already bound at position 0"),
    ("b = k; k = 2; b", r"position 7: cannot bind 'k': position 4 already reads it as an outer variable"),
    ("k = k + 1; k", r"position 4: 'k' is used in its own binding"),
    ("a = 1;", r"the program ends after binding 'a'"),
    ("a = 1", r"the program ends after binding 'a'"),
    ("lane; 1", r"only the last statement may be a plain expression"),
    ("int = 3; 1", r"position 0: a statement starting with a type is a binding"),
    ("sizeof = 3; 1", r"cannot bind 'sizeof'"),
    ("a = lane = 3; a", r"position 9: '=' binds a name only at the start of a statement"),
    ("unsigned long short x = 1; x", r"not a valid C type"),
    ("1x = 2; 1", r"unexpected 'x'"),
])
def test_binding_errors_name_the_position(src, msg):
    with pytest.raises(AddrExprError, match=msg):
        evaluate(src, k=1)


def test_a_given_variable_that_the_program_binds_is_an_error():
    with pytest.raises(AddrExprError, match=r"variable 'row' is given, but position 0 .* binds it"):
        evaluate("row = lane; row", row=3)


def test_every_binding_is_evaluated_even_when_unused():
    with pytest.raises(AddrExprError, match=r"position 11: division by zero \(at lane=3\)"):
        evaluate("unused = 1 / (lane - 3); lane")


@pytest.mark.parametrize("b,m,s", [(3, 4, 3), (2, 4, 3), (1, 4, 3), (3, 3, 3), (2, 1, -3), (0, 5, 0)])
def test_swizzle_is_cutlass_swizzle(b, m, s):
    got = evaluate(f"swizzle({b}, {m}, {s}, lane * 48 + k)", k=np.array([[0], [1000]]))
    assert np.array_equal(got, Swizzle(b, m, s)(LANE * 48 + np.array([[0], [1000]])))


def test_swizzle_arguments_are_constant_expressions_and_calls_nest():
    got = evaluate("x = lane * 16; swizzle(1 + 2, sizeof(float), 1 << 1 | 1, swizzle(1, 1, 1, x))")
    assert np.array_equal(got, Swizzle(3, 4, 3)(Swizzle(1, 1, 1)(LANE * 16)))


@pytest.mark.parametrize("src,msg", [
    ("swizzle(3, 4, 2, lane)", r"position 0: Swizzle<3,4,2>: \|S\| must be >= B"),
    ("lane + swizzle(-1, 4, 3, lane)", r"position 7: Swizzle<-1,4,3>: B .* must be >= 0"),
    ("swizzle(lane, 4, 3, lane)", r"position 8: swizzle's B must be a constant expression, but it reads 'lane'"),
    ("swizzle(3, 4, 3)", r"position 0: swizzle takes 4 arguments \(B, M, S, x\), got 3"),
    ("swizzle(3, 4, 3, lane, 1)", r"swizzle takes 4 arguments .* got 5"),
    ("swizzle(3, 4, 3, lane - 1)", r"position 0: swizzle offset -1 \(int\) is negative \(at lane=0\)"),
    ("swizzle(4, 20, -10, lane << 20)", r"Swizzle<4,20,-10> of 2097152 gives 2149580800, beyond int"),
    ("swizzle(3, 4, 3, 1 / 0)", r"position 19: division by zero"),
    ("swizzle(3, 4, 3 lane)", r"position 16: expected an operator or '\)' but found 'lane'"),
    ("(1, 2)", r"position 2: unexpected ',' outside the arguments of swizzle"),
])
def test_swizzle_errors_name_the_position(src, msg):
    with pytest.raises(AddrExprError, match=msg):
        evaluate(src)


def test_swizzle_of_a_long_offset_beyond_int():
    assert np.array_equal(evaluate("swizzle(4, 20, -10, (long long)lane << 20)"),
                          Swizzle(4, 20, -10)(LANE.astype(np.int64) << 20))


def test_lane_may_be_a_scalar():
    assert int(evaluate("int r = lane % 16; swizzle(3, 4, 3, r * 128)", lane=9)) == Swizzle(3, 4, 3)(9 * 128)


# ---- property: C semantics on random expression trees, against Python integers ---------------------

_T = {"int": (32, True), "unsigned": (32, False), "long long": (64, True), "unsigned long long": (64, False),
      "char": (8, True), "unsigned char": (8, False), "short": (16, True), "unsigned short": (16, False)}


class _UB(Exception):
    pass


def _conv(v, t):
    bits, signed = _T[t]
    v %= 1 << bits
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _fits(v, t):
    bits, signed = _T[t]
    return -(1 << (bits - 1)) <= v < (1 << (bits - 1)) if signed else 0 <= v < (1 << bits)


def _promote(t):
    return "int" if _T[t][0] < 32 else t


def _common(a, b):
    a, b = _promote(a), _promote(b)
    if a == b:
        return a
    (ba, sa), (bb, sb) = _T[a], _T[b]
    if sa == sb:
        return a if ba >= bb else b
    u, s = (a, b) if not sa else (b, a)
    return u if _T[u][0] >= _T[s][0] else s


def _c_binary(op, x, y):
    """C's binary operator on (value, type) pairs, in Python integers; raises _UB."""
    (a, ta), (b, tb) = x, y
    if op in ("<<", ">>"):
        t = _promote(ta)
        if not 0 <= b < _T[t][0]:
            raise _UB
        r = a << b if op == "<<" else a >> b
        if op == "<<" and _T[t][1] and not _fits(r, t):
            raise _UB
        return _conv(r, t), t
    t = _common(ta, tb)
    a, b = _conv(a, t), _conv(b, t)
    if op in ("<", "=="):
        return int(a < b if op == "<" else a == b), "int"
    if op in ("/", "%"):
        if b == 0:
            raise _UB
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
        if not _fits(q, t):
            raise _UB
        r = q if op == "/" else a - b * q
    else:
        r = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b}[op]
    if _T[t][1] and not _fits(r, t):
        raise _UB
    return _conv(r, t), t


def _c_unary(op, x):
    a, ta = x
    if op.startswith("("):
        t = op[1:-1]
        return _conv(a, t), t
    t = _promote(ta)
    r = -a if op == "-" else ~a
    if _T[t][1] and not _fits(r, t):
        raise _UB
    return _conv(r, t), t


_LEAVES = st.one_of(
    st.integers(0, 40).map(lambda v: (str(v), lambda lane, v=v: (v, "int"))),
    st.integers(0, 2**31 - 1).map(lambda v: (str(v), lambda lane, v=v: (v, "int"))),
    st.integers(0, 2**32 - 1).map(lambda v: (f"{v}u", lambda lane, v=v: (v, "unsigned"))),
    st.integers(-2**40, 2**40).map(lambda v: (f"({v}LL)", lambda lane, v=v: (v, "long long"))),
    st.just(("lane", lambda lane: (lane, "int"))),
)
_BINOPS = ["+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "<", "==", "&&"]
_UNOPS = ["-", "~"] + [f"({t})" for t in _T]


def _tree(children):
    def binary(args):
        op, (sa, fa), (sb, fb) = args
        if op == "&&":        # the right-hand side only where the left is nonzero
            return (f"({sa} && {sb})",
                    lambda lane: (int(fa(lane)[0] != 0 and fb(lane)[0] != 0), "int"))
        return (f"({sa} {op} {sb})", lambda lane: _c_binary(op, fa(lane), fb(lane)))

    def unary(args):
        op, (s, f) = args
        return (f"({op}{s})", lambda lane: _c_unary(op, f(lane)))
    return st.one_of(st.tuples(st.sampled_from(_BINOPS), children, children).map(binary),
                     st.tuples(st.sampled_from(_UNOPS), children).map(unary))


@settings(max_examples=400, deadline=None)
@given(st.recursive(_LEAVES, _tree, max_leaves=10))
def test_random_expressions_match_c_on_every_lane_or_fail_where_c_is_undefined(e):
    """Trees over + - * / % << >> & | ^ < == && - ~ and casts, on int, unsigned, long long operands:
    evaluate agrees with C computed in Python integers, and raises exactly where C is undefined
    (or the result is an unsigned long of 2**63 or more)."""
    src, f = e
    try:
        want = []
        for lane in range(32):
            v, t = f(lane)
            if v >= 1 << 63:
                raise _UB
            want.append(v)
    except _UB:
        with pytest.raises(AddrExprError):
            evaluate(src)
        return
    assert evaluate(src).tolist() == want
