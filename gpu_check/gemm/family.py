"""GEMM mode of the GPU cross-check: whole mma.sync GEMMs on the GPU against ``fragsim.gemm``.

The kernel of a form is generated from its table entry: one warp per output tile (``groups``
tiles for a form of several products per warp, m8n8k4 .f16), the accumulator in registers from
C to D, one ``mma.sync`` per k-step in the order given, every fragment loaded straight from global
memory through the table's fragment maps (``form.coords``: the (row, col) of each lane's register
element).  Nothing in the kernel knows a layout that the table does not say, so a wrong map or a
wrong chain in fragsim shows as a mismatch.

Matrices travel as 32-bit element words (two per f64 element, low word first), row-major.

Cases: per form ``n`` GEMMs drawn from one seed each (``case_inputs``): sizes of 1..4 tiles,
K log-uniform up to ``K_MAX`` (some exactly ``K_MAX``), k order ascending, descending or a random
permutation, and one input class (``CLASSES``).  A recording (a JSON record of kind "gemm",
gpu_check/record.py) keeps, per GEMM, the seed and a digest of D (``digest``), plus a few small GEMMs
in full; ``replay`` recomputes them on the CPU.  ``FAMILIES["gemm"]`` is ``fragsim gpu-check --family gemm``.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import tempfile
from typing import Any

import numpy as np

from fragsim.facts.formats import FloatFormat, IntFormat, from_float, int_to_bits, to_float
from fragsim.instructions import FORMS, lookup

from .. import compile, record as R, runner
from ..family import RunnerFamily, Say
from ..prelude import THREADS_PER_BLOCK, WARPS_PER_BLOCK, unit

K_MAX = 8192
CLASSES = ("normal", "spread", "cancel", "special", "extreme")
ORDERS = ("ascending", "descending", "permuted")


def _ident(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s).strip("_")


def kernel_name(form) -> str:
    return "fs_gemm_" + _ident(lookup(form).name)


def chains(form) -> bool:
    """Whether D of one mma can be C of the next (one format for C and D): else one k-step only."""
    f = lookup(form)
    return f.fmt("C") == f.fmt("D") and f.nregs("C") == f.nregs("D")


def _coord_expr(layout) -> tuple[str, str]:
    """C expressions of (row, col) from ``lane``, ``REG`` and ``e``: one XOR term per input bit."""
    var = {"lane": "lane", "reg": "REG", "elem": "e"}
    terms: tuple[list, list] = ([], [])
    for dim, bases in layout.bases:
        for i, base in enumerate(bases):
            for j in (0, 1):
                if base[j]:
                    terms[j].append(f"((({var[dim]} >> {i}) & 1) * {base[j]})")
    return " ^ ".join(terms[0]) or "0", " ^ ".join(terms[1]) or "0"


def kernel_source(form) -> str:
    """CUDA text of the GEMM kernel of ``form``:
    ``(A, B, C, D, order, nsteps, M, N, K)``, A (M,K), B (K,N), C/D (M,N) element words."""
    f = lookup(form)
    fm, fn, fk = f.shape
    g = f.groups
    name = kernel_name(f)
    n = {op: f.nregs(op) for op in "ABCD"}
    w = {op: f.words_per_elem(op) for op in "ABCD"}
    epr = {op: f.coords(op)[0].shape[2] for op in "ABCD"}
    bits = {op: f.fmt(op).storage_bits for op in "ABCD"}
    # per (lane, layout register, elem): row and column in the (stacked) operand matrix, as the table's
    # linear layout gives them (each input bit XORs one basis vector in)
    coord = {op: _coord_expr(f.layout(op)) for op in "ABCD"}
    # asm operands: D outputs, then A, B, C inputs; an f64 register is a double of two words
    pos, idx = {}, 0
    for op in "DABC":
        pos[op] = [f"%{idx + i}" for i in range(n[op] // w[op])]
        idx += n[op] // w[op]
    asm = (f"{f.ptx} {{{', '.join(pos['D'])}}}, {{{', '.join(pos['A'])}}}, {{{', '.join(pos['B'])}}}, "
           f"{{{', '.join(pos['C'])}}};")

    def operand(op, i):
        x = op.lower()
        return f'"r"({x}[{i}])' if w[op] == 1 else f'"d"(__hiloint2double({x}[{2 * i + 1}], {x}[{2 * i}]))'

    ins = ", ".join(operand(op, i) for op in "ABC" for i in range(n[op] // w[op]))
    if w["D"] == 1:
        outs = ", ".join(f'"=r"(d[{i}])' for i in range(n["D"]))
        ddecl = f"unsigned d[{n['D']}];"
        dfix = ""
    else:
        outs = ", ".join(f'"=d"(dd[{i}])' for i in range(n["D"] // 2))
        ddecl = f"unsigned d[{n['D']}]; double dd[{n['D'] // 2}];"
        dfix = "".join(f"    d[{2 * i}] = (unsigned)__double2loint(dd[{i}]); "
                       f"d[{2 * i + 1}] = (unsigned)__double2hiint(dd[{i}]);\n" for i in range(n["D"] // 2))

    def load(op, dst, elem_index, mask):
        """Fill registers ``dst`` of ``op`` from global memory: register r, element e of this lane is
        the matrix element at the table's (row, col); ``elem_index`` maps (q, row, col) to its index."""
        sh = "" if epr[op] == 1 else f" << ({bits[op]} * e)"
        word = f"X[({elem_index}) * {w[op]} + r % {w[op]}]" if w[op] > 1 else f"X[{elem_index}]"
        return f"""    #pragma unroll
    for (int r = 0; r < {n[op]}; r++) {{
      {dst}[r] = 0u;
      #pragma unroll
      for (int e = 0; e < {epr[op]}; e++) {{
        const int row = {coord[op][0].replace("REG", f"(r / {w[op]})")}, col = {coord[op][1].replace("REG", f"(r / {w[op]})")};
        const unsigned* X = {op};
        {dst}[r] |= ({word}{mask}){sh};
      }}
    }}
"""

    def m(op):
        return "" if bits[op] >= 32 else f" & 0x{(1 << bits[op]) - 1:x}u"

    # tile of group slot q: t = warp * g + q (the last warps' spare slots repeat the last tile)
    tile = "const long long t = min(warp * {g}LL + row / {rows}, ntiles - 1); const long long mt = t / NT, nt = t % NT;"
    c_idx = "(mt * {fm} + row % {fm}) * N + nt * {fn} + col".format(fm=fm, fn=fn)
    a_idx = f"(mt * {fm} + row % {fm}) * K + ks * {fk} + col"
    b_idx = f"(ks * {fk} + row % {fk}) * N + nt * {fn} + col"

    def loader(op, dst, rows, idx):
        body = load(op, dst, idx, m(op))
        return body.replace("const unsigned* X", tile.format(g=g, rows=rows) + "\n        const unsigned* X")

    step = "    " + ("#pragma unroll\n    for (int r = 0; r < %d; r++) c[r] = d[r];\n" % n["C"] if chains(f) else "")
    dsh = "" if epr["D"] == 1 else f" >> ({bits['D']} * e)"
    dword = f"(d[r]{dsh}){m('D')}"
    store = f"""  #pragma unroll
  for (int r = 0; r < {n['D']}; r++) {{
    #pragma unroll
    for (int e = 0; e < {epr['D']}; e++) {{
      const int row = {coord["D"][0].replace("REG", f"(r / {w['D']})")}, col = {coord["D"][1].replace("REG", f"(r / {w['D']})")};
      const long long t = warp * {g}LL + row / {fm};
      if (t < ntiles) {{
        const long long mt = t / NT, nt = t % NT;
        D[({c_idx}) * {w['D']} + r % {w['D']}] = {dword};
      }}
    }}
  }}
"""
    return f"""extern "C" __global__ void {name}(const unsigned* __restrict__ A, const unsigned* __restrict__ B,
    const unsigned* __restrict__ C, unsigned* __restrict__ D, const int* __restrict__ order, int nsteps,
    long long M, long long N, long long K) {{
  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) / FS_LANES;
  const int lane = threadIdx.x % FS_LANES;
  const long long NT = N / {fn}, ntiles = (M / {fm}) * NT;
  if (warp * {g} >= ntiles) return;
  unsigned a[{n['A']}], b[{n['B']}], c[{n['C']}];
  {ddecl}
{loader("C", "c", fm, c_idx)}  for (int s = 0; s < nsteps; s++) {{
    const long long ks = order[s];
{loader("A", "a", fm, a_idx)}{loader("B", "b", fk, b_idx)}    asm volatile("{asm}"
        : {outs}
        : {ins});
{dfix}{step}  }}
{store}}}
"""


