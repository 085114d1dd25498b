"""fragsim swizzle (ranked table, --json, --compare, user expressions) and fragsim conflicts --swizzle/--pitch."""

import json

from fragsim.cli import main

BF16 = "m16n8k16.row.col.f32.bf16.bf16.f32"


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_presets_print_a_ranked_table_with_the_cost_of_doing_nothing(capsys):
    code, out, _ = run(capsys, "swizzle", "--tile", "128x32 bf16", "--preset", "copy", "--preset", "a",
                       "--form", BF16, "--top", "3")
    assert code == 0
    lines = out.splitlines()
    head = next(i for i, ln in enumerate(lines) if ln.startswith("rank"))
    assert lines[head + 1].split()[:4] == ["1", "Swizzle<2,4,3>", "192", "0"]
    assert any(ln.split()[:5] == ["-", "none", "(doing", "nothing)", "576"] for ln in lines)
    assert "copy (cp.async.ca.16)" in lines[head] and "A (ldmatrix.x4)" in lines[head]


def test_json_has_the_ranked_candidates_and_the_floor(capsys):
    code, out, _ = run(capsys, "swizzle", "--tile", "64x64 f16", "--preset", "a", "--form",
                       "m16n8k16.row.col.f32.f16.f16.f32", "--top", "1", "--json")
    d = json.loads(out)
    assert code == 0 and d["ranked"][0]["layout"] == "Swizzle<3,4,3>" and d["floor"] == d["ranked"][0]["wavefronts"]
    assert d["nothing"]["conflicts"] > 0


def test_compare_mode_prints_one_labelled_table(capsys):
    code, out, _ = run(capsys, "swizzle", "--tile", "128x32 bf16", "--preset", "a", "--form", BF16,
                       "--compare", "none", "2,4,2", "2,4,3", "pitch=80", "xor:4^8,5^7")
    assert code == 0
    ranked = [ln.split()[1] for ln in out.splitlines() if ln[:4].strip().isdigit()]
    assert set(ranked) == {"none", "Swizzle<2,4,2>", "Swizzle<2,4,3>", "pitch", "XorMap(b4^=b8,"}


def test_user_expressions_with_variables_and_the_as_written_row(capsys):
    code, out, _ = run(capsys, "swizzle", "--tile", "128x32 bf16 swizzle=2,4,2", "--var", "wm=0..1",
                       "--var", "mf=0..3", "--var", "kb=0,1", "--read",
                       "ldmatrix.x4: int row = wm*64 + mf*16 + (lane & 15); int atom = kb*2 + (lane >> 4); "
                       "row*64 + ((atom ^ (row & 3))*16)", "--top", "1")
    assert code == 0
    assert "your addresses, as written" in out and "Swizzle<2,4,2> (your tile's layout)" in out


def test_bad_input_is_one_line_and_exit_code_2(capsys):
    code, _, err = run(capsys, "swizzle", "--tile", "128x32 bf16", "--preset", "a")
    assert code == 2 and err.strip() == "fragsim swizzle: error: --preset a needs --form (the mma form whose fragments it moves)"
    code, _, err = run(capsys, "swizzle", "--tile", "128x32 bf16", "--read", "ldmatrix.x4 lane*64")
    assert code == 2 and "expected 'OP: EXPR'" in err and len(err.strip().splitlines()) == 1
    code, _, err = run(capsys, "swizzle", "--tile", "128x32 bf16", "--preset", "copy", "--compare", "xor:4")
    assert code == 2 and "xor:T^S" in err


def test_conflicts_compares_swizzles_and_pitches_in_one_table(capsys):
    code, out, _ = run(capsys, "conflicts", "ldmatrix.x4", "--addrs", "(lane % 16) * pitch + (lane / 16) * 16",
                       "--pitch", "64", "--pitch", "80", "--swizzle", "none", "--swizzle", "2,4,3")
    assert code == 0
    rows = {ln[:26].strip(): ln.split()[-3:] for ln in out.splitlines()[2:]}
    assert rows == {"pitch=64, no swizzle": ["16", "4", "12"], "pitch=64, Swizzle<2,4,3>": ["4", "4", "0"],
                    "pitch=80, no swizzle": ["4", "4", "0"], "pitch=80, Swizzle<2,4,3>": ["8", "4", "4"]}


