"""The shape of the code that the architecture holds to (issue 24): no module of ``dmlgpu/``
over 600 lines, no class over 300, no function over 60 without a reason written above it (a
comment that begins ``# Long``), and imports between the package's modules that form no
cycle, function-level imports included (type-checking imports are annotations, not imports)."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dmlgpu"
MODULES = sorted(PACKAGE.rglob("*.py"))


def _name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(ROOT)))
def test_modules_classes_and_functions_are_short(path):
    text = path.read_text()
    lines = text.splitlines()
    assert len(lines) <= 600, f"{len(lines)} lines"
    for node in ast.walk(ast.parse(text)):
        if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        size = (node.end_lineno or node.lineno) - node.lineno + 1
        if isinstance(node, ast.ClassDef):
            assert size <= 300, f"class {node.name} is {size} lines"
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and size > 60:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            above = [line.strip() for line in lines[:first - 1]]
            reason = next((line for line in reversed(above) if not line.startswith("#") or line.startswith("# Long")),
                          "")
            assert reason.startswith("# Long"), f"{node.name} is {size} lines with no reason written above it"


def _type_checking_only(tree: ast.Module) -> set[int]:
    """Ids of the nodes inside ``if TYPE_CHECKING:`` blocks: annotations, not imports at run time."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            inside |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return inside


def _imports(path: pathlib.Path) -> set[str]:
    """The package's modules that ``path`` imports at run time, anywhere in it (in functions too)."""
    here = _name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    tree = ast.parse(path.read_text())
    skip = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join(base + (node.module.split(".") if node.module else []))
            if not module.startswith("dmlgpu"):
                continue
            names = [f"{module}.{a.name}" for a in node.names]
            found |= {n for n in names if n in ALL} or {module}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("dmlgpu")}
    return {n for n in found if n in ALL and n != _name(path)}


ALL = {_name(p) for p in MODULES}


def test_the_import_graph_has_no_cycle():
    graph = {_name(p): _imports(p) for p in MODULES}
    # a package's __init__ re-exporting its modules is not a dependency of those modules on it
    for name in graph:
        graph[name] = {m for m in graph[name] if not name.startswith(m + ".")}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                raise AssertionError("import cycle: " + " -> ".join(path[path.index(nxt):] + [nxt]))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
