"""Pinning the project modules an in-process Python handler imports.

What a handler imports is known only once it is loaded, and loading runs code,
so it happens only after approval. The first load after an approval records
each project module it imported (path and sha256, in the state dir's
``imports.json``, an empty record when there are none); every later load, in
any process, checks them *before* importing, so a helper module edited since is
never imported as approved, and imports nothing else from the project
(:func:`interlock.config.source.only`): a file planted to stand in for a
recorded module is refused before it runs. An
operator's `interlock hooks approve` (or ``--accept-hooks``) records them
afresh. Within a running host the modules are pinned like every other file and
checked before each call (:mod:`interlock.config.drift`).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from interlock.config.drift import read
from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger

if TYPE_CHECKING:
    from interlock.config.revision import HookEntry
    from interlock.config.trust import TrustStore

log = logger("interlock.registry")


def changed_import(trust: TrustStore, e: HookEntry) -> Path | None:
    """A module this approval's first load imported whose content changed since."""
    if not e.needs_approval:
        return None
    recorded = trust.imports(e.key, e.digest)
    for file, sha in sorted((recorded or {}).items()):
        if read(Path(file)).sha != sha:
            return Path(file)
    return None


def import_problem(trust: TrustStore, e: HookEntry, *, accept: bool) -> str | None:
    """Why an approved handler must not be imported: a recorded module changed.

    The entry turns unapproved (so `hooks approve` records its modules afresh);
    with ``accept`` (``--accept-hooks``) it is approved as it is now instead.
    """
    changed = changed_import(trust, e)
    if changed is None:
        return None
    if accept:
        log.warning("approving %s as it is now (%s changed) because of --accept-hooks",
                    e.qualified_name, changed)
        trust.set_imports(e.key, e.digest, None)
        return None
    e.approved = False
    return (f"hook {e.qualified_name} imports {changed}, changed since it was approved; "
            f"run `interlock hooks approve {e.qualified_name}`")


def pin_imports(trust: TrustStore, e: HookEntry, files: list[Path], *,
                accept: bool = False) -> None:
    """Pin the modules the handler imported: check them before each call, record them
    (for a hook that needs approval) when this approval has not yet.

    A project module that this approval's record lacks, yet the load imported
    anyway (past the import gate), is refused rather than added to the record:
    ConfigError, unless ``accept`` (``--accept-hooks``) approves it as it is."""
    reads = [read(p) for p in files if p not in e.files]
    e.files += [r.path for r in reads]
    if e.pins is not None:
        e.pins.extend(reads)
    if not e.needs_approval:
        return
    recorded = trust.imports(e.key, e.digest)
    fresh = {str(r.path): r.sha for r in reads if str(r.path) not in (recorded or {})}
    if fresh and recorded is not None and not accept:
        raise ConfigError(f"hook {e.qualified_name} imported {min(fresh)}, which it did not "
                          "import when it was approved",
                          fix=f"look at it, then run `interlock hooks approve "
                              f"{e.qualified_name}`")
    if fresh or recorded is None:  # an empty record counts: it imported nothing
        trust.set_imports(e.key, e.digest, {**(recorded or {}), **fresh})