def test_conflicts_swizzle_json_and_its_refusals(capsys):
    code, out, _ = run(capsys, "conflicts", "ldmatrix.x4", "--addrs", "(lane % 16) * 128 + (lane / 16) * 16",
                       "--swizzle", "3,4,3", "--json")
    assert code == 0 and json.loads(out)["layouts"] == [
        {"layout": "Swizzle<3,4,3>", "wavefronts": 4, "ideal": 4, "conflicts": 0, "instructions": 1}]
    code, _, err = run(capsys, "conflicts", "ldmatrix.x4", "--addrs", "lane * 16", "--swizzle", "3,4")
    assert code == 2 and "expected B,M,S" in err


#: The A tile's ldmatrix.x4 reads of a 4-warp CTA (128x32 bf16, 64-byte rows), unswizzled: 32 instructions.
GEMM_READ = "int row = (warp/2)*64 + mf*16 + (lane & 15); row*64 + (kb*2 + (lane >> 4))*16"
GEMM_VARS = ["--var", "warp=0..3", "--var", "mf=0..3", "--var", "kb=0..1"]


def test_conflicts_swizzle_takes_ranged_vars_and_totals_each_layout_over_the_tile_as_the_search_does(capsys):
    code, out, _ = run(capsys, "conflicts", "ldmatrix.x4", *GEMM_VARS, "--addrs", GEMM_READ,
                       "--swizzle", "none", "--swizzle", "2,4,3", "--json")
    assert code == 0
    layouts = {x["layout"]: x for x in json.loads(out)["layouts"]}
    assert {k: (v["instructions"], v["wavefronts"], v["conflicts"]) for k, v in layouts.items()} == {
        "no swizzle": (32, 512, 384), "Swizzle<2,4,3>": (32, 128, 0)}
    assert {x["conflicts"] for x in layouts["no swizzle"]["per_instruction"]} == {12}
    code, out, _ = run(capsys, "swizzle", "--tile", "128x32 bf16", *GEMM_VARS, "--read", "ldmatrix.x4: " + GEMM_READ,
                       "--compare", "none", "2,4,3", "--json")
    searched = {c["layout"]: (c["wavefronts"], c["conflicts"]) for c in json.loads(out)["ranked"]}
    assert searched == {"none": (512, 384), "Swizzle<2,4,3>": (128, 0)}


def test_both_commands_say_what_they_measure_and_which_addresses_a_swizzle_applies_to(capsys):
    code, out, _ = run(capsys, "conflicts", "ldmatrix.x4", *GEMM_VARS, "--addrs", GEMM_READ, "--swizzle", "2,4,3")
    assert code == 0
    head, _, row = out.splitlines()
    assert "32 instructions" in head and "each swizzle applied to every lane's address" in head
    assert "totals over the 32 instructions (per instruction)" in head
    assert row.split() == ["Swizzle<2,4,3>", "128", "(4/instr)", "128", "(4/instr)", "0", "(0/instr)"]
    code, out, _ = run(capsys, "swizzle", "--tile", "128x32 bf16 swizzle=2,4,3", *GEMM_VARS,
                       "--read", "ldmatrix.x4: " + GEMM_READ, "--top", "1")
    assert code == 0
    assert ("your --read/--write addresses are taken as already laid out in Swizzle<2,4,3> (the tile's layout): they "
            "are read back through it to find the element each lane moves, not swizzled again") in out
    assert "wavefronts, conflicts: totals over the access set's 32 warp instructions" in out
    for argv in (["swizzle", "--help"], ["conflicts", "--help"]):
        try:
            main(argv)
        except SystemExit:
            pass
    helps = " ".join(capsys.readouterr().out.split())
    assert "say how your --read/--write addresses are ALREADY laid out" in helps
    assert "--addrs gives unswizzled offsets" in helps and "each layout's figures are totals over every instruction" in helps
