"""fragsim.ranges: the one way lanes, registers and banks are listed as runs."""

from fragsim.ranges import format_ranges, runs


def test_runs_are_maximal_and_sorted():
    assert runs([5, 0, 1, 2, 2, 9, 8]) == [(0, 2), (5, 5), (8, 9)]


def test_an_empty_list_prints_what_the_caller_chose():
    assert format_ranges([], empty="none") == "none"
    assert format_ranges([]) == ""


def test_separator_and_prefix_name_every_endpoint():
    assert format_ranges([0, 1, 2, 3, 6], sep=", ", prefix="r") == "r0-r3, r6"


def test_short_runs_write_a_pair_as_two_items_and_a_run_end_without_prefix():
    assert format_ranges([0, 1, 4, 5, 6, 7, 9], prefix="T", short_runs=True) == "T0,T1,T4-7,T9"
