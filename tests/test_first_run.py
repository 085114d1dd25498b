"""A first run says when numba compiles, keeps the compile out of reported timings, and
`fragsim warmup` compiles every kernel up front."""

import json
import sys
import warnings

import numba
import numpy as np

import fragsim
from fragsim.arith import jit
from fragsim.arith.stamps import KERNELS
from fragsim.cli import gemm as cli_gemm
from fragsim.cli import main


def _compile_probe(module: str):
    """A trivial jitted function that numba attributes to ``module`` (no on-disk cache: it always compiles)."""
    ns = {"__name__": module}
    exec("def probe(x):\n    return x + 1\n", ns)
    return numba.njit(ns["probe"])


def test_a_fragsim_kernel_compile_is_announced_on_stderr_with_its_seconds(monkeypatch, capsys):
    monkeypatch.setenv("FRAGSIM_COMPILE_NOTICE", "1")
    jit.listen()
    before = jit.compile_seconds()
    assert _compile_probe("fragsim.arith.kernel")(1) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "fragsim: compiling the mma.sync kernel (f16/bf16/tf32) (once: numba keeps it in its cache) ..."
    assert err[1].startswith("fragsim: compiled in ") and err[1].endswith(" s")
    assert jit.compile_seconds() > before


def test_compiles_outside_fragsim_are_not_announced(monkeypatch, capsys):
    monkeypatch.setenv("FRAGSIM_COMPILE_NOTICE", "1")
    jit.listen()
    assert _compile_probe("someone_elses_module")(1) == 2
    assert capsys.readouterr().err == ""


def test_the_notice_can_be_silenced(monkeypatch, capsys):
    monkeypatch.setenv("FRAGSIM_COMPILE_NOTICE", "0")
    jit.listen()
    _compile_probe("fragsim.arith.kernel")(1)
    assert capsys.readouterr().err == ""


def test_every_registered_kernel_has_a_name_for_the_notice():
    assert set(jit.KERNEL_NAMES) == set(KERNELS)


def test_gemm_reports_its_time_without_the_compile(tmp_path, monkeypatch, capsys):
    a, b = np.zeros((16, 16)), np.zeros((16, 8))
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    real, clock = fragsim.gemm, {"now": 1000.0}

    def compiling_gemm(*args, **kw):        # a first call: 10 s on the clock, 4 of them numba compiling
        clock["now"] += 10.0
        jit._state["seconds"] += 4.0
        return real(*args, **kw)

    monkeypatch.setattr(fragsim, "gemm", compiling_gemm)
    monkeypatch.setattr(cli_gemm.time, "time", lambda: clock["now"])
    assert main(["gemm", "m16n8k16.row.col.f32.f16.f16.f32", "--a", str(tmp_path / "a.npy"), "--b",
                 str(tmp_path / "b.npy"), "-o", str(tmp_path / "d.npy"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["seconds"] == 6.0


def test_warmup_runs_every_kernel_once(capsys):
    assert main(["warmup", "--json"]) == 0
    kernels = [k["kernel"] for k in json.loads(capsys.readouterr().out)["kernels"]]
    assert kernels == list(jit.KERNEL_NAMES.values())
    assert "numba" in sys.modules


def _quiet_terminal_notice(monkeypatch):
    """stderr is pytest's capture (no terminal), no FRAGSIM_COMPILE_NOTICE, and nothing said yet."""
    monkeypatch.delenv("FRAGSIM_COMPILE_NOTICE", raising=False)
    monkeypatch.setitem(jit._state, "warned", False)
    jit.listen()


def test_outside_a_terminal_the_first_compile_is_said_once_naming_fragsim_warmup(monkeypatch):
    _quiet_terminal_notice(monkeypatch)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _compile_probe("fragsim.arith.kernel_gemm")(1)
        _compile_probe("fragsim.arith.kernel16")(1)
    notices = [w for w in seen if issubclass(w.category, jit.CompileNotice)]
    assert len(notices) == 1
    assert "the whole-GEMM kernel" in str(notices[0].message)
    assert "`fragsim warmup` compiles every kernel ahead of time" in str(notices[0].message)


def test_the_notice_points_at_the_line_that_set_the_compile_off(monkeypatch):
    _quiet_terminal_notice(monkeypatch)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        probe = _compile_probe("fragsim.arith.kernel")
        line = sys._getframe().f_lineno + 1
        probe(1)
    notice = next(w for w in seen if issubclass(w.category, jit.CompileNotice))
    assert (notice.filename, notice.lineno) == (__file__, line)


def test_on_the_command_line_the_notice_is_its_one_line_on_stderr(monkeypatch, capsys):
    from fragsim.cli import layout

    _quiet_terminal_notice(monkeypatch)
    monkeypatch.setattr(layout, "run", lambda args: _compile_probe("fragsim.arith.kernel_fp8")(1) and 0)
    assert main(["layout", "m16n8k16.row.col.f32.f16.f16.f32", "A"]) == 0
    assert capsys.readouterr().err == ("fragsim: numba is compiling the fp8 mma.sync kernel (5-20 s on a first use, "
                                       "then cached); `fragsim warmup` compiles every kernel ahead of time\n")
