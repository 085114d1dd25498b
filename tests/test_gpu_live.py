"""Live property tests on a GPU (``pytest -m gpu``): hypothesis draws the inputs, the GPU
and fragsim both run them, and every output bit must agree.

Skipped, with the reason, where CuPy or a GPU is missing.  Inputs: random bit patterns,
special values (NaN with payloads, +-Inf, +-0), subnormals, cancelling product pairs,
wide exponent spreads, tf32 garbage bits, integer extremes; random and structured lane addresses.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from hypothesis.extra import numpy as hnp

import fragsim
from fragsim import FORMS, lookup
from fragsim.facts.formats import IntFormat
from fragsim.gpu_check.table import bulk, generate as G, generate_exact as X
from fragsim.gpu_check import kernels as K
from fragsim.gpu_check.prelude import TILE_BYTES

pytestmark = pytest.mark.gpu

LIVE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def gpu():
    from fragsim.gpu_check.runner import GpuUnavailable
    try:
        return bulk.GpuBackend()
    except GpuUnavailable as e:
        pytest.skip(f"no GPU to test on: {e}")


def _agree(gpu, op, inp):
    hw = gpu.run(op, inp)
    exp = bulk.model_outputs(op, inp, gpu.arch)
    bad = np.flatnonzero(bulk.mismatching(hw, exp))
    if bad.size:
        d = bulk.describe(op, inp, hw, exp, int(bad[0]), int(bad[0]))
        pytest.fail(f"GPU and fragsim ({gpu.arch}) differ:\n{bulk.format_detail(d)}")


# ---------------------------------------------------------------------------------------
# mma

def _element(fmt):
    """One word of ``fmt``: a random pattern, a special, a subnormal, or a value with an
    exponent anywhere in the range (tf32: garbage in the 13 ignored bits at times); integers:
    any word or an extreme (min, -1, 0, 1, max)."""
    bits = fmt.storage_bits
    if isinstance(fmt, IntFormat):
        ext = sorted({v & ((1 << bits) - 1) for v in (fmt.min, -1, 0, 1, fmt.max)})
        return st.one_of(st.integers(0, (1 << bits) - 1), st.sampled_from(ext))
    specials = [int(x) for x in (X.f64_specials() if fmt.name == "f64" else G.specials(fmt))]
    sub = st.builds(lambda s, m: (s << fmt.sign_shift) | (m << fmt.ignored_low_bits),
                    st.integers(0, 1), st.integers(1, (1 << fmt.man_bits) - 1))
    wide = st.builds(lambda s, e, m: (s << fmt.sign_shift) | (e << fmt.exp_shift) | (m << fmt.ignored_low_bits),
                     st.integers(0, 1), st.integers(1, (1 << fmt.exp_bits) - 2),
                     st.integers(0, (1 << fmt.man_bits) - 1))
    word = st.one_of(st.integers(0, (1 << bits) - 1), st.sampled_from(specials), sub, wide)
    if fmt.ignored_low_bits:
        word = st.builds(lambda w, g: w | g, word,
                         st.one_of(st.just(0), st.integers(0, (1 << fmt.ignored_low_bits) - 1)))
    return word


@st.composite
def mma_case(draw, form):
    f = lookup(form)
    k = f.shape[2]
    mats = []
    for op in "ABC":
        shape = f.matrix_shape(op)           # m8n8k4 .f16: four quad pairs' matrices stacked by rows
        fmt = f.fmt(op)
        # A few distinct words per matrix, so structure (repeats, specials meeting) appears.
        pool = draw(st.lists(_element(fmt), min_size=1, max_size=6))
        mats.append(draw(hnp.arrays(fmt.dtype, shape, elements=st.sampled_from(pool))))
    A, B, C = mats
    if not isinstance(f.fmt("A"), IntFormat) and draw(st.booleans()):
        # Cancellation: negate column k2 of A against column k1, copy row k1 of B to k2.
        k1, k2 = draw(st.lists(st.integers(0, k - 1), min_size=2, max_size=2, unique=True))
        A[:, k2] = A[:, k1] ^ f.fmt("A").dtype(1 << f.fmt("A").sign_shift)
        B[k2, :] = B[k1, :]
    return A, B, C


def _mma_inputs(form, cases):
    f = lookup(form)
    A = np.stack([c[0] for c in cases])
    B = np.stack([c[1] for c in cases])
    C = np.stack([c[2] for c in cases])
    return {"a": fragsim.pack(f, "A", A), "b": fragsim.pack(f, "B", B), "c": fragsim.pack(f, "C", C),
            "tag": np.zeros(len(cases), np.uint8), "tag_names": ["hypothesis"]}


@pytest.mark.parametrize("form", list(FORMS))
def test_mma_matches_the_gpu_bit_for_bit(gpu, form):
    @LIVE
    @given(st.lists(mma_case(form), min_size=1, max_size=8))
    def prop(cases):
        _agree(gpu, form, _mma_inputs(form, cases))
    prop()


@pytest.mark.parametrize("form", list(FORMS))
def test_mma_matches_the_gpu_on_generated_classes(gpu, form):
    # The bulk generators' classes (cancellation with c = -sum, exponent spreads, ...),
    # seeds chosen by hypothesis.
    @LIVE
    @given(st.integers(0, 2**32 - 1), st.sampled_from(G.mma_classes(form)))
    def prop(seed, cls):
        _agree(gpu, form, G.mma_inputs(form, 64, np.random.default_rng(seed), classes=(cls,)))
    prop()


@pytest.mark.parametrize("form", list(FORMS))
def test_mma_probes_match_the_gpu(gpu, form):
    _agree(gpu, form, G.probe_inputs(form))


# ---------------------------------------------------------------------------------------
# shared memory

SLOTS16 = TILE_BYTES // 16


@st.composite
def lane_slots(draw, nslots, distinct):
    """32 slot indices: a random permutation, random with repeats, or a structured set."""
    kind = draw(st.sampled_from(["perm", "random", "strided", "broadcast", "blocks"] if not distinct
                                else ["perm", "strided", "blocks"]))
    if kind == "perm":
        return np.array(draw(st.permutations(range(nslots)))[:32])
    if kind == "random":
        return np.array(draw(st.lists(st.integers(0, nslots - 1), min_size=32, max_size=32)))
    if kind == "broadcast":
        return np.full(32, draw(st.integers(0, nslots - 1)))
    base = draw(st.integers(0, nslots - 1))
    if kind == "strided":
        s = draw(st.integers(0, 20).map(lambda x: 2 * x + 1))
        return (base + np.arange(32) * s) % nslots
    # blocks: lanes in groups of 8 take consecutive slots, groups placed anywhere distinct
    starts = draw(st.lists(st.integers(0, nslots // 8 - 1), min_size=4, max_size=4, unique=True))
    return np.concatenate([np.arange(8) + 8 * s for s in starts]) % nslots


def _shared_inputs(op, slots, tile, mask, payload_seed):
    sop = fragsim.parse_shared_op(op)
    rng = np.random.default_rng(payload_seed)
    inp = {"tiles": tile[None], "tile_idx": np.zeros(1, np.uint16),
           "addrs": (slots * sop.bytes_per_addr).astype(np.uint32)[None],
           "mask": np.array([mask], np.uint32), "tag": np.zeros(1, np.uint8), "tag_names": ["hypothesis"]}
    if sop.kind == "stsm":
        inp["regs"] = rng.integers(0, 1 << 32, size=(1, 32, sop.num), dtype=np.uint64).astype(np.uint32)
    elif sop.kind == "st":
        hi = 1 << (8 * min(4, sop.bytes_per_addr))
        inp["vals"] = rng.integers(0, hi, size=(1, 32, max(1, sop.bytes_per_addr // 4)),
                                   dtype=np.uint64).astype(np.uint32)
    elif sop.kind == "ldgsts":
        inp["src"] = rng.integers(0, 256, size=(1, 32, 16), dtype=np.uint8)
    return inp


TILES = hnp.arrays(np.uint8, TILE_BYTES, elements=st.integers(0, 255))


@pytest.mark.parametrize("op", K.LDMATRIX_OPS + K.STMATRIX_OPS)
def test_ldmatrix_stmatrix_match_the_gpu(gpu, op):
    if op not in gpu.kernels:
        pytest.skip(f"{op} needs compute capability 9.0 ({gpu.info['device']} has {gpu.info['cc']})")
    sop = fragsim.parse_shared_op(op)

    @LIVE
    @given(lane_slots(SLOTS16, distinct=sop.is_store), TILES, st.integers(0, 2**32 - 1))
    def prop(slots, tile, seed):
        if sop.is_store:
            # Only lanes 0..8*num-1 give addresses; repeats among them are undefined in PTX.
            act = slots[:sop.address_lanes]
            if len(set(act.tolist())) < act.size:
                return
        _agree(gpu, op, _shared_inputs(op, slots, tile, 0xFFFFFFFF, seed))
    prop()


@pytest.mark.parametrize("op", K.LD_OPS + K.ST_OPS + K.CP_ASYNC_OPS)
def test_plain_shared_accesses_match_the_gpu(gpu, op):
    sop = fragsim.parse_shared_op(op)
    nslots = TILE_BYTES // sop.bytes_per_addr

    @LIVE
    @given(lane_slots(nslots, distinct=sop.is_store), TILES,
           st.one_of(st.just(0xFFFFFFFF), st.integers(0, 2**32 - 1)), st.integers(0, 2**32 - 1))
    def prop(slots, tile, mask, seed):
        _agree(gpu, op, _shared_inputs(op, slots, tile, mask, seed))
    prop()