def module_source(forms) -> str:
    """One translation unit holding the GEMM kernels of ``forms``."""
    return unit(*(kernel_source(f) for f in forms))


# ------------------------------------------------------------------------------------------------
# inputs

_NUMPY = {"f16": (np.float16, np.uint16), "f32": (np.float32, np.uint32), "f64": (np.float64, np.uint64)}


def _encode(x, fmt: FloatFormat):
    """float64 -> words: NumPy's casts (nearest even) where NumPy has the format; other formats of
    up to 16 bits: the nearest finite word (ties to the lower value); the rest through from_float.
    Only the bits matter here (they are inputs), and that they are drawn the same way every time."""
    if fmt.name in _NUMPY:
        with np.errstate(over="ignore"):
            return x.astype(_NUMPY[fmt.name][0]).view(_NUMPY[fmt.name][1])
    if fmt.storage_bits <= 16:
        vals, words = _finite_table(fmt)
        i = np.clip(np.searchsorted(vals, x), 1, vals.size - 1)
        i = np.where(np.abs(x - vals[i - 1]) <= np.abs(vals[i] - x), i - 1, i)
        return words[i]
    return from_float(x, fmt)


_TABLES: dict = {}


def _finite_table(fmt: FloatFormat):
    """Sorted finite values of every word of a format of up to 16 bits (one zero each side)."""
    if fmt.name not in _TABLES:
        words = np.arange(1 << fmt.storage_bits, dtype=np.uint64).astype(fmt.dtype)
        v = to_float(words, fmt)
        keep = np.isfinite(v)
        order = np.lexsort((words[keep], v[keep]))
        _TABLES[fmt.name] = v[keep][order], words[keep][order]
    return _TABLES[fmt.name]


