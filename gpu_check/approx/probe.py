"""The exploratory probe behind the approx model: what the GPU's MUFU forms return, gathered in one
device run (``python -m gpu_check.approx.probe OUT``).

It writes OUT/sass.txt (the SASS ptxas makes of each form), OUT/report.json (symmetry and x2 checks,
timings), OUT/digests.npz (block digests of every input of every f32 unary form, the 16-bit forms'
whole tables, the div digests) and OUT/sweep_*.npz (outputs over chosen input ranges, first
differences, zlib-compressed: what the model's tables are recovered from).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

from ..prelude import unit
from .digest import block_digests
from .pairs import pairs

F32 = ["ex2.approx.f32", "ex2.approx.ftz.f32", "lg2.approx.f32", "lg2.approx.ftz.f32", "rcp.approx.f32",
       "rcp.approx.ftz.f32", "rsqrt.approx.f32", "rsqrt.approx.ftz.f32", "sqrt.approx.f32",
       "sqrt.approx.ftz.f32", "sin.approx.f32", "sin.approx.ftz.f32", "cos.approx.f32", "cos.approx.ftz.f32",
       "tanh.approx.f32"]
H16 = ["ex2.approx.f16", "ex2.approx.ftz.bf16", "tanh.approx.f16", "tanh.approx.bf16"]
X2 = {"ex2.approx.f16x2": "ex2.approx.f16", "ex2.approx.ftz.bf16x2": "ex2.approx.ftz.bf16",
      "tanh.approx.f16x2": "tanh.approx.f16", "tanh.approx.bf16x2": "tanh.approx.bf16"}
F64 = ["rcp.approx.ftz.f64", "rsqrt.approx.f64", "rsqrt.approx.ftz.f64"]
DIV = ["div.approx.f32", "div.approx.ftz.f32", "div.full.f32", "div.full.ftz.f32"]


def kname(form: str) -> str:
    return "k_" + form.replace(".", "_")


def source() -> str:
    out = ["typedef unsigned int u32; typedef unsigned short u16; typedef unsigned long long u64;"]
    for f in F32:
        out.append(f'extern "C" __global__ void {kname(f)}(u32 base, u32 n, u32* o) {{'
                   f' for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{'
                   f' u32 x = base + i, y; asm volatile("{f} %0, %1;" : "=r"(y) : "r"(x)); o[i] = y; }} }}')
    for f in H16:
        out.append(f'extern "C" __global__ void {kname(f)}(u16* o) {{ u32 i = blockIdx.x * blockDim.x + threadIdx.x;'
                   f' u16 x = (u16)i, y; asm volatile("{f} %0, %1;" : "=h"(y) : "h"(x)); o[i] = y; }}')
    for f, s in X2.items():
        out.append(f'extern "C" __global__ void {kname(f)}(u32 base, u32 n, u32* o, unsigned long long* bad, u32* first) {{'
                   f' for (u32 i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {{'
                   f' u32 x = base + i, y; u16 lo = (u16)x, hi = (u16)(x >> 16), ylo, yhi;'
                   f' asm volatile("{f} %0, %1;" : "=r"(y) : "r"(x));'
                   f' asm volatile("{s} %0, %1;" : "=h"(ylo) : "h"(lo)); asm volatile("{s} %0, %1;" : "=h"(yhi) : "h"(hi));'
                   f' o[i] = y; if (y != ((u32)yhi << 16 | ylo)) {{'
                   f' u64 k = atomicAdd(bad, 1ull); if (k < 16) first[k] = x; }} }} }}')
    for f in F64:
        out.append(f'extern "C" __global__ void {kname(f)}(const u64* a, u64* o, u32 n) {{'
                   f' u32 i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) {{ u64 y;'
                   f' asm volatile("{f} %0, %1;" : "=l"(y) : "l"(a[i])); o[i] = y; }} }}')
    for f in DIV:
        out.append(f'extern "C" __global__ void {kname(f)}(const u32* a, const u32* b, u32* o, u32 n) {{'
                   f' u32 i = blockIdx.x * blockDim.x + threadIdx.x;'
                   f' if (i < n) {{ u32 y; asm volatile("{f} %0, %1, %2;" : "=r"(y) : "r"(a[i]), "r"(b[i])); o[i] = y; }} }}')
    return unit("\n".join(out)) + "\n"


#: (form, first word, count): outputs kept in full, the ranges the model's tables come from
SWEEPS = [
    ("rcp.approx.ftz.f32", 0x3F800000, 1 << 23),
    ("rcp.approx.f32", 0x00000001, (1 << 23) - 1),
    ("rcp.approx.f32", 0x7E800000, 1 << 24),
    ("rsqrt.approx.ftz.f32", 0x3F800000, 1 << 24),
    ("rsqrt.approx.f32", 0x00000001, (1 << 23) - 1),
    ("sqrt.approx.ftz.f32", 0x3F800000, 1 << 24),
    ("sqrt.approx.f32", 0x00000001, (1 << 23) - 1),
    ("lg2.approx.ftz.f32", 0x3F000000, 1 << 24),
    ("lg2.approx.ftz.f32", 0x40000000, 1 << 23),
    ("lg2.approx.f32", 0x00000001, (1 << 23) - 1),
    ("ex2.approx.ftz.f32", 0x3F000000, 1 << 24),
    ("ex2.approx.ftz.f32", 0xBF000000, 1 << 24),
    ("ex2.approx.ftz.f32", 0x3E800000, 1 << 23),
    ("ex2.approx.ftz.f32", 0x42F00000, 1 << 20),
    ("ex2.approx.ftz.f32", 0xC3000000, 1 << 21),
    ("ex2.approx.f32", 0xC3000000, 1 << 21),
    ("sin.approx.ftz.f32", 0x3FC90FDB, 0x40490FDB - 0x3FC90FDB),
    ("cos.approx.ftz.f32", 0x3FC90FDB, 0x40490FDB - 0x3FC90FDB),
    ("sin.approx.ftz.f32", 0x3F000000, 1 << 24),
    ("cos.approx.ftz.f32", 0x3F000000, 1 << 24),
    ("tanh.approx.f32", 0x3E000000, 1 << 25),
    ("tanh.approx.f32", 0x39800000, 0x3E000000 - 0x39800000),
    ("tanh.approx.f32", 0x40800000, 0x41800000 - 0x40800000),
]
CHUNK = 1 << 28
LIMIT = 15 << 20


def _pack(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.savez_compressed(buf, d=arr)
    return buf.getvalue()


def main(out: str) -> None:
    import cupy as cp  # type: ignore[import-not-found]

    report: dict = {"device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    src = source()
    with open("/tmp/approx_probe.cu", "w") as fh:
        fh.write(src)
    sass = subprocess.run("nvcc -arch=sm_90a -cubin -o /tmp/approx_probe.cubin /tmp/approx_probe.cu && "
                          "cuobjdump -sass /tmp/approx_probe.cubin", shell=True, capture_output=True, text=True)
    with open(os.path.join(out, "sass.txt"), "w") as fh:
        fh.write(sass.stdout + sass.stderr)
    mod = cp.RawModule(code=src, options=("-std=c++17",))
    k = {f: mod.get_function(kname(f)) for f in F32 + H16 + list(X2) + F64 + DIV}
    grid, threads = 132 * 32, 256
    digests: dict[str, np.ndarray] = {}
    sym: dict[str, dict[str, int]] = {}
    t0 = time.time()
    for f in F32:
        ds = []
        odd = even = 0
        ya = cp.empty(CHUNK, cp.uint32)
        yb = cp.empty(CHUNK, cp.uint32)
        for c in range(8):
            base = c * CHUNK
            k[f]((grid,), (threads,), (np.uint32(base), np.uint32(CHUNK), ya))
            k[f]((grid,), (threads,), (np.uint32(base + (1 << 31)), np.uint32(CHUNK), yb))
            ds.append((c, block_digests(ya, base, cp).get()))
            ds.append((c + 8, block_digests(yb, base + (1 << 31), cp).get()))
            words = cp.arange(base, base + CHUNK, dtype=cp.uint32)
            finite = (words & cp.uint32(0x7F800000)) != cp.uint32(0x7F800000)
            odd += int(cp.count_nonzero(finite & (yb != (ya ^ cp.uint32(0x80000000)))))
            even += int(cp.count_nonzero(finite & (yb != ya)))
            del words, finite
        digests[f] = np.concatenate([d for _, d in sorted(ds, key=lambda t: t[0])])
        sym[f] = {"f(-x) != -f(x)": odd, "f(-x) != f(x)": even}
        del ya, yb
    cp.cuda.Device().synchronize()
    report["f32_seconds"] = time.time() - t0
    report["symmetry_nonfinite_excluded"] = sym
    for f in H16:
        y = cp.empty(1 << 16, cp.uint16)
        k[f]((256,), (256,), (y,))
        digests[f] = y.get()
    x2 = {}
    for f in X2:
        bad = cp.zeros(1, cp.uint64)
        first = cp.zeros(16, cp.uint32)
        y = cp.empty(CHUNK, cp.uint32)
        ds = []
        for c in range(16):
            k[f]((grid,), (threads,), (np.uint32(c * CHUNK), np.uint32(CHUNK), y, bad, first))
            ds.append(block_digests(y, c * CHUNK, cp).get())
        digests[f] = np.concatenate(ds)
        x2[f] = {"pairs_unlike_two_scalars": int(bad.get()[0]), "first": [hex(int(v)) for v in first.get()]}
    report["x2"] = x2
    # f64: a sweep of the high word's significand at lo = 0 (kept as a sweep), and random words
    rng = np.random.default_rng(30)
    f64_sweeps = []
    for f in F64:
        n_sweep = (1 << 20) if f.startswith("rcp") else (1 << 21)
        hiw = (np.arange(n_sweep, dtype=np.uint64) + np.uint64(0x3FF00000)) << np.uint64(32)
        rnd = rng.integers(0, 2**64, 1 << 15, dtype=np.uint64, endpoint=False)
        near = ((np.arange(1 << 15, dtype=np.uint64) % np.uint64(1 << 12)) * np.uint64(0x10001)
                + np.uint64(0x3FF0000000000000)) ^ rng.integers(0, 2**32, 1 << 15, dtype=np.uint64)
        x = np.concatenate([hiw, rnd, near])
        a = cp.asarray(x)
        y = cp.empty_like(a)
        k[f](((len(x) + 255) // 256,), (256,), (a, y, np.uint32(len(x))))
        yh = y.get()
        digests[f + ":in"] = x[n_sweep:]
        digests[f + ":out"] = yh[n_sweep:]
        f64_sweeps.append((f"f64_{f}_3ff00000_{n_sweep}", yh[:n_sweep]))
    # div: 2^30 pairs in blocks, and the first 2^16 pairs in full
    t0 = time.time()
    for f in DIV:
        ds = []
        step = 1 << 26
        for s in range(0, 1 << 30, step):
            a, b = pairs(s, step, 1, cp)
            y = cp.empty(step, cp.uint32)
            k[f](((step + 255) // 256,), (256,), (a, b, y, np.uint32(step)))
            ds.append(block_digests(y, s, cp).get())
            if s == 0:
                digests[f + ":first"] = y[: 1 << 16].get()
        digests[f] = np.concatenate(ds)
    report["div_seconds"] = time.time() - t0
    np.savez_compressed(os.path.join(out, "digests.npz"), **digests)  # type: ignore[arg-type]
    # sweeps, bin-packed into files of at most LIMIT bytes
    blobs = []
    y = cp.empty(1 << 27, cp.uint32)
    for i, (f, first, n) in enumerate(SWEEPS):
        yy = y[:n] if n <= y.size else cp.empty(n, cp.uint32)
        k[f]((grid,), (threads,), (np.uint32(first), np.uint32(n), yy))
        h = yy.get()
        d = np.diff(h.view(np.int32), prepend=np.int32(0))
        blobs.append((f"{i:02d}_{f}_{first:08x}_{n}", _pack(d)))
    for name, yh in f64_sweeps:
        blobs.insert(0, (name, _pack(np.diff(yh.view(np.int64), prepend=np.int64(0)))))
    files: list[dict[str, bytes]] = [{}]
    sizes = [0]
    skipped = []
    for name, blob in blobs:
        if len(blob) > LIMIT:
            skipped.append((name, len(blob)))
            continue
        for j in range(len(files)):
            if sizes[j] + len(blob) <= LIMIT:
                files[j][name] = blob
                sizes[j] += len(blob)
                break
        else:
            files.append({name: blob})
            sizes.append(len(blob))
    report["sweep_sizes"] = {n: len(b) for n, b in blobs}
    report["skipped"] = skipped
    for j, fl in enumerate(files[:3]):
        arrays: dict[str, Any] = {n: np.frombuffer(b, np.uint8) for n, b in fl.items()}
        np.savez(os.path.join(out, f"sweep_{j}.npz"), **arrays)
    report["dropped_files"] = [list(fl) for fl in files[3:]]
    with open(os.path.join(out, "report.json"), "w") as fh:
        json.dump(report, fh, indent=1)
    print(json.dumps({k: v for k, v in report.items() if k != "sweep_sizes"}, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
