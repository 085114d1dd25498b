"""numba's disk cache keys a kernel file on its own content only: every kernel that compiles in code
from other fragsim modules carries the hash of those sources (``fragsim.arith.stamps``), so that
editing one changes the kernel's key.  One registry, one stamp name, one restamp command."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from fragsim.arith import stamps

FRAGSIM = stamps.ROOT / "fragsim"


def _file(module: str) -> Path:
    p = stamps.path(module)
    return p if p.exists() else p.with_suffix("") / "__init__.py"


def _module_level_imports(module: str) -> set[str]:
    """The fragsim modules ``module`` imports at module level: what its compiled functions can reach
    (intrinsics, inlined or called jitted functions, globals numba freezes into the code)."""
    path = _file(module)
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1]) if node.level else ""
            name = ".".join(p for p in (base, node.module or "") if p)
            found.add(name)
            found |= {f"{name}.{a.name}" for a in node.names}      # `from pkg import submodule`
    return {m for m in found if m.split(".")[0] == "fragsim" and _file(m).exists()}


def _compiled_in(kernel: str) -> set[str]:
    seen: set[str] = set()
    todo = [kernel]
    while todo:
        for m in _module_level_imports(todo.pop()) - seen:
            seen.add(m)
            todo.append(m)
    return seen


def _calls_njit_with_cache(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else None
            if name in ("njit", "jit") and any(k.arg == "cache" and isinstance(k.value, ast.Constant)
                                               and k.value.value is True for k in node.keywords):
                return True
    return False


@pytest.mark.parametrize("kernel", list(stamps.KERNELS))
def test_the_kernel_stamp_is_the_hash_of_what_it_compiles_in(kernel):
    why = stamps.check(stamps.path(kernel), *(stamps.path(s) for s in stamps.KERNELS[kernel]))
    assert why is None, why


@pytest.mark.parametrize("kernel", list(stamps.KERNELS))
def test_the_registry_lists_every_fragsim_module_the_kernel_compiles_in(kernel):
    # module-level imports, transitively, are what the jitted functions can reach; imports inside
    # plain functions (kernel_exact.run's plan classes) never enter the compiled code
    assert set(stamps.KERNELS[kernel]) == _compiled_in(kernel)


def test_every_fragsim_module_that_caches_numba_code_is_in_the_registry():
    cached = {".".join(p.relative_to(stamps.ROOT).with_suffix("").parts)
              for p in FRAGSIM.rglob("*.py") if _calls_njit_with_cache(p)}
    assert "fragsim.arith.kernel" in cached     # the scan finds decorators
    assert cached == set(stamps.KERNELS)


def test_a_kernel_is_restamped_after_every_kernel_among_its_sources():
    order = stamps.order()
    assert sorted(order) == sorted(stamps.KERNELS)
    for k, sources in stamps.KERNELS.items():
        assert all(order.index(s) < order.index(k) for s in sources if s in stamps.KERNELS), k
    assert order.index("fragsim.arith.kernel") < order.index("fragsim.arith.kernel_fp8")


def test_editing_a_source_makes_the_stamp_stale_and_restamping_changes_the_kernel_file(tmp_path):
    kernel, source = tmp_path / "kernel.py", tmp_path / "simd.py"
    source.write_text("f8_add = 'fadd'\n")
    kernel.write_text(f'X = 1\n{stamps.STAMP} = ""\n')
    assert stamps.restamp(kernel, source) and stamps.check(kernel, source) is None
    before = kernel.read_text()
    source.write_text("f8_add = 'fsub'\n")
    why = stamps.check(kernel, source)
    assert "numba's cache would return code compiled from the old source; run `python -m fragsim.arith.stamps`" in why
    assert stamps.restamp(kernel, source)
    assert kernel.read_text() != before and stamps.check(kernel, source) is None
    assert not stamps.restamp(kernel, source)


def test_one_pass_restamps_a_kernel_that_compiles_in_another_kernel(tmp_path):
    """pkg.fused compiles in pkg.base, which is itself stamped: listed first, it is still restamped
    second, after pkg.base's stamp line has changed."""
    (tmp_path / "pkg").mkdir()
    for name in ("fused", "base", "simd"):
        (tmp_path / "pkg" / f"{name}.py").write_text(f'{stamps.STAMP} = ""\n' if name != "simd" else "A = 1\n")
    kernels = {"pkg.fused": ("pkg.simd", "pkg.base"), "pkg.base": ("pkg.simd",)}
    assert stamps.order(kernels) == ["pkg.base", "pkg.fused"]
    assert stamps.restamp_all(kernels, tmp_path) == ["pkg.base", "pkg.fused"]
    assert stamps.stale(kernels, tmp_path) == []
    (tmp_path / "pkg" / "simd.py").write_text("A = 2\n")
    assert len(stamps.stale(kernels, tmp_path)) == 2
    assert stamps.restamp_all(kernels, tmp_path) == ["pkg.base", "pkg.fused"]
    assert stamps.stale(kernels, tmp_path) == []


def test_a_kernel_that_compiles_in_nothing_carries_no_stamp(tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text("X = 1\n")
    assert stamps.check(kernel) is None
    kernel.write_text(f'{stamps.STAMP} = "00"\n')
    assert "compiles in no other source" in stamps.check(kernel)


def test_the_check_command_reports_without_writing():
    files = [stamps.path(k) for k in stamps.KERNELS]
    before = [f.read_bytes() for f in files]
    out = subprocess.run([sys.executable, "-m", "fragsim.arith.stamps", "--check"], capture_output=True, text=True)
    assert out.returncode == 0 and f"every {stamps.STAMP} is current" in out.stdout, out.stderr
    assert [f.read_bytes() for f in files] == before