def _float_words(rng, shape, fmt: FloatFormat, cls: str, role: str):
    """Bit patterns of one float operand of class ``cls`` (``role``: 'A', 'B' or 'C')."""
    if cls == "extreme":   # the format's edges: largest finite, smallest subnormal and normal, +-0, +-1
        edges = np.array([_max_finite(fmt), 2.0 ** (fmt.emin - fmt.man_bits), 2.0 ** fmt.emin, 0.0, 1.0,
                          _max_finite(fmt) / 2])
        x = edges[rng.integers(0, edges.size, shape)] * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return _encode(np.where(rng.random(shape) < 0.5, rng.standard_normal(shape), x), fmt)
    if cls == "spread":    # exponents over most of the format's range, within one dot product
        lo, hi = fmt.emin - fmt.man_bits, fmt.emax
        if role != "C" and fmt.exp_bits > 5:     # wide formats: a window that still meets in one sum
            lo, hi = max(lo, -40), min(hi, 20)
        e = rng.integers(lo, hi + 1, shape)
        x = (1 + rng.random(shape)) * np.exp2(e.astype(float)) * np.where(rng.random(shape) < 0.5, -1.0, 1.0)
        return _encode(x, fmt)
    x = rng.standard_normal(shape)
    if cls == "special":   # 3% uniformly random words: NaN (any payload), Inf, subnormals
        words = _encode(x, fmt)
        hit = rng.random(shape) < 0.03
        rnd = rng.integers(0, 1 << fmt.storage_bits, shape, dtype=np.uint64).astype(words.dtype)
        return np.where(hit, rnd, words)
    return _encode(x, fmt)


