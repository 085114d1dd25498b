"""fragsim.TensorMap, tma_load, tma_store, bulk_copy: one documented or measured property each.

TensorMap refuses what cuTensorMapEncodeTiled refuses (CUDA Driver API, and the 580 driver's box-size
limit), naming the parameter; a load lays the box out innermost first, rows a swizzle span apart at
least, swizzled on the absolute shared address (PTX ISA 5.5.7), fills out-of-bound elements with zeros
or the 0x7FF7 NaN (5.5.3.3), rounds tf32 to tf32, walks element strides (5.5.3.2); a store is its
reverse, writing whole 16-byte chunks of each row.  The measured rules are the H100 recording's
(tests/data/tma/run1; fragsim/facts/tma.py names each)."""

import numpy as np
import pytest

import fragsim
from fragsim.facts.tma import MAX_BOX_BYTES, TMA_TYPES, TF32_NAN, oob_nan
from fragsim.layout.swizzle import Swizzle
from fragsim.tma import TensorMap, box_layout, bulk_copy, load_values, tma_load, tma_store, tma_swizzle

SPANS = {"32B": 32, "64B": 64, "128B": 128}


def ids16(n):
    """n distinct 16-bit elements (their own index)."""
    return np.arange(n, dtype=np.uint16)


# -- TensorMap: cuTensorMapEncodeTiled's rules -------------------------------------------------------

GOOD = dict(dtype="f16", global_dims=(64, 32), global_strides=(128,), box_dims=(64, 8))

REFUSED = [
    (dict(global_dims=(), global_strides=(), box_dims=()), ValueError, "rank (tensorRank) must be 1..5"),
    (dict(global_dims=(2,) * 6, global_strides=(16,) * 5, box_dims=(8,) * 6), ValueError, "must be 1..5"),
    (dict(global_strides=(128, 256)), ValueError, "global_strides has 2 values, rank 2 needs 1"),
    (dict(box_dims=(64,)), ValueError, "box_dims has 1 values, rank 2 needs 2"),
    (dict(element_strides=(1, 1, 1)), ValueError, "element_strides has 3 values"),
    (dict(base=8), ValueError, "base 0x8 must be 16-byte aligned (globalAddress)"),
    (dict(base=-16), ValueError, "base -16 must be a 64-bit global address, 0 <= base < 2^64"),
    (dict(base=2**64), ValueError, "base 18446744073709551616 must be a 64-bit global address"),
    (dict(global_dims=np.array(64)), TypeError, "global_dims must be a sequence of integers (a list, tuple or 1-D"),
    (dict(box_dims={64: 1, 8: 1}), TypeError, "box_dims must be a sequence of integers"),
    (dict(global_dims=(64, 0)), ValueError, "global_dims[1] = 0 must be 1..2^32 elements (globalDim)"),
    (dict(global_dims=(64, 2**32 + 1)), ValueError, "global_dims[1] = 4294967297 must be 1..2^32"),
    (dict(global_strides=(120,)), ValueError, "global_strides[0] = 120 (the stride of dimension 1) must be a "
                                              "multiple of 16 bytes"),
    (dict(global_strides=(2**40,)), ValueError, "0 <= stride < 2^40 (globalStrides)"),
    (dict(box_dims=(64, 257)), ValueError, "box_dims[1] = 257 must be 1..256 elements (boxDim)"),
    (dict(box_dims=(0, 8)), ValueError, "box_dims[0] = 0 must be 1..256"),
    (dict(box_dims=(4, 8)), ValueError, "box_dims[0] = 4 f16 elements is 8 bytes; without interleave the box's "
                                        "inner dimension must be a multiple of 16 bytes"),
    (dict(element_strides=(1, 9)), ValueError, "element_strides[1] = 9 must be 1..8 (elementStrides)"),
    (dict(element_strides=(0, 1)), ValueError, "element_strides[0] = 0 must be 1..8"),
    (dict(swizzle="64B"), ValueError, "swizzle='64B' takes a box whose inner dimension is at most 64 bytes; "
                                      "box_dims[0] = 64 f16 elements is 128 bytes"),
    (dict(dtype="u16", oob_fill="nan"), ValueError, "oob_fill='nan' needs a floating-point dtype"),
    (dict(interleave="16B"), ValueError, "interleave='16B' needs rank >= 3"),
    (dict(dtype="f64", global_dims=(128, 256), global_strides=(1024,), box_dims=(120, 256)), ValueError,
     "the box is 245760 bytes as the driver counts it (box_dims[i] // element_strides[i] elements per "
     "dimension, element_strides[0] included); it must fit one SM's 233472 bytes (228 KB) of shared memory"),
    (dict(global_dims=(8, 4, 4), global_strides=(48, 192), box_dims=(8, 4, 4), interleave="32B", swizzle="32B"),
     ValueError, "must be a multiple of 32 bytes with interleave='32B'"),
    (dict(dtype="b4x16"), ValueError, "is not a tensor-map data type"),
    (dict(dtype=np.float16), TypeError, "dtype must be a name such as 'bf16'"),
    (dict(swizzle="128b"), ValueError, "did you mean '128B'?"),
    (dict(global_dims=(64, 32.0)), TypeError, "global_dims[1] must be an integer"),
    (dict(box_dims=(True, 8)), TypeError, "box_dims[0] must be an integer"),
    (dict(global_strides=128), TypeError, "global_strides must be a sequence of integers"),
    (dict(base=1.0), TypeError, "base must be an integer"),
]


