"""Where extensions are found, without importing any of them.

Cheap on purpose: the in-process bridge asks :func:`present` on every call
and imports the extension machinery (:mod:`interlock.ext.loader`, the
agent's built-in names) only when it says yes.
"""

from __future__ import annotations

import os
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
    if not _may_declare(ENTRY_POINT_GROUP):
        return False
    from importlib.metadata import entry_points as find

    return bool(find(group=ENTRY_POINT_GROUP))


def _may_declare(group: str) -> bool:
    """False when no installed distribution declares an entry point in ``group``.

    What ``importlib.metadata`` would find, read without importing it (it takes
    longer to import than the in-process bridge has to answer; docs/one-policy.md,
    Speed): the ``entry_points.txt`` of every ``*.dist-info`` and ``*.egg-info``
    folder on ``sys.path``. Anything it cannot read that way (a zip on the path,
    a finder of its own that lists distributions, an unreadable folder) answers
    True, and ``importlib.metadata`` decides.
    """
    import sys

    if any(getattr(f, "find_distributions", None) is not None for f in sys.meta_path
           if f.__module__ != "_frozen_importlib_external"):
        return True
    header = f"[{group}]"
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as found:
                names = [d.name for d in found
                         if d.name.lower().endswith((".dist-info", ".egg-info"))]
        except NotADirectoryError:
            return True  # a zip or egg: importlib.metadata reads those
        except FileNotFoundError:
            continue
        except OSError:
            return True
        for name in names:
            try:
                with open(os.path.join(entry or ".", name, "entry_points.txt"),
                          encoding="utf-8") as f:
                    if any(line.strip() == header for line in f):
                        return True
            except (FileNotFoundError, NotADirectoryError):
                continue
            except (OSError, UnicodeDecodeError):
                return True
    return False
