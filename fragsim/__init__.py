"""fragsim: a bit-exact simulator of the warp-level tensor-core data path, with pictures.

Public API (the manual: docs/, its API page; the architecture: docs/DESIGN.md): ``mma``, ``movmatrix``, ``gemm``, ``pack``,
``unpack``, ``ldmatrix``, ``stmatrix``, ``bank_conflicts``, ``Swizzle``, ``XorMap``, ``Tile``, ``swizzle_search``
(access sets: ``fragsim.access``), plus ``to_bits``/``from_bits`` and the instruction table
(``lookup``, ``FORMS``).  Heavy parts (numba kernels, matplotlib) load on first use, so
``import fragsim`` stays fast.
"""

from __future__ import annotations

import importlib as _importlib

# viz/ and gpu_check/ sit beside fragsim/ in the repository and exist only as fragsim.viz and
# fragsim.gpu_check through pyproject's package-dir mapping: in a clone, `pip install -e .`.

from .facts.formats import to_bits, from_bits, get_format, FORMATS as NUMBER_FORMATS  # noqa: E402
from .instructions import lookup, FORMS, MmaForm, parse_shared_op  # noqa: E402
from .sim.registers import pack, unpack  # noqa: E402
from .sim.smem import ldmatrix, stmatrix, ld_shared, st_shared, cp_async  # noqa: E402

# name -> (module, attribute), imported on first access
_LAZY = {
    "mma": ("fragsim.sim.mma", "mma"),
    "wgmma": ("fragsim.sim.wgmma", "wgmma"),
    "movmatrix": ("fragsim.sim.movmatrix", "movmatrix"),
    "gemm": ("fragsim.sim.gemm", "gemm"),
    "ARCHS": ("fragsim.facts.arch", "ARCHS"),
    "bank_conflicts": ("fragsim.banks", "bank_conflicts"),
    "Swizzle": ("fragsim.layout.swizzle", "Swizzle"),
    "XorMap": ("fragsim.layout.xor_map", "XorMap"),
    "Tile": ("fragsim.layout.tile", "Tile"),
    "swizzle_search": ("fragsim.search.swizzle_search", "swizzle_search"),
    "check_load": ("fragsim.check", "check_load"),
    "check_store": ("fragsim.check", "check_store"),
    "check_copy": ("fragsim.check", "check_copy"),
    "MatrixDescriptor": ("fragsim.layout.descriptor", "MatrixDescriptor"),
    "check_wgmma": ("fragsim.check.wgmma", "check_wgmma"),
    "check_tma_wgmma": ("fragsim.check.tma_wgmma", "check_tma_wgmma"),
    "run_kernel": ("fragsim.ptx.run", "run_kernel"),
    "approx": ("fragsim.ptx.semantics.approx", "approx"),
    "Buffer": ("fragsim.ptx.memory", "Buffer"),
    "trace_fragments": ("fragsim.trace", "trace_fragments"),
    "TensorMap": ("fragsim.tma", "TensorMap"),
    "tma_load": ("fragsim.tma", "tma_load"),
    "tma_store": ("fragsim.tma", "tma_store"),
    "access": ("fragsim.search.access", None),      # the access-set module: presets and from_exprs
}


def __getattr__(name):
    if name == "__version__":  # from the package metadata, on first use: importlib.metadata costs ~20 ms
        from importlib.metadata import PackageNotFoundError, version
        try:
            globals()[name] = value = version("fragsim")
        except PackageNotFoundError:
            raise AttributeError("fragsim.__version__: fragsim is not installed, so it has no package "
                                 "metadata (pip install -e .)") from None
        return value
    if name in _LAZY:
        mod, attr = _LAZY[name]
        module = _importlib.import_module(mod)
        value = module if attr is None else getattr(module, attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fragsim' has no attribute {name!r}")


__all__ = ["mma", "movmatrix", "wgmma", "gemm", "pack", "unpack", "ldmatrix", "stmatrix", "ld_shared", "st_shared", "cp_async",
           "bank_conflicts", "Swizzle", "XorMap", "Tile", "swizzle_search", "to_bits", "from_bits",
           "get_format", "lookup", "FORMS", "MmaForm", "parse_shared_op", "NUMBER_FORMATS",
           "check_load", "check_store", "check_copy", "MatrixDescriptor", "check_wgmma", "check_tma_wgmma", "run_kernel",
           "Buffer", "TensorMap", "tma_load", "tma_store", "approx"]


def __dir__() -> list[str]:
    """The public names (those loaded on first use included), so tab completion and help() find them;
    not the module's own imports."""
    return sorted({*__all__, *_LAZY, "__version__", "__doc__", "__name__", "__file__", "__path__"})
