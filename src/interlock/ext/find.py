"""Where extensions are found, without importing any of them.

Cheap on purpose: the in-process bridge asks :func:`present` on every call
and imports the extension machinery (:mod:`interlock.ext.loader`, the
agent's built-in names) only when it says yes.
"""

from __future__ import annotations

from pathlib import Path

from interlock.store.paths import PROJECT_DIRNAME, user_dir

ENTRY_POINT_GROUP = "interlock.extensions"


def user_folder(home: Path | None = None) -> Path:
    """``$INTERLOCK_HOME/extensions`` (or ``<home>/extensions``)."""
    return (home if home is not None else user_dir()) / "extensions"


def project_folder(project: Path) -> Path:
    """``<project>/.interlock/extensions``."""
    return project / PROJECT_DIRNAME / "extensions"


def folders(root: Path) -> list[Path]:
    """The extension folders under ``root``, sorted; none when it is not a folder.

    Raises OSError when ``root`` cannot be listed.
    """
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def present(project: Path | None, home: Path | None = None, *,
            entry_points: bool = True) -> bool:
    """Whether loading the extensions would find anything, loadable or not (a
    broken or unapproved one still stands in for the events it guards)."""
    roots = [user_folder(home), *([project_folder(project)] if project is not None else [])]
    try:
        if any(folders(root) for root in roots):
            return True
    except OSError:
        return True  # loading reports it
    if not entry_points:
        return False
    from importlib.metadata import entry_points as find

    return bool(find(group=ENTRY_POINT_GROUP))
