"""The whole suite runs with FRAGSIM_COMPILE_NOTICE=0 (subprocesses and notebook kernels inherit it):
whether a numba kernel compiles during a test depends on numba's on-disk cache, which the tests do not
control, and the once-per-process notice of a first compile (fragsim.arith.jit) would otherwise land
in whichever test compiles first -- a command's stderr, a doc example's output, a notebook cell.
tests/test_first_run.py sets the variable itself to test the notice."""

import os

os.environ["FRAGSIM_COMPILE_NOTICE"] = "0"
