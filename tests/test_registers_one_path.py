"""fragsim.pack/unpack: one path for both instruction tables -- an mma.sync form's warp registers
(..., 32, nregs) and a wgmma form's warpgroup registers (..., 128, nregs) of A, C and D."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fragsim
from fragsim.instructions import FORMS, lookup
from fragsim.instructions.wgmma import WGMMA_FORMS, lookup_wgmma
from fragsim.sim.registers import owners, plan
from fragsim.sim.wgmma import pack_wg, unpack_wg

WG_SAMPLE = ["m64n8k16.f32.f16.f16", "m64n24k16.f16.f16.f16", "m64n256k16.f32.bf16.bf16", "m64n40k8.f32.tf32.tf32",
             "m64n136k32.f16.e4m3.e5m2", "m64n8k32.f32.e5m2.e5m2", "m64n24k32.satfinite.s32.s8.u8", "m64n256k32.s32.u8.u8"]
EVERY_OPERAND = ([(f, op) for f in FORMS.values() for op in "ABCD"]
                 + [(f, op) for f in WGMMA_FORMS.values() for op in "ACD"])


def _words(rng, form, op, lead=()):
    fmt = form.fmt(op)
    return rng.integers(0, 1 << fmt.storage_bits, lead + form.matrix_shape(op), dtype=np.uint64).astype(fmt.dtype)


def _by_definition(form, op, m):
    """Registers as the fragment map defines them: element e of register r of thread t is the matrix
    element at coords(t, r, e), at bits [bits*e, bits*(e+1)); an f64 is registers r, r+1, low word first."""
    rows, cols = form.coords(op)
    bits = form.fmt(op).storage_bits
    v = m[..., rows, cols].astype(np.uint64)                        # (..., threads, nregs, epr)
    if bits == 64:
        word = np.arange(rows.shape[1]) % 2                         # rows/cols repeat the element per word
        return ((v[..., 0] >> (32 * word).astype(np.uint64)) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    shifts = (bits * np.arange(rows.shape[2])).astype(np.uint64)
    return np.bitwise_or.reduce(v << shifts, axis=-1).astype(np.uint32)


@pytest.mark.parametrize("form, op", EVERY_OPERAND, ids=[f"{f.name}-{op}" for f, op in EVERY_OPERAND])
def test_pack_places_each_element_where_the_fragment_map_says(form, op):
    """Every operand of both tables (1,888 of them): pack is the fragment map's definition, unpack its inverse."""
    m = _words(np.random.default_rng(len(form.name) * 4 + ord(op)), form, op, (2,))
    regs = fragsim.pack(form, op, m)
    assert regs.dtype == np.uint32 and regs.shape == (2,) + form.coords(op)[0].shape[:1] + (form.nregs(op),)
    assert np.array_equal(regs, _by_definition(form, op, m))
    assert np.array_equal(fragsim.unpack(form, op, regs), m)


@pytest.mark.parametrize("form, op", [(f, op) for f in WG_SAMPLE for op in "ACD"])
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_wgmma_unpack_inverts_pack_for_any_batch(form, op, data):
    f = lookup_wgmma(form)
    fmt = f.fmt(op)
    lead = tuple(data.draw(st.lists(st.integers(0, 3), max_size=2)))
    m = data.draw(hnp.arrays(fmt.dtype, lead + f.matrix_shape(op), elements=st.integers(0, (1 << fmt.storage_bits) - 1)))
    regs = fragsim.pack(form, op, m)
    assert regs.shape == lead + (128, f.nregs(op))
    assert np.array_equal(fragsim.unpack(form, op, regs), m)


@pytest.mark.parametrize("form", WG_SAMPLE)
def test_pack_wg_and_unpack_wg_are_pack_and_unpack_of_a_wgmma_form(form):
    rng = np.random.default_rng(3)
    f = lookup_wgmma(form)
    for op in "ACD":
        m = _words(rng, f, op, (3,))
        assert np.array_equal(pack_wg(form, op, m), fragsim.pack(form, op, m))
        assert np.array_equal(pack_wg(f, op, m), fragsim.pack("wgmma.mma_async.sync.aligned." + form, op, m))
        regs = fragsim.pack(f, op, m)
        assert np.array_equal(unpack_wg(form, op, regs), fragsim.unpack(form, op, regs))


