"""What the contract fuzz found (issue 9), one documented case each: the input that broke the
contract, and the one-line error (or the right answer) it gives now."""

import numpy as np
import pytest

import fragsim
from fragsim.search.addrexpr import evaluate
from fragsim.cli import main

F32 = "m16n8k16.row.col.f32.f16.f16.f32"
RAGGED = [[1, [2]]]


@pytest.mark.parametrize("call, name", [
    (lambda: fragsim.pack(F32, "A", RAGGED), "operand A of m16n8k16.row.col.f32.f16.f16.f32"),
    (lambda: fragsim.unpack(F32, "B", RAGGED), "operand B of m16n8k16.row.col.f32.f16.f16.f32: registers"),
    (lambda: fragsim.mma(F32, RAGGED, RAGGED, RAGGED), "operand A of m16n8k16.row.col.f32.f16.f16.f32: registers"),
    (lambda: fragsim.ldmatrix(np.zeros(64, np.uint8), RAGGED, 1), "addrs"),
    (lambda: fragsim.ld_shared(np.zeros(64, np.uint8), np.zeros(32, int), 1, RAGGED), "mask"),
    (lambda: fragsim.st_shared(np.zeros(64, np.uint8), np.zeros(32, int), RAGGED, 1), "st.shared.u8 values"),
    (lambda: fragsim.cp_async(np.zeros(64, np.uint8), np.zeros(32, int), RAGGED, 4), "cp.async.ca.4: src"),
    (lambda: fragsim.Swizzle(3, 4, 3)(RAGGED), "Swizzle<3,4,3>: offsets"),
    (lambda: fragsim.from_bits(RAGGED, "f16"), "f16 bit patterns"),
    (lambda: evaluate("lane + k", k=RAGGED), "variable 'k'"),
    (lambda: fragsim.bank_conflicts("ld.shared.b32", RAGGED), "addrs"),
    (lambda: fragsim.bank_conflicts("ld.shared.b32", np.zeros((2, 32), int), mask=RAGGED), "mask"),
    (lambda: fragsim.bank_conflicts("cp.async.ca.4", np.zeros(32, int), src=RAGGED), "src"),
])
def test_nested_sequences_of_unequal_lengths_are_refused_naming_the_parameter(call, name):
    """NumPy's "inhomogeneous shape" error named no parameter."""
    with pytest.raises(ValueError, match=rf"^{name} must be a rectangular array, got nested sequences of unequal lengths"):
        call()


def test_to_bits_takes_arrays_of_more_than_32_dimensions():
    """np.broadcast_arrays stops at 32 dimensions (RuntimeError); the rounding broadcasts itself."""
    x = np.full((1,) * 64, 1.5)
    assert fragsim.to_bits(x, "f16").shape == x.shape and int(fragsim.to_bits(x, "f16").ravel()[0]) == 0x3E00


def test_address_variables_of_more_than_32_dimensions_broadcast():
    k = np.ones((1,) * 63, np.int64)
    got = evaluate("lane * 4 + k", k=k)
    assert got.shape == (1,) * 62 + (32,) and got.ravel().tolist() == [4 * lane + 1 for lane in range(32)]


def test_a_variable_that_does_not_broadcast_with_lane_is_named():
    with pytest.raises(ValueError, match=r"^lane shaped \(32,\) and variable 'k' shaped \(33,\) do not broadcast together$"):
        evaluate("lane + k", k=np.zeros(33, np.int64))


def test_lane_given_as_booleans_is_refused():
    """evaluate("lane * 4", True) gave 4: a bool is not a lane index."""
    with pytest.raises(TypeError, match="^lane must be an integer or integer array, got dtype bool$"):
        evaluate("lane * 4", True)


def test_a_variable_the_expression_does_not_read_is_still_checked():
    """evaluate("lane", k=None) ran as if k were fine; an unread variable (one --var set serves
    --addrs and --src) is allowed, a wrong one is not."""
    assert evaluate("lane", k=5).tolist() == list(range(32))
    with pytest.raises(TypeError, match="^variable 'k' must be an integer or integer array, got dtype object$"):
        evaluate("lane", k=None)
    with pytest.raises(ValueError, match="variable 'k' = 9223372036854775808 does not fit in 64-bit signed"):
        evaluate("lane", k=2**63)


