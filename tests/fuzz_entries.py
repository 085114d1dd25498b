"""The public entry points as the contract fuzz sees them: for each, its parameters with a valid
value (fixed, and as a Hypothesis strategy), the words its error messages name them by, the
adversarial input classes of each parameter with what they must give, and the sanity check of a
result.  test_contract_fuzz_api.py runs them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim.validate import broadcast_shape
from fragsim.search.addrexpr import evaluate
from fragsim.facts.arch import ARCHS, ArchParams
from fragsim.facts.formats import FORMATS, FloatFormat
from fragsim.instructions import FORMS, SHARED_OPS, MmaForm, SharedOp
from fragsim.layout.linear import LinearLayout

from contract import EITHER, ERROR, INT_DTYPES, OK, OTHER_DTYPES, as_dtype, generic_values

F32 = "m16n8k16.row.col.f32.f16.f16.f32"
FORM_NAMES = sorted(FORMS)
SMEM_BYTES = 2048


@dataclass
class Entry:
    """``run(kw)`` calls the entry point; ``default()`` gives valid arguments, ``valid`` draws them.
    ``names[p]``: words an error about ``p`` must contain one of.  ``accepts[p]``: labels of the
    generic values that are (or may be) valid for ``p``.  ``special[p]``: (label, make(kw), expect)."""

    name: str
    run: Callable
    default: Callable
    valid: Callable
    names: dict
    check: Callable
    accepts: dict = field(default_factory=dict)
    special: dict = field(default_factory=dict)

    def cases(self):
        """(param, label, make, expect) of every adversarial input class of this entry."""
        out = []
        for p in self.names:
            for label, v in generic_values():
                expect = EITHER if label in self.accepts.get(p, ()) else ERROR
                out.append((p, "generic " + label, (lambda kw, v=v: v), expect))
            for label, make, expect in self.special.get(p, ()):
                out.append((p, label, make, expect))
        return out


def rng_words(rng, shape, bits=32):
    return rng.integers(0, 1 << bits, size=shape, dtype=np.uint64).astype(np.uint32 if bits <= 32 else np.uint64)


def regs(form, op, lead=(), rng=None):
    f = fragsim.lookup(form)
    rng = rng or np.random.default_rng(0)
    return rng_words(rng, lead + (32, f.nregs(op)))


def dtype_cases(make_valid, ok_dtypes=INT_DTYPES):
    """The valid array in every integer dtype (valid where its values fit) and the other dtypes."""
    out = []
    for dt in INT_DTYPES + OTHER_DTYPES:
        def make(kw, dt=dt):
            return as_dtype(make_valid(kw), dt)
        out.append((f"dtype {dt}", make, EITHER if dt in ok_dtypes else ERROR))
    return out


def read_only(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def layout_variants(make_valid):
    """Valid arrays in unusual memory layouts: read-only, strided, Fortran order, a broadcast view."""
    def strided(kw):
        a = make_valid(kw)
        big = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
        big[..., ::2] = a
        return big[..., ::2]
    return [("read-only", lambda kw: read_only(make_valid(kw)), OK),
            ("strided view", strided, OK),
            ("Fortran order", lambda kw: np.asfortranarray(make_valid(kw)), OK),
            ("broadcast view", lambda kw: np.broadcast_to(make_valid(kw), (2,) + make_valid(kw).shape), OK)]


# -- mma, pack, unpack -------------------------------------------------------------------------------

@st.composite
def valid_form(draw):
    return draw(st.sampled_from(FORM_NAMES))


def _lead(draw):
    return tuple(draw(st.lists(st.integers(0, 3), max_size=2)))


def mma_default():
    return {"form": F32, "a": regs(F32, "A"), "b": regs(F32, "B"), "c": regs(F32, "C"), "arch": "sm_90",
            "parallel": True}


@st.composite
def mma_valid(draw):
    form = draw(valid_form())
    lead = _lead(draw)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # each operand batched or broadcast (leading 1s, or no leading dimensions)
    ops = {op.lower(): regs(form, op, tuple(n if draw(st.booleans()) else 1 for n in lead), rng) for op in "ABC"}
    dt = draw(st.sampled_from(["uint32", "uint64", "int64"]))
    archs = ["sm_80", "sm_90", "H100", "a100", " Hopper ", ARCHS["sm_80"]]
    if FORMS[form].min_cc > 80 or FORMS[form].groups > 1:   # sm_80 lacks the form (fp8, f64 m16n8k*) or its model
        archs = ["sm_90", "H100", " Hopper "]
    return {"form": draw(st.sampled_from([form, "mma.sync.aligned." + form, form.upper(), FORMS[form]])),
            **{k: v.astype(dt) for k, v in ops.items()},
            "arch": draw(st.sampled_from(archs)),
            "parallel": draw(st.sampled_from([True, False, np.bool_(True)]))}


def mma_check(d, kw):
    f = fragsim.lookup(kw["form"])
    lead = broadcast_shape([np.shape(kw[k])[:-2] for k in "abc"], "abc")
    assert d.dtype == np.uint32 and d.shape == lead + (32, f.nregs("D"))


def form_cases(form=F32):
    return [("zero-width space", lambda kw: form + "\u200b", ERROR), ("fullwidth letter", lambda kw: "\uff4d" + form[1:], ERROR),
            ("upper case", lambda kw: form.upper(), OK), ("spaces around", lambda kw: f"  {form}\t", OK),
            ("PTX prefix", lambda kw: "mma.sync.aligned." + form, OK), ("NUL", lambda kw: form + "\x00", ERROR),
            ("unmodelled PTX form", lambda kw: "m8n8k16.row.col.s32.s8.u8.s32", ERROR),
            ("missing type", lambda kw: form.rsplit(".", 1)[0], ERROR), ("extra part", lambda kw: form + ".x", ERROR),
            ("empty part", lambda kw: form.replace(".", "..", 1), ERROR),
            ("only the prefix", lambda kw: "mma.sync.aligned.", ERROR),
            ("10,000 dots", lambda kw: "." * 10_000, ERROR),
            ("5,000-digit shape", lambda kw: "m" + "9" * 5000 + "n8k16.row.col.f32.f16.f16.f32", ERROR),
            ("MmaForm", lambda kw: FORMS[form], OK), ("str subclass", lambda kw: type("S", (str,), {})(form), OK),
            ("shared op name", lambda kw: "ldmatrix.x4", ERROR)]


def reg_cases(op, param):
    def valid(kw):
        return regs(F32, op)
    n = fragsim.lookup(F32).nregs(op)
    return dtype_cases(valid) + layout_variants(valid) + [
        ("negative int32 word", lambda kw: -valid(kw).astype(np.int64).clip(1), ERROR),
        ("word 2**32 in int64", lambda kw: valid(kw).astype(np.int64) + (1 << 32), ERROR),
        ("word 2**63 in uint64", lambda kw: valid(kw).astype(np.uint64) | np.uint64(1 << 63), ERROR),
        ("one lane", lambda kw: valid(kw)[0], ERROR), ("31 lanes", lambda kw: valid(kw)[:31], ERROR),
        ("one register too many", lambda kw: np.zeros((32, n + 1), np.uint32), ERROR),
        ("lanes last", lambda kw: valid(kw).T, ERROR),
        ("empty batch", lambda kw: np.zeros((0, 32, n), np.uint32), OK),
        ("batch of 3", lambda kw: np.zeros((3, 32, n), np.uint32), OK),
        ("62 batch dims", lambda kw: np.zeros((1,) * 62 + (32, n), np.uint32), EITHER),
        ("list of lists", lambda kw: valid(kw).tolist(), OK),
    ]


ARCH_CASES = [("upper case", lambda kw: "SM_90", OK), ("alias with spaces", lambda kw: " h100 ", OK),
              ("hyphen", lambda kw: "sm-80", OK), ("no such arch", lambda kw: "sm_70", ERROR),
              ("blackwell", lambda kw: "sm_100", ERROR), ("int 90", lambda kw: 90, ERROR),
              ("ArchParams row", lambda kw: ARCHS["sm_80"], OK),
              ("changed row", lambda kw: ARCHS["sm_90"].with_(zero_sign="ieee"), OK),
              ("an arch's dict", lambda kw: ARCHS["sm_90"].row(), ERROR)]

BOOL_CASES = [("numpy bool", lambda kw: np.bool_(False), OK), ("int 1", lambda kw: 1, ERROR),
              ("str yes", lambda kw: "yes", ERROR), ("bool array", lambda kw: np.array([True]), ERROR),
              ("0-d bool array", lambda kw: np.array(True), EITHER)]

MMA = Entry(
    "mma", lambda kw: fragsim.mma(kw["form"], kw["a"], kw["b"], kw["c"], kw["arch"], parallel=kw["parallel"]),
    mma_default, mma_valid(),
    names={"form": ("form",), "a": ("operand A",), "b": ("operand B",), "c": ("operand C",), "arch": ("arch",),
           "parallel": ("parallel",)},
    check=mma_check, accepts={"parallel": ("bool True",)},
    special={"form": form_cases(), "a": reg_cases("A", "a"), "b": reg_cases("B", "b"), "c": reg_cases("C", "c"),
             "arch": ARCH_CASES, "parallel": BOOL_CASES})


def matrix(form, op, lead=(), rng=None):
    f = fragsim.lookup(form)
    rng = rng or np.random.default_rng(0)
    return rng_words(rng, lead + f.matrix_shape(op), f.fmt(op).storage_bits).astype(f.fmt(op).dtype)


@st.composite
def pack_valid(draw):
    form = draw(valid_form())
    op = draw(st.sampled_from("ABCDabcd"))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    m = matrix(form, op, _lead(draw), rng)
    fits_in = [m.dtype.name] + (["uint32", "int64"] if m.dtype.itemsize <= 4 else [])   # dtypes that hold every word
    return {"form": form, "operand": op, "matrix": m.astype(draw(st.sampled_from(fits_in)))}


def pack_check(r, kw):
    f = fragsim.lookup(kw["form"])
    m = np.asarray(kw["matrix"])
    assert r.dtype == np.uint32 and r.shape == m.shape[:-2] + (32, f.nregs(kw["operand"]))
    assert np.array_equal(fragsim.unpack(f, kw["operand"], r), m)


OPERAND_CASES = [("lower case", lambda kw: "a", OK), ("E", lambda kw: "E", ERROR), ("AB", lambda kw: "AB", ERROR),
                 ("A with space", lambda kw: "A ", EITHER), ("int 0", lambda kw: 0, ERROR),
                 ("fullwidth A", lambda kw: "\uff21", ERROR), ("array of A", lambda kw: np.array(["A"]), ERROR)]


def matrix_cases(op="A"):
    def valid(kw):
        return matrix(F32, op)
    rows, cols = fragsim.lookup(F32).matrix_shape(op)
    return dtype_cases(valid) + layout_variants(valid) + [
        ("floats", lambda kw: valid(kw).astype(np.float32), ERROR),
        ("word past the format", lambda kw: valid(kw).astype(np.int64) | (1 << 16), ERROR),
        ("negative word", lambda kw: -valid(kw).astype(np.int64).clip(1), ERROR),
        ("transposed", lambda kw: np.zeros((cols, rows + 1), np.uint16), ERROR),
        ("one row", lambda kw: valid(kw)[0], ERROR), ("empty batch", lambda kw: np.zeros((0, rows, cols), np.uint16), OK),
        ("62 batch dims", lambda kw: np.zeros((1,) * 62 + (rows, cols), np.uint16), OK)]


PACK = Entry("pack", lambda kw: fragsim.pack(kw["form"], kw["operand"], kw["matrix"]),
             lambda: {"form": F32, "operand": "A", "matrix": matrix(F32, "A")}, pack_valid(),
             names={"form": ("form",), "operand": ("operand",), "matrix": ("operand",)}, check=pack_check,
             special={"form": form_cases(), "operand": OPERAND_CASES, "matrix": matrix_cases()})


@st.composite
def unpack_valid(draw):
    form = draw(valid_form())
    op = draw(st.sampled_from("ABCD"))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return {"form": form, "operand": op, "regs": regs(form, op, _lead(draw), rng)}


def unpack_check(m, kw):
    f = fragsim.lookup(kw["form"])
    r = np.asarray(kw["regs"])
    assert m.dtype == f.fmt(kw["operand"]).dtype and m.shape == r.shape[:-2] + f.matrix_shape(kw["operand"])
    assert np.array_equal(fragsim.pack(f, kw["operand"], m), r)


UNPACK = Entry("unpack", lambda kw: fragsim.unpack(kw["form"], kw["operand"], kw["regs"]),
               lambda: {"form": F32, "operand": "A", "regs": regs(F32, "A")}, unpack_valid(),
               names={"form": ("form",), "operand": ("operand",), "regs": ("operand",)}, check=unpack_check,
               special={"form": form_cases(), "operand": OPERAND_CASES, "regs": reg_cases("A", "regs")})


# -- shared memory -------------------------------------------------------------------------------

def smem(rng=None, size=SMEM_BYTES):
    rng = rng or np.random.default_rng(1)
    return rng.integers(0, 256, size, dtype=np.uint8)


def rows16(rng, n, lead=(), size=SMEM_BYTES):
    """Row addresses: distinct 16-byte rows of smem, shaped lead + (32,)."""
    k = int(np.prod(lead, dtype=np.int64)) if lead else 1
    out = np.stack([rng.permutation(size // 16)[:32] * 16 for _ in range(max(k, 1))])[:k]
    return out.reshape(lead + (32,)).astype(np.int64)


def aligned(rng, nbytes, lead=(), size=SMEM_BYTES):
    """Distinct aligned addresses, shaped lead + (32,)."""
    k = int(np.prod(lead, dtype=np.int64)) if lead else 1
    out = np.stack([rng.permutation(size // nbytes)[:32] * nbytes for _ in range(max(k, 1))])[:k]
    return out.reshape(lead + (32,)).astype(np.int64)


def smem_cases():
    return [("int8 bytes", lambda kw: kw["smem"].astype(np.int8), ERROR),
            ("uint32 words", lambda kw: kw["smem"].view(np.uint32), ERROR),
            ("2-D", lambda kw: kw["smem"].reshape(2, -1), ERROR), ("list of ints", lambda kw: kw["smem"].tolist(), ERROR),
            ("bytearray", lambda kw: bytearray(kw["smem"].tobytes()), ERROR),
            ("empty", lambda kw: np.zeros(0, np.uint8), ERROR),
            ("too small", lambda kw: np.zeros(16, np.uint8), ERROR),
            ("read-only", lambda kw: read_only(kw["smem"]), EITHER)]


def addr_cases(nbytes, single=False, smem_bound=True):
    """Addresses for an access of ``nbytes`` per lane (the valid ones come from the entry's default);
    ``smem_bound``: addresses must lie in the entry's smem (the bank model has none: 32 bits)."""
    def shifted(kw, v, dtype=np.int64):
        a = np.array(kw["addrs"], dtype=np.int64).astype(dtype)
        if a.size == 0:        # an empty batch has no lane 5: one instruction instead
            a = np.zeros(32, dtype)
        a[..., 5] = v
        return a
    out = dtype_cases(lambda kw: np.asarray(kw["addrs"])) + [
        ("negative", lambda kw: shifted(kw, -nbytes), ERROR),
        ("misaligned", lambda kw: shifted(kw, nbytes // 2 if nbytes > 1 else 0), ERROR if nbytes > 1 else OK),
        ("past smem", lambda kw: shifted(kw, SMEM_BYTES), ERROR if smem_bound else OK),
        ("2**63 - 16 (int64)", lambda kw: shifted(kw, 2**63 - 16), ERROR),
        ("2**63 (uint64)", lambda kw: shifted(kw, 2**63, np.uint64), ERROR),
        ("2**64 - 16 (uint64)", lambda kw: shifted(kw, 2**64 - 16, np.uint64), ERROR),
        ("31 lanes", lambda kw: np.asarray(kw["addrs"])[:31], ERROR),
        ("33 lanes", lambda kw: np.append(kw["addrs"], 0), ERROR),
        ("list of ints", lambda kw: np.asarray(kw["addrs"]).tolist(), OK),
        ("batch of 2", lambda kw: np.stack([kw["addrs"]] * 2), ERROR if single else OK),
        ("empty batch", lambda kw: np.zeros((0, 32), np.int64), ERROR if single else EITHER),
        ("lane scalar", lambda kw: 0, ERROR),
        ("floats", lambda kw: np.asarray(kw["addrs"], np.float64), ERROR),
    ]
    return out


NUM_CASES = [("3", lambda kw: 3, ERROR), ("8", lambda kw: 8, ERROR), ("0", lambda kw: 0, ERROR),
             ("numpy int", lambda kw: np.int64(4), OK), ("4.0", lambda kw: 4.0, ERROR),
             ("array [4]", lambda kw: np.array([4]), ERROR), ("True", lambda kw: True, ERROR)]


def ldmatrix_default():
    return {"smem": smem(), "addrs": rows16(np.random.default_rng(2), 32), "num": 4, "trans": False}


@st.composite
def ldmatrix_valid(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    return {"smem": smem(rng), "addrs": rows16(rng, 32, _lead(draw)), "num": draw(st.sampled_from([1, 2, 4])),
            "trans": draw(st.booleans())}


def movement_reference(s, addrs, num, trans):
    """ldmatrix by the PTX ISA's figure, one lane at a time: lane l holds, of matrix i, row l/4,
    columns 2(l%4) and 2(l%4)+1 (transposed: those columns' elements as rows)."""
    out = np.zeros((32, num), np.uint32)
    half = [[int(s[addrs[8 * i + r] + 2 * c]) | int(s[addrs[8 * i + r] + 2 * c + 1]) << 8 for r in range(8) for c in range(8)]
            for i in range(num)]
    for lane in range(32):
        for i in range(num):
            r, c = lane // 4, 2 * (lane % 4)
            lo, hi = (half[i][c * 8 + r], half[i][(c + 1) * 8 + r]) if trans else (half[i][r * 8 + c], half[i][r * 8 + c + 1])
            out[lane, i] = lo | hi << 16
    return out


def ldmatrix_check(r, kw):
    a = np.asarray(kw["addrs"])
    assert r.dtype == np.uint32 and r.shape == a.shape + (kw["num"],)
    if a.ndim == 1:
        assert np.array_equal(r, movement_reference(kw["smem"], a.astype(np.int64), int(kw["num"]), bool(kw["trans"])))


LDMATRIX = Entry("ldmatrix", lambda kw: fragsim.ldmatrix(kw["smem"], kw["addrs"], kw["num"], kw["trans"]),
                 ldmatrix_default, ldmatrix_valid(),
                 names={"smem": ("smem",), "addrs": ("addrs", "lane"), "num": ("num",), "trans": ("trans",)},
                 check=ldmatrix_check, accepts={"trans": ("bool True",)},
                 special={"smem": smem_cases(), "addrs": addr_cases(16), "num": NUM_CASES, "trans": BOOL_CASES})


def stmatrix_default():
    return {"smem": smem(), "addrs": rows16(np.random.default_rng(3), 32),
            "regs": rng_words(np.random.default_rng(4), (32, 4)), "num": 4, "trans": False}


@st.composite
def stmatrix_valid(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    num = draw(st.sampled_from([1, 2, 4]))
    return {"smem": smem(rng), "addrs": rows16(rng, 32), "regs": rng_words(rng, (32, num)), "num": num,
            "trans": draw(st.booleans())}


def stmatrix_check(r, kw):
    assert r is None
    a = np.asarray(kw["addrs"]).astype(np.int64)
    if len(set(a[: 8 * int(kw["num"])].tolist())) == 8 * int(kw["num"]):   # no overlapping rows: ldmatrix reads it back
        assert np.array_equal(movement_reference(kw["smem"], a, int(kw["num"]), bool(kw["trans"])),
                              np.asarray(kw["regs"]).astype(np.uint32))


def words_cases(shape_of):
    def valid(kw):
        return np.asarray(kw[shape_of])
    return dtype_cases(valid) + [
        ("negative word", lambda kw: -valid(kw).astype(np.int64).clip(1), ERROR),
        ("word 2**40", lambda kw: valid(kw).astype(np.int64) | (1 << 40), ERROR),
        ("word 2**64-1 (uint64)", lambda kw: valid(kw).astype(np.uint64) | np.uint64(2**64 - 1), ERROR),
        ("one lane short", lambda kw: valid(kw)[:31], ERROR), ("batched", lambda kw: np.stack([valid(kw)] * 2), ERROR),
        ("list", lambda kw: valid(kw).tolist(), OK), ("flat", lambda kw: valid(kw).ravel(), EITHER)]


STMATRIX = Entry("stmatrix", lambda kw: fragsim.stmatrix(kw["smem"], kw["addrs"], kw["regs"], kw["num"], kw["trans"]),
                 stmatrix_default, stmatrix_valid(),
                 names={"smem": ("smem",), "addrs": ("addrs", "lane"), "regs": ("regs",), "num": ("num",),
                        "trans": ("trans",)},
                 check=stmatrix_check, accepts={"trans": ("bool True",)},
                 special={"smem": smem_cases(), "addrs": addr_cases(16, single=True), "regs": words_cases("regs"),
                          "num": NUM_CASES, "trans": BOOL_CASES})


MASK_CASES = [("0", lambda kw: 0, OK), ("0xffffffff", lambda kw: 0xFFFFFFFF, OK), ("2**32", lambda kw: 1 << 32, ERROR),
              ("uint64 max", lambda kw: np.uint64(2**64 - 1), ERROR), ("32 bools", lambda kw: np.arange(32) % 3 == 0, OK),
              ("31 bools", lambda kw: np.ones(31, bool), ERROR), ("32 ints", lambda kw: np.ones(32, np.int64), ERROR),
              ("list of 32 bools", lambda kw: [True, False] * 16, OK), ("numpy uint32", lambda kw: np.uint32(0xF0F0), OK),
              ("(2, 32) bools", lambda kw: np.ones((2, 32), bool), ERROR), ("float", lambda kw: 255.0, ERROR)]

NBYTES_CASES = [("3", lambda kw: 3, ERROR), ("32", lambda kw: 32, ERROR), ("0", lambda kw: 0, ERROR),
                ("numpy int", lambda kw: np.int32(kw["nbytes"]), OK), ("float", lambda kw: float(kw["nbytes"]), ERROR)]


def _active(mask):
    return fragsim.sim.smem.lane_mask(None if mask is None else mask)


def ld_shared_default():
    return {"smem": smem(), "addrs": aligned(np.random.default_rng(5), 8), "nbytes": 8, "mask": None}


@st.composite
def ld_shared_valid(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    nbytes = draw(st.sampled_from([1, 2, 4, 8, 16]))
    mask = draw(st.one_of(st.none(), st.integers(0, 2**32 - 1), st.lists(st.booleans(), min_size=32, max_size=32)))
    return {"smem": smem(rng), "addrs": aligned(rng, nbytes, _lead(draw)), "nbytes": nbytes, "mask": mask}


def lane_bytes(s, addr, nbytes):
    return sum(int(s[addr + i]) << (8 * i) for i in range(nbytes))


def ld_shared_check(r, kw):
    a = np.asarray(kw["addrs"]).astype(np.int64)
    nb = int(kw["nbytes"])
    assert r.dtype == np.uint32 and r.shape == a.shape + (max(1, nb // 4),)
    if a.ndim == 1:
        m = _active(kw["mask"])
        for lane in range(32):
            want = lane_bytes(kw["smem"], a[lane], nb) if m[lane] else 0
            got = sum(int(w) << (32 * i) for i, w in enumerate(r[lane]))
            assert got == want, (lane, got, want)


LD_SHARED = Entry("ld_shared", lambda kw: fragsim.ld_shared(kw["smem"], kw["addrs"], kw["nbytes"], kw["mask"]),
                  ld_shared_default, ld_shared_valid(),
                  names={"smem": ("smem",), "addrs": ("addrs", "lane"), "nbytes": ("nbytes",), "mask": ("mask",)},
                  check=ld_shared_check, accepts={"mask": ("None", "0-d array")},
                  special={"smem": smem_cases(), "addrs": addr_cases(8), "nbytes": NBYTES_CASES, "mask": MASK_CASES})


def st_shared_default():
    return {"smem": smem(), "addrs": aligned(np.random.default_rng(6), 8),
            "values": rng_words(np.random.default_rng(7), (32, 2)), "nbytes": 8, "mask": None}


@st.composite
def st_shared_valid(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    nbytes = draw(st.sampled_from([1, 2, 4, 8, 16]))
    mask = draw(st.one_of(st.none(), st.integers(0, 2**32 - 1)))
    values = rng_words(rng, (32, max(1, nbytes // 4)), min(32, 8 * nbytes))
    return {"smem": smem(rng), "addrs": aligned(rng, nbytes), "values": values, "nbytes": nbytes, "mask": mask}


def st_shared_check(r, kw):
    assert r is None
    a = np.asarray(kw["addrs"]).astype(np.int64)
    v = np.asarray(kw["values"]).astype(np.uint64)
    nb, m = int(kw["nbytes"]), _active(kw["mask"])
    if len(set(a.tolist())) == 32:
        for lane in np.flatnonzero(m):
            assert lane_bytes(kw["smem"], a[lane], nb) == sum(int(w) << (32 * i) for i, w in enumerate(v[lane]))


ST_SHARED = Entry("st_shared", lambda kw: fragsim.st_shared(kw["smem"], kw["addrs"], kw["values"], kw["nbytes"], kw["mask"]),
                  st_shared_default, st_shared_valid(),
                  names={"smem": ("smem",), "addrs": ("addrs", "lane"), "values": ("values", "value"),
                         "nbytes": ("nbytes", "st.shared"), "mask": ("mask",)},
                  check=st_shared_check, accepts={"mask": ("None", "0-d array")},
                  special={"smem": smem_cases(), "addrs": addr_cases(8, single=True), "values": words_cases("values"),
                           "nbytes": [c for c in NBYTES_CASES if c[0] != "numpy int"]
                           + [("numpy int", lambda kw: np.int8(8), OK), ("4 for 2 words", lambda kw: 4, ERROR)],
                           "mask": MASK_CASES})


def cp_async_default():
    return {"smem": smem(), "addrs": aligned(np.random.default_rng(8), 16),
            "src": np.random.default_rng(9).integers(0, 256, (32, 16), dtype=np.uint8), "nbytes": 16, "mask": None,
            "level": "cg"}


@st.composite
def cp_async_valid(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    level = draw(st.sampled_from(["ca", "cg"]))
    nbytes = 16 if level == "cg" else draw(st.sampled_from([4, 8, 16]))
    mask = draw(st.one_of(st.none(), st.integers(0, 2**32 - 1)))
    return {"smem": smem(rng), "addrs": aligned(rng, nbytes), "src": rng.integers(0, 256, (32, nbytes), dtype=np.uint8),
            "nbytes": nbytes, "mask": mask, "level": level}


def cp_async_check(r, kw):
    assert r is None
    a = np.asarray(kw["addrs"]).astype(np.int64)
    if len(set(a.tolist())) == 32:
        for lane in np.flatnonzero(_active(kw["mask"])):
            assert np.array_equal(kw["smem"][a[lane]: a[lane] + int(kw["nbytes"])], kw["src"][lane])


CP_ASYNC = Entry("cp_async", lambda kw: fragsim.cp_async(kw["smem"], kw["addrs"], kw["src"], kw["nbytes"], kw["mask"],
                                                         kw["level"]),
                 cp_async_default, cp_async_valid(),
                 names={"smem": ("smem",), "addrs": ("addrs", "lane"), "src": ("src",), "nbytes": ("nbytes", "bytes per lane"),
                        "mask": ("mask",), "level": ("level",)},
                 check=cp_async_check, accepts={"mask": ("None", "0-d array")},
                 special={"smem": smem_cases(), "addrs": addr_cases(16, single=True),
                          "src": dtype_cases(lambda kw: kw["src"], ("uint8",)) + [
                              ("batched", lambda kw: np.stack([kw["src"]] * 2), ERROR),
                              ("(2, 32) bytes", lambda kw: kw["src"][:, :2].T.copy(), ERROR),
                              ("(32, 8) for 16 bytes", lambda kw: kw["src"][:, :8], ERROR),
                              ("list", lambda kw: kw["src"].tolist(), EITHER)],
                          "nbytes": NBYTES_CASES + [("4 with .cg", lambda kw: 4, ERROR)],
                          "mask": MASK_CASES,
                          "level": [("CA", lambda kw: "CA", EITHER), ("ca", lambda kw: "ca", EITHER),
                                    ("cs", lambda kw: "cs", ERROR), ("level with dot", lambda kw: ".cg", EITHER)]})


# -- bank conflicts ------------------------------------------------------------------------------

OP_NAMES = sorted(SHARED_OPS)


def op_cases():
    return [("ldmatrix.x3", lambda kw: "ldmatrix.x3", ERROR), ("cp.async.ca.3", lambda kw: "cp.async.ca.3", ERROR),
            ("5,000-digit size", lambda kw: "cp.async.ca." + "1" * 5000, ERROR),
            ("spaces around", lambda kw: f" {kw['op']} ", OK), ("upper case", lambda kw: kw["op"].upper(), OK),
            ("ld.shared.v8.b32", lambda kw: "ld.shared.v8.b32", ERROR),
            ("zero-width space", lambda kw: kw["op"] + "\u200b", ERROR),
            ("inner space", lambda kw: "ld. shared.b32", ERROR), ("table entry", lambda kw: SHARED_OPS[kw["op"]], OK),
            ("mma form", lambda kw: F32, ERROR), ("full PTX spelling", lambda kw: "ld.shared::cta.b32", OK)]


def bank_default():
    return {"op": "ld.shared.b32", "addrs": np.arange(32) * 4, "mask": None, "src": None}


@st.composite
def bank_valid(draw):
    op = draw(st.sampled_from(OP_NAMES))
    o = SHARED_OPS[op]
    # no empty batch here: for n = 0 an empty array IS a valid (n,) mask, which the generic "empty array"
    # class expects refused (empty batches are fixed cases: "empty batch" above, test_contract_found)
    n = draw(st.one_of(st.none(), st.integers(1, 3)))
    shape = (32,) if n is None else (n, 32)
    unit = o.bytes_per_addr
    count = 32 if n is None else 32 * n
    addrs = np.array(draw(st.lists(st.integers(0, 4096 // unit), min_size=count, max_size=count)),
                     np.int64).reshape(shape) * unit
    mask = None
    if o.kind not in ("ldsm", "stsm") and draw(st.booleans()):
        mask = draw(st.integers(0, 2**32 - 1)) if n is None else np.array(draw(st.lists(
            st.integers(0, 2**32 - 1), min_size=n, max_size=n)), np.int64)
    src = None
    if o.kind == "ldgsts" and n is None and draw(st.booleans()):
        base = draw(st.integers(0, 2**20)) * unit
        src = draw(st.sampled_from([base + np.arange(32) * unit, np.array(draw(st.lists(
            st.integers(0, 2**16), min_size=32, max_size=32))) * unit]))
    return {"op": op, "addrs": addrs, "mask": mask, "src": src}


def bank_check(r, kw):
    w, ideal, c = (np.asarray(x, np.int64) for x in (r.wavefronts, r.ideal, r.conflicts))
    n = np.shape(kw["addrs"])
    assert w.shape == ideal.shape == c.shape == n[:-1]
    assert np.all(0 <= ideal) and np.all(ideal <= w) and np.array_equal(c, w - ideal), (w, ideal, c)


BANK = Entry("bank_conflicts", lambda kw: fragsim.bank_conflicts(kw["op"], kw["addrs"], kw["mask"], kw["src"]),
             bank_default, bank_valid(),
             names={"op": ("op",), "addrs": ("addrs", "lane"), "mask": ("mask",), "src": ("src", "only cp.async")},
             check=bank_check, accepts={"mask": ("None", "0-d array"), "src": ("None",)},
             special={"op": op_cases(),
                      "addrs": addr_cases(4, smem_bound=False) + [("3-D", lambda kw: np.zeros((1, 1, 32), np.int64), ERROR),
                                                ("2**32", lambda kw: np.full(32, 1 << 32), ERROR)],
                      "mask": MASK_CASES, "src": [("lane * 4", lambda kw: np.arange(32) * 4, ERROR)]})


def one_changed(addrs, i, delta):
    """``addrs`` with element ``i`` (flat, wrapped to the size) moved by ``delta``."""
    a = np.array(addrs, np.int64)
    a.flat[i % a.size] += delta
    return a


def batch_bank_default():
    return {"op": "ld.shared.v2.b32", "addrs": np.arange(96).reshape(3, 32) * 8, "mask": None, "src": None}


BATCH_MASK_CASES = [("(3,) ints", lambda kw: np.array([0, 1, 0xFFFFFFFF]), OK),
                    ("(3, 32) bools", lambda kw: np.ones((3, 32), bool), OK),
                    ("(2,) ints", lambda kw: np.array([1, 2]), ERROR),
                    ("(3,) with 2**32", lambda kw: np.array([0, 1, 1 << 32]), ERROR),
                    ("(3,) with -1", lambda kw: np.array([0, 1, -1]), ERROR), ("one int", lambda kw: 0xFF, OK),
                    ("(32,) bools", lambda kw: np.arange(32) < 5, OK),
                    ("(3, 31) bools", lambda kw: np.ones((3, 31), bool), ERROR)]

BANK_BATCH = Entry("bank_conflicts batch", BANK.run, batch_bank_default, bank_valid(),
                   names={"addrs": ("addrs", "lane", "instruction"), "mask": ("mask",)}, check=bank_check,
                   accepts={"mask": ("None", "0-d array")},
                   special={"addrs": [("one misaligned", lambda kw: one_changed(kw["addrs"], 40, 4), ERROR),
                                      ("one negative", lambda kw: one_changed(kw["addrs"], 70, -10**6), ERROR),
                                      ("uint64 2**63", lambda kw: kw["addrs"].astype(np.uint64) | np.uint64(2**63), ERROR)],
                            "mask": BATCH_MASK_CASES})

BANK_EMPTY = Entry("bank_conflicts empty batch", BANK.run,
                   lambda: {"op": "ld.shared.b32", "addrs": np.zeros((0, 32), np.int64), "mask": None, "src": None},
                   bank_valid(), names={"mask": ("mask",)}, check=bank_check,
                   accepts={"mask": ("None", "0-d array", "empty array")},
                   special={"mask": [("(0,) ints", lambda kw: np.zeros(0, np.int64), OK),
                                     ("(0, 32) bools", lambda kw: np.zeros((0, 32), bool), OK)]})


def cp_bank_default():
    return {"op": "cp.async.ca.16", "addrs": np.arange(32) * 16, "mask": None, "src": np.arange(32) * 16}


BANK_CP = Entry("bank_conflicts cp.async", BANK.run, cp_bank_default, bank_valid(),
                names={"src": ("src", "source address")}, check=bank_check, accepts={"src": ("None",)},
                special={"src": dtype_cases(lambda kw: np.arange(32) * 16) + [
                    ("negative", lambda kw: np.arange(32) * 16 - 16, ERROR),
                    ("misaligned", lambda kw: np.arange(32) * 16 + 8, ERROR),
                    ("2**62", lambda kw: np.arange(32) * 16 + 2**62, ERROR),
                    ("uint64 2**63", lambda kw: np.arange(32, dtype=np.uint64) * 16 + np.uint64(2**63), ERROR),
                    ("batched (2, 32)", lambda kw: np.stack([np.arange(32) * 16] * 2), ERROR),
                    ("31 lanes", lambda kw: np.arange(31) * 16, ERROR), ("list", lambda kw: list(range(0, 512, 16)), OK)]})


# -- Swizzle -------------------------------------------------------------------------------------

@st.composite
def swizzle_bms(draw):
    B = draw(st.integers(0, 6))
    S = draw(st.integers(B, 20)) * draw(st.sampled_from([1, -1]))
    M = draw(st.integers(0, 62 - abs(S) - B))
    return {"B": B, "M": M, "S": S}


def swizzle_check(s, kw):
    x = np.arange(0, 1 << 12) << np.int64(min(kw["M"], 40))
    assert np.array_equal(s(s(x)), x)                        # an involution
    assert s(int(x[-1])) == int(s(x)[-1])                    # the int path agrees with the array path


SWIZZLE_CASES = {
    "B": [("0", lambda kw: 0, OK), ("numpy int", lambda kw: np.int64(3), OK), ("7 > |S|", lambda kw: 7, ERROR)],
    "M": [("0", lambda kw: 0, OK), ("59", lambda kw: 59, ERROR), ("numpy uint8", lambda kw: np.uint8(4), OK)],
    "S": [("-3", lambda kw: -3, OK), ("0 with B 3", lambda kw: 0, ERROR), ("-60", lambda kw: -60, ERROR)]}

SWIZZLE = Entry("Swizzle", lambda kw: fragsim.Swizzle(kw["B"], kw["M"], kw["S"]), lambda: {"B": 3, "M": 4, "S": 3},
                swizzle_bms(), names={"B": ("B",), "M": ("M",), "S": ("S",)}, check=swizzle_check,
                accepts={"S": ("int -1",)}, special=SWIZZLE_CASES)


@st.composite
def swizzle_apply_valid(draw):
    bms = draw(swizzle_bms())
    dt = draw(st.sampled_from(INT_DTYPES))
    top = min(np.iinfo(dt).max, 2**62)
    offs = draw(st.one_of(st.integers(0, 2**80),
                          st.lists(st.integers(0, top), max_size=40).map(lambda v: np.array(v, dtype=dt))))
    return {"swizzle": fragsim.Swizzle(**bms), "offset": offs}


def swizzle_apply_check(r, kw):
    s, off = kw["swizzle"], kw["offset"]
    if isinstance(r, int):                                   # a Python or NumPy integer scalar gives an int
        assert s(r) == int(off)
        return
    a = np.asarray(off)
    assert r.shape == a.shape and r.dtype == (np.uint64 if a.dtype == np.uint64 else np.int64)
    assert [int(v) for v in r.ravel()] == [s(int(v)) for v in a.ravel()]


SWIZZLE_APPLY = Entry(
    "Swizzle()", lambda kw: kw["swizzle"](kw["offset"]),
    lambda: {"swizzle": fragsim.Swizzle(4, 20, -10), "offset": np.array([0xF00000, 7], np.int32)}, swizzle_apply_valid(),
    names={"offset": ("offsets",)}, check=swizzle_apply_check,
    accepts={"offset": ("int 2**63", "int 2**64", "0-d array", "empty array", "64-dim array")},
    special={"offset": dtype_cases(lambda kw: np.array([0xF00000, 7]))
             + [("negative int8", lambda kw: np.array([-1], np.int8), ERROR), ("list", lambda kw: [1, 2, 3], OK),
                ("numpy int", lambda kw: np.int32(5), OK), ("huge int", lambda kw: 2**200, OK)]})

AS_LAYOUT = Entry(
    "Swizzle.as_layout", lambda kw: fragsim.Swizzle(3, 4, 3).as_layout(kw["bits"]), lambda: {"bits": 12},
    st.fixed_dictionaries({"bits": st.one_of(st.none(), st.integers(0, 63))}),
    names={"bits": ("bits",)}, check=lambda r, kw: isinstance(r, LinearLayout), accepts={"bits": ("None",)},
    special={"bits": [("0", lambda kw: 0, OK), ("63", lambda kw: 63, OK), ("64", lambda kw: 64, ERROR),
                      ("10**6", lambda kw: 10**6, ERROR), ("numpy int", lambda kw: np.int64(10), OK)]})


# -- number formats ------------------------------------------------------------------------------

FMT_NAMES = sorted(FORMATS)
FMT_CASES = [("upper case", lambda kw: "F16", EITHER), ("leading dot", lambda kw: ".f16", OK), ("fp16", lambda kw: "fp16", ERROR),
             ("trailing space", lambda kw: "f16 ", EITHER), ("FloatFormat", lambda kw: FORMATS["bf16"], OK),
             ("int 16", lambda kw: 16, ERROR), ("numpy dtype", lambda kw: np.float16, ERROR)]


@st.composite
def to_bits_valid(draw):
    x = draw(st.one_of(
        st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**200, 2**200),
        st.lists(st.floats(width=32), max_size=20).map(lambda v: np.array(v, np.float32)),
        st.lists(st.integers(-2**63, 2**63 - 1), max_size=20).map(lambda v: np.array(v, np.int64)),
        st.lists(st.integers(0, 2**64 - 1), max_size=20).map(lambda v: np.array(v, np.uint64)),
        st.lists(st.one_of(st.floats(), st.integers(-2**100, 2**100)), max_size=10)))
    return {"x": x, "fmt": draw(st.sampled_from(FMT_NAMES)), "rounding": draw(st.sampled_from(["rne", "rz"]))}


def to_bits_check(r, kw):
    f = fragsim.get_format(kw["fmt"])
    assert r.dtype == f.dtype and r.shape == np.shape(np.asarray(kw["x"], dtype=object))
    back = fragsim.from_bits(r, f)
    ok = ~np.isnan(back)
    # a word of the format converts back to itself (tf32 words keep their 13 ignored low bits at 0)
    assert np.array_equal(fragsim.to_bits(back[ok], f, kw["rounding"]), r[ok])


TO_BITS = Entry("to_bits", lambda kw: fragsim.to_bits(kw["x"], kw["fmt"], kw["rounding"]),
                lambda: {"x": np.array([1.5, -0.0, np.inf]), "fmt": "f16", "rounding": "rne"}, to_bits_valid(),
                names={"x": ("to_bits", "values"), "fmt": ("format",), "rounding": ("rounding",)}, check=to_bits_check,
                accepts={"x": ("str", "float 4.0", "float NaN", "float inf", "int -1", "int 2**63", "int 2**64",
                               "int -2**63-1", "0-d array", "empty array", "64-dim array", "unicode digits")},
                special={"x": [("longdouble", lambda kw: np.array([1.0], np.longdouble), ERROR),
                               ("list with None", lambda kw: [1.0, None], ERROR),
                               ("ragged", lambda kw: [[1.0], [2.0, 3.0]], ERROR),
                               ("2**1100", lambda kw: 2**1100, OK), ("uint64 max", lambda kw: np.uint64(2**64 - 1), OK),
                               ("timedelta64", lambda kw: np.timedelta64(1, "s"), ERROR),
                               ("float16", lambda kw: np.float16(0.1), OK),
                               ("bool array", lambda kw: np.array([True]), ERROR),
                               ("Decimal", lambda kw: __import__("decimal").Decimal("1.5"), ERROR),
                               ("Fraction", lambda kw: __import__("fractions").Fraction(1, 3), ERROR)],
                         "fmt": FMT_CASES,
                         "rounding": [("RZ", lambda kw: "RZ", ERROR), ("nearest", lambda kw: "nearest", ERROR)]})


@st.composite
def from_bits_valid(draw):
    fmt = draw(st.sampled_from(FMT_NAMES))
    bits = FORMATS[fmt].storage_bits
    x = draw(st.one_of(st.integers(0, 2**bits - 1),
                       st.lists(st.integers(0, 2**bits - 1), max_size=20).map(lambda v: np.array(v, np.uint64))))
    return {"bits": x, "fmt": fmt}


def from_bits_check(r, kw):
    f = fragsim.get_format(kw["fmt"])
    b = np.asarray(kw["bits"]).astype(np.int64)
    assert r.shape == b.shape and r.dtype.kind == "f"
    back = fragsim.to_bits(r, f)
    keep = ~np.isnan(r)
    if f.ignored_low_bits:
        b = b & ~((1 << f.ignored_low_bits) - 1)
    assert np.array_equal(back[keep].astype(np.int64), b[keep])


FROM_BITS = Entry("from_bits", lambda kw: fragsim.from_bits(kw["bits"], kw["fmt"]), lambda: {"bits": 0x3C00, "fmt": "f16"},
                  from_bits_valid(), names={"bits": ("bit patterns",), "fmt": ("format",)}, check=from_bits_check,
                  accepts={"bits": ("0-d array", "empty array", "64-dim array", "int 2**63")},   # -0.0 of f64
                  special={"bits": [("past the format", lambda kw: 0x13C00, ERROR),
                                    ("uint64 max", lambda kw: np.uint64(2**64 - 1), ERROR),
                                    ("floats", lambda kw: np.array([1.0]), ERROR), ("list", lambda kw: [1, 2], OK),
                                    ("int 2**100", lambda kw: 2**100, ERROR), ("int8 -1", lambda kw: np.int8(-1), ERROR)],
                           "fmt": FMT_CASES})

GET_FORMAT = Entry("get_format", lambda kw: fragsim.get_format(kw["fmt"]), lambda: {"fmt": "bf16"},
                   st.fixed_dictionaries({"fmt": st.sampled_from(FMT_NAMES)}), names={"fmt": ("format",)},
                   check=lambda r, kw: isinstance(r, FloatFormat), special={"fmt": FMT_CASES})


# -- the instruction table -----------------------------------------------------------------------

@st.composite
def spelling(draw):
    f = draw(st.sampled_from(FORM_NAMES))
    return {"form": draw(st.sampled_from([f, "mma.sync.aligned." + f, "mma." + f, f.upper(), f" {f} "]))}


def lookup_check(r, kw):
    assert isinstance(r, MmaForm) and fragsim.lookup(r.ptx) is r


LOOKUP = Entry("lookup", lambda kw: fragsim.lookup(kw["form"]), lambda: {"form": F32}, spelling(),
               names={"form": ("form",)},
               check=lookup_check,
               special={"form": form_cases() + [("short form", lambda kw: "m16n8k16.f32.f16.f16.f32", OK)]})


@st.composite
def op_spelling(draw):
    o = draw(st.sampled_from(OP_NAMES))
    return {"op": draw(st.sampled_from([o, o.upper(), f" {o}\t"]))}


def parse_op_check(r, kw):
    assert isinstance(r, SharedOp) and fragsim.parse_shared_op(r.name) is r


PARSE_OP = Entry("parse_shared_op", lambda kw: fragsim.parse_shared_op(kw["op"]), lambda: {"op": "ldmatrix.x4"},
                 op_spelling(), names={"op": ("op",)}, check=parse_op_check,
                 special={"op": [(label, (lambda kw, m=m: m({"op": "ldmatrix.x4"})), e) for label, m, e in op_cases()]
                          + [("full ldmatrix spelling", lambda kw: "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", OK),
                             ("ldmatrix.x1.b8", lambda kw: "ldmatrix.x1.b8", ERROR)]})


@st.composite
def form_operand(draw):
    return {"form": draw(st.sampled_from(FORM_NAMES)), "operand": draw(st.sampled_from("ABCDabcd"))}


def coords_check(r, kw):
    f = fragsim.lookup(kw["form"])
    rows, cols = r
    shape = (32, f.nregs(kw["operand"]), f.elems_per_reg(kw["operand"]))
    assert rows.shape == cols.shape == shape and not rows.flags.writeable and not cols.flags.writeable
    # owner is an inverse: the register it names for (row, col) holds (row, col); every element is held
    lane, reg, half = f.owner(kw["operand"])
    R, C = np.indices(f.matrix_shape(kw["operand"]))
    assert np.array_equal(rows[lane, reg, half], R) and np.array_equal(cols[lane, reg, half], C)


COORDS = Entry("MmaForm.coords/owner", lambda kw: FORMS[kw["form"]].coords(kw["operand"]),
               lambda: {"form": F32, "operand": "B"}, form_operand(), names={"operand": ("operand",)},
               check=coords_check, special={"operand": OPERAND_CASES})


@st.composite
def element_valid(draw):
    kw = draw(form_operand())
    f = FORMS[kw["form"]]
    kw["reg"] = draw(st.integers(0, f.nregs(kw["operand"]) - 1))
    kw["half"] = draw(st.integers(0, f.elems_per_reg(kw["operand"]) - 1))
    return kw


def element_check(r, kw):
    f = FORMS[kw["form"]]
    op = kw["operand"]
    # PTX numbers a lane's elements from 0 (a wide element may span two registers)
    assert r[0] == op.lower() and 0 <= int(r[1:]) < f.nregs(op) * f.elems_per_reg(op), r


ELEMENT_NAME = Entry("MmaForm.element_name", lambda kw: FORMS[kw["form"]].element_name(kw["operand"], kw["reg"], kw["half"]),
                     lambda: {"form": F32, "operand": "A", "reg": 1, "half": 1}, element_valid(),
                     names={"operand": ("operand",), "reg": ("reg",), "half": ("half",)}, check=element_check,
                     special={"operand": OPERAND_CASES,
                              "reg": [("4 of 4", lambda kw: 4, ERROR), ("numpy int", lambda kw: np.int64(2), OK)],
                              "half": [("2 of 2", lambda kw: 2, ERROR), ("numpy int", lambda kw: np.uint8(0), OK)]})


WITH_FIELDS = {"block_16bit": 8, "tf32_nan_low_bits": True, "zero_sign": "ieee", "frac_bits": 24, "cc": 91}


@st.composite
def with_valid(draw):
    kw = {"arch": draw(st.sampled_from(sorted(ARCHS)))}
    for k in draw(st.sets(st.sampled_from(sorted(WITH_FIELDS)))):
        kw[k] = draw({"block_16bit": st.integers(1, 64), "tf32_nan_low_bits": st.booleans(),
                      "zero_sign": st.sampled_from(["ieee", "positive"]), "frac_bits": st.integers(0, 40),
                      "cc": st.integers(0, 200)}[k])
    return kw


def with_check(r, kw):
    assert isinstance(r, ArchParams) and all(getattr(r, k) == v for k, v in kw.items() if k != "arch")


WITH = Entry("ARCHS[...].with_", lambda kw: ARCHS[kw["arch"]].with_(**{k: v for k, v in kw.items() if k != "arch"}),
             lambda: {"arch": "sm_90", **WITH_FIELDS}, with_valid(),
             names={k: (k,) for k in WITH_FIELDS}, check=with_check,
             accepts={"cc": ("int -1", "int 2**63", "int 2**64", "int -2**63-1"), "tf32_nan_low_bits": ("bool True",)},
             special={"block_16bit": [("0", lambda kw: 0, ERROR), ("65", lambda kw: 65, ERROR), ("8.5", lambda kw: 8.5, ERROR),
                                      ("numpy int", lambda kw: np.int64(8), EITHER)],
                      "tf32_nan_low_bits": [("no", lambda kw: "no", ERROR), ("1", lambda kw: 1, ERROR),
                                            ("numpy bool", lambda kw: np.bool_(True), EITHER)],
                      "zero_sign": [("IEEE", lambda kw: "IEEE", ERROR), ("ieee with space", lambda kw: "ieee ", ERROR)],
                      "frac_bits": [("41", lambda kw: 41, ERROR), ("-1", lambda kw: -1, ERROR)],
                      "cc": [("10**100", lambda kw: 10**100, EITHER)]})


# -- address expressions -------------------------------------------------------------------------

INT_MIN, INT_MAX = -2**31, 2**31 - 1


class Undefined(Exception):
    """The reference meets what C leaves undefined (the evaluator must refuse it)."""


def c_op(op, a, b):
    """One C int operation on Python ints, or Undefined (overflow, division by zero, bad shift)."""
    if op in ("<<", ">>") and not 0 <= b <= 31:
        raise Undefined
    if op in ("/", "%") and (b == 0 or (a == INT_MIN and b == -1)):
        raise Undefined
    r = {"+": lambda: a + b, "-": lambda: a - b, "*": lambda: a * b, "&": lambda: a & b, "|": lambda: a | b,
         "^": lambda: a ^ b, "<<": lambda: a * 2**b, ">>": lambda: a >> b,
         "/": lambda: int(math.copysign(abs(a) // abs(b), a * b)) if a * b else 0,
         "%": lambda: a - b * (int(math.copysign(abs(a) // abs(b), a * b)) if a * b else 0)}[op]()
    if not INT_MIN <= r <= INT_MAX:
        raise Undefined
    return r


@st.composite
def c_expr(draw, depth=0):
    """(C text, reference function of (lane, k)) of an int expression in lane, k and small literals."""
    if depth >= 4 or draw(st.integers(0, 3)) == 0:
        leaf = draw(st.one_of(st.sampled_from(["lane", "k"]), st.integers(0, 70).map(str)))
        return leaf, (lambda lane, k, t=leaf: lane if t == "lane" else k if t == "k" else int(t))
    if draw(st.integers(0, 5)) == 0:
        u = draw(st.sampled_from(["-", "~"]))
        text, f = draw(c_expr(depth + 1))

        def unary(lane, k, u=u, f=f):
            v = f(lane, k)
            r = -v if u == "-" else ~v
            if not INT_MIN <= r <= INT_MAX:
                raise Undefined
            return r
        return f"{u}({text})", unary
    op = draw(st.sampled_from(["+", "-", "*", "/", "%", "&", "|", "^", "<<", ">>"]))
    (ta, fa), (tb, fb) = draw(c_expr(depth + 1)), draw(c_expr(depth + 1))
    return f"({ta} {op} {tb})", (lambda lane, k, op=op, fa=fa, fb=fb: c_op(op, fa(lane, k), fb(lane, k)))


@st.composite
def eval_valid(draw):
    """An expression with its reference; where C leaves some lane's value undefined, the
    evaluator must refuse it ("_expect")."""
    text, f = draw(c_expr())
    text = f"({text}) + k - k"      # k is always read: a bad k is never silently unused

    def ref(lane, k):
        return c_op("-", c_op("+", f(lane, k), k), k)
    k = draw(st.integers(-40, 40))
    try:
        for lane in range(32):
            ref(lane, k)
    except Undefined:
        return {"src": text, "lane": None, "k": k, "_expect": ERROR}
    return {"src": text, "lane": None, "k": k, "_ref": ref}


def eval_check(r, kw):
    lane = np.arange(32) if kw["lane"] is None else np.asarray(kw["lane"])
    reads_k = "k" in fragsim.search.addrexpr.parse(kw["src"]).variables   # an unread variable does not shape the result
    shape = broadcast_shape([lane.shape, np.shape(kw["k"]) if reads_k else ()], ["lane", "k"])
    assert isinstance(r, np.ndarray) and r.dtype == np.int64 and r.shape == shape
    ref = kw.get("_ref")
    if ref is not None:   # a reference expression was evaluated without error: each lane as C says
        assert r.tolist() == [ref(lane_v, kw["k"]) for lane_v in range(32)], kw["src"]


def expr_cases():
    deep = "(" * 5000 + "lane" + ")" * 5000
    return [("5,000 nested parentheses", lambda kw: deep, OK), ("1,000 terms", lambda kw: "+".join(["lane"] * 1000), OK),
            ("literal 2**63", lambda kw: "lane + 9223372036854775808", ERROR),
            ("literal of 5,000 digits", lambda kw: "lane + " + "1" * 5000, ERROR),
            ("shift by 64", lambda kw: "lane << 64", ERROR),
            ("64-bit overflow", lambda kw: "0x100000000 * 0x100000000 + lane", ERROR),
            ("(char)200", lambda kw: "(char)200 + lane", OK), ("division by zero", lambda kw: "lane / 0", ERROR),
            ("empty", lambda kw: "", ERROR), ("dangling operator", lambda kw: "lane +", ERROR),
            ("NUL", lambda kw: "lane\x00", ERROR), ("unicode operator", lambda kw: "lane \u00d7 2", ERROR),
            ("newline inside", lambda kw: "lane *\n 4", OK), ("let-binding", lambda kw: "row = lane % 16; row * 64", OK),
            ("unknown variable", lambda kw: "lane + q", ERROR), ("swizzle()", lambda kw: "swizzle(3, 4, 3, lane * 16)", OK),
            ("swizzle with a variable B", lambda kw: "swizzle(k, 4, 3, lane)", ERROR),
            ("sizeof(auto)", lambda kw: "sizeof(auto)", ERROR),
            ("bytes", lambda kw: b"lane", ERROR), ("python syntax", lambda kw: "lane ** 2", ERROR),
            ("ternary", lambda kw: "lane < 16 ? lane : 0", OK), ("binds a given variable", lambda kw: "k = 1; k", ERROR)]


def var_cases():
    return [("empty array", lambda kw: np.zeros(0, np.int64), ERROR), ("(2, 32)", lambda kw: np.zeros((2, 32), np.int64), OK),
            ("33 values", lambda kw: np.zeros(33, np.int64), ERROR), ("uint64 2**63", lambda kw: np.uint64(2**63), ERROR),
            ("INT64_MIN", lambda kw: -2**63, EITHER), ("int8 array", lambda kw: np.arange(32, dtype=np.int8), OK)]


def lane_cases():
    return [("int8 lanes", lambda kw: np.arange(32, dtype=np.int8), OK), ("floats", lambda kw: np.arange(32.0), ERROR),
            ("(2, 32)", lambda kw: np.zeros((2, 32), np.int64), OK),
            ("uint64 2**63", lambda kw: np.array([2**63], np.uint64), ERROR),
            ("bools", lambda kw: np.ones(32, bool), EITHER), ("list", lambda kw: list(range(32)), OK),
            ("33 lanes with a (32,) variable", lambda kw: np.arange(33), EITHER)]


EVALUATE = Entry("addrexpr.evaluate", lambda kw: evaluate(kw["src"], kw["lane"], k=kw["k"]),
                 lambda: {"src": "lane * 4 + k", "lane": None, "k": 1},
                 eval_valid(), names={"src": ("position", "expression"), "lane": ("lane",), "k": ("'k'",)},
                 check=eval_check,
                 accepts={"src": ("str",), "lane": ("None", "int -1", "0-d array", "64-dim array", "empty array"),
                          "k": ("int -1", "bool True", "0-d array", "64-dim array")},
                 special={"src": expr_cases(), "lane": lane_cases(), "k": var_cases()})

ENTRIES = [MMA, PACK, UNPACK, LDMATRIX, STMATRIX, LD_SHARED, ST_SHARED, CP_ASYNC, BANK, BANK_BATCH, BANK_EMPTY, BANK_CP,
           SWIZZLE, SWIZZLE_APPLY,
           AS_LAYOUT, TO_BITS, FROM_BITS, GET_FORMAT, LOOKUP, PARSE_OP, COORDS, ELEMENT_NAME, WITH, EVALUATE]
