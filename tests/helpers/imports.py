"""What a module imports when it is imported (for the tests of what loading costs)."""

from __future__ import annotations

import ast
from pathlib import Path


def module_level_imports(file: str) -> list[str]:
    """The modules ``file`` imports when it is imported: its top-level statements,
    and the branches of top-level ``if``/``try`` blocks other than ``TYPE_CHECKING``."""

    def walk(body: list[ast.stmt]) -> list[str]:
        names: list[str] = []
        for node in body:
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.append(node.module)
            elif isinstance(node, ast.If):
                test = node.test
                name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
                if name.lstrip("_") != "TYPE_CHECKING":
                    names += walk(node.body)
                names += walk(node.orelse)
            elif isinstance(node, ast.Try):
                names += walk(node.body)
                for handler in node.handlers:
                    names += walk(handler.body)
                names += walk(node.orelse) + walk(node.finalbody)
        return names

    return walk(ast.parse(Path(file).read_text(), file).body)
