"""wgmma's descriptor map on the H100: every descriptor-fuzz case of run 2 (1,600 B and 800 A
descriptors per swizzle mode x majorness, random LBO/SBO/start/base offset; the hardware read shared
memory full of slot ids, so its D names the slot of every (row, k) it fetched) replayed through
fragsim.layout.descriptor.operand_addresses, one test per property of the map; and a few full cases replayed
through fragsim.wgmma.  tests/data/wgmma/fuzz_h100.npz is gpu_check/wgmma/fuzz_corpus.py's compaction
of the run's fuzz.npz (per case: both descriptors and a 64-bit digest of the hardware's slot ids).

Each property test also shows that its cases can fail: the map with that property changed (the
swizzle anchored at the start address, the base offset ignored, LBO/SBO swapped ...) disagrees with
the hardware on some of them."""

import functools
import os

import numpy as np
import pytest

from fragsim import MatrixDescriptor, wgmma
from fragsim.layout.descriptor import SWIZZLE_BYTES, canonical_offsets, operand_addresses, swizzle_address
from fragsim.sim.wgmma import pack_wg, unpack_wg
from fragsim.gpu_check import record
from fragsim.gpu_check.wgmma.fuzz_corpus import digest, load
from fragsim.gpu_check.wgmma.kernels import SMEM_BYTES

PATH = os.path.join(os.path.dirname(__file__), "data", "wgmma", "fuzz_h100.npz")
ATOM = {"none": 128, "32B": 256, "64B": 512, "128B": 1024}     # bytes of one 8-row swizzle atom


@functools.lru_cache(maxsize=None)
def _corpus():
    return load(PATH)


@functools.lru_cache(maxsize=None)
def _cases():
    """[(operand, rows, major, MatrixDescriptor, hardware digest)] of every recorded case."""
    z = _corpus()
    out = []
    for op, n, mj, dd, dg in zip(z["operand"], z["n"], z["major"], z["desc"], z["digest"]):
        op = "AB"[op]
        out.append((op, 64 if op == "A" else int(n), ("K", "MN")[mj], MatrixDescriptor.decode(int(dd["AB".index(op)])),
                    int(dg)))
    return out


def _ids(addr):
    return np.asarray(addr) // 2


def _model(op, rows, major, d):
    return _ids(operand_addresses(d, rows=rows, k=16, elem_bits=16, major=major))


def _check(select, alternative=None, at_least=20):
    """The model agrees with the hardware on every selected case; ``alternative`` (a map
    (rows, major, desc) -> addresses) disagrees with it on at least one."""
    sel = [c for c in _cases() if select(*c[:4])]
    assert len(sel) >= at_least, f"only {len(sel)} recorded cases have the property"
    bad = [c for c in sel if digest(_model(*c[:4])) != c[4]]
    assert not bad, f"{len(bad)} of {len(sel)} cases disagree with the H100, first: operand {bad[0][0]} " \
                    f"rows {bad[0][1]} {bad[0][2]}-major {bad[0][3]}"
    if alternative is not None:
        broken = sum(digest(_ids(alternative(rows, major, d))) != dg for _op, rows, major, d, dg in sel)
        assert broken >= 1, "no recorded case tells the alternative from the H100"


def test_corpus_holds_every_fuzz_case_of_the_run():
    """1,600 B and 800 A descriptors per swizzle mode x majorness, B at N = 8, 16, 64 and 256."""
    count: dict = {}
    for op, _rows, major, d, _ in _cases():
        count[(op, d.swizzle, major)] = count.get((op, d.swizzle, major), 0) + 1
    assert count == {(op, sw, mj): 1600 if op == "B" else 800 for op in "AB" for sw in ATOM for mj in ("K", "MN")}
    assert {rows for op, rows, *_ in _cases() if op == "B"} == {8, 16, 64, 256}


@pytest.mark.parametrize("major", ["K", "MN"])
@pytest.mark.parametrize("swizzle", list(ATOM))
def test_every_recorded_read_agrees(swizzle, major):
    """Every fuzz case: the model's slot for every (row, k) of A or B is the one the H100 read."""
    _check(lambda op, rows, mj, d: d.swizzle == swizzle and mj == major, at_least=2400)


