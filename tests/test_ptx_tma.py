"""fragsim run's bulk and tensor copies (PTX ISA, "cp.async.bulk", "cp.async.bulk.tensor",
"cp.reduce.async.bulk"): tensor loads and stores write what fragsim.tma_load / tma_store write, bytes
land when their mbarrier is observed, stores at their bulk group's wait, refusals in the ISA's words;
and whole kernels -- our TMA + mbarrier + wgmma GEMM and CUTLASS's wgmma_tma_sm90 tutorial -- bit for
bit what fragsim.gemm computes."""

import numpy as np
import pytest

import fragsim
from fragsim.facts.formats import to_bits
from fragsim.gpu_check.ptx import kernels as P
from fragsim.ptx.memory import Buffer
from fragsim.ptx.program import PtxLoadError
from fragsim.ptx.run import run_kernel
from fragsim.ptx.semantics.bulk import tensormap_bytes, tensormap_of
from fragsim.ptx.state import PtxRuntimeError

CORPUS = "tests/data/ptx/"
HEAD = ".version 8.0\n.target sm_90a\n.address_size 64\n"
REGS = ".reg .pred %p<8>;\n.reg .b32 %r<32>;\n.reg .b64 %rd<16>;"
BASE = 0x7F80_0000_0000
#: The shared box of the tensor-copy kernels: 16 KB, 1024-byte aligned at shared address 0.
BOX = 16384

#: One thread initialises the mbarrier, all meet, thread 0 arrives with expect_tx and issues COPY; all
#: wait for the phase and copy the box's 16 KB to out, a word per thread at a time.
LOAD = HEAD + """.visible .entry k(.param .align 64 .b8 tmap[128], .param .u64 out, .param .s32 x, .param .s32 y,
                  .param .u32 dst, .param .u32 bytes)
{
""" + REGS + """
    .shared .align 1024 .b8 box[16384];
    .shared .align 8 .b64 bar;
    mov.u32 %r1, %tid.x;
    setp.eq.u32 %p1, %r1, 0;
    @%p1 mbarrier.init.shared::cta.b64 [bar], 1;
    bar.sync 0;
    @!%p1 bra $WAIT;
    mov.b64 %rd2, tmap;
    cvta.param.u64 %rd3, %rd2;
    ld.param.u32 %r2, [x];
    ld.param.u32 %r3, [y];
    ld.param.u32 %r4, [dst];
    ld.param.u32 %r5, [bytes];
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], %r5;
    @COPY@;
$WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $WAIT;
    ld.param.u64 %rd4, [out];
    mov.u32 %r6, %r1;
$COPY_OUT:
    shl.b32 %r7, %r6, 2;
    ld.shared.u32 %r8, [%r7];
    mul.wide.u32 %rd5, %r6, 4;
    add.s64 %rd6, %rd4, %rd5;
    st.global.u32 [%rd6], %r8;
    add.u32 %r6, %r6, 128;
    setp.lt.u32 %p3, %r6, 4096;
    @%p3 bra $COPY_OUT;
    ret;
}
"""
TILE_2D = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd3, {%r2, %r3}], [bar]"


