"""The contract fuzz's entry for ``fragsim.wgmma`` (see fuzz_entries.py for the form of an entry)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import fragsim
from fragsim.layout.descriptor import MatrixDescriptor
from fragsim.instructions.wgmma import lookup_wgmma

from contract import EITHER, ERROR, OK
from fuzz_entries import Entry

FORMS = ("m64n8k16.f32.f16.f16", "m64n16k16.f16.f16.f16", "m64n8k16.f32.bf16.bf16", "m64n8k8.f32.tf32.tf32",
         "m64n8k32.f32.e4m3.e5m2", "m64n8k32.f16.e5m2.e5m2", "m64n8k32.s32.s8.u8", "m64n24k32.satfinite.s32.u8.s8")
DESC_A = MatrixDescriptor(0, 0, 512, 0, "64B")          # 64 rows x 64 B: bytes 0..4095
DESC_B = MatrixDescriptor(4096, 128, 256, 0, "none")    # up to 32 rows: bytes 4096..6143


def _kw(form, rng, a_regs, lead=()):
    f = lookup_wgmma(form)
    return {"form": form,
            "a": rng.integers(0, 1 << 32, lead + (128, 4), dtype=np.uint64).astype(np.uint32) if a_regs else DESC_A.encode(),
            "b": DESC_B.encode(), "c": rng.integers(0, 1 << 32, lead + (128, f.nregs("C")), dtype=np.uint64).astype(np.uint32),
            "smem": rng.integers(0, 256, lead + (8192,), dtype=np.uint8), "scale_d": True, "scale_a": 1, "scale_b": 1,
            "trans_a": False, "trans_b": False, "arch": "sm_90"}


def wgmma_default():
    return _kw("m64n8k16.f32.f16.f16", np.random.default_rng(0), False)


@st.composite
def wgmma_valid(draw):
    form = draw(st.sampled_from(FORMS))
    f = lookup_wgmma(form)
    a_regs = draw(st.booleans())
    kw = _kw(form, np.random.default_rng(draw(st.integers(0, 2**32 - 1))), a_regs, draw(st.sampled_from([(), (2,)])))
    kw["scale_d"] = draw(st.booleans())
    if f.scale_ab:
        kw["scale_a"], kw["scale_b"] = draw(st.sampled_from([1, -1])), draw(st.sampled_from([1, -1]))
    if f.trans:
        kw["trans_b"] = draw(st.booleans())
        kw["trans_a"] = draw(st.booleans()) and not a_regs
    return kw


def wgmma_run(kw):
    return fragsim.wgmma(kw["form"], kw["a"], kw["b"], kw["c"], smem=kw["smem"], scale_d=kw["scale_d"],
                         scale_a=kw["scale_a"], scale_b=kw["scale_b"], trans_a=kw["trans_a"], trans_b=kw["trans_b"],
                         arch=kw["arch"])


def wgmma_check(d, kw):
    f = lookup_wgmma(kw["form"])
    assert d.dtype == np.uint32 and d.shape[-2:] == (128, f.nregs("D"))


WGMMA = Entry(
    "wgmma", wgmma_run, wgmma_default, wgmma_valid(),
    names={"form": ("form",), "a": ("a", "descriptor", "operand A"), "b": ("b", "descriptor"), "c": ("operand C",),
           "smem": ("smem",), "scale_d": ("scale_d",), "scale_a": ("scale_a",), "scale_b": ("scale_b",),
           "trans_a": ("trans_a",), "trans_b": ("trans_b",), "arch": ("arch",)},
    check=wgmma_check,
    accepts={"a": ("int 2**63", "0-d array", "empty array"), "b": ("int 2**63", "0-d array", "empty array"),
             "scale_a": ("int -1",), "scale_b": ("int -1",), "scale_d": ("bool True",), "trans_a": ("bool True",),
             "trans_b": ("bool True",), "smem": ("empty array",)},
    special={"form": [("long spelling", lambda kw: "wgmma.mma_async.sync.aligned." + kw["form"], OK),
                      ("mma.sync form", lambda kw: "m16n8k16.row.col.f32.f16.f16.f32", ERROR),
                      ("N = 264", lambda kw: "m64n264k16.f32.f16.f16", ERROR),
                      ("b1 (not modelled)", lambda kw: "m64n8k256.s32.b1.b1.and.popc", ERROR)],
             "a": [("MatrixDescriptor", lambda kw: DESC_A, OK), ("one per batch", lambda kw: np.array([DESC_A.encode()] * 2), OK),
                   ("int32 registers", lambda kw: np.zeros((128, 4), np.int32), EITHER),
                   ("registers of 32 lanes", lambda kw: np.zeros((32, 4), np.uint32), ERROR)],
             "b": [("reads past smem", lambda kw: MatrixDescriptor(8000, 128, 256).encode(), ERROR),
                   ("dict of fields", lambda kw: {"start_address": 4096, "leading_byte_offset": 128,
                                                  "stride_byte_offset": 256}, OK)],
             "c": [("f16 accumulators' count", lambda kw: np.zeros((128, 2), np.uint32), ERROR),
                   ("negative int64", lambda kw: np.full((128, 4), -1, np.int64), ERROR)],
             "smem": [("int8 bytes", lambda kw: kw["smem"].astype(np.int8), ERROR),
                      ("too small", lambda kw: kw["smem"][:4096], ERROR)],
             "scale_d": [("bool array", lambda kw: np.array([True, False]), OK), ("int 1", lambda kw: 1, ERROR)],
             "scale_a": [("2", lambda kw: 2, ERROR), ("np.int8(-1)", lambda kw: np.int8(-1), OK)],
             "trans_a": [("int 1", lambda kw: 1, ERROR)],
             "arch": [("h100", lambda kw: "h100", OK), ("sm_80", lambda kw: "sm_80", ERROR)]})

ENTRIES = [WGMMA]
