"""The GPU as gpu_check sees it: CuPy, device 0 and its description.

``import_cupy()`` and ``device_info()`` raise ``GpuUnavailable`` with one line that says what is
missing (CuPy, a driver, a GPU); every family reaches the device through them.
"""

from __future__ import annotations

import datetime
import shutil
import subprocess
from typing import Any


class GpuUnavailable(RuntimeError):
    """No usable GPU here (the message is one line, meant for the user)."""


def _driver_release() -> str:
    try:
        import pynvml  # type: ignore[import-not-found]  # nvidia-ml-py: optional, nvidia-smi otherwise
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


def device_info(cp: Any = None) -> dict[str, Any]:
    """Name, compute capability, driver and CUDA versions of device 0 (needs CuPy)."""
    if cp is None:
        cp = import_cupy()
    rt = cp.cuda.runtime
    try:
        count = rt.getDeviceCount()
    except Exception as e:  # CUDARuntimeError: no driver, no device
        raise GpuUnavailable(f"no usable CUDA GPU: {one_line(e)}") from None
    if count < 1:
        raise GpuUnavailable("no CUDA GPU found (CuPy sees 0 devices)")
    props = rt.getDeviceProperties(0)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    major, minor = int(props["major"]), int(props["minor"])
    try:
        nvrtc = ".".join(str(x) for x in cp.cuda.nvrtc.getVersion())
    except Exception:  # the first compile says whether NVRTC works at all
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


def one_line(e: object) -> str:
    """The first line of an exception (or text), at most 300 characters."""
    s = str(e).strip().splitlines()
    return (s[0] if s else type(e).__name__)[:300]


def import_cupy() -> Any:
    try:
        import cupy  # type: ignore[import-not-found]  # the gpu extra: only a machine with a GPU has it
    except ImportError:
        raise GpuUnavailable('no GPU to check against: CuPy is not installed (the check finds and drives the GPU '
                             'through it; on a machine with an NVIDIA GPU: pip install "fragsim[gpu13]" for CUDA 13, '
                             '"fragsim[gpu]" for CUDA 12; from a clone: pip install ".[gpu13]")') from None
    except Exception as e:  # a broken install (missing CUDA libraries)
        raise GpuUnavailable(f"CuPy does not load: {one_line(e)}") from None
    return cupy
