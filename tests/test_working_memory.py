"""Entry points whose arrays grow with their input estimate them first and refuse, in one line with
the figure and the limit, work past fragsim.validate.MAX_WORKING_BYTES (2 GiB); names of megabytes are
refused without being scanned or echoed; large batches of loads are gathered in blocks.  The findings
of the contract fuzz at large sizes (test_contract_fuzz_sizes.py; issue 21, "Memory blow-up")."""

import re

import numpy as np
import pytest

import fragsim
from fragsim import Swizzle, Tile
from fragsim.cli import main
from fragsim.search.addrexpr import evaluate
from fragsim.validate import MAX_WORKING_BYTES

from contract import memory_cap
import fuzz_entries_wgmma

F16 = "m16n8k16.row.col.f32.f16.f16.f32"
LIMIT = re.escape("; the limit is 2 GiB (fragsim.validate.MAX_WORKING_BYTES): ")


def test_the_limit_is_2_gib():
    assert MAX_WORKING_BYTES == 2 << 30


def test_mma_refuses_a_batch_that_broadcasts_past_the_limit():
    """A (65536, 1) against B (1, 65536): 256 KiB of inputs, 4 billion warps (7 TiB)."""
    a = np.zeros((1 << 16, 1, 32, 4), np.uint32)
    b = np.zeros((1, 1 << 16, 32, 2), np.uint32)
    with pytest.raises(ValueError, match=f"^{re.escape(F16)}: a batch of 65536 x 65536 = 4,294,967,296 warps would need "
                                         f"~7 TiB of working memory{LIMIT}split the batch"):
        fragsim.mma(F16, a, b, np.zeros((32, 4), np.uint32))
    assert fragsim.mma(F16, a[:4], b[:, :3], np.zeros((32, 4), np.uint32)).shape == (4, 3, 32, 4)


def test_wgmma_refuses_a_batch_that_broadcasts_past_the_limit():
    kw = fuzz_entries_wgmma._kw("m64n8k16.f32.f16.f16", np.random.default_rng(0), True)
    kw["a"] = np.zeros((1 << 12, 1, 128, 4), np.uint32)
    kw["smem"] = np.zeros((1, 1 << 12, 8192), np.uint8)
    with pytest.raises(ValueError, match=f"^m64n8k16.f32.f16.f16: a batch of 4096 x 4096 = 16,777,216 warpgroups would "
                                         f"need ~.* of working memory{LIMIT}split the batch"):
        fuzz_entries_wgmma.wgmma_run(kw)


def test_gemm_refuses_a_product_whose_d_is_past_the_limit():
    """16384 x 16 times 16 x 16384: 1 MiB of inputs, a D of 2**28 elements."""
    with pytest.raises(ValueError, match=r"^gemm: A \(16384 x 16\) times B \(16 x 16384\) would need ~8.0 GiB of working "
                                         f"memory{LIMIT}compute D in blocks"):
        fragsim.gemm(F16, np.zeros((1 << 14, 16), np.uint16), np.zeros((16, 1 << 14), np.uint16))


def test_tile_offset_refuses_rows_and_columns_that_broadcast_past_the_limit():
    t = Tile(16, 64, "f16", swizzle=Swizzle(3, 4, 3))
    with pytest.raises(ValueError, match=r"^Tile.offset: row and col broadcast to \(65536, 65536\) = 4,294,967,296 "
                                         f"offsets would need ~320 GiB of working memory{LIMIT}"):
        t.offset(np.arange(1 << 16)[:, None] % 16, np.arange(1 << 16) % 64)


def test_an_expression_refuses_lanes_and_variables_that_broadcast_past_the_limit():
    with pytest.raises(ValueError, match=r"^'lane \* 16 \+ k': lane and the variables broadcast to \(65536, 65536\) = "
                                         r"4,294,967,296 values would need ~.* of working memory"):
        evaluate("lane * 16 + k", lane=np.arange(1 << 16)[:, None] % 32, k=np.arange(1 << 16))


