"""fragsim.gemm: a GEMM of mma.sync is fragsim.mma chained tile by tile, bit for bit.

The oracle here is that definition written out: every output tile's C packed to registers, one
``fragsim.mma`` per k-step in ``k_order`` (A's and B's tiles packed), D unpacked and packed again as
the next C.  Forms of several products per warp (m8n8k4 .f16) put the tile in group slot 0 with
zeros in the others.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import fragsim
from fragsim import FORMS, lookup
from fragsim.facts.formats import FloatFormat
from fragsim.sim.gemm import k_steps

F32 = "m16n8k16.row.col.f32.f16.f16.f32"
F16 = "m16n8k16.row.col.f16.f16.f16.f16"


def words(rng, shape, fmt, tiny=False):
    """Bit patterns that reach the corners: moderate values (a narrow exponent band: long carries,
    cancellation), wide exponent spreads, subnormals, +-0, and a few uniformly random words (NaN with
    any payload, Inf); integer formats: uniform words.  ``tiny``: only the bottom binades, subnormals
    and zeros (whole dot products below e_zero, where zero terms decide E_max)."""
    if not isinstance(fmt, FloatFormat):
        return rng.integers(0, 1 << fmt.storage_bits, shape, dtype=np.uint64).astype(fmt.dtype)
    n = int(np.prod(shape))
    man_field = fmt.storage_bits - 1 - fmt.exp_bits          # mantissa bits as stored (tf32: 23)
    top = (1 << fmt.exp_bits) - 1
    sign = rng.integers(0, 2, n, dtype=np.uint64) << np.uint64(fmt.storage_bits - 1)
    man = rng.integers(0, 1 << man_field, n, dtype=np.uint64)
    band = rng.integers(max(1, fmt.bias - 3), min(top - 1, fmt.bias + 3) + 1, n).astype(np.uint64)
    if tiny:
        band = rng.integers(0, 3, n).astype(np.uint64)
    wide = rng.integers(1, top, n).astype(np.uint64)
    pick = rng.random(n)
    exp = np.where(pick < 0.55, band, np.where(pick < 0.8, band if tiny else wide, np.uint64(0)))   # 0: subnormal
    w = sign | (exp << np.uint64(man_field)) | man
    w = np.where(pick > 0.92, sign, w)                                                # +-0
    if not tiny:
        w = np.where(pick > 0.97, rng.integers(0, 1 << fmt.storage_bits, n, dtype=np.uint64), w)
    return w.reshape(shape).astype(fmt.dtype)


def chained_mma(form, A, B, C, arch, order):
    f = lookup(form)
    fm, fn, fk = f.shape
    g = f.groups
    M, K = A.shape
    N = B.shape[1]
    MT, NT = M // fm, N // fn

    def stacked(tiles):        # (MT, NT, r, c) tiles in group slot 0 of a warp's stacked matrix
        out = np.zeros(tiles.shape[:2] + (g * tiles.shape[2], tiles.shape[3]), tiles.dtype)
        out[:, :, :tiles.shape[2]] = tiles
        return out

    c = fragsim.pack(f, "C", stacked(C.reshape(MT, fm, NT, fn).transpose(0, 2, 1, 3)))
    for s in order:
        a = A[:, s * fk:(s + 1) * fk].reshape(MT, 1, fm, fk)
        b = B[s * fk:(s + 1) * fk].reshape(fk, NT, fn).transpose(1, 0, 2)[None]
        d = fragsim.mma(f, fragsim.pack(f, "A", stacked(np.broadcast_to(a, (MT, NT, fm, fk)))),
                        fragsim.pack(f, "B", stacked(np.broadcast_to(b, (MT, NT, fk, fn)))), c, arch)
        Dt = fragsim.unpack(f, "D", d)
        if f.fmt("C") == f.fmt("D"):
            c = fragsim.pack(f, "C", Dt)
    return Dt[:, :, :fm].transpose(0, 2, 1, 3).reshape(M, N)


def problem(form, rng, mt, nt, ks, tiny=False):
    f = lookup(form)
    fm, fn, fk = f.shape
    M, N, K = fm * mt, fn * nt, fk * ks
    return (words(rng, (M, K), f.fmt("A"), tiny), words(rng, (K, N), f.fmt("B"), tiny),
            words(rng, (M, N), f.fmt("C"), tiny))


def both(form, A, B, C, arch, order):
    """(gemm, chained mma) of one problem, or the ValueError both give (a form with no model on arch)."""
    try:
        want = chained_mma(form, A, B, C, arch, k_steps(order, A.shape[1] // lookup(form).shape[2]))
    except ValueError as e:
        with pytest.raises(ValueError, match="^" + __import__("re").escape(str(e)) + "$"):
            fragsim.gemm(form, A, B, C, arch=arch, k_order=order)
        return None, None
    return fragsim.gemm(form, A, B, C, arch=arch, k_order=order), want


def _steps(form, ks):
    f = lookup(form)
    return ks if f.fmt("C") == f.fmt("D") else 1      # C and D of two formats: one k-step only


@pytest.mark.parametrize("form", list(FORMS))
def test_every_form_of_the_table_is_chained_mma_bit_for_bit(form):
    """Each table entry (also those added later): a 2x2-tile GEMM of three k-steps in descending
    order, on both architectures, equals fragsim.mma chained tile by tile."""
    rng = np.random.default_rng(abs(hash(form)) % 2**32)
    for tiny in (False, True):
        A, B, C = problem(form, rng, 2, 2, _steps(form, 3), tiny)
        for arch in ("sm_80", "sm_90"):
            got, want = both(form, A, B, C, arch, "descending")
            if got is not None:
                assert got.dtype == lookup(form).fmt("D").dtype and got.shape == C.shape
                assert np.array_equal(got, want), f"{form} on {arch}: {np.count_nonzero(got != want)} elements differ"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(form=st.sampled_from(sorted(FORMS)), mt=st.integers(1, 3), nt=st.integers(1, 3), ks=st.integers(1, 5),
       order=st.sampled_from(["ascending", "descending", "permuted"]), arch=st.sampled_from(["sm_80", "sm_90"]),
       tiny=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_gemm_equals_mma_chained_tile_by_tile(form, mt, nt, ks, order, arch, tiny, seed):
    """Property: for random forms, shapes, k orders and adversarial bits (NaN payloads, signed zeros,
    subnormals, f16 accumulators rounded per k-step), gemm is chained mma, every bit."""
    rng = np.random.default_rng(seed)
    ks = _steps(form, ks)
    A, B, C = problem(form, rng, mt, nt, ks, tiny)
    k_order = rng.permutation(ks) if order == "permuted" else order
    got, want = both(form, A, B, C, arch, k_order)
    if got is not None:
        assert np.array_equal(got, want)


def test_f16_accumulator_is_rounded_after_every_k_step():
    """C = 2048 (f16: ulp 2) and 16 k-steps that each add 1: every step rounds 2049 to even, 2048,
    so D stays 2048 (one sum of all the steps would give 2064)."""
    a = np.zeros((16, 256))
    a[:, ::16] = 1.0
    A, B = fragsim.to_bits(a, "f16"), fragsim.to_bits(np.ones((256, 8)), "f16")
    C = fragsim.to_bits(np.full((16, 8), 2048.0), "f16")
    D = fragsim.from_bits(fragsim.gemm(F16, A, B, C), "f16")
    assert (D == 2048.0).all()


def test_k_order_changes_the_bits_when_the_rounding_depends_on_it():
    """f32 accumulators round toward zero after every k-step: 1, then 2**-24 twice stays 1
    (ascending); 2**-24 twice, then 1 is 1 + 2**-23 (descending)."""
    a = np.zeros((16, 48))
    a[:, 0], a[:, 16], a[:, 32] = 1.0, 2.0 ** -24, 2.0 ** -24
    A, B = fragsim.to_bits(a, "f16"), fragsim.to_bits(np.ones((48, 8)), "f16")
    up, down = (fragsim.from_bits(fragsim.gemm(F32, A, B, k_order=o), "f32") for o in ("ascending", "descending"))
    assert (up == 1.0).all() and (down == 1.0 + 2.0 ** -23).all()


def test_zero_terms_bring_e_zero_when_every_other_term_lies_below_it():
    """f16 accumulators on sm_90 (e_zero -21, F = 25): terms 2**-22, 2**-25, 2**-47 and zeros (c = 0).
    E_max would be -22, keeping 2**-47 and rounding 4.5 + eps quanta of 2**-24 up to 5; the zero terms
    raise it to -21, the 2**-47 is truncated away, and the tie rounds to even: 4 quanta."""
    a, b = np.zeros((16, 16)), np.zeros((16, 8))
    a[:, :3] = 2.0 ** -11, 2.0 ** -11, 2.0 ** -24
    b[:3] = np.array([2.0 ** -11, 2.0 ** -14, 2.0 ** -23])[:, None]
    A, B = fragsim.to_bits(a, "f16"), fragsim.to_bits(b, "f16")
    assert (fragsim.from_bits(fragsim.gemm(F16, A, B), "f16") == 4 * 2.0 ** -24).all()


@pytest.mark.parametrize("tile", [(32, 16), (16, 32), (64, 8)])
def test_the_warp_tile_orders_the_work_but_not_the_bits(tile):
    rng = np.random.default_rng(5)
    for form in (F32, "m16n8k16.row.col.s32.s8.s8.s32"):
        A, B, C = problem(form, rng, 4, 4, 2)
        assert np.array_equal(fragsim.gemm(form, A, B, C, tile=tile), fragsim.gemm(form, A, B, C))


def test_progress_reports_mma_counts_up_to_the_total():
    seen = []
    for form in (F32, "m16n8k8.row.col.f64.f64.f64.f64"):
        A, B, C = problem(form, np.random.default_rng(1), 2, 3, 4)
        seen.clear()
        fragsim.gemm(form, A, B, C, progress=lambda done, total: seen.append((done, total)))
        assert seen[-1] == (24, 24) and [d for d, _ in seen] == sorted(d for d, _ in seen)


# -- errors ---------------------------------------------------------------------------------------

def _ok(form=F32, M=32, N=16, K=32):
    rng = np.random.default_rng(0)
    return problem(form, rng, M // 16, N // 8, K // lookup(form).shape[2])


@pytest.mark.parametrize("shapes, message", [
    (((30, 32), (32, 16), (30, 16)), r"M \(rows of A and C\) = 30 is not a multiple of 16, the M of m16n8k16"),
    (((32, 32), (32, 12), (32, 12)), r"N \(columns of B and C\) = 12 is not a multiple of 8"),
    (((32, 40), (40, 16), (32, 16)),
     r"K \(columns of A, rows of B\) = 40 is not a multiple of 16, the K of m16n8k16: A is 32 x 40"),
    (((32, 32), (48, 16), (32, 16)), r"A is 32 x 32 and B is 48 x 16: A's columns and B's rows are K"),
    (((32, 32), (32, 16), (16, 16)), r"C is 16 x 16, but A \(32 x 32\) times B \(32 x 16\) is 32 x 16"),
    (((32, 0), (0, 16), (32, 16)), r"K \(columns of A, rows of B\) = 0"),
])
def test_a_shape_that_does_not_divide_is_named(shapes, message):
    A, B, C = (np.zeros(s, np.uint16 if i < 2 else np.uint32) for i, s in enumerate(shapes))
    with pytest.raises(ValueError, match=message):
        fragsim.gemm(F32, A, B, C)


def test_empty_m_or_n_gives_an_empty_d():
    assert fragsim.gemm(F32, np.zeros((0, 16), np.uint16), np.zeros((16, 8), np.uint16)).shape == (0, 8)


@pytest.mark.parametrize("order, exc, message", [
    ([0, 1], ValueError, r"k_order lists 2 of the 3 k-steps: k-step 2 is missing"),
    ([0, 1, 1], ValueError, r"k_order\[2\] = 1: k-step 1 is listed twice"),
    ([0, 1, 3], ValueError, r"k_order\[2\] = 3: k-step indices lie in 0..2"),
    ([-1, 0, 1], ValueError, r"k_order\[0\] = -1"),
    ("backwards", ValueError, r"k_order must be 'ascending', 'descending' or a sequence"),
    ([0.0, 1.0, 2.0], TypeError, r"k_order must be .* integer k-step indices, got dtype float64"),
    ([[0, 1, 2]], TypeError, r"k_order must be .*1-d sequence"),
])
def test_a_bad_k_order_is_named(order, exc, message):
    A, B, C = _ok(K=48)
    with pytest.raises(exc, match=message):
        fragsim.gemm(F32, A, B, C, k_order=order)


@pytest.mark.parametrize("tile, exc, message", [
    ((24, 8), ValueError, r"tile = \(24, 8\): its rows must be a positive multiple of 16"),
    ((16, 0), ValueError, r"its columns must be a positive multiple of 8"),
    ((64, 8), ValueError, r"D has 32 rows, not a multiple of the tile's 64"),
    (16, TypeError, r"tile must be \(rows, columns\)"),
])
def test_a_bad_tile_is_named(tile, exc, message):
    A, B, C = _ok()
    with pytest.raises(exc, match=message):
        fragsim.gemm(F32, A, B, C, tile=tile)


def test_operands_must_be_bit_patterns_of_their_format():
    A, B, C = _ok()
    with pytest.raises(TypeError, match=r"^A: expected the form's .f16 bit patterns \(uint16\), got float dtype float64; "
                                        r"convert with fragsim.to_bits\(values, 'f16'\)"):
        fragsim.gemm(F32, A.astype(float), B, C)
    with pytest.raises(ValueError, match=r"^B: the form's .f16 words must lie in \[0, 2\*\*16\), got 65536 at row 3, col 2"):
        b = B.astype(np.int64)
        b[3, 2] = 1 << 16
        fragsim.gemm(F32, A, b, C)
    with pytest.raises(ValueError, match=r"^C: expected a matrix \(2 dimensions\), got shape \(1, 32, 16\)"):
        fragsim.gemm(F32, A, B, C[None])


def test_a_form_whose_d_cannot_be_its_next_c_runs_one_k_step_only():
    mixed = [n for n, f in FORMS.items() if f.fmt("C") != f.fmt("D")]
    if not mixed:
        pytest.skip("no form of the table has C and D of two formats")
    f = lookup(mixed[0])
    A, B, C = problem(f, np.random.default_rng(0), 1, 1, 2)
    with pytest.raises(ValueError, match=rf"C is .{f.fmt('C').name} and D .{f.fmt('D').name}, so the D of one "
                                         rf"k-step cannot be the C of the next"):
        fragsim.gemm(f, A, B, C)
