"""How much shared memory one CTA can address (``ArchParams.smem_per_cta``), and the words every
shared-memory entry point refuses a tile, an smem array or a lane address past it with.

``arch``: an architecture name, alias or row; None is ``DEFAULT_ARCH`` (entry points without an
``arch`` parameter hold shared memory to the default architecture's limit).
"""

from __future__ import annotations

from .arch import ARCHS, DEFAULT_ARCH, get_arch

__all__ = ["smem_per_cta", "smem_limit", "beyond_smem"]


def smem_per_cta(arch=None) -> int:
    """Bytes of shared memory one CTA of ``arch`` can address."""
    return (ARCHS[DEFAULT_ARCH] if arch is None else get_arch(arch)).smem_per_cta   # per lane checked: kept cheap


def smem_limit(arch=None) -> str:
    """"sm_90's 232448 bytes (227 KB) of shared memory per CTA" (KB as NVIDIA's tables write it: 1024 bytes)."""
    row = get_arch(DEFAULT_ARCH if arch is None else arch)
    n = row.smem_per_cta
    kb = f"{n // 1024} KB" if n % 1024 == 0 else f"{n / 1024:.1f} KB"
    return f"{row.name}'s {n} bytes ({kb}) of shared memory per CTA"


def beyond_smem(address: int, nbytes: int, what: str, arch=None) -> str:
    """Why ``nbytes`` bytes at shared ``address`` cannot be reached ("" if they can): "shared address
    300000 (0x493e0) is beyond sm_90's 232448 bytes (227 KB) of shared memory per CTA"."""
    a = int(address)
    if a < 0 or a + nbytes <= smem_per_cta(arch):
        return ""
    tail = f" (+{nbytes} bytes)" if a < smem_per_cta(arch) else ""
    return f"{what} {a} ({a:#x}){tail} is beyond {smem_limit(arch)}"