def test_a_decimal_literal_of_thousands_of_digits_is_too_large_for_c():
    """Python refuses to convert more than 4300 decimal digits (a ValueError naming no position)."""
    with pytest.raises(ValueError, match="^position 7: literal 1111.* does not fit in 64 bits"):
        evaluate("lane + " + "1" * 5000)


def test_a_cp_async_size_of_thousands_of_digits_is_refused_as_a_size():
    with pytest.raises(ValueError, match=r"is 5,012 characters long; no op has more than 256$"):
        fragsim.parse_shared_op("cp.async.ca." + "1" * 5000)


@pytest.mark.parametrize("rounding", [np.array(["rne"]), np.array([], dtype=str), ["rz"]])
def test_rounding_given_as_an_array_is_named(rounding):
    """`rounding not in (...)` on an array asked NumPy for a truth value."""
    with pytest.raises(ValueError, match=r"^rounding must be 'rne' or 'rz', got (an array of shape|list)"):
        fragsim.to_bits(1.0, "f16", rounding)


@pytest.mark.parametrize("store", [
    lambda s: fragsim.st_shared(s, np.arange(32) * 4, np.zeros((32, 1), np.uint32), 4),
    lambda s: fragsim.stmatrix(s, np.arange(32) * 16, np.zeros((32, 1), np.uint32), 1),
    lambda s: fragsim.cp_async(s, np.arange(32) * 4, np.zeros((32, 4), np.uint8), 4),
])
def test_a_store_into_read_only_smem_names_smem(store):
    smem = np.zeros(1024, np.uint8)
    smem.setflags(write=False)
    with pytest.raises(ValueError, match="^smem is read-only; stores write into it in place$"):
        store(smem)


def test_loads_take_read_only_smem():
    smem = np.arange(1024, dtype=np.uint32).astype(np.uint8)
    smem.setflags(write=False)
    assert fragsim.ld_shared(smem, np.arange(32) * 4, 1)[:3, 0].tolist() == [0, 4, 8]


@pytest.mark.parametrize("reg, half, message", [
    (4, 0, r"reg must be 0, 1, 2 or 3 \(operand A of m16n8k16.row.col.f32.f16.f16.f32\), got 4"),
    (-1, 0, r"reg must be 0, 1, 2 or 3"), (0, 2, r"half must be 0 or 1"),
    (1.0, 0, r"reg must be an integer"), (0, True, r"half must be an integer")])
def test_element_name_checks_register_and_half(reg, half, message):
    """element_name("A", 4, 0) was "a8" and ("A", -1, 0) "a-2": names of elements that do not exist."""
    f = fragsim.lookup(F32)
    with pytest.raises((ValueError, TypeError), match=f"^{message}"):
        f.element_name("A", reg, half)


def test_element_name_is_the_ptx_name():
    f = fragsim.lookup(F32)
    assert f.element_name("a", 3, 1) == "a7" and f.element_name("C", 1, 0) == "c1"


@pytest.mark.parametrize("operand", [None, 0, np.array(["A"])])
def test_element_name_refuses_a_non_operand(operand):
    """An int or an array gave AttributeError ('int' object has no attribute 'lower')."""
    with pytest.raises(ValueError, match="^operand must be one of A, B, C, D"):
        fragsim.lookup(F32).element_name(operand, 0, 0)


@pytest.mark.parametrize("option, value", [("--seed", "-1"), ("--jobs", "0"), ("--jobs", "-2"), ("--details", "-1"),
                                           ("--record-cases", "-1")])
def test_gpu_check_refuses_negative_counts_before_running(option, value, capsys):
    """--seed -1 failed inside NumPy after the header ("expected non-negative integer"); the others
    were taken silently."""
    assert main(["gpu-check", "--dry-run", "--cases", "1", "--forms", "ldmatrix.x1", option, value]) == 2
    err = capsys.readouterr().err
    assert err == f"fragsim gpu-check: error: {option} must be >= {0 if option != '--jobs' else 1}, got {value}\n"


