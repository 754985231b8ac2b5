"""The helpers' module names before tests/helpers/ existed, kept importable.

Tests written against ``tests/_cfg.py`` and its siblings (``from _cfg import
World``) keep working: tests/conftest.py installs this finder, which hands back
the helpers' module itself under the old name. New tests import ``helpers.cfg``.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

OLD_HELPER_NAMES = {
    "_cfg": "helpers.cfg", "_guard_table": "helpers.guard_table", "_http": "helpers.http",
    "_pgserver": "helpers.pgserver", "_procs": "helpers.procs", "_serve": "helpers.serve",
    "_stores": "helpers.stores", "_tmux": "helpers.tmux", "_wheels": "helpers.wheels",
    "agent_helpers": "helpers.agent", "fake_openai": "helpers.fake_openai",
}
"""The helpers' names before tests/helpers/: ``from _cfg import World`` still works for
tests written against them (new tests import ``helpers.cfg``)."""


class _OldHelperNames(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name not in OLD_HELPER_NAMES:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(OLD_HELPER_NAMES[spec.name])
        self.spec = module.__spec__  # the import system sets the alias's spec on it
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self.spec




def install() -> None:
    if not any(isinstance(f, _OldHelperNames) for f in sys.meta_path):
        sys.meta_path.append(_OldHelperNames())
