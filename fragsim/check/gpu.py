"""The same program on a GPU, or a recorded GPU run: does the hardware deliver what fragsim says?

``verdict(gpu, ...)`` runs a check's program (the tagged shared memory of every pass, the
instructions with the user's addresses, the payloads) on ``gpu`` -- True for this machine's GPU
(``fragsim.gpu_check.check.program.GpuMachine``, CuPy), or any object with ``run`` and ``info``
such as ``Recorded`` -- compares every load register and every byte of the final shared memory
with fragsim's, and decodes the hardware's own output into a verdict.

Recordings (``tests/data/check/``): one ``.npz`` holding, per case name, the digest of the program
it ran (``NAME/digest``: the instructions, addresses, masks, initial shared memory and payloads),
the loads' registers (``NAME/out<i>``) and the final shared memory (``NAME/mem``), plus ``meta``
(a JSON string: format, device, compute capability, arch, driver, CUDA, date).
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from fragsim.validate import load_npz

from .report import GpuVerdict

FORMAT = "fragsim-check-gpu/1"
#: Differences quoted when the hardware and fragsim disagree.
QUOTED = 3


def digest(instrs, smem: np.ndarray, payloads: list) -> str:
    """A fingerprint of a program: what a recording was made for."""
    h = hashlib.sha256()
    for ins, p in zip(instrs, payloads):
        h.update(ins.op.name.encode())
        h.update(np.ascontiguousarray(ins.addrs, dtype="<i8").tobytes())
        h.update(np.packbits(ins.mask).tobytes())
        if p is not None:
            h.update(np.ascontiguousarray(p).tobytes())
    h.update(np.ascontiguousarray(smem).tobytes())
    return h.hexdigest()[:32]


def _machine(gpu):
    if gpu is True:
        from fragsim.gpu_check.check.program import GpuMachine

        return GpuMachine()
    if not (hasattr(gpu, "run") and hasattr(gpu, "info")):
        raise TypeError(f"gpu must be True (this machine's GPU) or a machine with run() and info, such as "
                        f"fragsim.check.gpu.Recorded, got {type(gpu).__name__}")
    return gpu


def verdict(gpu, run, instrs, smem, payloads, outs, after) -> GpuVerdict:
    """Run the program on ``gpu`` and compare with fragsim's ``outs`` and ``after``."""
    m = _machine(gpu)
    g_outs, g_after = m.run(instrs, smem, payloads)
    diffs, compared = [], 0
    for ins, a, b in zip(instrs, outs, g_outs):
        if (a is None) != (b is None):
            diffs.append(f"{ins.describe()}: {'only the GPU' if a is None else 'only fragsim'} gave registers")
            continue
        if a is None:
            continue
        compared += a.size * 4
        bad = np.argwhere(a != b)
        if bad.size:
            p, lane, reg = (int(x) for x in bad[0])
            diffs.append(f"{ins.describe()} lane {lane} r{reg}: GPU {int(b[p, lane, reg]):#010x}, "
                         f"fragsim {int(a[p, lane, reg]):#010x} ({len(bad)} registers differ)")
    compared += after.size
    if g_after.shape != after.shape:
        diffs.append(f"shared memory of {g_after.shape} bytes from the GPU, {after.shape} from fragsim")
    else:
        bad = np.argwhere(g_after != after)
        if bad.size:
            p, a = (int(x) for x in bad[0])
            diffs.append(f"shared memory byte {a:#x}: GPU {int(g_after[p, a]):#04x}, fragsim {int(after[p, a]):#04x} "
                         f"({len(bad)} bytes differ)")
    ok = run.decode(g_outs, g_after).ok
    return GpuVerdict(dict(m.info), not diffs, ok, compared, diffs[:QUOTED])


def recorded_names(path) -> list[str]:
    """The cases a recording holds."""
    with np.load(path, allow_pickle=False) as z:
        return sorted({k.rsplit("/", 1)[0] for k in z.files if k.endswith("/digest")})


class Recorded:
    """A recorded GPU run of one case, replayed: ``run`` returns what the hardware did."""

    def __init__(self, path, name: str):
        z = load_npz(path)
        self.meta = json.loads(str(z["meta"]))
        if self.meta.get("format") != FORMAT:
            raise ValueError(f"{path}: not a fragsim check recording (format {self.meta.get('format')!r})")
        keys = [k for k in z if k.startswith(name + "/")]
        if not keys:
            raise ValueError(f"{path}: no recording of {name!r}")
        self.arrays = {k[len(name) + 1:]: z[k] for k in keys}
        self.name = name
        self.info = {k: self.meta[k] for k in ("device", "cc", "arch", "driver", "cuda_runtime") if k in self.meta}

    def run(self, instrs, smem, payloads):
        if str(self.arrays["digest"]) != digest(instrs, smem, payloads):
            raise ValueError(f"the recording of {self.name!r} was made for another program (the case or the "
                             "check's tagging changed since): record it again on a GPU")
        outs = [self.arrays.get(f"out{i}") for i in range(len(instrs))]
        return outs, self.arrays["mem"]


class Recording:
    """Wraps a machine and keeps what it did, keyed by case name, for ``save``."""

    def __init__(self, machine) -> None:
        self.machine = machine
        self.info = machine.info
        self.name = ""
        self.arrays: dict = {}

    def run(self, instrs, smem, payloads):
        outs, mem = self.machine.run(instrs, smem, payloads)
        self.arrays[f"{self.name}/digest"] = np.array(digest(instrs, smem, payloads))
        for i, o in enumerate(outs):
            if o is not None:
                self.arrays[f"{self.name}/out{i}"] = o
        self.arrays[f"{self.name}/mem"] = mem
        return outs, mem

    def save(self, path, meta: dict) -> None:
        np.savez_compressed(path, meta=np.array(json.dumps({"format": FORMAT, **meta})), **self.arrays)
