"""The import direction between Interlock's top-level packages (docs/architecture.md).

Every import counts, also those inside functions; only ``TYPE_CHECKING`` blocks
are left out (they never run). A cycle between two packages means neither can
be read, tested or replaced without the other.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import interlock
from interlock.ext.deps import strongly_connected

PACKAGE = Path(interlock.__file__).parent


def _unit(module: str) -> str | None:
    """``interlock.engine.dispatch`` -> ``engine``; ``interlock.events`` -> ``events``."""
    parts = module.split(".")
    if parts[0] != "interlock":
        return None
    return parts[1] if len(parts) > 1 else "interlock"


def _unit_of_file(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.name != "__init__.py" \
        else "interlock"


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    name = test.id if isinstance(test, ast.Name) else \
        test.attr if isinstance(test, ast.Attribute) else ""
    return name.lstrip("_") == "TYPE_CHECKING"


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                yield from _imports_in(child)
            continue
        yield from _imports_in(node)


def _imports_in(node: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    else:
        yield from _imports(node)


def _root_names() -> dict[str, str]:
    """What ``from interlock import X`` really imports: the lazy table in __init__."""
    import interlock as root

    return {name: _unit(module) or "interlock" for name, module in root._LAZY.items()}


def _submodule(name: str) -> str:
    """``from interlock import events`` imports a unit; ``__version__`` the root."""
    exists = (PACKAGE / name).is_dir() or (PACKAGE / f"{name}.py").is_file()
    return name if exists else "interlock"


def package_graph() -> dict[str, set[str]]:
    """Top-level unit -> the top-level units it imports (itself left out)."""
    root = _root_names()
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        me = _unit_of_file(path)
        edges = graph.setdefault(me, set())
        for node in _imports(ast.parse(path.read_text(), str(path))):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [_unit(alias.name) for alias in node.names]
            elif node.level == 0 and node.module == "interlock":
                targets = [root.get(alias.name) or _submodule(alias.name) for alias in node.names]
            elif node.level == 0 and node.module:
                targets = [_unit(node.module)]
            edges.update(t for t in targets if t is not None and t != me)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one package."""
    ordered = {node: sorted(graph[node] & graph.keys()) for node in sorted(graph)}
    return [sorted(group) for group in strongly_connected(ordered)]


def test_no_cycles_between_top_level_packages() -> None:
    graph = package_graph()
    assert {"engine", "hosts", "config"} <= set(graph)  # the walk found the packages
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
