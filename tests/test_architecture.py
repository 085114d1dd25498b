"""The house: the import graph is layered (no cycles), rooms do not borrow each other's private names,
the model never imports the pictures, and importing fragsim stays light."""

import subprocess
import sys

import architecture as A

#: Rooms above the model: the pictures are drawn from it, the GPU cross-check and the command line
#: drive it.
UPPER = ("fragsim.viz", "fragsim.gpu_check", "fragsim.cli")
#: The model's only ways up: Jupyter's pictures (by name, on first display) and the GPU machine behind
#: check_load/check_store/check_copy(..., gpu=True).
DOORS = {"fragsim.display": "fragsim.viz.notebook", "fragsim.check.gpu": "fragsim.gpu_check.check.program"}


def test_the_import_graph_has_no_cycles():
    """importlib.import_module calls count as imports (tests/architecture.py reads their targets); the
    two doors up are the only edges left out."""
    assert A.cycles([e for e in A.imports() if DOORS.get(e.source) != e.target]) == []


def test_importlib_imports_are_seen():
    assert any(e.source == "fragsim.display" and e.target == "fragsim.viz.notebook" for e in A.imports())


def test_the_rooms_are_layered_too():
    """No cycle among the folders either (the two doors aside), so each room can be read, tested and
    changed knowing only the rooms below it."""
    assert A.cycles(A.room_edges(skip=tuple(DOORS))) == []


def test_no_room_takes_a_private_name_of_another():
    assert A.private_borrowings() == []


def test_fragment_tracing_sits_above_the_machine_and_the_checker():
    """fragsim.trace runs kernels (ptx) and explains with fragsim check's diagnosis (check); neither of
    those rooms imports it."""
    wrong = [f"{e.source}:{e.line} imports {e.target}" for e in A.imports()
             if A.room(e.source) in ("fragsim.ptx", "fragsim.check") and A.room(e.target) == "fragsim.trace"]
    assert wrong == []
    assert {A.room(e.target) for e in A.imports() if A.room(e.source) == "fragsim.trace"} >= {"fragsim.ptx", "fragsim.check"}


def test_the_model_never_imports_the_pictures_the_gpu_check_or_the_command_line():
    wrong = [f"{e.source}:{e.line} imports {e.target}" for e in A.imports()
             if A.room(e.source) not in UPPER and A.room(e.target) in UPPER and DOORS.get(e.source) != e.target]
    assert wrong == []


def test_every_module_is_in_a_room_a_newcomer_finds():
    """Top-level modules of fragsim are only the package's front door and its two small shared helpers."""
    top = sorted(m for m, path in A.modules().items()
                 if path.parent == A.ROOT / "fragsim" and path.name != "__init__.py")
    assert top == ["fragsim.__main__", "fragsim.display", "fragsim.ranges", "fragsim.validate"]


def test_importing_fragsim_loads_no_numba_or_matplotlib():
    code = ("import sys, fragsim; fragsim.Tile; fragsim.Swizzle; fragsim.lookup('m16n8k16.row.col.f32.f16.f16.f32');"
            "print(sorted(m for m in ('numba', 'matplotlib', 'fragsim.viz') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