def _max_finite(fmt: FloatFormat) -> float:
    if fmt.storage_bits <= 16:   # every word, decoded (e4m3's largest finite is not 2**emax * (2 - ulp))
        v = to_float(np.arange(1 << fmt.storage_bits, dtype=np.uint64).astype(fmt.dtype), fmt)
        return float(np.max(v[np.isfinite(v)]))
    return 2.0 ** fmt.emax * (2 - 2.0 ** -fmt.man_bits)


def _int_words(rng, shape, fmt: IntFormat, cls: str):
    if cls == "extreme":
        v = np.where(rng.random(shape) < 0.5, fmt.min, fmt.max)
    else:
        v = rng.integers(fmt.min, fmt.max + 1, shape)
    return int_to_bits(v.astype(np.int64), fmt)


def _c_words(rng, shape, fmt, cls):
    if isinstance(fmt, IntFormat):   # s32 C: near the limits for 'extreme' (wrap, saturation)
        lim = 1 << 31
        v = rng.integers(-lim, lim, shape) if cls in ("extreme", "special") else rng.integers(-1000, 1000, shape)
        return int_to_bits(v, fmt)
    return _float_words(rng, shape, fmt, cls, "C")


def case_inputs(form, seed: int):
    """(A, B, C, k_order, class) of the GEMM case ``seed`` of ``form``: all drawn from one generator."""
    f = lookup(form)
    fm, fn, fk = f.shape
    rng = np.random.default_rng([seed, 0x6E33])
    M = fm * int(rng.integers(1, 5))
    N = fn * int(rng.integers(1, 5))
    smax = K_MAX // fk if chains(f) else 1
    steps = smax if rng.random() < 0.15 else int(np.exp(rng.uniform(0, np.log(smax))) + 0.5)
    steps = max(1, min(smax, steps))
    K = fk * steps
    cls = CLASSES[int(rng.integers(0, len(CLASSES)))]
    o = ORDERS[int(rng.integers(0, len(ORDERS)))]
    order = np.arange(steps) if o == "ascending" else (np.arange(steps)[::-1] if o == "descending"
                                                        else rng.permutation(steps))
    fa, fb, fc = (f.fmt(op) for op in "ABC")
    if isinstance(fa, IntFormat) and isinstance(fb, IntFormat):
        A, B = _int_words(rng, (M, K), fa, cls), _int_words(rng, (K, N), fb, cls)
    else:
        assert isinstance(fa, FloatFormat) and isinstance(fb, FloatFormat), f"{f.name}: A and B of one kind"
        A, B = _float_words(rng, (M, K), fa, cls, "A"), _float_words(rng, (K, N), fb, cls, "B")
    if cls == "cancel" and steps > 1:   # the second half of the k-steps cancels the first
        h = (steps // 2) * fk
        A[:, h:2 * h] = A[:, :h]
        if isinstance(fb, IntFormat):
            B[h:2 * h] = int_to_bits(-np.clip(_signed(B[:h], fb), -fb.max, fb.max), fb) if fb.signed else B[:h]
        else:
            B[h:2 * h] = B[:h] ^ fb.dtype(1 << (fb.storage_bits - 1))
    C = _c_words(rng, (M, N), fc, cls)
    return A, B, C, order.astype(np.int64), cls


def _signed(words, fmt):
    v = words.astype(np.int64)
    return np.where(v >= 1 << (fmt.storage_bits - 1), v - (1 << fmt.storage_bits), v)


def digest(D: np.ndarray) -> str:
    """16 hex digits of sha256 over D's words (little-endian, its dtype) and shape."""
    h = hashlib.sha256(f"{D.shape}{D.dtype.str}".encode())
    h.update(np.ascontiguousarray(D).astype(D.dtype.newbyteorder("<")).tobytes())
    return h.hexdigest()[:16]


def _words(X: np.ndarray, w: int) -> np.ndarray:
    """Element words as the kernel reads them: uint32, w per element, low word first."""
    x = np.ascontiguousarray(X).astype(np.uint64)
    if w == 1:
        return x.astype(np.uint32)
    return np.stack([(x >> np.uint64(32 * i)) & np.uint64(0xFFFFFFFF) for i in range(w)], -1).astype(np.uint32)


# ------------------------------------------------------------------------------------------------
# the GPU side

class GemmRunner:
    """The GEMM kernels of ``forms`` on device 0 (CuPy, NVRTC)."""

    def __init__(self, forms):
        cp = runner.import_cupy()
        self.cp = cp
        self.info = runner.device_info(cp)
        cc = self.info["cc_int"]
        self.forms = [lookup(x) for x in forms if lookup(x).min_cc <= cc]
        fns = compile.nvrtc(module_source(self.forms), [kernel_name(f) for f in self.forms],
                            f"the GEMM kernels for compute capability {self.info['cc']}", cp)
        self.fn = {f.name: fns[kernel_name(f)] for f in self.forms}

    def gemm(self, form, A, B, C, order) -> np.ndarray:
        cp = self.cp
        f = lookup(form)
        fm, fn, fk = f.shape
        g = f.groups
        M, K = A.shape
        N = B.shape[1]
        a, b, c = (cp.asarray(_words(X, f.words_per_elem(op))) for X, op in ((A, "A"), (B, "B"), (C, "C")))
        wd = f.words_per_elem("D")
        d = cp.zeros((M, N, wd) if wd > 1 else (M, N), cp.uint32)
        o = cp.asarray(np.ascontiguousarray(order, np.int32))
        warps = -(-(M // fm) * (N // fn) // g)
        blocks = -(-warps // WARPS_PER_BLOCK)
        self.fn[f.name]((blocks,), (THREADS_PER_BLOCK,),
                        (a, b, c, d, o, np.int32(order.size), np.int64(M), np.int64(N), np.int64(K)))
        out = cp.asnumpy(d).astype(np.uint64)
        if wd > 1:
            out = out[..., 0] | (out[..., 1] << np.uint64(32))
        return out.astype(f.fmt("D").dtype)


def input_digest(A, B, C, order) -> str:
    return digest(np.concatenate([np.ascontiguousarray(X).astype(np.uint64).ravel() for X in (A, B, C, order)]))


def record(path: str, n: int = 100, forms=None, full: int = 2, log=print) -> dict:
    """Run ``n`` GEMMs per form on the GPU and write the recording: per GEMM its seed, sizes, class and
    the digests of its inputs and of the GPU's D; the first ``full`` small GEMMs of a form in full.
    Comparing with fragsim is ``replay``'s work (on any machine, no GPU needed)."""
    from fragsim.facts.arch import arch_for_cc

    forms = [lookup(x).name for x in (forms or FORMS)]
    run = GemmRunner(forms)
    info = run.info
    rec = {"device": info, "arch": arch_for_cc(info["cc_int"] // 10, info["cc_int"] % 10, info["device"]),
           "k_max": K_MAX, "forms": {}, "full": {}}
    for f in run.forms:
        rows = []
        for seed in range(n):
            A, B, C, order, cls = case_inputs(f, seed)
            D = run.gemm(f, A, B, C, order)
            rows.append([seed, A.shape[0], B.shape[1], A.shape[1], cls, input_digest(A, B, C, order), digest(D)])
            if seed < full:
                rec["full"][f"{f.name}/{seed}"] = D.astype(np.uint64).tolist()
        rec["forms"][f.name] = rows
        log(f"{f.name}: {n} GEMMs on the GPU, K up to {max(r[3] for r in rows)}")
    R.save_json(path, "gemm", rec)
    return rec


def replay(rec: dict, cases=None) -> list[str]:
    """Recompute recorded GEMMs with ``fragsim.gemm`` (``cases``: (form, seed) pairs, default all);
    one line per GEMM whose D differs from the GPU's, or whose inputs could not be drawn again."""
    import fragsim

    rows = {(name, r[0]): r for name, rs in rec["forms"].items() for r in rs}
    bad = []
    for key in (rows if cases is None else cases):
        name, seed = key
        _, M, N, K, cls, in_dig, d_dig = rows[key]
        A, B, C, order, _ = case_inputs(name, seed)
        if input_digest(A, B, C, order) != in_dig:
            bad.append(f"{name} seed {seed}: the inputs drawn here are not those recorded (NumPy's generator changed?)")
            continue
        D = fragsim.gemm(name, A, B, C, arch=rec["arch"], k_order=order)
        full = rec["full"].get(f"{name}/{seed}")
        if digest(D) != d_dig or (full is not None and not np.array_equal(D.astype(np.uint64), np.array(full, np.uint64))):
            bad.append(f"{name} seed {seed} ({M}x{N}x{K}, {cls}): D differs from the GPU's")
    return bad


def _forms(args: argparse.Namespace, names: list[str]) -> list[str]:
    keep = [n for n in names if not args.forms or any(k in n for k in args.forms)]
    if not keep:
        raise ValueError(f"--forms {' '.join(args.forms)}: no GEMM form's name contains any of these")
    return keep


class GemmFamily(RunnerFamily):
    name = "gemm"
    summary = "whole mma.sync GEMMs of every form against fragsim.gemm (--cases: GEMMs per form, default 100)"
    default_cases = 100
    options = frozenset({"cases", "forms", "record", "record_only", "replay", "quiet", "json", "json_file"})
    replay_file = True
    replay_expects = "the GEMM recording's .json file (e.g. tests/data/gemm/gemm_h100.json)"

    def source(self, cc: int) -> str:
        return module_source([f for f in FORMS.values() if f.min_cc <= cc])

    def compile(self, info: dict[str, Any]) -> Any:
        return GemmRunner(list(FORMS))

    def check(self, args: argparse.Namespace, info: dict[str, Any], say: Say) -> dict[str, Any]:
        path = os.path.join(args.record or tempfile.mkdtemp(prefix="fragsim_gemm_"), "gemm.json")
        rec = record(path, args.cases, _forms(args, list(FORMS)), log=say)
        n = sum(len(v) for v in rec["forms"].values())
        if args.record_only:
            return {"cases": n, "mismatches": 0, "compared": False, "recorded": path}
        bad = replay(rec)
        for line in bad:
            say(line)
        if not args.record:
            shutil.rmtree(os.path.dirname(path), ignore_errors=True)
        return {"cases": n, "mismatches": len(bad), "mismatching": bad} | ({"recorded": path} if args.record else {})

    def replay_cases(self, args: argparse.Namespace, say: Say) -> dict[str, Any]:
        try:
            rec = R.load_json(args.replay, "gemm")
            forms = rec["forms"]
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"--replay {args.replay}: not a GEMM recording ({runner.one_line(e)}); expected the "
                             ".json fragsim gpu-check --family gemm --record wrote") from None
        cases = [(name, r[0]) for name in _forms(args, sorted(forms)) for r in forms[name][: args.cases]]
        bad = replay(rec, cases)
        for line in bad:
            say(line)
        return {"cases": len(cases), "mismatches": len(bad), "mismatching": bad}


FAMILIES = {"gemm": GemmFamily()}
