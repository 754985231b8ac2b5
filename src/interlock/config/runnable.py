"""Can a hook run at all? The static half of `hooks doctor`, without running anything.

`hooks validate` reports these problems with the declaring file and line, the
field and the fix, and every approval (`hooks approve`, --accept-hooks, the
console) refuses a hook that has one (docs/configuration.md, Validation and
reloads): approving what cannot run only turns it into a failure later.

Nothing here imports or executes the hook's code: a handler is only compiled,
so an unapproved project handler stays unrun.
"""

from __future__ import annotations

import ast
import logging
import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from interlock.config.model import HookKind
from interlock.engine.errors import ConfigError

if TYPE_CHECKING:
    from interlock.config.registry import HookEntry
    from interlock.config.trust import TrustStore

_RELATIVE = re.compile(r"^\.\.?/")

log = logging.getLogger("interlock.registry")


def approvable(entries: list[HookEntry], project_root: Path, by: str, *,
               named: bool = False) -> list[HookEntry]:
    """The entries that can run, for an approval by ``by``. Every approval path
    (the CLI, --accept-hooks, the console) goes through here: a hook that cannot
    run is never approved, and why is logged. With ``named`` (the operator named
    the hooks) the first refusal is raised instead, as a ConfigError."""
    out = []
    for e in entries:
        found = problems(e, project_root)
        if not found:
            out.append(e)
            continue
        if named:
            first = found[0]
            raise ConfigError(f"{e.qualified_name} cannot run, so it is not approved: "
                              f"{first.message}", file=first.file, line=first.line,
                              field=first.field, fix=first.fix)
        for problem in found:
            log.warning("not approving %s (%s): %s", e.qualified_name, by, problem.render())
    return out


def accept(entries: list[HookEntry], project_root: Path, trust: TrustStore) -> None:
    """--accept-hooks / INTERLOCK_ACCEPT_HOOKS: approve every enabled, unshadowed
    hook waiting, except those that cannot run (logged, as every refusal)."""
    todo = approvable([e for e in entries if e.enabled and e.shadowed_by is None
                       and not e.approved], project_root, "--accept-hooks")
    if todo:
        log.warning("approving %d hook(s) because of --accept-hooks / "
                    "INTERLOCK_ACCEPT_HOOKS: %s", len(todo),
                    ", ".join(e.qualified_name for e in todo))
        trust.approve([(e.key, e.digest, e.qualified_name) for e in todo], by="accept-hooks")
        for e in todo:
            e.approved = True


def problems(entry: HookEntry, project_root: Path) -> list[ConfigError]:
    """What stops ``entry`` from running: missing or non-executable scripts, a
    Python handler that is missing, does not compile or defines no ``handle``, and
    one that failed to load (once approved, its import ran)."""
    decl = entry.declared
    d = entry.definition
    file, line = str(decl.file), decl.line
    found: list[ConfigError] = []
    kind = d.effective_kind
    if d.command is not None and kind in (HookKind.COMMAND, HookKind.WORKER, HookKind.MCP):
        for i, path in _named_paths(d.command, decl.folder):
            if not path.exists():
                found.append(ConfigError(
                    f"hook {d.name!r}: {path} does not exist", field="command",
                    fix="create the script or correct its path (relative paths start "
                        "from the folder of the file declaring the hook)", file=file, line=line))
            elif i == 0 and not os.access(path, os.X_OK):
                found.append(ConfigError(
                    f"hook {d.name!r}: {path} is not executable", field="command",
                    fix=f"chmod +x {shlex.quote(str(path))}", file=file, line=line))
    if kind is HookKind.PYTHON and d.handler is not None:
        path = (decl.folder / d.handler).resolve()
        if not path.is_file():
            found.append(ConfigError(f"hook {d.name!r}: handler file {path} does not exist",
                                     field="handler", fix="create it, defining handle(event)",
                                     file=file, line=line))
        else:
            error = _compile_error(path)
            if error is not None:
                found.append(error)
    if entry.load_error is not None:
        found.append(entry.load_error)
    return found


def _named_paths(command: str | list[str], folder: Path) -> list[tuple[int, Path]]:
    """The files a command names as paths: its first word, and later words written
    ``./x`` or ``../x`` (which resolve from the declaring folder) or absolute ones
    that look like scripts."""
    if isinstance(command, str):
        try:
            words = shlex.split(command)
        except ValueError:
            return []
        # A shell line with operators is a script in itself: only its first word counts.
        if any(w in {"|", "&&", "||", ";"} or "\n" in w for w in words) or "\n" in command:
            words = words[:1]
    else:
        words = list(command)
    out: list[tuple[int, Path]] = []
    for i, word in enumerate(words):
        if _RELATIVE.match(word):
            out.append((i, (folder / word).resolve()))
        elif os.path.isabs(word) and (i == 0 or Path(word).suffix in {".py", ".sh"}):
            out.append((i, Path(word)))
    return out


def _compile_error(path: Path) -> ConfigError | None:
    try:
        source = path.read_bytes()
    except OSError as exc:
        return ConfigError(f"cannot read the handler: {exc.strerror}", file=str(path),
                           field="handler", fix="make the file readable")
    try:
        tree = ast.parse(source, str(path))
        compile(tree, str(path), "exec", dont_inherit=True)
    except SyntaxError as exc:
        return ConfigError(f"the handler does not compile: {exc.msg}", file=str(path),
                           line=exc.lineno, field="handler", fix="fix the syntax error")
    except ValueError as exc:  # null bytes
        return ConfigError(f"the handler does not compile: {exc}", file=str(path),
                           field="handler", fix="fix the file")
    names = _module_names(tree.body)
    if "handle" not in names and "*" not in names:
        return ConfigError(f"{path.name} defines no handle(event) function", file=str(path),
                           field="handler", fix="add `def handle(event): ...` returning a "
                                                "Decision or None")
    return None


def _module_names(body: list[ast.stmt]) -> set[str]:
    """The names a module's top level may bind (``*`` for a star import): what
    defines ``handle``, without running the module. Branches count (a ``try`` or
    ``if`` that defines it either way); function and class bodies do not."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        else:  # if, try, with, for, while, match: what their blocks bind
            blocks = [getattr(node, f, []) for f in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(node, "handlers", [])]
            blocks += [c.body for c in getattr(node, "cases", [])]
            for block in blocks:
                names |= _module_names(block)
    return names