@pytest.mark.parametrize("shape", [(1, 1, 32), (2, 16)])
def test_addrs_file_npy_of_another_shape_is_refused(shape, tmp_path, capsys):
    """A (1, 1, 32) or (2, 16) array was silently read as instructions of 32 addresses."""
    path = tmp_path / "addrs.npy"
    np.save(path, np.zeros(shape, np.int64))
    assert main(["conflicts", "ld.shared.b32", "--addrs-file", str(path)]) == 2
    assert capsys.readouterr().err == (f"fragsim conflicts: error: --addrs-file {path}: expected an array shaped (32,), "
                                       f"(32 * n,) or (n, 32), got shape {shape}\n")


# -- tiles, XOR maps, the swizzle search, the address-math check -----------------------------------

def test_tile_dtype_none_is_refused():
    """np.dtype(None) is float64: Tile(16, 64, None) was a tile of f64."""
    with pytest.raises(TypeError, match="^Tile: dtype must be a name such as 'bf16' or a NumPy dtype, got NoneType$"):
        fragsim.Tile(16, 64, None)


@pytest.mark.parametrize("base", [2**32, 2**63])
def test_tile_base_past_32_bit_shared_memory_is_refused(base):
    with pytest.raises(ValueError, match=r"^Tile: 16 rows x 64 cols of f16 \(2048 bytes\) at base 0x[0-9a-f]+ does not fit "
                                         r"in sm_90's 232448 bytes \(227 KB\) of shared memory per CTA"):
        fragsim.Tile(16, 64, "f16", base=base)


def test_tile_footprint_error_names_the_geometry():
    with pytest.raises(ValueError, match=r"Tile: 16 rows x 9223372036854775808 cols of f16 \(268435456 TiB\) does not fit"):
        fragsim.Tile(16, 2**63, "f16")


@pytest.mark.parametrize("call, name", [
    (lambda t: t.offset(RAGGED, 0), "Tile.offset: row"), (lambda t: t.locate(RAGGED), "Tile.locate: addresses"),
    (lambda t: t.write(np.zeros(4096, np.uint8), RAGGED), "Tile.write: matrix")])
def test_tile_methods_refuse_ragged_sequences_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=f"^{name} must be a rectangular array"):
        call(fragsim.Tile(16, 64, "f16"))


def test_tile_offset_of_arrays_with_many_dimensions():
    t = fragsim.Tile(16, 64, "f16", swizzle=fragsim.Swizzle(3, 4, 3))
    got = t.offset(np.full((1,) * 40, 3), 5)
    assert got.shape == (1,) * 40 and int(got.ravel()[0]) == t.offset(3, 5)


def test_tile_write_into_read_only_smem_names_smem():
    smem = np.zeros(4096, np.uint8)
    smem.setflags(write=False)
    with pytest.raises(ValueError, match="^smem is read-only; Tile.write writes into it in place$"):
        fragsim.Tile(4, 4, "f16").write(smem, np.zeros((4, 4), np.uint16))


@pytest.mark.parametrize("images", [None, 5, 4.0, "ab", b"4", {4: 7}, np.zeros((2, 2), np.int64)])
def test_xor_map_images_must_be_a_sequence_of_integers(images):
    """None or an int: "'int' object is not iterable"; bytes, a str or a dict iterated into a map."""
    with pytest.raises(TypeError, match="^XorMap: images must be a sequence of integers"):
        fragsim.XorMap(images)


@pytest.mark.parametrize("terms, message", [(None, "terms must be a dict"), ([4, 7], "terms must be a dict"),
                                            ({4: 7}, "the source bits of bit 4 must be a list of bits")])
def test_xor_map_xor_terms_are_checked(terms, message):
    """A list gave AttributeError ('list' object has no attribute 'items'), {4: 7} a TypeError
    about unpacking."""
    with pytest.raises(TypeError, match=f"^XorMap.xor: {message}"):
        fragsim.XorMap.xor(terms)


def test_xor_map_refuses_uint64_offsets_it_cannot_compute_instead_of_calling_them_negative():
    x = fragsim.XorMap.xor({4: [7]})
    with pytest.raises(ValueError, match=r"offsets must be < 2\*\*63, got 9223372036854775824 at index \(0,\)$"):
        x(np.array([2**63 + 16], np.uint64))
    assert x(np.array([2**62 + 128], np.uint64)).tolist() == [2**62 + 128 + 16]


