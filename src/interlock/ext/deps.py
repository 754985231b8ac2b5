"""What an extension depends on: other extensions, Python packages, Interlock.

In ``extension.toml``:

    requires = ["git-status>=1.2"]      # other extensions, with PEP 440 versions
    packages = ["humanize>=4"]          # Python packages (``interlock ext install`` gets them)
    interlock = ">=0.1"                 # the Interlock versions it works with

Load order follows ``requires`` (:func:`load_order`): an extension loads after
what it requires, otherwise in discovery order. A requirement that is missing,
of the wrong version, part of a cycle, or that failed to load fails the
extension closed (its guards stand in), and so everything that requires it,
while the rest load.

Python packages: extensions run in Interlock's own process, so they share
one interpreter and one ``sys.modules``: a venv per extension cannot isolate
them. ``ext install`` puts each extension's packages in its own folder,
``$INTERLOCK_HOME/extensions/.packages/<name>/`` (``pip install --target``),
never in Interlock's environment, and refuses a requirement that disagrees
with a package Interlock's environment or another extension already has
(:func:`conflicts`). At load the folder goes at the END of ``sys.path``, so
nothing an extension installs can replace a module Interlock itself imports.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import Distribution, PackageNotFoundError, distribution, distributions
from pathlib import Path
from typing import Any

from interlock.engine.errors import ConfigError

PACKAGES_DIR = ".packages"
"""Under the user's extensions folder; a dot folder is never taken for an extension."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """``name`` plus a PEP 440 specifier ("" for any version)."""

    name: str
    specifier: str = ""
    text: str = ""

    def allows(self, version: str) -> bool:
        if not self.specifier:
            return True
        from packaging.specifiers import SpecifierSet
        from packaging.version import InvalidVersion

        try:
            return SpecifierSet(self.specifier).contains(version, prereleases=True)
        except InvalidVersion:
            return False


def parse_requirement(text: Any, *, file: str, field: str) -> Requirement:
    """One ``name<spec>`` line; ConfigError naming the file, the field and the fix."""
    from packaging.requirements import InvalidRequirement
    from packaging.requirements import Requirement as PkgRequirement

    if not isinstance(text, str):
        raise ConfigError(f"{text!r} is not a requirement string", file=file, field=field,
                          fix='write e.g. "other-ext>=1.2"')
    try:
        req = PkgRequirement(text)
    except InvalidRequirement as exc:
        raise ConfigError(f"{text!r} is not a valid requirement: {exc}", file=file,
                          field=field, fix='write e.g. "other-ext>=1.2"') from None
    return Requirement(req.name, str(req.specifier), text)


def parse_specifier(text: Any, *, file: str, field: str) -> str:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    if not isinstance(text, str):
        raise ConfigError(f"{text!r} is not a version specifier", file=file, field=field,
                          fix='write e.g. interlock = ">=0.1"')
    try:
        return str(SpecifierSet(text))
    except InvalidSpecifier:
        raise ConfigError(f"{text!r} is not a version specifier", file=file, field=field,
                          fix='write e.g. interlock = ">=0.1"') from None


def interlock_problem(spec: str) -> str | None:
    """Why this Interlock cannot run an extension that wants ``spec``, or None."""
    if not spec:
        return None
    from interlock import __version__

    if Requirement("interlock", spec).allows(__version__):
        return None
    return (f"needs Interlock {spec}, this is {__version__}; upgrade Interlock or install "
            "a version of the extension made for this one")


