"""The one way gpu_check compiles CUDA: NVRTC through CuPy, or nvcc where a family needs it.

``nvrtc(source, names)`` builds a translation unit in this process (the families that run on any
GPU CuPy sees); ``nvcc(units, flags)`` writes each unit to a file and runs nvcc on all of them at
once (sm_90a features NVRTC cannot target through CuPy everywhere, programs of their own such as
the Nsight Compute probe, cubins read back by cuobjdump); ``functions(path, names)`` loads kernels
from a cubin.  Every failure is one line, raised as the caller's ``error`` class.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from typing import Any

from . import runner

def nvrtc(source: str, names: Sequence[str], what: str, cp: Any = None) -> dict[str, Any]:
    """The kernels ``names`` of ``source``, compiled by NVRTC for the current device (CuPy);
    ``GpuUnavailable`` naming ``what`` when the build fails."""
    cp = runner.import_cupy() if cp is None else cp
    try:
        module = cp.RawModule(code=source, backend="nvrtc")
        return {name: module.get_function(name) for name in names}
    except Exception as e:  # CuPy's CompileException and friends: one line for the user
        raise runner.GpuUnavailable(f"NVRTC could not build {what}: {runner.one_line(e)}") from None


def tool(name: str, error: type[Exception] = runner.GpuUnavailable) -> str:
    """A CUDA tool (nvcc, cuobjdump) on PATH or next to nvcc."""
    path = shutil.which(name)
    if path:
        return path
    nvcc_path = shutil.which("nvcc")
    beside = os.path.join(os.path.dirname(os.path.realpath(nvcc_path)), name) if nvcc_path else ""
    if beside and os.path.exists(beside):
        return beside
    raise error(f"{name} not found on PATH")


def nvcc(units: Sequence[tuple[str, str]], flags: Sequence[str], what: str,
         error: type[Exception] = runner.GpuUnavailable) -> list[str]:
    """Compile each (source, output path) with ``nvcc FLAGS -o OUTPUT OUTPUT.cu``, all at once; the
    outputs.  ``error`` naming ``what`` and nvcc's last lines when one fails."""
    exe = tool("nvcc", error)
    procs = []
    for source, out in units:
        cu = out + ".cu"
        with open(cu, "w") as f:
            f.write(source)
        procs.append(subprocess.Popen([exe, *flags, "-o", out, cu], stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    failed = []
    for p in procs:
        log = p.communicate()[0]
        if p.returncode:
            failed.append(log.strip().splitlines()[-3:])
    if failed:
        raise error(f"nvcc failed building {what}: {' | '.join(failed[0])}")
    return [out for _, out in units]


def functions(path: str, names: Sequence[str], cp: Any = None) -> dict[str, Any]:
    """The kernels ``names`` of the cubin at ``path`` (CuPy)."""
    cp = runner.import_cupy() if cp is None else cp
    module = cp.RawModule(path=path)
    return {name: module.get_function(name) for name in names}


def sass(path: str, error: type[Exception] = runner.GpuUnavailable) -> str:
    """``cuobjdump -sass`` of a cubin or executable."""
    r = subprocess.run([tool("cuobjdump", error), "-sass", path], capture_output=True, text=True)
    if r.returncode:
        raise error(f"cuobjdump failed on {os.path.basename(path)}: {runner.one_line(r.stderr)}")
    return r.stdout