def test_xor_map_on_arrays_of_more_than_32_dimensions():
    x = fragsim.XorMap.xor({4: [7]})
    assert x(np.full((1,) * 40, 128)).ravel().tolist() == [144]


@pytest.mark.parametrize("max_padding", [-16, 2**63])
def test_swizzle_search_max_padding_is_bounded(max_padding):
    """2**63 looped over 2**59 pitches; -16 searched no padding without a word."""
    from fragsim.search import access as A
    t = fragsim.Tile(16, 64, "f16")
    with pytest.raises(ValueError, match=r"^max_padding must be in 0\.\.4096 bytes"):
        fragsim.swizzle_search(t, A.row_reads(t, threads=32), max_padding=max_padding)


@pytest.mark.parametrize("role", ["reads", "writes"])
@pytest.mark.parametrize("value", [5, "", {}, np.zeros(0)])
def test_swizzle_search_access_sets_are_checked(role, value):
    """5 gave "'int' object is not iterable"; "", {} and an empty array were taken as no accesses."""
    from fragsim.search import access as A
    t = fragsim.Tile(16, 64, "f16")
    other = {"writes": A.copy(t, threads=32)} if role == "reads" else {"reads": A.row_reads(t, threads=32)}
    with pytest.raises(TypeError, match=f"^{role} must be an access set"):
        fragsim.swizzle_search(t, **{role: value}, **other)


@pytest.mark.parametrize("kw, message", [
    ({"threads": 2**63}, r"threads must be a positive multiple of 32 \(whole warps\) up to 1024"),
    ({"variables": {"p": range(10**12)}}, "variables: p has more than 16384 values"),
    ({"variables": {"p": range(200), "q": range(200)}}, "variables: 200 x 200 combinations of p, q make more than"),
    ({"global_pitch": 2**63}, r"global_pitch 9223372036854775808: 16 lines of the source matrix would pass 2\*\*62")])
def test_check_copy_bounds_what_it_expands(kw, message):
    """threads=2**63 ran out of memory, a range of 10**12 values ran for ever, a global pitch of 2**63
    was taken."""
    with pytest.raises(ValueError, match=f"^{message}"):
        fragsim.check_copy(fragsim.Tile(16, 8, "f16"), [("cp.async.cg.16", "lane * 16")], **kw)


@pytest.mark.parametrize("preset", [lambda t, A: A.copy(t, threads=2**40),
                                    lambda t, A: A.mma_operand(t, F32, "A", warps=(2**20, 2**20))])
def test_access_presets_take_at_most_a_cta(preset):
    """warps=(2**20, 2**20) looped over 2**40 warps."""
    from fragsim.search import access as A
    with pytest.raises(ValueError, match="(up to 1024 \\(a CTA\\)|a CTA has at most 32 warps)"):
        preset(fragsim.Tile(64, 64, "f16"), A)


def test_swizzle_command_refuses_a_range_of_a_trillion_values(capsys):
    """--var k=0..10**12 built the list (MemoryError, a traceback)."""
    assert main(["swizzle", "--tile", "32x32 bf16", "--read", "ld.shared.v4.b32: (k & 1) * 16",
                 "--var", f"k=0..{10**12}"]) == 2
    assert capsys.readouterr().err == f"fragsim swizzle: error: --var k=0..{10**12}: {10**12 + 1} values, more than 16384\n"


def test_an_argument_with_a_line_break_stays_on_one_line_of_stderr(capsys):
    """argparse quoted the argument as it was: the error took two lines."""
    with pytest.raises(SystemExit):
        main(["layout", F32, "A", "x\ny"])
    assert capsys.readouterr().err == "fragsim: error: unrecognized arguments: x\\ny\n"


@pytest.mark.parametrize("mask", [-1, 2**63])
def test_one_int_mask_is_range_checked_for_an_empty_batch_too(mask):
    """The int was spread over the batch before its range check: an empty batch took any value."""
    with pytest.raises(ValueError, match="^mask .* does not fit in 32 bits"):
        fragsim.bank_conflicts("ld.shared.b32", np.zeros((0, 32), int), mask=mask)
