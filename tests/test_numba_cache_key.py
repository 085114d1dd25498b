"""numba's disk cache keys a kernel file on its own content only: kernel.py and kernel_exact.py
carry the hash of simd.py (whose intrinsics they inline), so that editing simd.py changes the key."""

import ast
import subprocess
import sys

import pytest

from fragsim.arith import stamps as _cachekey
from fragsim.arith import cachekey


def test_kernel_stamps_are_the_hash_of_simd_py():
    why = cachekey.stale()
    assert why is None, f"{why}. Regenerate with: python -m fragsim.arith.cachekey"


@pytest.mark.parametrize("kernel", cachekey.KERNELS, ids=lambda p: p.name)
def test_the_stamp_covers_every_fragsim_module_the_kernel_compiles_in(kernel):
    # module-level imports are what the jitted functions can reach; imports inside plain
    # functions (kernel_exact.run's plan classes) never enter the compiled code
    tree = ast.parse(kernel.read_text())
    local = {node.module for node in tree.body if isinstance(node, ast.ImportFrom) and node.level > 0}
    assert {kernel.parent / f"{m}.py" for m in local} == set(cachekey.SOURCES)


def test_editing_a_source_makes_the_stamp_stale_and_restamping_changes_the_kernel_file(tmp_path):
    kernel, source = tmp_path / "kernel.py", tmp_path / "simd.py"
    source.write_text("f8_add = 'fadd'\n")
    kernel.write_text('X = 1\nSTAMP = ""\n')
    assert _cachekey.restamp(kernel, "STAMP", source) and _cachekey.check(kernel, "STAMP", source) is None
    before = kernel.read_text()
    source.write_text("f8_add = 'fsub'\n")
    assert "numba's cache would return code compiled from the old source" in _cachekey.check(kernel, "STAMP", source)
    assert _cachekey.restamp(kernel, "STAMP", source)
    assert kernel.read_text() != before and _cachekey.check(kernel, "STAMP", source) is None
    assert not _cachekey.restamp(kernel, "STAMP", source)


def test_the_check_command_reports_without_writing():
    before = [k.read_bytes() for k in cachekey.KERNELS]
    out = subprocess.run([sys.executable, "-m", "fragsim.arith.cachekey", "--check"], capture_output=True, text=True)
    assert out.returncode == 0 and "SIMD_SOURCE_HASH is current" in out.stdout
    assert [k.read_bytes() for k in cachekey.KERNELS] == before