@pytest.mark.parametrize("change, error, words", REFUSED, ids=[w[:40] for _, _, w in REFUSED])
def test_tensor_map_refuses_what_cuTensorMapEncodeTiled_refuses_in_one_line_naming_the_parameter(change, error, words):
    with pytest.raises(error) as e:
        TensorMap(**(GOOD | change))
    assert words in str(e.value) and "\n" not in str(e.value)


def test_the_limits_themselves_are_accepted():
    """globalDim 2^32, strides just below 2^40, boxDim 256, elementStrides 8, inner box = swizzle span,
    the 32-byte interleave with its 32-byte swizzle (and the 128-byte one, which the 580 driver encodes
    though its documentation says otherwise), NaN fill of every float type, rank 5, a box of 228 KB."""
    TensorMap("u8", (2**32, 2), (2**40 - 16,), (256, 256), element_strides=(8, 8))
    TensorMap("f32", (8, 4, 4), (32, 128), (8, 4, 4), interleave="32B", swizzle="32B", base=32)
    TensorMap("f32", (8, 4, 4), (32, 128), (8, 4, 4), interleave="32B", swizzle="128B", base=32)
    TensorMap("f64", (128, 256), (1024,), (114, 256))
    assert 114 * 256 * 8 == MAX_BOX_BYTES
    for name, t in TMA_TYPES.items():
        if t.float:
            TensorMap(name, (64,), (), (16 // t.bytes,), oob_fill="nan")
    for mode, span in SPANS.items():
        TensorMap("f16", (128, 8), (256,), (span // 2, 8), swizzle=mode)
    TensorMap("f16", (8,) * 5, (16, 128, 1024, 8192), (8, 1, 2, 1, 3))


def test_box_bytes_is_the_dense_box_with_element_strides_and_element_strides_0_is_ignored():
    """ceil(boxDim[i] / elementStrides[i]) elements per dimension (driver API); elementStrides[0]
    without interleave is ignored."""
    t = TensorMap("f32", (100, 50, 7), (400, 20000), (8, 10, 7), element_strides=(4, 3, 2))
    assert t.smem_box == (8, 4, 4) and t.traversal_strides == (1, 3, 2) and t.box_bytes == 8 * 4 * 4 * 4


def test_the_driver_counts_the_box_rounding_down_and_with_element_strides_0():
    """The 580 driver's box size is prod(boxDim[i] // elementStrides[i]) elements (measured, H100): f32
    box (8, 256, 256), element strides (4, 1, 8) moves 8 x 256 x 32 f32 (256 KB) but counts 2 x 256 x 32
    (64 KB) and encodes; u64 box (2, 256, 256) with element_strides[0] 4 counts 0 bytes and encodes; a
    u8 box (16, 256, 115), element_strides[2] 2, counts 57 of its 58 planes: 228 KB, encoded."""
    t = TensorMap("f32", (8, 256, 256), (32, 8192), (8, 256, 256), element_strides=(4, 1, 8), swizzle="64B")
    assert t.box_bytes == 8 * 256 * 32 * 4 > MAX_BOX_BYTES
    with pytest.raises(ValueError, match="the box is 262144 bytes as the driver counts it"):
        TensorMap("f32", (8, 256, 256), (32, 8192), (8, 256, 256), element_strides=(1, 1, 8), swizzle="64B")
    assert TensorMap("u64", (2, 256, 256), (16, 4096), (2, 256, 256), element_strides=(4, 1, 1)).box_bytes == 1 << 20
    assert TensorMap("u8", (16, 256, 115), (16, 4096), (16, 256, 115), element_strides=(1, 1, 2)).smem_box[2] == 58
    with pytest.raises(ValueError, match="the box is 237568 bytes as the driver counts it"):
        TensorMap("u8", (16, 256, 116), (16, 4096), (16, 256, 116), element_strides=(1, 1, 2))


@pytest.mark.parametrize("mode, inner, pitch", [("none", 16, 16), ("32B", 16, 32), ("64B", 32, 64), ("64B", 64, 64),
                                                ("128B", 16, 128), ("128B", 96, 128)])
def test_a_box_row_narrower_than_the_swizzle_span_takes_a_whole_span(mode, inner, pitch):
    """smem_pitch = max(inner bytes, span); smem_bytes = rows x pitch, box_bytes the elements only."""
    t = TensorMap("u8", (256, 64), (256,), (inner, 5), swizzle=mode)
    assert t.smem_pitch == pitch and t.smem_bytes == 5 * pitch and t.box_bytes == 5 * inner


def test_tensor_map_is_exported_lazily_by_fragsim():
    assert fragsim.TensorMap is TensorMap and fragsim.tma_load is tma_load and fragsim.tma_store is tma_store


# -- tma_load ------------------------------------------------------------------------------------------

def _matrix(rows, cols, dtype=np.uint16):
    return np.arange(rows * cols, dtype=dtype).reshape(rows, cols)


def test_without_swizzle_the_box_lands_densely_innermost_first():
    g = _matrix(20, 40)
    t = TensorMap("u16", (40, 20), (80,), (16, 5))
    smem = np.zeros(1024, np.uint8)
    tma_load(t, g, (8, 3), smem, 256)
    assert np.array_equal(smem[256:256 + t.box_bytes].view(np.uint16).reshape(5, 16), g[3:8, 8:24])
    assert not smem[:256].any() and not smem[256 + t.box_bytes:].any()


@pytest.mark.parametrize("mode", list(SPANS))
@pytest.mark.parametrize("dst", [0, 128, 384, 1024 + 640])
def test_the_swizzle_is_layout_swizzle_on_the_absolute_shared_address(mode, dst):
    """Byte o of the dense box lands at Swizzle<B,4,3>(dst + o), 2^B = span / 16: a destination that
    is not aligned to the pattern (1024/512/256 bytes) starts it at row (dst / 128) % 8."""
    span = SPANS[mode]
    cols = span // 2
    g = _matrix(64, cols)
    t = TensorMap("f16", (cols, 64), (span,), (cols, 24), swizzle=mode)
    smem = np.zeros(8192, np.uint8)
    tma_load(t, g, (0, 7), smem, dst)
    dense = g[7:31].reshape(-1).view(np.uint8)
    swz = Swizzle(span.bit_length() - 5, 4, 3)
    assert tma_swizzle(mode) == swz
    assert np.array_equal(smem[swz(dst + np.arange(dense.size))], dense)


def test_128B_swizzle_is_the_ptx_table_chunk_c_of_line_r_goes_to_chunk_c_xor_r():
    """PTX ISA 5.5.7, 128-byte swizzle from a 1024-byte aligned address: line r, 16-byte cell c holds
    chunk c ^ (r % 8) of the source line."""
    g = _matrix(16, 64)
    t = TensorMap("f16", (64, 16), (128,), (64, 16), swizzle="128B")
    smem = np.zeros(2048, np.uint8)
    tma_load(t, g, (0, 0), smem, 0)
    cells = smem.reshape(16, 8, 16)
    for r in range(16):
        for c in range(8):
            assert np.array_equal(cells[r, c ^ (r % 8)].view(np.uint16), g[r, 8 * c:8 * c + 8])


def test_a_box_narrower_than_the_swizzle_span_puts_each_row_in_a_line_of_its_own():
    """64-byte rows under 128B swizzle: row r lies at 128 r, its chunks swizzled within that line; the
    other half of each line is not written (measured, H100: the swizzle works on span-wide rows)."""
    g = _matrix(16, 32)
    t = TensorMap("f16", (32, 16), (64,), (32, 16), swizzle="128B")
    smem = np.full(2048, 0xEE, np.uint8)
    tma_load(t, g, (0, 0), smem, 0)
    rows = g.view(np.uint8).reshape(16, 64)
    swz = Swizzle(3, 4, 3)
    for r in range(16):
        assert np.array_equal(smem[swz(128 * r + np.arange(64))], rows[r])
        assert (smem[swz(128 * r + np.arange(64, 128))] == 0xEE).all()


def test_the_padded_rows_of_the_32B_swizzle_at_a_line_with_odd_index():
    """16-byte rows, 32B swizzle, dst 11 x 128: row r sits at dst + 32 r, its one chunk moved to the
    upper half of the 32 bytes where the line index is odd (the H100 recording's case 2156)."""
    g = _matrix(5, 8)
    t = TensorMap("f16", (8, 5), (16,), (8, 5), swizzle="32B")
    smem = np.zeros(2048, np.uint8)
    tma_load(t, g, (0, 0), smem, 1408)
    for r, at in enumerate((1424, 1456, 1488, 1520, 1536)):
        assert np.array_equal(smem[at:at + 16].view(np.uint16), g[r])


@pytest.mark.parametrize("fill", ["zero", "nan"])
@pytest.mark.parametrize("start", [(-8, -2), (24, 17), (-16, 18), (40, 0), (0, -5)])
def test_out_of_bound_elements_are_filled_and_the_rest_copied(fill, start):
    """An element with a coordinate < 0 or >= its dimension is 0, or the dtype's canonical NaN
    (0x7FFF for f16), however far out; padding bytes of the strides are never read."""
    g = np.full((20, 48), 0xAAAA, np.uint16)        # rows padded to 48 elements; the tensor is 32 wide
    g[:, :32] = _matrix(20, 32)
    t = TensorMap("f16", (32, 20), (96,), (16, 6), oob_fill=fill)
    smem = np.zeros(256, np.uint8)
    tma_load(t, g, start, smem, 0)
    got = smem[:t.box_bytes].view(np.uint16).reshape(6, 16)
    want = np.full((6, 16), oob_nan("f16") if fill == "nan" else 0, np.uint16)
    for r in range(6):
        for c in range(16):
            y, x = start[1] + r, start[0] + c
            if 0 <= y < 20 and 0 <= x < 32:
                want[r, c] = g[y, x]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("dtype", [n for n, t in TMA_TYPES.items() if t.float])
def test_the_nan_fill_is_0x7ff7_in_every_half_word(dtype):
    """The driver's "special NaN constant": 0x7FF7, 0x7FF77FF7, 0x7FF77FF77FF77FF7 (measured, H100)."""
    e = TMA_TYPES[dtype].bytes
    t = TensorMap(dtype, (16 // e,), (), (16 // e,), oob_fill="nan")
    smem = np.zeros(128, np.uint8)
    tma_load(t, np.zeros(16, np.uint8), (-(16 // e),), smem, 0)
    assert smem[:16].view(np.uint16).tolist() == [0x7FF7] * 8
    assert oob_nan(dtype) == int("7ff7" * (e // 2), 16)


F32_WORDS = [(0x3F800000, 0x3F800000), (0x3F801000, 0x3F800000), (0x3F803000, 0x3F804000),   # ties to even
             (0x3F801001, 0x3F802000), (0xBF800FFF, 0xBF800000), (0x7F7FF000, 0x7F800000),   # overflow to inf
             (0x00001000, 0x00000000), (0x00003000, 0x00004000),                             # subnormals, no flush
             (0x7F800000, 0x7F800000), (0xFF800000, 0xFF800000),                             # infinities stay
             (0x7FC00001, TF32_NAN), (0xFF812345, TF32_NAN), (0x7F800001, TF32_NAN)]         # NaNs: canonical


@pytest.mark.parametrize("dtype", ["tf32", "tf32.ftz"])
def test_a_tf32_load_rounds_each_word_to_nearest_even_tf32_and_a_store_moves_bytes(dtype):
    words = np.array([w for w, _ in F32_WORDS] + [0] * 3, np.uint32)
    t = TensorMap(dtype, (16,), (), (16,))
    smem = np.zeros(128, np.uint8)
    tma_load(t, words, (0,), smem, 0)
    assert smem[:64].view(np.uint32)[:len(F32_WORDS)].tolist() == [r for _, r in F32_WORDS]
    back = np.zeros(16, np.uint32)
    tma_store(t, back, (0,), words.view(np.uint8), 0)
    assert np.array_equal(back, words)


@pytest.mark.parametrize("dtype", ["f32", "f32.ftz"])
def test_f32_loads_move_the_bytes_subnormals_and_nans_included(dtype):
    words = np.array([0x00000001, 0x807FFFFF, 0x7FC00001, 0x3F801000], np.uint32)
    smem = np.zeros(128, np.uint8)
    tma_load(TensorMap(dtype, (4,), (), (4,)), words, (0,), smem, 0)
    assert np.array_equal(smem[:16].view(np.uint32), words)


def test_element_strides_take_every_kth_element_of_the_outer_dimensions():
    """elementStrides[i] > 1: the box covers boxDim[i] coordinates and loads every elementStrides[i]-th
    (ceil(boxDim / stride) of them); elementStrides[0] is ignored without interleave."""
    g = np.arange(4 * 30 * 16, dtype=np.uint32).reshape(4, 30, 16)
    t = TensorMap("u32", (16, 30, 4), (64, 1920), (8, 10, 4), element_strides=(3, 4, 2))
    smem = np.zeros(1024, np.uint8)
    tma_load(t, g, (4, 25, 1), smem, 0)
    got = smem[:t.box_bytes].view(np.uint32).reshape(2, 3, 8)
    want = np.zeros((2, 3, 8), np.uint32)
    for a, z in enumerate((1, 3)):
        for b, y in enumerate((25, 29, 33)):
            if y < 30:
                want[a, b] = g[z, y, 4:12]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(12))
def test_store_of_a_load_gives_the_original_back_for_in_bounds_boxes(seed):
    """A random map of rank 1..5 (any dtype but tf32, whose load rounds, swizzle, element strides, padded
    strides) and a box inside the tensor: tma_store of what tma_load wrote puts exactly the box's bytes
    back."""
    rng = np.random.default_rng(seed)
    name = str(rng.choice([n for n in TMA_TYPES if not n.startswith("tf32")]))
    e = TMA_TYPES[name].bytes
    rank = int(rng.integers(1, 6))
    mode = str(rng.choice(["none", *SPANS]))
    chunks = int(rng.integers(1, (SPANS.get(mode, 64)) // 16 + 1))
    box = [chunks * 16 // e] + [int(rng.integers(1, 5)) for _ in range(rank - 1)]
    es = [int(rng.integers(1, 4)) for _ in range(rank)]
    extent = [box[0]] + [(-(-b // s) - 1) * s + 1 for b, s in zip(box[1:], es[1:])]
    dims = [x + int(rng.integers(0, 3)) * (16 // e if i == 0 else 1) for i, x in enumerate(extent)]
    strides, s = [], -(-dims[0] * e // 16) * 16 + 16 * int(rng.integers(0, 3))
    for d in dims[1:]:
        strides.append(s)
        s *= d
    t = TensorMap(name, dims, strides, box, element_strides=es, swizzle=mode, base=4096)
    x = rng.integers(0, 256, s if rank > 1 else dims[0] * e, dtype=np.uint8)
    coords = [int(rng.integers(0, d - x_ + 1)) for d, x_ in zip(dims, extent)]
    coords[0] -= coords[0] % (16 // e)
    dst = 1024 + 128 * int(rng.integers(0, 8))
    smem = np.zeros(16384, np.uint8)
    tma_load(t, x, coords, smem, dst)
    y = np.zeros_like(x)
    tma_store(t, y, coords, smem, dst)
    box_ = box_layout(t, coords, dst)
    assert box_.in_bounds.all()
    read = np.zeros(x.size, bool)
    read[(box_.global_offset[:, None] + np.arange(e)).ravel()] = True
    assert np.array_equal(y[read], x[read]) and not y[~read].any()


def test_a_store_writes_the_last_16_byte_chunk_of_each_row_whole_and_no_chunk_past_it():
    """f16 rows of 11 elements, 64-byte strides, box of 32 from column 0: the store writes columns 0..15
    (the chunk holding column 10 whole: into the row's padding), not 16..31 (measured, H100); a load of
    the same box fills columns 11..31."""
    g = np.zeros((4, 32), np.uint16)
    t = TensorMap("f16", (11, 4), (64,), (32, 2))
    smem = np.zeros(256, np.uint8)
    smem[:128] = 0xFF
    tma_store(t, g, (0, 1), smem, 0)
    assert (g[1:3, :16] == 0xFFFF).all() and not g[1:3, 16:].any() and not g[0].any() and not g[3].any()
    box = box_layout(t, (0, 1), 0)
    assert box.stored.sum() == 2 * 16 and box.in_bounds.sum() == 2 * 11
    got = np.full(256, 0x11, np.uint8)
    tma_load(t, np.ones((4, 32), np.uint16), (0, 1), got, 0)
    assert (got[:128].view(np.uint16).reshape(2, 32)[:, 11:] == 0).all()


def test_a_store_past_the_arrays_end_within_a_chunk_is_refused_not_dropped():
    """The tensor's array ends at its last element, 6 bytes into a 16-byte chunk the store writes whole."""
    t = TensorMap("u8", (6,), (), (16,))
    with pytest.raises(ValueError, match=r"tensor has 6 bytes, but element \(6,\) of the box \(a store writes the "
                                         r"16-byte chunks of the tensor's rows whole\) ends at byte 7"):
        tma_store(t, np.zeros(6, np.uint8), (0,), np.zeros(128, np.uint8), 0)
    out = np.zeros(16, np.uint8)
    tma_store(t, out, (0,), np.arange(128, dtype=np.uint8), 0)
    assert out.tolist() == list(range(16))


def test_load_values_fill_and_round_what_a_runner_read_from_global_memory():
    """The load's values apart from its reads: tf32 rounded, the NaN fill elsewhere (fragsim run's path)."""
    t = TensorMap("tf32", (4,), (), (8,), oob_fill="nan")
    box = box_layout(t, (0,), 0)
    inside = np.array([0x3F801000, 0x3F803000, 0x7FC00001, 1], np.uint32).view(np.uint8).reshape(4, 4)
    got = load_values(box, inside).view(np.uint32).ravel().tolist()
    assert got == [0x3F800000, 0x3F804000, TF32_NAN, 0] + [0x7FF77FF7] * 4


def test_a_store_skips_out_of_bound_elements_and_refuses_negative_coordinates():
    g = np.zeros((10, 16), np.uint16)
    t = TensorMap("u16", (16, 10), (32,), (16, 4))
    smem = np.zeros(256, np.uint8)
    smem[:128] = 0xFF
    tma_store(t, g, (0, 8), smem, 0)
    assert (g[8:] == 0xFFFF).all() and not g[:8].any()
    with pytest.raises(ValueError, match=r"coords\[1\] = -1: a store's box must start at non-negative coordinates"):
        tma_store(t, g, (0, -1), smem, 0)


# -- run-time refusals ---------------------------------------------------------------------------------

T = TensorMap("f16", (64, 32), (128,), (64, 8))


@pytest.mark.parametrize("call, error, words", [
    (lambda s: tma_load(T, np.zeros(4096, np.uint8), (4, 0), s, 0), ValueError,
     "coords[0] = 4 starts the box 8 bytes past a 16-byte boundary"),
    (lambda s: tma_load(T, np.zeros(4096, np.uint8), (0, 0), s, 64), ValueError,
     "dst = 0x40 must be a 128-byte aligned shared address"),
    (lambda s: tma_load(T, np.zeros(4096, np.uint8), (0, 0), s, 8192), ValueError, "past the 8192 bytes of smem"),
    (lambda s: box_layout(T, (0, 0), 2**62), ValueError, "dst = shared address 4611686018427387904 (0x4000000000000000) "
     "is beyond sm_90's 232448 bytes"),
    (lambda s: box_layout(TensorMap("u8", (16, 256, 64), (16, 4096), (16, 256, 56), swizzle="128B"), (0,) * 3),
     ValueError, "the box spans 1835008 bytes of shared memory (smem_box (16, 256, 56), rows 128 bytes apart); more "
     "than sm_90's 232448 bytes"),
    (lambda s: tma_load(T, np.zeros(100, np.uint8), (0, 0), s, 0), ValueError,
     "tensor has 100 bytes, but element (50, 0) of the box"),
    (lambda s: tma_load(T, np.zeros(4096, np.uint8), (0,), s, 0), ValueError,
     "coords has 1 values; tmap has rank 2, so it needs 2"),
    (lambda s: tma_load(TensorMap("u8", (16, 2**32), (2**39,), (16, 2)), np.zeros(64, np.uint8), (0, 2**31 - 2), s, 0),
     ValueError, "inside the tensor reach byte 1180591620167655489552 from the base"),
    (lambda s: tma_load(TensorMap("u8", (16, 2**32), (2**20,), (16, 2)), np.zeros(64, np.uint8), (0, 2**20), s, 0),
     ValueError, "tensor has 64 bytes, but element (0, 1048576) of the box"),
    (lambda s: tma_load(T, np.zeros(4096, np.uint8), (0, 2**31), s, 0), ValueError, "not a signed 32-bit"),
    (lambda s: tma_load(T, np.zeros(4096, np.uint8), (0, 1.5), s, 0), TypeError, "coords[1] must be an integer"),
    (lambda s: tma_load(T, np.zeros((64, 64), np.uint8)[:, ::2], (0, 0), s, 0), ValueError, "C-contiguous"),
    (lambda s: tma_load(T, [0] * 4096, (0, 0), s, 0), TypeError, "tensor must be a NumPy array"),
    (lambda s: tma_load("map", np.zeros(4096, np.uint8), (0, 0), s, 0), TypeError, "tmap must be a fragsim.TensorMap"),
    (lambda s: tma_load(T, np.zeros(4096, np.uint8), (0, 0), s.astype(np.uint16), 0), TypeError, "smem must be"),
    (lambda s: tma_load(TensorMap("f16", (8, 4, 4), (16, 64), (8, 4, 4), interleave="16B"),
                        np.zeros(4096, np.uint8), (0, 0, 0), s, 0), ValueError,
     "tmap has interleave='16B': interleaved maps are not modelled"),
])
def test_a_copy_refuses_what_the_hardware_refuses_in_one_line(call, error, words):
    with pytest.raises(error) as e:
        call(np.zeros(8192, np.uint8))
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_negative_inner_coordinate_aligned_to_16_bytes_is_a_legal_start():
    smem = np.zeros(2048, np.uint8)
    tma_load(T, np.ones(4096, np.uint8), (-8, 0), smem, 0)
    assert not smem[:16].any() and (smem[16:128] == 1).all()


# -- cp.async.bulk -------------------------------------------------------------------------------------

def test_bulk_copy_moves_bytes_and_refuses_misaligned_addresses_and_sizes():
    src = np.arange(256, dtype=np.uint8)
    smem = np.zeros(512, np.uint8)
    bulk_copy(smem, 128, src, 32, 64)
    assert np.array_equal(smem[128:192], src[32:96]) and not smem[:128].any() and not smem[192:].any()
    for args, words in (((smem, 136, src, 0, 16), "dst = 0x88 must be a 16-byte aligned"),
                        ((smem, 0, src, 0, 24), "size = 24 must be a non-negative multiple of 16"),
                        ((smem, 0, src, 248, 16), "src = 0xf8 must be a 16-byte aligned"),
                        ((smem, 0, src, 240, 32), "reaches past the 256 bytes of src_mem")):
        with pytest.raises(ValueError, match=words):
            bulk_copy(*args)