# -- load order -------------------------------------------------------------------------
def load_order(names: Sequence[str], requires: Mapping[str, Sequence[Requirement]],
               versions: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """(names in load order, {name: why it cannot load}) from the ``requires`` of each.

    Stable: with no requirements between them, names keep their given order.
    A name that cannot load takes down everything that requires it.
    """
    failed: dict[str, str] = {}
    for name in names:
        for req in requires.get(name, ()):
            if req.name not in versions:
                failed[name] = f"requires {req.text!r}, which is not installed"
                break
            if not req.allows(versions[req.name]):
                failed[name] = (f"requires {req.text!r}, but {req.name!r} is version "
                                f"{versions[req.name] or 'unknown'}")
                break
    for cycle in _cycles(names, requires):
        path = " -> ".join([*cycle, cycle[0]])
        for name in cycle:
            failed.setdefault(name, f"dependency cycle: {path}")
    ordered: list[str] = []
    pending = list(names)
    while pending:
        ready = next((n for n in pending
                      if not any(r.name in pending and r.name != n
                                 for r in requires.get(n, ()))), None)
        if ready is None:  # only cycles and what waits on them are left
            ordered.extend(pending)
            break
        ordered.append(ready)
        pending.remove(ready)
    changed = True
    while changed:  # what requires a failed extension fails too
        changed = False
        for name in ordered:
            bad = None if name in failed else next(
                (r.name for r in requires.get(name, ()) if r.name in failed), None)
            if bad is not None:
                failed[name] = f"requires {bad!r}, which did not load: {failed[bad]}"
                changed = True
    return ordered, failed


def _cycles(names: Sequence[str], requires: Mapping[str, Sequence[Requirement]]
            ) -> list[list[str]]:
    known = set(names)
    order = list(names).index
    graph = {n: [r.name for r in requires.get(n, ()) if r.name in known] for n in names}
    return [sorted(group, key=order) for group in strongly_connected(graph)]


def strongly_connected(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The cycles of ``graph``: each group of nodes that reach one another (more
    than one node, or one that names itself), found by Tarjan's algorithm in the
    graph's own order. Every node's successors must be keys of ``graph``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1 or node in graph[node]:
                found.append(group)

    for node in graph:
        if node not in index:
            visit(node)
    return found


# -- Python packages ------------------------------------------------------------------------
def packages_dir(home: Path, name: str) -> Path:
    return home / "extensions" / PACKAGES_DIR / name


def _found(req: Requirement, paths: Iterable[Path]) -> Distribution | None:
    for dist in distributions(path=[str(p) for p in paths], name=req.name):
        return dist
    return None


def missing_packages(home: Path, name: str, packages: Sequence[Requirement]) -> list[str]:
    """Requirements neither Interlock's environment nor the extension's folder meets."""
    folder = packages_dir(home, name)
    out = []
    for req in packages:
        dist = _found(req, [folder]) if folder.is_dir() else None
        if dist is None:
            try:
                dist = distribution(req.name)
            except PackageNotFoundError:
                dist = None
        if dist is None or not req.allows(dist.version):
            out.append(req.text)
    return out


def activate_packages(home: Path, name: str) -> None:
    """Put the extension's package folder at the end of ``sys.path`` (once)."""
    folder = str(packages_dir(home, name))
    if Path(folder).is_dir() and folder not in sys.path:
        sys.path.append(folder)


def conflicts(home: Path, name: str, packages: Sequence[Requirement]) -> list[str]:
    """Requirements that disagree with what this process would import instead."""
    out = []
    others_root = home / "extensions" / PACKAGES_DIR
    # Interlock's environment is sys.path without the extensions' folders (a
    # long-lived process may have appended some).
    own = [Path(p) for p in sys.path if not Path(p).is_relative_to(others_root)]
    for req in packages:
        dist = _found(req, own)
        owner = "Interlock's environment" if dist is not None else ""
        if dist is None and others_root.is_dir():
            for other in sorted(others_root.iterdir()):
                if other.name == name or not other.is_dir():
                    continue
                dist = _found(req, [other])
                if dist is not None:
                    owner = f"extension {other.name!r}"
                    break
        if dist is not None and not req.allows(dist.version):
            out.append(f"{req.text!r} conflicts with {req.name} {dist.version} from {owner} "
                       "(one process imports one version)")
    return out