def load_box(tmap, tensor, coords, dst, copy=TILE_2D, nbytes=None) -> np.ndarray:
    """The 16 KB shared box after one tensor load through ``tmap`` (its tensor placed at its base)."""
    out = np.zeros(BOX // 4, np.uint32)
    run_kernel(LOAD.replace("@COPY@", copy), "k", block=128,
               args=[(tmap, tensor), out, *coords, dst, tmap.box_bytes if nbytes is None else nbytes])
    return out.view(np.uint8)


@pytest.mark.parametrize("swizzle", ["none", "32B", "64B", "128B"])
@pytest.mark.parametrize("narrow", [False, True])
@pytest.mark.parametrize("dtype, coords, dst", [("bf16", (0, 0), 0), ("f32", (-4, 5), 1024),
                                                ("u8", (16, -3), 384), ("f16", (24, 30), 128), ("tf32", (4, 2), 0)])
def test_a_tensor_load_writes_the_bytes_fragsim_tma_load_writes(swizzle, narrow, dtype, coords, dst):
    """Rows innermost first (a row narrower than the swizzle span takes a whole span), swizzled on the
    absolute shared address, out-of-bound elements filled, tf32 rounded: byte for byte fragsim.tma_load's
    image, at every swizzle mode and partly outside the tensor."""
    e = {"bf16": 2, "f16": 2, "f32": 4, "u8": 1, "tf32": 4}[dtype]
    span = {"none": 64, "32B": 32, "64B": 64, "128B": 128}[swizzle]
    dims = (40, 36)
    tensor = np.random.default_rng(3).integers(0, 256, dims[1] * 48 * e, dtype=np.uint8)
    tmap = fragsim.TensorMap(dtype, dims, (48 * e,), ((16 if narrow else span) // e, 16), swizzle=swizzle, base=BASE)
    want = np.zeros(BOX, np.uint8)
    fragsim.tma_load(tmap, tensor, coords, want, dst)
    assert np.array_equal(load_box(tmap, tensor, coords, dst), want)


def test_a_tensor_load_fills_out_of_bound_elements_with_nan_when_the_map_says_so():
    tensor = np.ones((8, 16), np.float32)
    tmap = fragsim.TensorMap("f32", (16, 8), (64,), (16, 4), oob_fill="nan", base=BASE)
    box = load_box(tmap, tensor, (0, 6), 0)[:tmap.box_bytes].view(np.float32).reshape(4, 16)
    want = np.zeros(BOX, np.uint8)
    fragsim.tma_load(tmap, tensor, (0, 6), want, 0)
    assert (box[:2] == 1).all() and np.isnan(box[2:]).all()
    assert np.array_equal(box.view(np.uint32), want[:tmap.box_bytes].view(np.uint32).reshape(4, 16))


def test_a_five_dimensional_tensor_load_takes_five_coordinates_and_fills_past_the_last_dimension():
    tensor = np.arange(2 * 3 * 4 * 5 * 16, dtype=np.uint16).reshape(2, 3, 4, 5, 16)
    tmap = fragsim.TensorMap("u16", (16, 5, 4, 3, 2), (32, 160, 640, 1920), (8, 2, 2, 2, 2), base=BASE)
    copy = ("cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes "
            "[%r4], [%rd3, {%r2, %r3, %r3, %r3, %r3}], [bar]")
    box = load_box(tmap, tensor, (8, 1), 0, copy)[:tmap.box_bytes].view(np.uint16).reshape(2, 2, 2, 2, 8)
    assert np.array_equal(box[0], tensor[1, 1:3, 1:3, 1:3, 8:16]) and not box[1].any()   # dimension 4 ends at 2


def test_the_copy_completes_its_mbarrier_with_the_boxs_bytes():
    """expect_tx of one byte fewer than the box leaves the tx-count at -1 after the copy: never complete."""
    tensor = np.zeros((8, 16), np.float32)
    tmap = fragsim.TensorMap("f32", (16, 8), (64,), (16, 4), base=BASE)
    with pytest.raises(PtxRuntimeError, match=r"deadlock: .* tx-count -1"):
        load_box(tmap, tensor, (0, 0), 0, nbytes=tmap.box_bytes - 1)


STORE = HEAD + """.visible .entry k(.param .align 64 .b8 tmap[128], .param .u64 img, .param .s32 x, .param .s32 y)
{
""" + REGS + """
    .shared .align 1024 .b8 box[16384];
    .shared .align 8 .b64 bar;
    mbarrier.init.shared::cta.b64 [bar], 1;
    ld.param.u64 %rd1, [img];
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 16384;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [box], [%rd1], 16384, [bar];
$WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
    @!%p2 bra $WAIT;
    fence.proxy.async.shared::cta;
    mov.b64 %rd2, tmap;
    cvta.param.u64 %rd3, %rd2;
    ld.param.u32 %r2, [x];
    ld.param.u32 %r3, [y];
    cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%rd3, {%r2, %r3}], [box];
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group 0;
    ret;
}
"""


@pytest.mark.parametrize("swizzle, coords", [("none", (0, 0)), ("128B", (32, 30)), ("64B", (8, 3))])
def test_a_tensor_store_writes_what_fragsim_tma_store_writes_and_skips_out_of_bound_elements(swizzle, coords):
    """A bulk copy fills the box from an image, a tensor store writes it back through the map: the elements
    inside the tensor, and past its 37-element rows the rest of each row's last 16-byte chunk."""
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, BOX, dtype=np.uint8)
    tensor = rng.integers(0, 256, (36, 48), dtype=np.uint16)
    tmap = fragsim.TensorMap("u16", (37, 36), (96,), (32, 16), swizzle=swizzle, base=BASE)
    want = tensor.copy()
    fragsim.tma_store(tmap, want, coords, image, 0)
    run_kernel(STORE, "k", args=[(tmap, tensor), image, *coords])
    assert np.array_equal(tensor, want)


def test_a_store_at_negative_coordinates_is_refused():
    tmap = fragsim.TensorMap("u16", (40, 36), (96,), (32, 16), base=BASE)
    with pytest.raises(PtxRuntimeError, match="coordinate 1 is -2: a store's box must start at non-negative coordinates"):
        run_kernel(STORE, "k", args=[(tmap, np.zeros((36, 48), np.uint16)), np.zeros(BOX, np.uint8), 0, -2])


BULK = HEAD + """.visible .entry k(.param .u64 src, .param .u64 dst, .param .u64 seen, .param .u32 size)
{
""" + REGS + """
    .shared .align 128 .b8 buf[4096];
    .shared .align 8 .b64 bar;
    ld.param.u64 %rd1, [src];
    ld.param.u64 %rd2, [dst];
    ld.param.u64 %rd3, [seen];
    ld.param.u32 %r1, [size];
    mbarrier.init.shared::cta.b64 [bar], 1;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], %r1;
    cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [buf], [%rd1], %r1, [bar];
    ld.shared.u32 %r2, [buf];
    st.global.u32 [%rd3], %r2;
$WAIT:
    mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
    @!%p1 bra $WAIT;
    ld.shared.u32 %r3, [buf];
    st.global.u32 [%rd3+4], %r3;
    cp.async.bulk.global.shared::cta.bulk_group [%rd2], [buf], %r1;
    cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u32 [%rd2+16], [buf], 16;
    cp.async.bulk.commit_group;
    cp.async.bulk.wait_group.read 0;
    ld.global.u32 %r4, [%rd2];
    st.global.u32 [%rd3+8], %r4;
    cp.async.bulk.wait_group 0;
    ld.global.u32 %r5, [%rd2];
    st.global.u32 [%rd3+12], %r5;
    ret;
}
"""


def test_bulk_copies_land_when_observed_and_their_stores_at_the_wait_of_their_group():
    """A load's bytes are in shared memory once the wait observes the phase complete (a read before it
    sees what was there); a bulk_group store's global bytes are written at wait_group, not at
    wait_group.read; the reduction adds element by element."""
    src = np.arange(1, 65, dtype=np.uint32)
    dst = np.full(64, 1000, np.uint32)
    seen = np.zeros(4, np.uint32)
    run_kernel(BULK, "k", args=[src, dst, seen, 256])
    assert seen.tolist() == [0, 1, 1000, 1]
    assert np.array_equal(dst[:4], src[:4]) and np.array_equal(dst[4:8], src[4:8] + src[:4])
    assert np.array_equal(dst[8:], src[8:])


@pytest.mark.parametrize("size, src_offset, message", [
    (200, 0, r"size 0xc8 -- PTX ISA: size must be a multiple of 16"),
    (256, 8, r"srcMem 0x7f.*8 -- PTX ISA: the addresses dstMem and srcMem must be aligned to 16 bytes"),
])
def test_bulk_copy_sizes_and_addresses_not_multiples_of_16_are_refused_in_the_isas_words(size, src_offset, message):
    src = np.zeros(128, np.uint32)
    with pytest.raises(PtxRuntimeError, match=message):
        run_kernel(BULK, "k", args=[Buffer(src, address=BASE + src_offset), np.zeros(64, np.uint32),
                                    np.zeros(4, np.uint32), size])


def test_a_bulk_copy_to_another_ctas_shared_memory_is_refused():
    ptx = HEAD + ".visible .entry k()\n{\n.shared .align 128 .b8 a[64];\n.shared .align 8 .b64 bar;\n" \
        "    cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [a], [a], 64, [bar];\n    ret;\n}\n"
    with pytest.raises(PtxLoadError, match="the shared memory of another CTA of the cluster"):
        run_kernel(ptx, "k")


def test_tensor_load_refusals_name_the_rule():
    tensor = np.zeros((36, 48), np.uint16)
    tmap = fragsim.TensorMap("u16", (40, 36), (96,), (32, 16), swizzle="128B", base=BASE)
    with pytest.raises(PtxRuntimeError, match=r"dst = 0x40 must be a 128-byte aligned shared address"):
        load_box(tmap, tensor, (0, 0), 64)
    with pytest.raises(PtxRuntimeError, match=r"coords\[0\] = 3 starts the box 6 bytes past a 16-byte boundary"):
        load_box(tmap, tensor, (3, 0), 0)
    copy = TILE_2D.replace(".2d.", ".3d.").replace("{%r2, %r3}", "{%r2, %r3, %r3}")
    with pytest.raises(PtxRuntimeError, match=r"the tensor map has rank 2, the instruction .3d"):
        load_box(tmap, tensor, (0, 0), 0, copy)


def test_a_tensor_map_whose_tensor_is_in_no_buffer_is_refused_with_the_maps_base():
    tmap = fragsim.TensorMap("u16", (40, 36), (96,), (32, 16), base=BASE)
    out = np.zeros(BOX // 4, np.uint32)
    with pytest.raises(PtxRuntimeError, match=r"outside every buffer of the launch \(the box at \(0, 0\) .* base "
                                              r"0x7f8000000000: is that base a Buffer's address\?\)"):
        run_kernel(LOAD.replace("@COPY@", TILE_2D), "k", block=128, args=[tmap, out, 0, 0, 0, 1024])


def test_parameter_bytes_that_are_no_tensor_map_are_refused():
    with pytest.raises(PtxRuntimeError, match=r"the 128 bytes at 0x7c0000000000 are not a tensor map"):
        run_kernel(LOAD.replace("@COPY@", TILE_2D), "k", block=128, args=[bytes(128), np.zeros(4096, np.uint32),
                                                                        0, 0, 0, 1024])


def test_a_tensor_map_goes_only_to_a_parameter_of_128_bytes_or_more():
    tmap = fragsim.TensorMap("u16", (40, 36), (96,), (32, 16), base=BASE)
    ptx = HEAD + ".visible .entry k(.param .u64 a, .param .align 8 .b8 s[64])\n{\n    ret;\n}\n"
    with pytest.raises(TypeError, match=r"parameter a is .u64; a TensorMap goes to a CUtensorMap parameter"):
        run_kernel(ptx, "k", args=[tmap, bytes(64)])
    with pytest.raises(TypeError, match=r"takes 64 bytes; a TensorMap is a CUtensorMap parameter of 128 bytes or more"):
        run_kernel(ptx, "k", args=[0, tmap])


def test_a_tensor_placed_by_its_map_needs_the_maps_base():
    tmap = fragsim.TensorMap("u16", (40, 36), (96,), (32, 16))
    with pytest.raises(ValueError, match=r"give the TensorMap the device address to place its tensor at"):
        load_box(tmap, np.zeros((36, 48), np.uint16), (0, 0), 0)


@pytest.mark.parametrize("seed", range(20))
def test_fragsims_tensor_map_bytes_give_back_the_map(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 6))
    dims = [int(rng.integers(1, 1 << 32)) for _ in range(rank)]
    strides = [int(rng.integers(1, 1 << 20)) * 16 for _ in range(rank - 1)]
    box = [16] + [int(rng.integers(1, 9)) for _ in range(rank - 1)]
    tmap = fragsim.TensorMap("u8", dims, strides, box, [int(rng.integers(1, 9)) for _ in range(rank)],
                             swizzle=str(rng.choice(["none", "32B"])), base=int(rng.integers(0, 1 << 40)) * 16)
    assert tensormap_of(tensormap_bytes(tmap)) == tmap
    assert tensormap_of(bytes(128)) is None


# ---- whole kernels --------------------------------------------------------------------------------

BF16, F16 = "m16n8k16.row.col.f32.bf16.bf16.f32", "m16n8k16.row.col.f16.f16.f16.f16"


def pad(x: np.ndarray, rows: int, cols: int) -> np.ndarray:
    return np.pad(x, ((0, rows - x.shape[0]), (0, cols - x.shape[1])))


@pytest.mark.parametrize("M, N, K", [(64, 64, 128), (100, 72, 200)])
def test_our_tma_wgmma_gemm_gives_the_bits_of_fragsim_gemm(M, N, K):
    """TMA boxes the TMA fills with zeros past A and Bt, wgmma over the 128B-swizzled tiles: D is the
    GEMM of the zero-padded operands, bit for bit."""
    rng = np.random.default_rng(M + K)
    A = to_bits(rng.standard_normal((M, K)), "bf16").astype(np.uint16)
    Bt = to_bits(rng.standard_normal((N, K)), "bf16").astype(np.uint16)
    D = np.zeros((M, N), np.float32)
    tA = fragsim.TensorMap("bf16", (K, M), (K * 2,), (64, 64), swizzle="128B", base=BASE)
    tB = fragsim.TensorMap("bf16", (K, N), (K * 2,), (64, 64), swizzle="128B", base=BASE + (1 << 32))
    run_kernel(CORPUS + "tma_wgmma.sm90a.ptx", grid=(-(-N // 64), -(-M // 64)), block=128,
               args=[(tA, A), (tB, Bt), D, M, N, K])
    Mp, Np, Kp = (-(-x // 64) * 64 for x in (M, N, K))
    want = fragsim.gemm(BF16, pad(A, Mp, Kp), pad(Bt, Np, Kp).T.copy())[:M, :N]
    assert np.array_equal(D.view(np.uint32), want)


@pytest.mark.parametrize("major", ["K", "MN"])
def test_cutlass_wgmma_tma_tutorial_gives_the_bits_of_fragsim_gemm(major):
    """CuTe's hopper/wgmma_tma_sm90.cu (TN and NT), launched as gpu_check's ptx_kernels launches it."""
    name = "cutlass_wgmma_tma_sm90_tn" if major == "K" else "cutlass_wgmma_tma_sm90_nt"
    case = P.Case(name, P.BY_NAME[name].files[0], 0, 0)
    g = case.launch()
    C = P.fragsim_outputs(case, g)["C"]
    A, B = g.buffers["A"], g.buffers["B"]
    a, b = (A, B.T.copy()) if major == "K" else (A.T.copy(), B)
    assert np.array_equal(C, fragsim.gemm(F16, a, b).T)


def test_the_tma_bulk_kernel_copies_transforms_reduces_and_elects():
    n = 2500
    x = np.random.default_rng(7).integers(0, 1 << 32, n, dtype=np.uint32)
    out, sums, leaders = np.zeros(n, np.uint32), np.arange(4, dtype=np.uint32), np.zeros(3, np.uint32)
    run_kernel(CORPUS + "tma_bulk.sm90a.ptx", grid=3, block=128, args=[x, out, sums, leaders, n])
    y = (x * np.uint32(3) + np.uint32(1)).astype(np.uint32)
    assert np.array_equal(out, y) and leaders.tolist() == [5, 5, 5]
    assert np.array_equal(sums, (np.arange(4) + y[0:4].astype(np.int64) + y[1024:1028] + y[2048:2052]) % (1 << 32))


def test_the_gpu_launch_passes_each_tensor_map_as_the_drivers_bytes_padded_to_its_parameter():
    """ptx_kernels' GPU side: a MapArg is encoded (by cuTensorMapEncodeTiled there; a stand-in here) at its
    buffer's device address, in the argument set the tma family's driver call takes, and padded to the
    parameter (CuTe's 256-byte TMA atom)."""
    from fragsim.gpu_check.tma.cases import tensor_map
    case = P.Case("cutlass_wgmma_tma_sm90_nt", "cutlass_wgmma_tma_sm90.sm90a.ptx", 0, 0)
    g = case.launch()
    entry = P.entry_of(case.file, P.BY_NAME[case.kernel].entry)
    seen = []

    def encode(m, address):
        seen.append((m.buffer, address))
        assert tensor_map(m.case(), address) == m.tensor_map(address)
        return bytes(range(128))
    pointers = {"A": 0x10000, "B": 0x20000, "C": 0x30000}
    raw = [P.param_bytes(p.type, p.count, a, pointers, "test", encode) for p, a in zip(entry.params, g.args)]
    maps = [r for r, a in zip(raw, g.args) if isinstance(a, P.MapArg)]
    assert seen == [("A", 0x10000), ("B", 0x20000)]
    assert all(r == bytes(range(128)) + bytes(128) for r in maps)