def _anchored_at_start(rows, major, d):
    """The swizzle pattern restarted at the start address (a relative swizzle)."""
    off = canonical_offsets(d, rows=rows, k=16, elem_bits=16, major=major)
    return d.start_address + swizzle_address(off, d.swizzle, d.base_offset)


def test_swizzle_xors_absolute_address_bits():
    """The XOR takes bits 7.. of the absolute address start + offset (smem byte 0 1024-byte aligned):
    starts in a later row of a swizzle atom read the atom's pattern at that row's phase."""
    _check(lambda op, rows, mj, d: d.swizzle != "none" and d.start_address % ATOM[d.swizzle] >= SWIZZLE_BYTES[d.swizzle],
           _anchored_at_start)


def test_k_step_start_inside_an_atom_row():
    """The k-step advance (start + 32 bytes inside a 128B/64B atom's first row, as CuTe advances the
    descriptor, and any 16-byte step of the 32B mode): the address start + offset is swizzled whole."""
    _check(lambda op, rows, mj, d: d.swizzle != "none" and mj == "K"
           and 0 < d.start_address % ATOM[d.swizzle] < SWIZZLE_BYTES[d.swizzle], _anchored_at_start)


def test_base_offset_shifts_the_row_phase():
    """base_offset b: the XOR uses ((addr >> 7) - b) & mask."""
    _check(lambda op, rows, mj, d: d.base_offset != 0,
           lambda rows, major, d: operand_addresses(d.replace(base_offset=0), rows=rows, k=16, elem_bits=16,
                                                    major=major))


def _swapped(rows, major, d):
    return operand_addresses(d.replace(leading_byte_offset=d.stride_byte_offset,
                                       stride_byte_offset=d.leading_byte_offset), rows=rows, k=16, elem_bits=16,
                             major=major)


@pytest.mark.parametrize("swizzled", [False, True], ids=["none", "swizzled"])
def test_mn_major_lbo_sbo_roles(swizzled):
    """MN-major: without swizzle LBO steps between the two 8-row K groups and SBO between 16-byte runs
    of MN; with a swizzle the roles swap (LBO between swizzle-row runs of MN, SBO between K groups)."""
    _check(lambda op, rows, mj, d: mj == "MN" and (d.swizzle != "none") == swizzled
           and d.leading_byte_offset != d.stride_byte_offset, _swapped)


