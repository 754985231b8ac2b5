"""What an approval pins: every file a hook runs, whatever runs it.

An approval is pinned to a digest over the hook's definition and these files
(docs/configuration.md, Trust):

- every word of the command that names an existing file, resolved from where
  the hook runs (its ``cwd``, or a ``cd``/``pushd``/``env -C`` earlier in the
  line), in any position and whatever the interpreter:
  ``python3 hooks/x.py``, ``bash -c 'python3 hooks/x.py'``, ``node x.js``,
  ``--config=rules.toml``;
- for a Python script, the script's folder tree inside the project (what it
  can import: its files, and each folder's list of modules, so a module added
  beside the script is a change too), and for ``python -m pkg`` the package;
- the program itself when it lives inside the project (a venv in the repo,
  named by path or found on ``PATH``), with the venv's ``pyvenv.cfg`` and the
  ``.pth`` and ``*customize.py`` files its interpreter runs at start-up;
- a hook folder, following symlinks (their targets are pinned too).

Files the command only writes (the target of a ``>`` or ``>>`` redirection)
are not pinned, so a hook that appends to its own log stays approved.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
from collections.abc import Iterable
from pathlib import Path

from interlock.config.build import hook_cwd
from interlock.config.drift import (
    IMPORTABLE,
    PACKAGES_ONLY,
    PYTHON_PROGRAM,
    SKIP_DIRS,
    is_package,
    real_walk,
)
from interlock.config.sources import Declared

MAX_FILES = 2000
"""At most this many files from one folder tree (the rest is not pinned)."""
_MAX_DEPTH = 3
"""How deep ``sh -c '...'`` words are read for more commands."""

_VARIABLE = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"}
_WRITES = {">", ">>", ">|", "&>", "&>>", "<>"}


def _words(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: the shell refuses it anyway
        return line.split()


def _commands(words: list[str], writes: set[str]) -> list[list[str]]:
    """Split shell tokens into simple commands; redirection targets go to ``writes``."""
    out: list[list[str]] = [[]]
    pending: str | None = None  # a redirection whose target is the next word
    for word in words:
        if pending is not None:
            if pending in _WRITES:
                writes.add(word)
            elif pending == "<":
                out[-1].append(word)  # read: pinned like any other word
            pending = None  # (a heredoc's tag, a here-string: not a file)
        elif word in _WRITES or word in ("<", "<<", "<<-", "<<<"):
            pending = word
        elif set(word) <= set(";&|()<>\n"):
            out.append([])
        else:
            out[-1].append(word)
    return [c for c in out if c]


def which(word: str, path_env: str, cwd: Path) -> str | None:
    """The program ``word`` names, as a process running in ``cwd`` with ``PATH`` set
    to ``path_env`` finds it: a relative PATH entry is looked up from its cwd."""
    import shutil  # command hooks only (docs/one-policy.md, Speed)

    search = os.pathsep.join(e if os.path.isabs(e) else str(cwd / e)
                             for e in path_env.split(os.pathsep))
    return shutil.which(word, path=search)


class Pinner:
    """Collects the files one hook's command runs (see the module docstring)."""

    def __init__(self, cwd: Path, root: Path, path_env: str | None = None,
                 pythonpath: str | None = None, variables: dict[str, str] | None = None
                 ) -> None:
        self.cwd = cwd
        self.variables = variables or {}
        """What ``$NAME`` and ``${NAME}`` stand for in the hook's process (its project
        variables, its ``env``): a word naming a file through one names that file."""
        self.root = root.resolve()
        self.path_env = path_env if path_env is not None else os.environ.get("PATH", os.defpath)
        self.pythonpath = pythonpath
        """The hook's own ``PYTHONPATH`` (its ``env``): folders its Python imports from."""
        self.files: list[Path] = []
        self.folders: list[Path] = []
        """Folders whose list of modules is pinned (in the digest and each call's
        check, not in ``files``: a hook's log may still be written beside it)."""
        self.writes: set[Path] = set()
        self._seen: set[Path] = set()

    # -- adding -------------------------------------------------------------------
    def _written(self, path: Path) -> bool:
        """Only written by the command (a log): not pinned. Never a module, though: a
        ``2>> helpers.py`` must not unpin what the script imports."""
        return path in self.writes and not path.name.endswith(IMPORTABLE)

    def add(self, path: Path) -> None:
        path = Path(os.path.normpath(path))
        if path in self._seen or self._written(path):
            return
        self._seen.add(path)
        self.files.append(path)
        if path.is_symlink():  # the link (its target is in the digest) and, in the
            target = path.resolve()  # project, the file it points at
            if target not in self._seen and self._inside(target):
                self._seen.add(target)
                self.files.append(target)

    def tree(self, folder: Path) -> None:
        """A Python tree: its files, and its folders' lists of modules (a module
        added to one is a change)."""
        folders: list[Path] = []
        for path in walk(folder, folders=folders):
            self.add(path)
        self.folders += [f for f in folders if f not in self.folders]

    def root_modules(self, script: Path) -> None:
        """What a script at the project root imports from: the root's own modules, its
        packages (folders with an ``__init__``), and any folder the script's modules
        import by name (a namespace package); not every file of the repository. The
        root's listing is pinned by its modules and packages only (a package planted
        there later shadows what the script imports), not its other folders, which
        come and go as the project grows (``drift.PACKAGES_ONLY``)."""
        PACKAGES_ONLY.add(str(self.root))
        if self.root not in self.folders:
            self.folders.append(self.root)
        try:
            entries = sorted(os.scandir(self.root), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            path = Path(entry.path)
            if entry.is_file() and entry.name.endswith(IMPORTABLE):
                self.add(path)
            elif entry.is_dir() and entry.name not in SKIP_DIRS and is_package(entry.path):
                self.tree(path)  # a package, also one of bytecode alone
        for name in sorted(_imported_names([p for p in self.files if p.suffix == ".py"
                                            and p.parent == self.root] or [script])):
            folder = self.root / name
            if folder.is_dir() and name not in SKIP_DIRS and folder not in self.folders:
                self.tree(folder)

    def _inside(self, path: Path) -> bool:
        try:
            return path.resolve().is_relative_to(self.root)
        except (OSError, ValueError, RuntimeError):
            return False

    def _file(self, word: str) -> Path | None:
        if not word or (word.startswith("-") and "=" not in word):
            return None
        path = Path(word) if os.path.isabs(word) else self.cwd / word
        try:
            return path if path.is_file() else None
        except (OSError, ValueError):  # too long, a NUL byte: not a file
            return None

    def env(self, env: dict[str, str]) -> None:
        """Files the hook's own ``env`` names (``BASH_ENV``, ``LD_PRELOAD``,
        ``NODE_OPTIONS=--require x.js``): the process runs them as well."""
        for value in env.values():
            for word in re.split(r"[\s" + re.escape(os.pathsep) + r"]+", self._expand(value)):
                for part in (word, word.partition("=")[2]):
                    path = self._file(part)
                    if path is not None:
                        self.add(path)

    # -- reading a command ------------------------------------------------------------
    def command(self, command: str | list[str]) -> None:
        if isinstance(command, list):
            self._argv(list(command), 0)
        else:
            self._shell(command, 0)
        self.files = [f for f in self.files if not self._written(Path(os.path.normpath(f)))]

    def _shell(self, line: str, depth: int) -> None:
        writes: set[str] = set()
        commands = _commands(_words(line), writes)
        for word in map(self._expand, writes):
            self.writes.add(Path(os.path.normpath(
                word if os.path.isabs(word) else self.cwd / word)))
        start = self.cwd
        try:
            for argv in commands:
                self._argv(argv, depth)
                if start != self.cwd:
                    # After a cd, also from where the line started: a cd inside
                    # `( ... )` does not last, and over-pinning only costs a re-approval.
                    here, self.cwd = self.cwd, start
                    self._argv(argv, depth)
                    self.cwd = here
                self._cd(argv)
        finally:
            self.cwd = start

    def _cd(self, argv: list[str]) -> None:
        """``cd DIR`` (or ``pushd``): the commands after it run from there."""
        if len(argv) >= 2 and argv[0] in ("cd", "pushd") and not argv[1].startswith("-"):
            folder = Path(os.path.normpath(argv[1] if os.path.isabs(argv[1])
                                           else self.cwd / argv[1]))
            if folder.is_dir():
                self.cwd = folder

    def _expand(self, word: str) -> str:
        return _VARIABLE.sub(lambda m: self.variables.get(m[1] or m[2], m[0]), word)

    def _argv(self, argv: list[str], depth: int) -> None:
        argv = [self._expand(w) if "$" in w else w for w in argv]
        while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
            argv = argv[1:]  # VAR=value before the program
        if not argv:
            return
        self._program(argv[0], depth)
        name = os.path.basename(argv[0])
        for i, word in enumerate(argv[1:], start=1):
            for part in (word, word.partition("=")[2]):
                path = self._file(part)
                if path is not None:
                    self.add(path)
                    if path.suffix == ".py":  # whatever runs it (uv run, poetry run ...)
                        self._script(path)
            if name in _SHELLS and word == "-c" and i + 1 < len(argv) \
                    and depth < _MAX_DEPTH:
                self._shell(argv[i + 1], depth + 1)
        if PYTHON_PROGRAM.match(name):
            self._python(argv[1:])
        elif name in ("env", "exec", "nice", "nohup", "command", "time", "timeout", "xargs"):
            rest = argv[1:]
            folder = None
            while rest and rest[0].startswith("-"):  # the wrapper's own options
                if name == "env" and rest[0] in ("-C", "--chdir") and len(rest) > 1:
                    folder, rest = rest[1], rest[1:]  # env -C DIR: runs from there
                elif name == "env" and rest[0].startswith(("--chdir=", "-C")):
                    folder = rest[0].partition("=")[2] if "=" in rest[0] else rest[0][2:]
                rest = rest[1:]
            if name == "timeout" and rest:
                rest = rest[1:]
            if rest and folder is not None:
                start = self.cwd
                self._cd(["cd", folder])
                try:
                    self._argv(rest, depth)
                finally:
                    self.cwd = start
            elif rest:
                self._argv(rest, depth)

    def _program(self, word: str, depth: int = 0, *, only_project: bool = False) -> None:
        if "/" in word:
            path = Path(word) if os.path.isabs(word) else self.cwd / word
            if only_project and not self._inside(path):
                return  # a `#!/bin/sh` line: the system's, not the project's to swap
        else:
            found = which(word, self.path_env, self.cwd)
            if found is None:
                return
            path = Path(found)
            if not os.path.isabs(found):
                path = self.cwd / found
            if not self._inside(path) and not self._inside(path.parent):
                return  # a system program: not the project's to swap
        try:
            if not path.is_file():
                return
        except (OSError, ValueError):
            return
        self.add(path)
        self._venv(path)
        if self._inside(path) and depth < _MAX_DEPTH:
            self._shebang(path, depth + 1)

    def _shebang(self, script: Path, depth: int) -> None:
        """A script run directly runs its ``#!`` interpreter: pin that the same way
        (``#!/usr/bin/env python3`` included, and the folder a Python script imports)."""
        try:
            with script.open("rb") as fh:
                head = fh.readline(256)
        except OSError:
            return
        if not head.startswith(b"#!"):
            return
        words = head[2:].decode(errors="replace").split()
        if words and os.path.basename(words[0]) == "env":
            words = [w for w in words[1:] if not w.startswith("-")]
        if not words:
            return
        self._program(words[0], depth, only_project=True)
        if PYTHON_PROGRAM.match(os.path.basename(words[0])):
            self._python([str(script)])

    def _venv(self, program: Path) -> None:
        """A venv interpreter also runs its pyvenv.cfg, .pth and *customize.py files."""
        env = Path(os.path.normpath(program)).parent.parent
        cfg = env / "pyvenv.cfg"
        if not cfg.is_file() or not self._inside(env):
            return
        self.add(cfg)
        for site in sorted(env.glob("lib*/python*/site-packages")):
            for path in sorted(site.iterdir()):
                if path.suffix == ".pth" or path.name in ("sitecustomize.py",
                                                          "usercustomize.py"):
                    self.add(path)

    def _python(self, args: list[str]) -> None:
        """The folder a Python script imports from (or, for ``-m``, the folder it
        runs in and the package), and the folders of the hook's ``PYTHONPATH``."""
        for entry in (self.pythonpath or "").split(os.pathsep):
            if entry:
                self._import_folder(Path(entry) if os.path.isabs(entry) else self.cwd / entry)
        i = 0
        while i < len(args):
            word = args[i]
            if word in ("-c",):
                return
            if word == "-m" and i + 1 < len(args):
                self._module(args[i + 1])
                return
            if word.startswith("-"):
                i += 1
                continue
            script = self._file(word)
            if script is None:  # an option's value (-W ignore), or no script at all
                i += 1
                continue
            self._script(script)
            return

    def _script(self, script: Path) -> None:
        """What a Python script imports from: its folder, and its real path's (where
        Python looks: sys.path[0] is the real script's folder)."""
        self._import_folder(script.parent, script)
        real = Path(os.path.realpath(script))
        if real.parent != script.parent:
            self._import_folder(real.parent, real)

    def _import_folder(self, folder: Path, script: Path | None = None) -> None:
        """A folder first on the script's ``sys.path``: the root by its modules and
        packages (``root_modules``), any other project folder as a whole tree."""
        try:
            if not folder.is_dir():
                return
            resolved = folder.resolve()
        except OSError:
            return
        if resolved == self.root:
            self.root_modules(script if script is not None else folder / "__main__.py")
        elif self._inside(folder) and folder not in self.folders:
            self.tree(folder)

    def _module(self, name: str) -> None:
        """``python -m name`` imports it, and everything else, from where it runs."""
        top = name.split(".")[0]
        base = self.cwd
        package = base / top
        if (base / f"{top}.py").is_file():
            self.add(base / f"{top}.py")
        self._import_folder(base, base / f"{top}.py")
        if package.is_dir() and self._inside(package) and package not in self.folders:
            self.tree(package)


def _imported_names(scripts: list[Path]) -> set[str]:
    """The top-level names the ``import`` statements of ``scripts`` name."""
    names: set[str] = set()
    for script in scripts[:200]:
        try:
            tree = ast.parse(script.read_bytes())
        except (OSError, SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def walk(folder: Path, *, only: tuple[str, ...] | None = None, limit: int = MAX_FILES,
         folders: list[Path] | None = None) -> list[Path]:
    """Every file under ``folder``, following symlinked folders (each real folder once);
    the folders read are appended to ``folders``."""
    out: list[Path] = []
    for root, _dirs, names in real_walk(folder, SKIP_DIRS):
        if folders is not None:
            folders.append(Path(root))
        for name in sorted(names):
            # A .pyc outside __pycache__ (pruned above) is a module Python imports
            # without any source: it counts like one.
            if only is not None and not name.endswith(only):
                continue
            out.append(Path(root) / name)
            if len(out) >= limit:
                return out
    return out


def folder_pins(folder: Path) -> list[Path]:
    """A hook folder's files, and the real file behind each one reached through a link."""
    out: list[Path] = []
    seen: set[Path] = set()
    for path in walk(folder):
        real = path.resolve()
        for p in (path, real):
            if p not in seen:
                seen.add(p)
                out.append(p)
    return out


def command_pins(command: str | list[str], *, cwd: Path, root: Path,
                 named: Iterable[Path] = (), path_env: str | None = None,
                 pythonpath: str | None = None,
                 variables: dict[str, str] | None = None,
                 env: dict[str, str] | None = None) -> Pinner:
    """What ``command`` runs when started in ``cwd`` (see the module docstring):
    ``.files`` and ``.folders``.

    ``named``: files already known to be named (``./x`` words), pinned unless
    only written to.
    """
    pinner = Pinner(cwd, root, path_env, pythonpath, variables)
    pinner.command(command)
    pinner.env(env or {})
    for path in named:
        pinner.add(path)
    return pinner


PROJECT_VARIABLES = ("INTERLOCK_PROJECT_DIR", "CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR",
                     "GEMINI_CWD")
"""Every variable an executor or dialect sets to the project root (a test holds this
to the dialects' ``env``: one missing here would leave a script it names unpinned)."""
PLUGIN_VARIABLES = ("CLAUDE_PLUGIN_ROOT", "PLUGIN_ROOT")
"""Every variable a dialect sets to a plugin's (hook folder's) root."""


def hook_variables(decl: Declared, project_root: Path, cwd: Path) -> dict[str, str]:
    """The variables a command hook's process has that can name its files: the
    project root under every dialect's name, its plugin root, ``PWD``, ``HOME``, and
    its own ``env`` (interlock.executors.command, interlock.executors.dialects)."""
    out = dict.fromkeys(PROJECT_VARIABLES, str(project_root))
    if decl.hook_dir is not None:
        out.update(dict.fromkeys(PLUGIN_VARIABLES, str(decl.hook_dir)))
    out["PWD"] = str(cwd)
    if "HOME" in os.environ:
        out["HOME"] = os.environ["HOME"]
    return {**out, **decl.definition.env}


def hook_files(decl: Declared, command: str | list[str] | None, named: list[Path],
               project_root: Path) -> tuple[list[Path], list[Path]]:
    """Every file one hook's approval pins (what its command runs, from where it
    runs; its whole hook folder; or its handler file), and the folders whose list
    of modules it pins."""
    d = decl.definition
    files: list[Path] = []
    folders: list[Path] = []
    if command is not None:
        cwd = hook_cwd(decl, project_root)
        pinner = command_pins(command, cwd=cwd, root=project_root,
                              named=named, path_env=d.env.get("PATH"),
                              pythonpath=d.env.get("PYTHONPATH"),
                              variables=hook_variables(decl, project_root, cwd), env=d.env)
        files, folders = pinner.files, pinner.folders
    if decl.hook_dir is not None:
        return [*folder_pins(decl.hook_dir),
                *(f for f in files if not f.is_relative_to(decl.hook_dir))], folders
    if d.handler is not None:
        files.append((decl.folder / d.handler).resolve())
    return files, folders
