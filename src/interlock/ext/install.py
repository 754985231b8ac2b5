"""Installing, removing, enabling and approving extensions (``interlock ext``).

- A **local folder** (holding ``extension.toml``) is copied into
  ``$INTERLOCK_HOME/extensions/<name>/`` and pinned by its content digest.
- A **git URL** (``git+...``, ``...git``, ``ssh://``, ``git@host:...``, or a
  local git repository) is cloned, pinned to its commit and content digest,
  and copied in without its ``.git``. ``URL@REF`` checks out REF first.
- Anything else (a ``.whl`` / sdist file or a package spec) is installed into
  the current environment with pip, and each ``interlock.extensions`` entry
  point it brings is pinned to the distribution's version, the file's hash
  and a digest of the installed files.

A folder's ``packages`` go into ``$INTERLOCK_HOME/extensions/.packages/<name>/``
(:mod:`interlock.ext.deps` says why there and not in a venv of its own).

Every install records a :class:`~interlock.ext.pins.Pin` (the consent
record); the loader refuses an installed extension whose content no longer
matches its pin until ``approve`` records the new content.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution
from pathlib import Path

from interlock.engine.errors import ConfigError
from interlock.ext.deps import conflicts, interlock_problem, missing_packages, packages_dir
from interlock.ext.pins import (
    MANIFEST,
    Manifest,
    Pin,
    PinStore,
    default_pins,
    distribution_digest,
    file_sha256,
    folder_digest,
    project_key,
    read_manifest,
)

_GIT_URL = re.compile(r"^(?:git\+|git://|ssh://|git@|file://)|\.git(?:@[^/]+)?/?$")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".git", ".mypy_cache",
                                 ".pytest_cache", ".ruff_cache")


@dataclass
class Installer:
    home: Path
    python: str = sys.executable
    pins: PinStore | None = None

    def __post_init__(self) -> None:
        self.root = self.home / "extensions"
        if self.pins is None:
            self.pins = default_pins(self.home)

    @property
    def store(self) -> PinStore:
        assert self.pins is not None
        return self.pins

    # -- what kind of source --------------------------------------------------------
    @staticmethod
    def kind_of(source: str) -> str:
        path = Path(source).expanduser()
        if path.is_dir():
            if (path / MANIFEST).is_file():
                return "folder"
            if (path / "HEAD").is_file() or (path / ".git").exists():
                return "git"
            if (path / "pyproject.toml").is_file():
                return "package"  # a Python project: pip builds and installs it
            raise ConfigError(f"{source} has no extension.toml and is not a git repository",
                              field="source", fix="point at the extension's folder")
        if _GIT_URL.search(source):
            return "git"
        if source.startswith(("/", "./", "../", "~")) and not source.endswith(".whl"):
            raise ConfigError(f"no folder at {path}", field="source",
                              fix="give the extension's folder, a git URL, a wheel or a "
                                  "package name")
        return "package"

    def plan(self, source: str) -> str:
        """One line saying what ``install(source)`` would do (for the consent prompt)."""
        kind = self.kind_of(source)
        if kind == "folder":
            m = read_manifest(Path(source).expanduser())
            extra = (f", and pip install {', '.join(r.text for r in m.packages)} into "
                     f"{packages_dir(self.home, m.name)}" if m.packages else "")
            return (f"copy folder extension {m.name!r} from {source} into {self.root / m.name}"
                    f" (pinned to {folder_digest(m.path)[:23]}...){extra}")
        if kind == "git":
            return f"clone {source} into {self.root} and pin it to its commit"
        return (f"pip install {source} into {sys.prefix} and pin it to its version and hash; "
                "it runs code from the package")

    # -- install ----------------------------------------------------------------------
    def install(self, source: str, *, force: bool = False) -> list[Pin]:
        kind = self.kind_of(source)
        if kind == "folder":
            return [self._install_folder(Path(source).expanduser().resolve(), source, force,
                                         kind="folder")]
        if kind == "git":
            return [self._install_git(source, force)]
        return self._install_package(source)

    def _install_folder(self, folder: Path, source: str, force: bool, *, kind: str,
                        commit: str = "") -> Pin:
        manifest = read_manifest(folder)
        target = self.root / manifest.name
        if target.exists() and not force:
            raise ConfigError(f"extension {manifest.name!r} is already installed at "
                              f"{target}", fix="`interlock ext remove` it first, or "
                                               "pass --force")
        problem = interlock_problem(manifest.interlock)
        if problem is not None:
            raise ConfigError(problem, file=str(folder / MANIFEST), field="interlock")
        self._install_packages(manifest)
        if target.exists():
            shutil.rmtree(target)
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.copytree(folder, target, ignore=_IGNORE, symlinks=True)
        pin = Pin(name=manifest.name, kind=kind, source=source, digest=folder_digest(target),
                  commit=commit, version=manifest.version, path=str(target),
                  guards=list(manifest.guards), packages_digest=self._packages_digest(
                      manifest.name) if manifest.packages else "")
        self.store.put(manifest.name, pin)
        return pin

    def _install_packages(self, manifest: Manifest) -> None:
        """The manifest's Python packages into the extension's own folder (see
        interlock.ext.deps: one process, so a conflict is refused, not isolated)."""
        where = str(manifest.path / MANIFEST)
        if not manifest.packages:
            return
        clashes = conflicts(self.home, manifest.name, manifest.packages)
        if clashes:
            raise ConfigError("; ".join(clashes), file=where, field="packages",
                              fix="loosen the requirement, or remove the extension that "
                                  "needs the other version")
        folder = packages_dir(self.home, manifest.name)
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f".{manifest.name}-", dir=folder.parent) as tmp:
            staged = Path(tmp) / "site"
            # pip reads PIP_INDEX_URL, PIP_FIND_LINKS, PIP_NO_INDEX ... from the
            # environment, so a private index or an offline wheelhouse works as usual.
            _run([self.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                  "--no-input", "--target", str(staged),
                  *(r.text for r in manifest.packages)], "pip install (extension packages)")
            if folder.exists():
                shutil.rmtree(folder)
            staged.rename(folder)
        importlib.invalidate_caches()
        missing = missing_packages(self.home, manifest.name, manifest.packages)
        if missing:
            raise ConfigError(f"after pip install, {', '.join(missing)} is still not met",
                              file=where, field="packages")

    def _packages_digest(self, name: str) -> str:
        folder = packages_dir(self.home, name)
        return folder_digest(folder) if folder.is_dir() else ""

    def _install_git(self, source: str, force: bool) -> Pin:
        url = source.removeprefix("git+")
        ref = ""
        m = re.match(r"^(.+?)@([^/@:]+)$", url)  # URL@REF; not user@host:path
        if m:
            url, ref = m.group(1), m.group(2)
        with tempfile.TemporaryDirectory(prefix="interlock-ext-") as tmp:
            clone = Path(tmp) / "clone"
            _run(["git", "clone", "--quiet", "--", url, str(clone)], "git clone")
            if ref:
                _run(["git", "-C", str(clone), "checkout", "--quiet", ref], "git checkout")
            commit = _run(["git", "-C", str(clone), "rev-parse", "HEAD"], "git rev-parse")
            shutil.rmtree(clone / ".git")
            return self._install_folder(clone, source, force, kind="git", commit=commit)

    def _install_package(self, source: str) -> list[Pin]:
        path = Path(source).expanduser()
        artifact = ""
        if path.is_file():
            artifact = file_sha256(path)
            dist_name = _dist_name_of_file(path)
            spec = str(path.resolve())
        elif path.is_dir():
            import tomllib

            project = tomllib.loads((path / "pyproject.toml").read_text()).get("project", {})
            dist_name = str(project.get("name", ""))
            spec = str(path.resolve())
        else:
            dist_name = re.split(r"[<>=!~\[ ;@]", source, maxsplit=1)[0]
            spec = source
        if not dist_name:
            raise ConfigError(f"cannot tell the package name of {source!r}", field="source")
        was_installed = _installed(dist_name)
        _run([self.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "--no-input", spec], "pip install")
        importlib.invalidate_caches()
        try:
            dist = distribution(dist_name)
        except PackageNotFoundError:
            raise ConfigError(f"pip installed {source} but no distribution named "
                              f"{dist_name!r} is visible", field="source") from None
        eps = [ep for ep in dist.entry_points if ep.group == "interlock.extensions"]
        if not eps:
            if not was_installed:
                _run([self.python, "-m", "pip", "uninstall", "--quiet", "-y", dist_name],
                     "pip uninstall")
            raise ConfigError(f"package {dist_name} declares no `interlock.extensions` entry "
                              "point, so it is not an extension (it was not kept)",
                              field="source", fix="add [project.entry-points.\"interlock."
                                                  "extensions\"] name = \"module\"")
        digest = distribution_digest(dist)
        pins = []
        for ep in eps:
            pin = Pin(name=ep.name, kind="package", source=source, digest=digest,
                      dist=dist.metadata["Name"], version=dist.version,
                      artifact_sha256=artifact, guards=_declared_guards(ep))
            self.store.put(ep.name, pin)
            pins.append(pin)
        return pins

    # -- the rest -----------------------------------------------------------------------
    def get(self, name: str) -> Pin:
        pin = self.store.get(name)
        if pin is None:
            raise ConfigError(f"no installed extension named {name!r}",
                              fix="see `interlock ext list`")
        return pin

    def remove(self, name: str) -> Pin:
        pin = self.get(name)
        if pin.kind == "package":
            others = [k for k, p in self.store.all().items()
                      if p.kind == "package" and p.dist == pin.dist and k != name]
            if _installed(pin.dist):
                _run([self.python, "-m", "pip", "uninstall", "--quiet", "-y", pin.dist],
                     "pip uninstall")
            importlib.invalidate_caches()
            for key in others:
                self.store.remove(key)
        elif pin.path and Path(pin.path).is_dir() and Path(pin.path).parent == self.root:
            shutil.rmtree(pin.path)
        packages = packages_dir(self.home, name)
        if pin.kind != "project" and packages.is_dir():
            shutil.rmtree(packages)
        self.store.remove(name)
        return pin

    def set_enabled(self, name: str, enabled: bool) -> Pin:
        pin = self.store.get(name)
        if pin is None:
            # An extension nobody installed through us (an entry point, a user folder):
            # record the choice without vouching for its content.
            pin = Pin(name=name, kind="entry_point", source="", enabled=enabled)
        pin.enabled = enabled
        self.store.put(name, pin)
        return pin

    def approve(self, name: str, *, project: Path | None = None) -> Pin:
        """Record the extension's current content as approved."""
        if project is not None:
            folder = project / ".interlock" / "extensions" / name
            if folder.is_dir():
                m = read_manifest(folder)
                pin = Pin(name=m.name, kind="project", source=str(folder),
                          digest=folder_digest(folder), path=str(folder),
                          guards=list(m.guards), version=m.version)
                self.store.put(project_key(project, m.name), pin)
                return pin
        pin = self.get(name)
        if pin.kind in ("folder", "git"):
            pin.digest = folder_digest(Path(pin.path))
            if pin.packages_digest:
                pin.packages_digest = self._packages_digest(name)
        elif pin.kind == "package":
            dist = distribution(pin.dist)
            pin.digest = distribution_digest(dist)
            pin.version = dist.version
        import time

        pin.approved_at = time.time()
        self.store.put(name, pin)
        return pin


def _declared_guards(ep: EntryPoint) -> list[str]:
    """The module's ``GUARDS``, recorded now so they hold even if it later fails to import."""
    try:
        target = ep.load()
    except Exception:
        return []
    guards = getattr(target, "GUARDS", None)
    return [str(g) for g in guards] if isinstance(guards, (list, tuple)) else []


def _dist_name_of_file(path: Path) -> str:
    name = path.name
    if name.endswith(".whl"):
        return name.split("-")[0]
    for suffix in (".tar.gz", ".zip", ".tar.bz2"):
        if name.endswith(suffix):
            return name[: -len(suffix)].rsplit("-", 1)[0]
    return ""


def _installed(dist: str) -> bool:
    try:
        distribution(dist)
    except PackageNotFoundError:
        return False
    return True


def _run(cmd: list[str], what: str) -> str:
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    except FileNotFoundError:
        raise ConfigError(f"{what}: {cmd[0]} is not installed") from None
    if proc.returncode != 0:
        err = (proc.stderr or proc.stdout).strip().splitlines()
        tail = " / ".join(line for line in err[-3:] if line.strip())
        raise ConfigError(f"{what} failed: {tail or f'exit {proc.returncode}'}")
    return proc.stdout.strip()