@pytest.mark.parametrize("name, op, formula", [
    # PTX ISA mma m16n8k16 .f16 A: a_i at row groupID + 8*((i >> 1) & 1), col 2*tig + (i & 1) + 8*(i >> 2)
    ("m16n8k16.row.col.f32.f16.f16.f32", "A", lambda g, t, i: (g + 8 * ((i >> 1) & 1), 2 * t + (i & 1) + 8 * (i >> 2))),
    # m16n8k8 .f32 C/D: c_i at row groupID + 8*(i >> 1), col 2*tig + (i & 1) (c0, c1 adjacent: one 8-byte gather)
    ("m16n8k8.row.col.f32.tf32.tf32.f32", "C", lambda g, t, i: (g + 8 * (i >> 1), 2 * t + (i & 1))),
    # m16n8k32 .s8 A: a_i at row groupID + 8*((i >> 2) & 1), col 4*tig + (i & 3) + 16*(i >> 3)
    ("m16n8k32.row.col.s32.s8.s8.s32", "A", lambda g, t, i: (g + 8 * ((i >> 2) & 1), 4 * t + (i & 3) + 16 * (i >> 3))),
    # m16n8k32 .s8 B: b_i at row 4*tig + (i & 3) + 16*(i >> 2), col groupID (no two adjacent in a row)
    ("m16n8k32.row.col.s32.s8.s8.s32", "B", lambda g, t, i: (4 * t + (i & 3) + 16 * (i >> 2), g)),
    # m16n8k64 .s4 A: a_i at row groupID + 8*((i >> 3) & 1), col 8*tig + (i & 7) + 32*(i >> 4)
    ("m16n8k64.row.col.s32.s4.s4.s32", "A", lambda g, t, i: (g + 8 * ((i >> 3) & 1), 8 * t + (i & 7) + 32 * (i >> 4))),
    # m16n8k256 .b1 A: a_i at row groupID + 8*((i >> 5) & 1), col 32*tig + (i & 31) + 128*(i >> 6)
    ("m16n8k256.row.col.s32.b1.b1.s32.and.popc", "A",
     lambda g, t, i: (g + 8 * ((i >> 5) & 1), 32 * t + (i & 31) + 128 * (i >> 6))),
])
def test_register_bits_are_the_isa_figure(name, op, formula):
    """Element i of a lane is bits [b*(i % epr), b*(i % epr + 1)) of register i // epr, lowest first
    (little-endian within the register, whatever the gather width)."""
    f = lookup(name)
    bits = f.fmt(op).storage_bits
    epr = 32 // bits
    rows, cols = f.matrix_shape(op)
    m = np.random.default_rng(4).integers(0, 1 << bits, (rows, cols)).astype(f.fmt(op).dtype)
    regs = fragsim.pack(name, op, m)
    for lane in range(32):
        for i in range(f.nregs(op) * epr):
            r, c = formula(lane // 4, lane % 4, i)
            assert (int(regs[lane, i // epr]) >> (bits * (i % epr))) & ((1 << bits) - 1) == m[r, c], (lane, i)


def test_f64_is_two_registers_low_word_first():
    """PTX ISA mma m8n8k4 .f64 A: a0 at row groupID, col tig; its 64 bits in registers 0 (low) and 1 (high)."""
    m = np.arange(32, dtype=np.uint64).reshape(8, 4) * np.uint64(0x1_0000_0001) + np.uint64(0x0123_4567_0000_0000)
    regs = fragsim.pack("m8n8k4.row.col.f64.f64.f64.f64", "A", m)
    for lane in range(32):
        v = int(m[lane // 4, lane % 4])
        assert (int(regs[lane, 0]), int(regs[lane, 1])) == (v & 0xFFFFFFFF, v >> 32)


def test_wgmma_accumulator_registers_are_the_isa_figure():
    """PTX ISA wgmma D (.f32): d_i of thread t at row 16*warp + groupID + 8*((i >> 1) & 1), col 8*(i >> 2)
    + 2*tig + (i & 1), with warp = t // 32 and lane = t % 32."""
    form = "m64n24k16.f32.bf16.bf16"
    m = np.arange(64 * 24, dtype=np.uint32).reshape(64, 24)
    regs = fragsim.pack(form, "D", m)
    for t in range(128):
        warp, lane = t // 32, t % 32
        for i in range(12):
            assert regs[t, i] == m[16 * warp + lane // 4 + 8 * ((i >> 1) & 1), 8 * (i >> 2) + 2 * (lane % 4) + (i & 1)]


@pytest.mark.parametrize("name, op", [("m16n8k16.row.col.f32.bf16.bf16.f32", "A"), ("m16n8k64.row.col.s32.u4.u4.s32", "A"),
                                      ("m16n8k64.row.col.s32.u4.u4.s32", "B"), ("m16n8k128.row.col.s32.b1.b1.s32.xor.popc", "B"),
                                      ("m16n8k8.row.col.f64.f64.f64.f64", "A"), ("m64n16k32.f16.e4m3.e4m3", "A")])
def test_memory_layout_and_byte_order_of_the_input_do_not_matter(name, op):
    """Fortran order, strided and broadcast views, big-endian words: the same registers, and back."""
    f = lookup_wgmma(name) if name.startswith("m64") else lookup(name)
    m = _words(np.random.default_rng(5), f, op, (3,))
    want = fragsim.pack(name, op, m)
    wide = np.zeros((3, m.shape[1], 2 * m.shape[2]), m.dtype)
    wide[..., ::2] = m
    swapped = m.astype(m.dtype.newbyteorder(">"))
    signed = [m.astype(np.int64)] if f.fmt(op).storage_bits < 64 else []      # int64 holds every word but f64's
    every_other = np.repeat(m, 2, axis=0)[::2]          # each matrix contiguous, the batch strided
    for variant in [np.asfortranarray(m), wide[..., ::2], swapped, every_other] + signed:
        assert np.array_equal(fragsim.pack(name, op, variant), want)
    assert np.array_equal(fragsim.pack(name, op, np.broadcast_to(m[0], (2,) + m.shape[1:])), np.stack([want[0]] * 2))
    for regs in (np.asfortranarray(want), want.astype(">u4"), np.stack([want, want], -1)[..., 0], want.astype(np.int64)):
        assert np.array_equal(fragsim.unpack(name, op, regs), m)


def test_results_are_fresh_arrays():
    """The registers and matrices returned share no memory with the argument, nor with the plan."""
    name = "m16n8k16.row.col.f32.f16.f16.f32"
    m = np.random.default_rng(6).integers(0, 1 << 16, (4, 16, 16)).astype(np.uint16)
    regs = fragsim.pack(name, "A", m)
    back = fragsim.unpack(name, "A", regs)
    assert not np.shares_memory(regs, m) and not np.shares_memory(back, regs)
    assert regs.flags.writeable and back.flags.writeable
    p = plan(name, "A")
    assert not p.pack_index.flags.writeable and not p.unpack_index.flags.writeable


@pytest.mark.parametrize("name", ["m16n8k64.row.col.s32.s4.s4.s32", "m16n8k256.row.col.s32.b1.b1.s32.xor.popc",
                                  "m16n8k8.row.col.f64.f64.f64.f64", "m64n8k32.s32.s8.s8"])
def test_empty_batches_pass_through(name):
    f = lookup_wgmma(name) if name.startswith("m64") else lookup(name)
    threads = 128 if name.startswith("m64") else 32
    m = fragsim.unpack(name, "A", np.zeros((2, 0, threads, f.nregs("A")), np.uint32))
    assert m.shape == (2, 0) + f.matrix_shape("A") and m.dtype == f.fmt("A").dtype
    assert fragsim.pack(name, "A", m).shape == (2, 0, threads, f.nregs("A"))


def test_owners_invert_the_fragment_map():
    """owners(form, op)[k][r, c] is the (thread, register, element) whose coords are (r, c); for an f64, the low word's
    register; for an mma.sync form the same as MmaForm.owner."""
    for form, op in [(lookup_wgmma("m64n24k32.satfinite.s32.s8.u8"), "A"), (lookup_wgmma("m64n16k16.f16.f16.f16"), "C"),
                     (lookup("m16n8k8.row.col.f64.f64.f64.f64"), "B"), (lookup("m16n8k128.row.col.s32.b1.b1.s32.and.popc"), "B")]:
        thread, reg, elem = owners(form, op)
        rows, cols = form.coords(op)
        r, c = np.indices(form.matrix_shape(op))
        assert np.array_equal(rows[thread, reg, elem], r) and np.array_equal(cols[thread, reg, elem], c)
        if form in FORMS.values():
            assert all(np.array_equal(a, b) for a, b in zip(owners(form, op), form.owner(op)))


# -- which table a spelling belongs to ------------------------------------------------------------------------

def test_the_two_tables_cannot_be_confused():
    """Every wgmma shape is m64nNkK and no mma.sync shape has M = 64, so the shape decides; each table's lookup
    refuses every name of the other."""
    assert all(n.startswith("m64") for n in WGMMA_FORMS)
    assert not any(n.startswith("m64") for n in FORMS)
    for n in WGMMA_FORMS:
        with pytest.raises(ValueError):
            lookup(n)
    for n in FORMS:
        with pytest.raises(ValueError):
            lookup_wgmma(n)


@pytest.mark.parametrize("form, message", [
    ("m64n264k16.f32.f16.f16", "wgmma form 'm64n264k16.f32.f16.f16': N must be"),
    ("wgmma.mma_async.sync.aligned.m64n8k16.f32.f16", "wgmma form"),
    ("m16n8k17.row.col.f32.bf16.bf16.f32", "PTX mma has no shape m16n8k17"),
    ("mma.sync.aligned.m64n64k16.f32.bf16.bf16", "PTX's mma spelling"),
])
def test_a_spelling_in_neither_table_gets_its_tables_refusal(form, message):
    with pytest.raises(ValueError) as e:
        fragsim.pack(form, "A", np.zeros((64, 16), np.uint16))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_form_that_is_no_spelling_is_refused_naming_both_tables():
    with pytest.raises(TypeError, match="form must be a PTX mma.sync or wgmma spelling"):
        fragsim.unpack(64, "D", np.zeros((128, 4), np.uint32))


@pytest.mark.parametrize("fn", [pack_wg, unpack_wg])
def test_pack_wg_refuses_an_mma_sync_form(fn):
    arg = np.zeros((16, 16), np.uint16) if fn is pack_wg else np.zeros((32, 4), np.uint32)
    with pytest.raises(ValueError, match="wgmma form 'm16n8k16.row.col.f32.f16.f16.f32'"):
        fn("m16n8k16.row.col.f32.f16.f16.f32", "A", arg)
    with pytest.raises(TypeError, match="PTX wgmma spelling"):
        fn(lookup("m16n8k16.row.col.f32.f16.f16.f32"), "A", arg)


# -- wgmma errors: one line naming the operand, the shape, the thread ------------------------------------------

def test_wgmma_b_has_no_registers():
    with pytest.raises(ValueError, match="operand B of wgmma is always in shared memory"):
        fragsim.pack("m64n8k16.f32.f16.f16", "B", np.zeros((16, 8), np.uint16))


def test_wgmma_register_shape_names_the_warpgroup():
    with pytest.raises(ValueError, match=r"operand C of m64n8k16.f32.f16.f16: expected registers shaped \(\.\.\., 128, 4\) "
                                         r"\(4 registers per thread of the warpgroup\), got shape \(32, 4\)"):
        fragsim.unpack("m64n8k16.f32.f16.f16", "C", np.zeros((32, 4), np.uint32))


def test_wgmma_bad_word_names_thread_and_register():
    regs = np.zeros((2, 128, 4), np.int64)
    regs[1, 70, 3] = 1 << 32
    with pytest.raises(ValueError, match=r"got 4294967296 at thread 70, register 3 of batch index \(1,\)"):
        fragsim.unpack("m64n8k16.f32.f16.f16", "D", regs)


def test_wgmma_matrix_errors_name_operand_shape_and_dtype():
    form = "m64n8k32.f16.e4m3.e4m3"
    with pytest.raises(ValueError, match=r"operand A of m64n8k32.f16.e4m3.e4m3: expected a matrix shaped \(\.\.\., 64, 32\)"):
        fragsim.pack(form, "A", np.zeros((32, 64), np.uint8))
    with pytest.raises(TypeError, match=r"operand D of .*: expected f16 bit patterns \(uint16\), got float dtype float32"):
        fragsim.pack(form, "D", np.zeros((64, 8), np.float32))
    with pytest.raises(ValueError, match=r"e4m3 words must lie in \[0, 2\*\*8\), got 256 at row 3, col 5"):
        m = np.zeros((64, 32), np.uint16)
        m[3, 5] = 256
        fragsim.pack(form, "A", m)
