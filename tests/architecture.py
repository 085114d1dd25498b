"""The package's import graph, read from the source (nothing is imported): which module imports which,
and which names it takes.  Used by tests/test_architecture.py."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Folders and the package name each installs as (pyproject's package-dir mapping).
FOLDERS = {"fragsim": "fragsim", "viz": "fragsim.viz", "gpu_check": "fragsim.gpu_check"}


@dataclass(frozen=True)
class Import:
    source: str          # importing module
    target: str          # imported module
    names: tuple         # names taken from it (empty for `import x`)
    line: int


def modules() -> dict[str, Path]:
    """Every module of the installed package -> its file."""
    out = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join((package, *rel))] = path
    return out


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING")


def _walk(tree: ast.AST):
    """Every node but those under `if TYPE_CHECKING:` (annotations only: never imported at run time)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                stack.extend(child.orelse)
            else:
                stack.append(child)


def imports(mods: dict[str, Path] | None = None) -> list[Import]:
    """Every import between the package's own modules (module level and inside functions), the
    ``importlib.import_module`` calls whose target the source spells out included."""
    mods = modules() if mods is None else mods
    out = []
    for name, path in mods.items():
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        tree = ast.parse(path.read_text(), str(path))
        consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
                  and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                  for t in n.targets if isinstance(t, ast.Name)}
        for node in _walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods:
                        out.append(Import(name, a.name, (), node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    pkg = base[:len(base) - node.level + 1]
                    target = ".".join(pkg + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if not target.startswith("fragsim"):
                    continue
                plain = []
                for a in node.names:
                    sub = f"{target}.{a.name}"
                    if sub in mods:             # `from pkg import module`
                        out.append(Import(name, sub, (), node.lineno))
                    else:
                        plain.append(a.name)
                if plain:
                    out.append(Import(name, target, tuple(plain), node.lineno))
            elif isinstance(node, ast.Call) and _is_import_module(node) and node.args:
                target = _dynamic_target(node.args[0], name, is_pkg, consts, mods)
                # a registry loading its own package's modules by name is no edge out of the package
                if target is not None and not (name == target or name.startswith(target + ".")):
                    out.append(Import(name, target, (), node.lineno))
    return out


def _is_import_module(node: ast.Call) -> bool:
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id == "import_module")


def _dynamic_target(arg: ast.expr, name: str, is_pkg: bool, consts: dict[str, str],
                    mods: dict[str, Path]) -> str | None:
    """The module an importlib.import_module(...) call loads, as far as the source says: a string
    literal, a module-level string constant, or an f-string's leading part (``f"{__package__}.{x}"`` ->
    the package: an edge to the room it reaches into)."""
    package = name if is_pkg else name.rsplit(".", 1)[0]
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        text = arg.value
    elif isinstance(arg, ast.Name) and arg.id in consts:
        text = consts[arg.id]
    elif isinstance(arg, ast.JoinedStr):
        text = ""
        for part in arg.values:
            if isinstance(part, ast.Constant):
                text += str(part.value)
            elif isinstance(part.value, ast.Name) and part.value.id in ("__package__", "__name__"):
                text += package if part.value.id == "__package__" else name
            else:
                break
    else:
        return None
    text = text.rstrip(".")
    while text and text not in mods:
        text = text.rsplit(".", 1)[0] if "." in text else ""
    return text if text.startswith("fragsim") else None


def room(module: str) -> str:
    """The folder a module lives in, as a package: fragsim.sim.mma -> fragsim.sim; fragsim.validate -> fragsim."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 else parts[0]


#: The package's rooms (folders); a module directly in fragsim/ is a room of its own.
ROOMS = ("fragsim.facts", "fragsim.instructions", "fragsim.layout", "fragsim.sim", "fragsim.arith", "fragsim.banks",
         "fragsim.tma", "fragsim.search", "fragsim.check", "fragsim.ptx", "fragsim.trace", "fragsim.cli", "fragsim.viz",
         "fragsim.gpu_check")


def room_of(module: str) -> str:
    r = room(module)
    return r if r in ROOMS else module


def room_edges(skip: tuple[str, ...] = ()) -> list[Import]:
    """The import graph between rooms (imports from the modules in ``skip`` left out)."""
    return [Import(room_of(e.source), room_of(e.target), (), e.line) for e in imports()
            if room_of(e.source) != room_of(e.target) and e.source not in skip]


def cycles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.source != e.target:
            graph.setdefault(e.source, set()).add(e.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on, stack, out = set(), [], []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def private_borrowings(mods: dict[str, Path] | None = None) -> list[str]:
    """`from X import _name`, or `X._name` on an imported module X, where X is in another room."""
    mods = modules() if mods is None else mods
    out = []
    for e in imports(mods):
        if room(e.source) != room(e.target):
            out += [f"{e.source}:{e.line} takes {e.target}.{n}" for n in e.names
                    if n.startswith("_") and not n.startswith("__")]
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        aliases = {}
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in _walk(tree):
            if isinstance(node, ast.ImportFrom):
                pkg = base[:len(base) - node.level + 1] if node.level else []
                target = ".".join(pkg + ([node.module] if node.module else [])) if node.level else (node.module or "")
                for a in node.names:
                    if f"{target}.{a.name}" in mods:
                        aliases[a.asname or a.name] = f"{target}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods and a.asname:
                        aliases[a.asname] = a.name
        for node in _walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and room(aliases[node.value.id]) != room(name)):
                out.append(f"{name}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    return out
