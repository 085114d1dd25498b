"""C address expressions (fragsim.search.addrexpr): C's operators, precedence and errors."""

import numpy as np
import pytest

from fragsim.search.addrexpr import evaluate, parse

LANE = np.arange(32)


def ev(src, **kw):
    v = evaluate(src, **kw)
    assert v.shape == (32,) and (v == v[0]).all()
    return int(v[0])


# ---- C semantics of / and % ------------------------------------------------------------------

@pytest.mark.parametrize("src,value", [("7 / 2", 3), ("-7 / 2", -3), ("7 / -2", -3), ("-7 / -2", 3),
                                       ("7 % 2", 1), ("-7 % 2", -1), ("7 % -2", 1), ("-7 % -2", -1)])
def test_division_truncates_toward_zero_and_remainder_takes_the_dividends_sign(src, value):
    assert ev(src) == value


def test_right_shift_of_a_negative_value_is_arithmetic():
    assert ev("-16 >> 2") == -4


# ---- precedence and associativity, as in C ---------------------------------------------------

@pytest.mark.parametrize("src,value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("1 << 2 + 1", 8), ("16 >> 1 >> 1", 4),
    ("10 - 4 - 3", 3), ("100 / 10 / 5", 2), ("6 & 3 ^ 5 | 8", 15), ("1 | 2 ^ 3 & 4", 3),
    ("1 < 2 == 1", 1), ("3 > 2 > 1", 0), ("0 || 1 && 0", 0), ("1 ? 2 : 0 ? 3 : 4", 2),
    ("0 ? 2 : 0 ? 3 : 4", 4), ("-2 * -3", 6), ("~0 & 0xff", 255), ("!3 + !0", 1), ("- - 5", 5),
    ("2 * 3 % 4", 2), ("1 + 2 << 1", 6), ("5 & 4 == 4", 1),
])
def test_c_precedence(src, value):
    assert ev(src) == value


@pytest.mark.parametrize("src,value", [("0x1F", 31), ("0X10", 16), ("010", 8), ("0b101", 5),
                                       ("16u", 16), ("3UL", 3), ("0", 0)])
def test_integer_literals(src, value):
    assert ev(src) == value


def test_sizeof_and_integer_casts():
    assert ev("row * 16 * sizeof(half) + (unsigned int)col", row=2, col=3) == 67
    assert ev("sizeof(float4) + sizeof(__nv_bfloat16)") == 18


# ---- vectorized over lanes and variables ------------------------------------------------------

def test_lane_defaults_to_0_to_31():
    assert np.array_equal(evaluate("lane"), LANE)


def test_the_issue_example_is_an_xor_swizzled_ldmatrix_address():
    got = evaluate("(lane % 16) * 64 + (((lane / 16) ^ (lane % 16 & 3)) * 16)")
    assert np.array_equal(got, (LANE % 16) * 64 + (((LANE // 16) ^ (LANE % 16 & 3)) * 16))


def test_seed_001_ldmatrix_b_address_math():
    src = "(((lane >> 4) << 3) + (lane & 7)) * 64 + ((((lane >> 3) & 1) + 2 * kb) ^ ((((lane >> 4) << 3) + (lane & 7)) & 3)) * 16"
    row = ((LANE >> 4) << 3) + (LANE & 7)
    assert np.array_equal(evaluate(src, kb=1), row * 64 + ((((LANE >> 3) & 1) + 2) ^ (row & 3)) * 16)


def test_variables_broadcast_and_are_listed():
    e = parse("lane * stride + k")
    assert e.variables == ("lane", "stride", "k")
    got = e(stride=8, k=np.array([[0], [1]]))
    assert got.shape == (2, 32) and got[1, 3] == 25


def test_short_circuit_skips_division_by_zero_in_the_unused_branch():
    assert np.array_equal(evaluate("lane != 0 ? 64 / lane : 0")[:3], [0, 64, 32])
    assert np.array_equal(evaluate("lane && 64 / lane")[:2], [0, 1])


# ---- errors name the position and the token -----------------------------------------------------

@pytest.mark.parametrize("src,msg", [
    ("(lane + 1", "position 9: expected '\\)' but found the end of the expression"),
    ("lane * * 2", "position 7: expected a number, a variable or '\\(' but found '\\*'"),
    ("lane $ 2", "position 5: unexpected character '\\$'"),
    ("lane 2", "position 5: unexpected '2' after a complete expression"),
    ("", "empty address expression"),
    ("08", "position 0: '08' is not a valid octal literal"),
    ("sizeof(foo)", "position 7: sizeof\\(foo\\) is not known"),
    ("a ? 1", "expected ':' but found the end"),
])
def test_syntax_errors_name_position_and_token(src, msg):
    with pytest.raises(ValueError, match=msg):
        evaluate(src, a=1)


def test_unknown_variable_names_position_and_how_to_give_it():
    with pytest.raises(ValueError, match="position 7: unknown variable 'row'.*row=0"):
        evaluate("lane + row")


def test_division_by_zero_names_the_lane():
    with pytest.raises(ValueError, match=r"position 3: division by zero \(at lane=3\)"):
        evaluate("64 / (lane - 3)")


def test_shift_out_of_range_is_an_error():
    with pytest.raises(ValueError, match="shift count 70 out of range"):
        evaluate("1 << 70")


def test_no_python_evaluation():
    with pytest.raises(ValueError):
        evaluate("__import__('os')")


def test_sizeof_of_a_type_without_a_size_is_an_error_naming_the_position():
    """sizeof(auto) has no size: one AddrExprError, not an AttributeError from inside the evaluator."""
    from fragsim.search.addrexpr import AddrExprError

    with pytest.raises(AddrExprError, match=r"position \d+: sizeof\(auto\) is not known"):
        evaluate("lane * sizeof(auto)")
