"""Run the generated kernels on a GPU through CuPy (NVRTC), one warp per case.

``GpuRunner()`` opens device 0, reads its compute capability, compiles every kernel the
device has (each instruction entry's ``min_cc``) for that architecture, and runs batches:
``runner.run(op, inputs) -> outputs`` with the array conventions of ``kernels.py`` and
``generate.py``.  Anything missing (CuPy, a driver, a GPU, NVRTC) raises
``GpuUnavailable`` with one line that says what.
"""

from __future__ import annotations

import datetime
import shutil
import subprocess

import numpy as np

from fragsim.facts.arch import arch_for_cc
from fragsim.instructions import parse_shared_op

from . import kernels as K


class GpuUnavailable(RuntimeError):
    """No usable GPU here (the message is one line, meant for the user)."""


def _driver_release() -> str:
    try:
        import pynvml  # nvidia-ml-py
        pynvml.nvmlInit()
        v = pynvml.nvmlSystemGetDriverVersion()
        return v.decode() if isinstance(v, bytes) else str(v)
    except Exception:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20)
            line = out.stdout.strip().splitlines()
            if out.returncode == 0 and line:
                return line[0].strip()
        except Exception:
            pass
    return "unknown"


def _ver(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def device_info(cp=None) -> dict:
    """Name, compute capability, driver and CUDA versions of device 0 (needs CuPy)."""
    if cp is None:
        cp = import_cupy()
    rt = cp.cuda.runtime
    try:
        count = rt.getDeviceCount()
    except Exception as e:  # CUDARuntimeError: no driver, no device
        raise GpuUnavailable(f"no usable CUDA GPU: {_one_line(e)}") from None
    if count < 1:
        raise GpuUnavailable("no CUDA GPU found (CuPy sees 0 devices)")
    props = rt.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    major, minor = int(props["major"]), int(props["minor"])
    try:
        nvrtc = ".".join(str(x) for x in cp.cuda.nvrtc.getVersion())
    except Exception:  # the compile in GpuRunner says whether NVRTC works at all
        nvrtc = "unknown"
    return {
        "device": name,
        "cc": f"{major}.{minor}",
        "cc_int": major * 10 + minor,
        "driver": _driver_release(),
        "cuda_driver_api": _ver(rt.driverGetVersion()),
        "cuda_runtime": _ver(rt.runtimeGetVersion()),
        "nvrtc": nvrtc,
        "cupy": cp.__version__,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }


def _one_line(e) -> str:
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:300]


def import_cupy():
    try:
        import cupy
    except ImportError:
        raise GpuUnavailable("CuPy is not installed (pip install cupy-cuda12x or cupy-cuda13x, to match "
                             "your CUDA driver); the GPU cross-check needs it") from None
    except Exception as e:  # a broken install (missing CUDA libraries)
        raise GpuUnavailable(f"CuPy does not load: {_one_line(e)}") from None
    return cupy


class GpuRunner:
    """Compiled kernels on device 0; ``run(op, inputs)`` returns the hardware's outputs."""

    def __init__(self, ops=None):
        cp = import_cupy()
        self.cp = cp
        self.info = device_info(cp)
        cc = self.info["cc_int"]
        self.arch = arch_for_cc(cc // 10, cc % 10, self.info["device"])
        self.info["arch"] = self.arch
        available = K.all_ops(cc)
        if ops is None:
            ops = available
        missing = [K.kernel_for(o) for o in ops if K.kernel_for(o).op not in available]
        if missing:
            raise ValueError(f"{self.info['device']} (compute capability {self.info['cc']}) lacks "
                             + ", ".join(f"{k.op} (needs {k.min_cc // 10}.{k.min_cc % 10})" for k in missing))
        self.kernels = {k.op: k for k in K.kernels(cc, ops)}
        src = K.module_source(cc, list(self.kernels))
        try:
            self.module = cp.RawModule(code=src, backend="nvrtc")
            self.functions = {op: self.module.get_function(k.name) for op, k in self.kernels.items()}
        except Exception as e:
            raise GpuUnavailable(f"NVRTC could not build the kernels for compute capability {self.info['cc']}: "
                                 f"{_one_line(e)}") from None

    def _launch(self, op, n, *args):
        blocks = (n + K.WARPS_PER_BLOCK - 1) // K.WARPS_PER_BLOCK
        self.functions[op]((blocks,), (K.THREADS_PER_BLOCK,), args + (np.int64(n),))

    def run(self, op: str, inp: dict) -> dict:
        cp = self.cp
        k = self.kernels[K.kernel_for(op).op]
        if k.kind == "mma":
            a, b, c = (cp.asarray(np.ascontiguousarray(inp[x], dtype=np.uint32)) for x in "abc")
            n = a.shape[0]
            d = cp.empty((n, 32, k.nregs_out()), dtype=cp.uint32)
            if n:
                self._launch(k.op, n, a, b, c, d)
            return {"d": cp.asnumpy(d)}
        n = inp["addrs"].shape[0]
        smem = cp.asarray(np.ascontiguousarray(inp["tiles"][inp["tile_idx"]]))
        addrs = cp.asarray(np.ascontiguousarray(inp["addrs"], dtype=np.uint32))
        if k.kind in ("ldsm", "ld"):
            out = cp.zeros((n, 32, k.nregs_out()), dtype=cp.uint32)
            if n:
                if k.kind == "ldsm":
                    self._launch(k.op, n, smem, addrs, out)
                else:
                    mask = cp.asarray(np.ascontiguousarray(inp["mask"], dtype=np.uint32))
                    self._launch(k.op, n, smem, addrs, mask, out)
            return {"out": cp.asnumpy(out)}
        smem_out = cp.empty((n, K.TILE_BYTES), dtype=cp.uint8)
        if n:
            if k.kind == "stsm":
                regs = cp.asarray(np.ascontiguousarray(inp["regs"], dtype=np.uint32))
                self._launch(k.op, n, smem, addrs, regs, smem_out)
            else:
                mask = cp.asarray(np.ascontiguousarray(inp["mask"], dtype=np.uint32))
                payload = inp["vals"] if k.kind == "st" else inp["src"]
                pay = cp.asarray(np.ascontiguousarray(payload))
                self._launch(k.op, n, smem, addrs, mask, pay, smem_out)
        return {"smem_out": cp.asnumpy(smem_out)}

    def synchronize(self):
        self.cp.cuda.runtime.deviceSynchronize()


def op_kind(op: str) -> str:
    """'mma' or the shared op's kind ('ldsm', 'stsm', 'ld', 'st', 'ldgsts')."""
    k = K.kernel_for(op)
    return k.kind if k.kind == "mma" else parse_shared_op(k.op).kind