def test_a_npy_file_whose_header_claims_more_than_it_holds_is_refused_before_numpy_allocates_it(tmp_path, capsys):
    """A 64-byte .npy claiming 2**36 floats (256 GiB): numpy would allocate the claim before reading."""
    bomb = tmp_path / "b.npy"
    with open(bomb, "wb") as f:
        np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": (1 << 36,)})
        f.write(bytes(64))
    np.save(tmp_path / "a.npy", np.zeros((16, 16), np.float32))
    with memory_cap(1 << 30):
        code = main(["mma", F16, "--a", str(tmp_path / "a.npy"), "--b", str(bomb)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "its header claims (68719476736,) float32, 274,877,906,944 bytes; the file holds 64" in err


def test_a_large_batch_of_loads_is_gathered_in_blocks_within_a_small_cap():
    """2**18 ldmatrix.x4.trans and ld.shared.v4 (64 MiB of addresses, 128 MiB of registers each): the byte
    gathers of all lanes at once took ~10 times the result; in blocks they fit 768 MiB."""
    rng = np.random.default_rng(0)
    smem = rng.integers(0, 256, 232448, dtype=np.uint8)
    addrs = rng.integers(0, 232448 // 16, (1 << 18, 32)) * 16
    with memory_cap(768 << 20):
        regs = fragsim.ldmatrix(smem, addrs, 4, True)
        words = fragsim.ld_shared(smem, addrs, 16)
    assert np.array_equal(regs[-5:], fragsim.ldmatrix(smem, addrs[-5:], 4, True))
    assert np.array_equal(words[:5], fragsim.ld_shared(smem, addrs[:5], 16))


@pytest.mark.parametrize("call, what", [(fragsim.lookup, "form"), (fragsim.parse_shared_op, "op"),
                                        (fragsim.get_format, "number format"), (Tile.parse, "tile spec")])
def test_a_name_of_megabytes_is_refused_without_being_echoed(call, what):
    text = "m16n8k16" + ".row" * (1 << 22)
    with pytest.raises(ValueError) as e:
        call(text)
    msg = str(e.value)
    assert msg == f"{what} 'm16n8k16.row.row.row.row.row.row.row.row'... is 16,777,224 characters long; no {what} has " \
                  "more than 256"


@pytest.mark.parametrize("spec", ["96x64 f16", "24x128 u8", "3x256 f32", "40x32 u8"])
def test_a_swizzle_is_a_bijection_of_a_dense_footprint_exactly_when_every_offset_lands_in_it(spec):
    """The check without offsets (a map flipping only bits below the footprint's largest power-of-two
    divisor) agrees, for every Swizzle<B,M,S> of the footprint's bits, with laying out each element."""
    t = Tile.parse(spec)
    nb = (t.span - 1).bit_length()
    offsets = np.arange(0, t.span, t.elem_bytes)
    for B in range(1, nb):
        for M in range(t.elem_bytes.bit_length() - 1, nb):
            for S in [s for m in range(B, nb - M - B + 1) for s in (m, -m)]:
                sw = Swizzle(B, M, S)
                img = sw(offsets)
                brute = bool((img < t.span).all() and np.unique(img).size == img.size)
                try:
                    t.with_layout(swizzle=sw)
                    ok = True
                except ValueError:
                    ok = False
                assert ok == brute, sw


def test_the_table_of_a_layout_over_48_bits_is_refused_and_one_over_10_bits_is_given():
    x = fragsim.XorMap([1 << ((i * 7) % 48) for i in range(48)])
    with pytest.raises(ValueError, match=r"^LinearLayout.table: 281474976710656 = 281,474,976,710,656 inputs would need "
                                         r"~8192 TiB of working memory"):
        x.layout.table()
    (out,) = Swizzle(3, 4, 3).as_layout().table()
    assert out.shape == (1024,) and np.array_equal(out, Swizzle(3, 4, 3)(np.arange(1024)))


def test_a_global_tile_shows_as_its_repr_not_as_a_bank_picture():
    """Jupyter shows _repr_svg_/_repr_png_ when they give one: 8M elements coloured by bank took 39 s."""
    t = Tile(4096, 2048, "f16", space="global")
    assert t._repr_svg_() is None and t._repr_png_() is None


def test_a_recording_whose_npz_member_claims_more_than_it_holds_is_refused_before_numpy_allocates_it(tmp_path, capsys):
    """A GPU recording (.npz) with a member whose header claims 2**36 floats (256 GiB) in 64 bytes."""
    import io
    import zipfile

    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f4", "fortran_order": False, "shape": (1 << 36,)})
    meta = io.BytesIO()
    np.save(meta, np.array('{"format": "fragsim-gpu-record", "version": 2, "kind": "mma"}'))
    with zipfile.ZipFile(tmp_path / "corpus.npz", "w") as z:
        z.writestr("meta.npy", meta.getvalue())
        z.writestr("a.npy", head.getvalue() + bytes(64))
    with memory_cap(1 << 30):
        code = main(["gpu-check", "--replay", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "a.npy: its header claims (68719476736,) float32, 274,877,906,944 bytes; the file holds 64" in err
