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
import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from interlock.config.build import hook_cwd
from interlock.config.model import HookKind
from interlock.config.pins import which
from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger

if TYPE_CHECKING:
    from interlock.config.registry import HookEntry
    from interlock.config.trust import TrustStore

_RELATIVE = re.compile(r"^\.\.?/")

log = logger("interlock.registry")


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
                       and not e.approved
                       and not trust.revoked(e.key, e.digest)],  # docs/fleet.md
                      project_root, "--accept-hooks")
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
        cwd = hook_cwd(decl, project_root)
        base = "the hook's cwd" if d.cwd is not None else "the project root"
        for i, path, declared in _named_paths(d.command, decl.folder, cwd):
            if not path.exists():
                where = ("`./` paths start from the folder of the file declaring the hook"
                         if declared else f"relative paths start from {base}, {cwd}; write "
                         "./x for a path from the folder of the file declaring the hook")
                found.append(ConfigError(
                    f"hook {d.name!r}: {path} does not exist", field="command",
                    fix=f"create the script or correct its path ({where})",
                    file=file, line=line))
            elif i == 0 and not os.access(path, os.X_OK):
                found.append(ConfigError(
                    f"hook {d.name!r}: {path} is not executable", field="command",
                    fix=f"chmod +x {shlex.quote(str(path))}", file=file, line=line))
        program = _missing_program(d.command, d.env.get("PATH"), cwd)
        if program is not None:
            found.append(ConfigError(
                f"hook {d.name!r}: {program} is not a file and not on PATH", field="command",
                fix=f"install {program}, or give its path (relative paths start from {base})",
                file=file, line=line))
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


_INTERPRETER = re.compile(r"^(python|pypy|bash|sh|dash|zsh|ksh|node|nodejs|ruby|perl|php|lua"
                          r"|deno|bun|tsx|ts-node)[0-9.]*$")
"""Programs whose first argument that is not an option is the script they run."""
_SHELLS = re.compile(r"^(bash|sh|dash|zsh|ksh)$")
_INLINE = {"-c", "-m", "-e", "--eval", "-p", "--print", "-", "-s"}
"""Options after which an interpreter runs no script file (code, a module, stdin)."""
_VALUED = {"-X", "-W", "-r", "-I", "-o", "-O", "--require", "--import", "--loader",
           "--experimental-loader", "--config", "-C"}
"""Options whose value is the next word, not the script."""
_SHELL_WORDS = {":", ".", "[", "[[", "{", "(", "!", "alias", "break", "builtin", "case", "cd",
                "command", "continue", "declare", "echo", "eval", "exec", "exit", "export",
                "false", "for", "function", "if", "kill", "let", "local", "printf", "pwd",
                "read", "readonly", "return", "set", "shift", "source", "test", "time", "trap",
                "true", "type", "ulimit", "umask", "unset", "until", "wait", "while"}
"""A shell line's first words that name no program file."""


def _words(command: str | list[str]) -> list[str]:
    if not isinstance(command, str):
        return list(command)
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    # A shell line with operators is a script in itself: only its first word counts.
    if any(w in {"|", "&&", "||", ";"} or "\n" in w for w in words) or "\n" in command:
        words = words[:1]
    return words


def _named_paths(command: str | list[str], folder: Path,
                 cwd: Path) -> list[tuple[int, Path, bool]]:
    """The files a command names as paths, with whether each is a ``./x`` word
    (from the declaring folder, as config/refs.py resolves it): its first word
    when it has a slash, later ``./x`` words, absolute ones that look like scripts,
    and the script an interpreter runs (``python3 hooks/x.py``: from ``cwd``,
    where the executor runs it)."""
    words = _words(command)
    out: list[tuple[int, Path, bool]] = []
    for i, word in enumerate(words):
        if "$" in word or "`" in word:
            continue  # the shell expands it; nothing to check here
        if _RELATIVE.match(word):
            # A later ./x word that is not in the folder is left for the shell, from cwd.
            there = (folder / word).resolve()
            out.append((i, there if i == 0 or there.exists() or not (cwd / word).exists()
                        else (cwd / word).resolve(), True))
        elif os.path.isabs(word) and (i == 0 or Path(word).suffix in {".py", ".sh"}):
            out.append((i, Path(word), False))
        elif i == 0 and "/" in word and not word.startswith("~"):
            out.append((i, (cwd / word).resolve(), False))
    script = _script(words)
    if script is not None and not _RELATIVE.match(words[script]) \
            and not os.path.isabs(words[script]):
        out.append((script, (cwd / words[script]).resolve(), False))
    return out


def _script(words: list[str]) -> int | None:
    """Which word is the script an interpreter (the first word) runs, if it names one."""
    if not words or not _INTERPRETER.match(os.path.basename(words[0])):
        return None
    shell = _SHELLS.match(os.path.basename(words[0])) is not None
    skip = False
    for i, word in enumerate(words[1:], start=1):
        if skip or (word in {"run", "x"} and words[0].endswith(("deno", "bun"))):
            skip = False
            continue
        if word in _INLINE or (shell and re.fullmatch(r"-[a-z]*[cs][a-z]*", word)):
            return None
        if word.startswith("-"):
            skip = word in _VALUED
            continue
        if "://" in word or "$" in word or word.startswith("~"):
            return None
        # A bare word may be a package script (`bun run lint`) or found by the
        # interpreter itself: only path-like words are checked.
        return i if "/" in word or Path(word).suffix else None
    return None


def _missing_program(command: str | list[str], path: str | None, cwd: Path) -> str | None:
    """The first word, when it is a bare program name found nowhere on PATH (the
    hook's own ``env.PATH``, else this process's, as the executor passes it),
    looked up as the hook's process in ``cwd`` would (:func:`pins.which`)."""
    words = _words(command)
    if not words:
        return None
    word = words[0]
    if "/" in word or word.startswith("~") or any(c in word for c in "$`=(){}") or (
            isinstance(command, str) and word in _SHELL_WORDS):
        return None
    found = which(word, path if path is not None else os.environ.get("PATH", os.defpath), cwd)
    return None if found is not None else word


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
