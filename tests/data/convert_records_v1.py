"""The one-time conversion of the recordings under tests/data/ to gpu_check's one record format
(fragsim.gpu_check.record, version 2), kept as the account of what changed in them.

Run once from the repository root: ``python tests/data/convert_records_v1.py``.  Every array keeps
its name, dtype, shape and bits -- the replays read exactly what they read before -- except where
a v1 layout said the same thing another way (listed per kind below); the metadata gains the
format, version and kind fields.

- warp corpora (hw/, "fragsim-hw-corpus/1"): only the metadata's format changes
- movmatrix (hw_movmatrix/): a warp corpus now; every recorded warp gets its input class (the
  2,000 recorded were all from the sparse class: every bit outside 0x80018001 is clear; the file
  was since recorded anew, with both classes, by ``fragsim gpu-check --family movmatrix --record``)
- wgmma (wgmma/*.npz): the compacted cases and the descriptor fuzz gain metadata
- Nsight Compute (banks/, access/): each metric's array is named ``m_<full metric name>`` (v1 used
  short names, below) and ``meta["metrics"]`` lists the metrics
- MMA-Sim (mmasim/): "fragsim-mmasim-corpus/1" becomes kind "mmasim"
- whole GEMMs (gemm/gemm_h100.json): the JSON gains the format, version and kind fields
"""

from __future__ import annotations

import glob
import json
import os

import numpy as np

from fragsim.gpu_check import record

HERE = os.path.dirname(os.path.abspath(__file__))

# v1's short names of the bank-probe records' metrics (ncu_banks.SHORT before version 2)
BANKS_V1 = {
    "wf_ld": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
    "wf_st": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",
    "wf_shared": "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
    "bc_ld": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
    "bc_st": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",
    "bc_ldgsts": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum",
    "bc_shared": "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
    "wf_read": "l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_read.sum",
    "wf_write": "l1tex__data_pipe_lsu_wavefronts_mem_shared_cmd_write.sum",
    "wf_ldgsts": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum",
    "wf_ldsm": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum",
    "wf_stsm": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_stsm.sum",
    "bank_reads": "l1tex__data_bank_reads.sum",
    "bank_writes": "l1tex__data_bank_writes.sum",
    "inst_ldsm": "smsp__inst_executed_op_ldsm.sum",
    "inst_stsm": "smsp__inst_executed_op_shared_stsm.sum",
    "wf_op_misc": "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_misc.sum",
    "inst_ld": "smsp__inst_executed_op_shared_ld.sum",
    "inst_st": "smsp__inst_executed_op_shared_st.sum",
    "inst_ldgsts": "smsp__inst_executed_op_ldgsts.sum",
    "sass_wf": "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared.sum",
    "sass_ideal": "smsp__sass_l1tex_pipe_lsu_wavefronts_mem_shared_ideal.sum",
}


def _read(path: str) -> tuple[dict, dict]:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    meta = json.loads(str(arrays.pop("meta"))) if "meta" in arrays else {}
    return meta, arrays


def _metrics(meta: dict, arrays: dict, full_name) -> tuple[dict, dict]:
    out, names = {}, []
    for k, v in arrays.items():
        if k.startswith("m_"):
            names.append(full_name(k[2:]))
            out["m_" + names[-1]] = v
        else:
            out[k] = v
    return dict(meta, metrics=names), out


def convert() -> None:
    for path in glob.glob(os.path.join(HERE, "hw", "*", "*.npz")):
        meta, arrays = _read(path)
        assert meta.pop("format") == "fragsim-hw-corpus/1", path
        record.save(path, meta.pop("kind"), meta, arrays)
    for path in glob.glob(os.path.join(HERE, "hw_movmatrix", "*", "movmatrix.trans.npz")):
        meta, arrays = _read(path)
        sparse = ((arrays["a"] & ~np.uint32(0x80018001)) == 0).reshape(len(arrays["a"]), -1).all(axis=1)
        arrays["tag"] = sparse.astype(np.uint8)
        arrays["tag_names"] = np.array(["uniform", "sparse"])
        meta["arch"] = {"9.0": "sm_90"}[meta["cc"]]
        record.save(path, "movmatrix", meta, arrays)
    source = "run 2 on an H100 (run2_h100_summary.json), compacted"
    for fam in ("f16_bf16", "tf32", "fp8", "int8"):
        path = os.path.join(HERE, "wgmma", f"{fam}.npz")
        meta, arrays = _read(path)
        record.save(path, "wgmma", {"family": fam.replace("_", "/"), "source": source}, arrays)
    path = os.path.join(HERE, "wgmma", "fuzz_h100.npz")
    meta, arrays = _read(path)
    record.save(path, "wgmma-fuzz", {"source": source}, arrays)
    for path in glob.glob(os.path.join(HERE, "banks", "ncu_banks_*.npz")):
        meta, arrays = _read(path)
        short = dict(BANKS_V1, **meta.pop("metrics", {}))      # the records that list their metrics say so
        record.save(path, "ncu-banks", *_metrics(meta, arrays, short.__getitem__))
    for path in glob.glob(os.path.join(HERE, "access", "*.npz")):
        meta, arrays = _read(path)
        by_short = {m.split("__", 1)[1].replace(".sum", ""): m for m in meta["metrics"]}
        record.save(path, "access-ncu", *_metrics(meta, arrays, by_short.__getitem__))
    for path in glob.glob(os.path.join(HERE, "mmasim", "*.npz")):
        meta, arrays = _read(path)
        assert meta.pop("format") == "fragsim-mmasim-corpus/1", path
        record.save(path, "mmasim", meta, arrays)
    path = os.path.join(HERE, "gemm", "gemm_h100.json")
    with open(path) as f:
        rec = json.load(f)
    record.save_json(path, "gemm", rec)


if __name__ == "__main__":
    convert()