def _k_major_lbo_roles_swapped(rows, major, d):
    """K-major with the LBO roles of the two modes exchanged: no swizzle, K contiguous (the second
    16 bytes of K right after the first); swizzled, the second 16 bytes of K at LBO."""
    r = np.arange(rows)[:, None]
    kb = np.arange(16)[None, :] * 2
    w = SWIZZLE_BYTES[d.swizzle]
    chunk = 16 if d.swizzle == "none" else d.leading_byte_offset
    addr = d.start_address + (r % 8) * w + (r // 8) * d.stride_byte_offset + kb // 16 * chunk + kb % 16
    return swizzle_address(addr, d.swizzle, d.base_offset)


@pytest.mark.parametrize("swizzled", [False, True], ids=["none", "swizzled"])
def test_k_major_lbo(swizzled):
    """K-major: without swizzle the second 16 bytes of K sit LBO bytes after the first; with a swizzle
    K is contiguous in the swizzle row and LBO is not used."""
    _check(lambda op, rows, mj, d: mj == "K" and (d.swizzle != "none") == swizzled and d.leading_byte_offset != 16,
           _k_major_lbo_roles_swapped)


@pytest.mark.parametrize("op", ["A", "B"])
def test_full_cases_replay_through_wgmma(op):
    """The recorded cases kept whole (N = 8 B cases, A cases: every swizzle x majorness): fragsim.wgmma
    of the fuzz kernel's inputs gives, slot for slot, the D the H100 wrote."""
    z = _corpus()
    idx, hw_ids = z[f"full_{op.lower()}_index"], z[f"full_{op.lower()}_ids"]
    seen = set()
    for i, hw in zip(idx, hw_ids):
        major = ("K", "MN")[z["major"][i]]
        da, db = (int(x) for x in z["desc"][i])
        N = int(z["n"][i])
        form = f"m64n{N}k16.f32.f16.f16"
        M, K = 64, 16
        smem = np.arange(SMEM_BYTES // 2, dtype=np.uint16).view(np.uint8).copy()
        one = np.uint16(0x3C00)
        c = pack_wg(form, "C", np.zeros((M, N), np.uint32))
        if op == "B":
            a = pack_wg(form, "A", (np.arange(K)[None, :] == np.arange(M)[:, None] % K).astype(np.uint16) * one)
        else:   # B one-hot above A's region (as the fuzz kernel's inputs)
            a = np.uint64(da)
            smem[SMEM_BYTES // 3:] = 0
            bmat = (np.arange(K)[:, None] == np.arange(N)[None, :] % K).astype(np.uint16) * one
            smem.view(np.uint16)[operand_addresses(db, rows=N, k=K, elem_bits=16, major="K") // 2] = bmat.T
        d = wgmma(form, a, np.uint64(db), c, smem=smem, scale_d=False, trans_a=op == "A" and major == "MN",
                  trans_b=op == "B" and major == "MN")
        D = unpack_wg(form, "D", d).view(np.float32).astype(np.float16).view(np.uint16)   # (64, N) slot ids
        got = D[:K, :].T if op == "B" else D[:, :K]
        bad = np.argwhere(got != hw)
        assert not bad.size, (f"case {i} ({op}, {major}-major, {MatrixDescriptor.decode(da if op == 'A' else db)}): "
                              f"at (row, k) {tuple(bad[0])} fragsim reads slot {got[tuple(bad[0])]}, "
                              f"the H100 slot {hw[tuple(bad[0])]}")
        seen.add((MatrixDescriptor.decode(da if op == "A" else db).swizzle, major))
    assert seen == {(sw, mj) for sw in ATOM for mj in ("K", "MN")}


def test_compaction_keeps_every_case(tmp_path):
    """gpu_check/wgmma/fuzz_corpus.compact on a run's fuzz.npz (here two small jobs whose 'hardware' is
    the model): every case, its descriptors, and the digest of the slot ids in (row, k) order."""
    from fragsim.gpu_check.wgmma import cases as W
    from fragsim.gpu_check.wgmma.fuzz_corpus import compact
    from fragsim.gpu_check.wgmma.kernels import Variant
    from fragsim.gpu_check.wgmma.family import fuzz_ids
    jobs = [("fuzz_b", "128B", "MN", Variant("m64n8k16.f32.f16.f16", "reg", 1, 1, False, True)),
            ("fuzz_a", "32B", "K", Variant("m64n16k16.f32.f16.f16", "smem"))]
    rec = {}
    for seed, (kind, sw, major, v) in enumerate(jobs):
        inp = W.batch(v, 3, seed, swizzle=sw, kind=kind)
        rec[f"{kind}_{sw}_{major}_{v.name}|ids"] = fuzz_ids(v, kind, W.model(v, inp))
        rec[f"{kind}_{sw}_{major}_{v.name}|desc"] = inp["desc"]
    record.save(str(tmp_path / "fuzz.npz"), "wgmma-fuzz-run", {}, rec)
    out = compact(str(tmp_path / "fuzz.npz"), str(tmp_path / "c.npz"), full_b=2, full_a=1)
    assert list(out["operand"]) == [1, 1, 1, 0, 0, 0] and list(out["n"]) == [8] * 3 + [16] * 3
    assert list(out["major"]) == [1, 1, 1, 0, 0, 0]
    for i, (op, mj, dd) in enumerate(zip(out["operand"], out["major"], out["desc"])):
        rows = 64 if op == 0 else 8
        ids = _model("AB"[op], rows, ("K", "MN")[mj], MatrixDescriptor.decode(int(dd[op])))
        assert int(out["digest"][i]) == digest(ids)
    assert list(out["full_b_index"]) == [0, 1] and list(out["full_a_index"]) == [3]
    assert np.array_equal(out["full_a_ids"][0], _model("A", 64, "K", MatrixDescriptor.decode(int(out["desc"][3, 0]))))
