"""`serve --policy REPO@REF`: the policy from a pinned revision of a git repository.

The repository holds a project folder (``.interlock/`` at its root). The
server keeps a bare mirror and serves one revision extracted read-only
(``git archive``) into ``<state>/policies/<repo digest>/live``; naming the
commit is the operator's approval of its hooks (docs/fleet.md, Policy
distribution). A new revision becomes active:

- on a signed request, ``POST /v1/runtime/policy`` with ``{"ref": ..., "at":
  UNIX_TIME}`` and ``X-Interlock-Signature: sha256=HMAC(secret, body)`` (the
  secret from a 0600 file; ``at`` within 5 minutes of the server's clock);
- or on a schedule (``--policy-refresh SECONDS``): the ref is fetched again
  and, when it names a new commit, that commit is served.

A revision that cannot be fetched, extracted or loaded leaves the last good
one active (the registry refuses a bad config: docs/configuration.md).

A signed switch is kept: in ``<base>/switch.json``, or with ``--fleet`` in the
fleet's ``fleet_policy`` table and announced, so every replica serving the
repository switches too (each reads the table on the notification: the last
switch committed wins everywhere). At start the kept switch wins over the
``--policy`` ref when it was made while that same ref was deployed; a
deployment naming another ref serves that ref (docs/fleet.md, Policy
distribution).
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, NamedTuple

from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger
from interlock.hosts.fleet.shared import Fleet, FleetUnavailable

log = logger("interlock.fleet")

SIGNATURE_HEADER = "x-interlock-signature"
MAX_SKEW_S = 300.0
GIT_TIMEOUT_S = 120
_SHA = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


def parse(source: str) -> tuple[str, str]:
    """``(repository, ref)`` of ``git+URL@REF``, ``PATH@REF`` or a repository ``PATH``
    (its ``HEAD``)."""
    text = source[4:] if source.startswith("git+") else source
    repo, at, ref = text.rpartition("@")
    if not at or "/" in ref or not ref:
        repo, ref = text, "HEAD"
    if not repo:
        raise ConfigError(f"--policy {source!r} names no repository", field="--policy",
                          fix="give git+https://HOST/REPO.git@COMMIT or PATH@COMMIT")
    if "://" not in repo:
        path = Path(repo).expanduser().resolve()
        if not path.exists():
            raise ConfigError(f"--policy: {path} does not exist", field="--policy")
        repo = str(path)
    elif repo.startswith("http://"):
        raise ConfigError(f"--policy {source!r}: fetch the policy over https://, not http://",
                          field="--policy")
    return repo, ref


def _git(*args: str, cwd: Path | None = None, stdout: Any = subprocess.PIPE) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
    try:
        done = subprocess.run(["git", *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE,
                              text=stdout is subprocess.PIPE, timeout=GIT_TIMEOUT_S, env=env,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"git {args[0]} failed: {exc}", field="--policy") from None
    if done.returncode != 0:
        err = done.stderr if isinstance(done.stderr, str) else done.stderr.decode(errors="replace")
        raise ConfigError(f"git {args[0]} failed: {err.strip()[-400:]}", field="--policy")
    return done.stdout.strip() if isinstance(done.stdout, str) else ""


class PolicyRepo:
    """A bare mirror of the policy repository and the revisions extracted from it."""

    def __init__(self, repo: str, cache: Path) -> None:
        self.repo = repo
        self.base = cache / hashlib.sha256(repo.encode()).hexdigest()[:16]
        self.mirror = self.base / "mirror.git"
        self.live = self.base / "live"
        self.commit = ""
        self._lock = threading.Lock()

    def fetch(self) -> None:
        self.base.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not (self.mirror / "HEAD").exists():
            tmp = self.base / f"mirror.{os.getpid()}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            _git("clone", "--quiet", "--mirror", "--", self.repo, str(tmp))
            os.replace(tmp, self.mirror)
        else:
            _git("remote", "update", "--prune", cwd=self.mirror)

    def resolve(self, ref: str) -> str:
        if not (_SHA.match(ref) or re.match(r"^[\w./-]+$", ref)) or ref.startswith("-"):
            raise ConfigError(f"--policy ref {ref!r} is not a commit, tag or branch name",
                              field="--policy")
        return _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=self.mirror)

    def extract(self, commit: str) -> Path:
        """The revision's files in a new folder beside ``live``."""
        target = self.base / f"rev-{commit}"
        if target.exists():
            return target
        tmp = self.base / f"rev-{commit}.{os.getpid()}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(mode=0o700)
        archive = tmp / ".archive.tar"
        with archive.open("wb") as out:
            _git("archive", "--format=tar", commit, cwd=self.mirror, stdout=out)
        import tarfile

        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")  # no links out, no devices, no absolute paths
        archive.unlink()
        os.replace(tmp, target)
        return target

    def activate(self, ref: str, *, fetch: bool = True) -> tuple[str, bool]:
        """Serve ``ref`` in ``live``; returns (commit, whether it changed)."""
        with self._lock:
            if fetch:
                self.fetch()
            commit = self.resolve(ref)
            if commit == self.commit:
                return commit, False
            revision = self.extract(commit)
            staged = self.base / f"live.{os.getpid()}.new"
            shutil.rmtree(staged, ignore_errors=True)
            shutil.copytree(revision, staged, symlinks=True)
            old = self.base / f"live.{os.getpid()}.old"
            shutil.rmtree(old, ignore_errors=True)
            if self.live.exists():
                os.replace(self.live, old)
            os.replace(staged, self.live)
            shutil.rmtree(old, ignore_errors=True)
            (self.base / "commit").write_text(commit + "\n")
            self.commit = commit
            return commit, True

    # -- the kept switch, without --fleet ------------------------------------------
    @property
    def _switch_file(self) -> Path:
        return self.base / "switch.json"

    def kept(self) -> Kept | None:
        """The last signed switch served from this repository, or None."""
        try:
            data = json.loads(self._switch_file.read_text())
            return Kept(str(data["deployed"]), str(data["ref"]), str(data["commit"]),
                        float(data["at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def keep(self, kept: Kept) -> None:
        tmp = self.base / f"switch.json.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(kept._asdict()))
        os.replace(tmp, self._switch_file)


FLEET_KIND = "policy"
"""The notification of a change to ``fleet_policy``."""


class Kept(NamedTuple):
    """A signed switch as kept: under which --policy ref, to which ref and commit, when."""

    deployed: str
    ref: str
    commit: str
    at: float = 0.0


def fleet_kept(fleet: Fleet, repo: str) -> Kept | None:
    """The fleet's last signed switch of ``repo``, or None."""
    try:
        rows = fleet.rows("SELECT deployed, ref, commit, at FROM fleet_policy "
                          "WHERE repo = %s", (repo,))
    except FleetUnavailable as exc:
        raise ConfigError(f"cannot read the fleet's policy switch in {fleet.location}: {exc}",
                          field="--store", fix="check that PostgreSQL is up and reachable"
                          ) from None
    return Kept(str(rows[0][0]), str(rows[0][1]), str(rows[0][2]), float(rows[0][3])) \
        if rows else None


def open_policy(source: str, cache: Path, store: str | None) -> tuple[PolicyRepo, Kept]:
    """The repository of ``--policy SOURCE`` with its revision active, and what is served:
    a signed switch kept while SOURCE's ref was deployed wins over that ref
    (``fleet_policy`` when ``store`` is the fleet's, else ``<base>/switch.json``). The
    returned ``at`` is the fleet's last switch seen, followed or not."""
    url, deployed = parse(source)
    repo = PolicyRepo(url, cache)
    kept: Kept | None
    if store is not None:
        from interlock.hosts.fleet.attach import fleet_url

        fleet = Fleet(fleet_url(store), listen=False)
        try:
            kept = fleet_kept(fleet, url)
        finally:
            fleet.close()
    else:
        kept = repo.kept()
    if kept is not None and kept.deployed == deployed:
        try:
            repo.activate(kept.commit)
        except ConfigError as exc:
            where = "the fleet_policy row" if store is not None else str(repo.base / "switch.json")
            raise ConfigError(f"the policy switch kept in {where} names commit {kept.commit}, "
                              f"which cannot be served: {exc.message}", field="--policy",
                              fix=f"deploy another ref, or remove {where}") from None
        return repo, kept
    repo.activate(deployed)
    return repo, Kept(deployed, deployed, repo.commit, kept.at if kept is not None else 0.0)


def read_secret(path: Path) -> bytes:
    from interlock.hosts.bridge._common import BridgeError
    from interlock.hosts.bridge.remote import read_token

    try:
        return read_token(str(path), prefix="", what="secret").encode()
    except BridgeError as exc:
        raise ConfigError(str(exc), file=str(path), field="--policy-secret-file") from None


def signature_ok(secret: bytes, body: bytes, header: str | None) -> bool:
    if not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[7:].strip().lower())


class PolicyService:
    """Keeps the served revision: the signed request, the schedule, the revision log;
    with ``fleet``, the switch shared with every replica."""

    def __init__(self, repo: PolicyRepo, ref: str, registry: Any, *,
                 secret: bytes | None = None, served: Kept | None = None,
                 fleet: Fleet | None = None) -> None:
        self.repo = repo
        self.ref = served.ref if served is not None else ref
        """The ref served (the schedule fetches it again): --policy's, or a switch's."""
        self.deployed = served.deployed if served is not None else ref
        """The ref --policy named at start; a kept switch names it."""
        self._seen = served.at if served is not None else 0.0
        """When the fleet's last switch this replica has seen was made: only a later
        one is followed (one made before the start counts only under the same ref)."""
        self.registry = registry
        self.secret = secret
        self.fleet = fleet
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._switching = threading.Lock()
        """One change of the served revision at a time: a switch, the schedule's
        refresh, following the fleet (which must not read the table between a switch
        here and its row)."""
        if fleet is not None:
            fleet.on(FLEET_KIND, lambda _payload: self._follow_soon())
            fleet.on_resync(self._follow_soon)

    def switch(self, ref: str) -> dict[str, Any]:
        """A signed switch: serve ``ref`` and keep it (with ``fleet``: for every replica).
        A switch the fleet cannot record is undone here, so no replica is left serving
        a revision the others and a restart would not."""
        with self._switching:
            previous = self.repo.commit
            out = self.serve(ref)
            if not out["ok"]:
                return out
            kept = Kept(self.deployed, ref, out["commit"], time.time())
            try:
                kept = self._keep(kept)
            except (FleetUnavailable, OSError) as exc:
                if out["changed"]:
                    self.serve(previous)
                where = self.fleet.location if self.fleet else str(self.repo.base)
                return {"ok": False, "unavailable": True, "commit": previous,
                        "error": f"the switch could not be kept in {where}: {exc}; it was "
                                 "undone here, send it again"}
            self.ref, self._seen = ref, kept.at
            return out

    def _keep(self, kept: Kept) -> Kept:
        """Keep ``kept``; returns it as kept. In a fleet, PostgreSQL stamps it, later
        than the switch before it: switches are ordered by the one clock every
        replica shares, never by a replica's own (which may run fast)."""
        if self.fleet is None:
            self.repo.keep(kept)
            return kept
        with self.fleet.transaction() as cur:
            cur.execute("INSERT INTO fleet_policy (repo, deployed, ref, commit, at, replica) "
                        "VALUES (%s, %s, %s, %s, "
                        "EXTRACT(EPOCH FROM clock_timestamp())::double precision, %s) "
                        "ON CONFLICT (repo) DO UPDATE SET "
                        "deployed = EXCLUDED.deployed, ref = EXCLUDED.ref, "
                        "commit = EXCLUDED.commit, "
                        "at = GREATEST(EXCLUDED.at, fleet_policy.at + 0.001), "
                        "replica = EXCLUDED.replica RETURNING at",
                        (self.repo.repo, kept.deployed, kept.ref, kept.commit,
                         self.fleet.replica))
            (at,), = cur.fetchall()
            Fleet.announce(cur, FLEET_KIND, self.repo.repo)
        return kept._replace(at=float(at))

    def _follow_soon(self) -> None:
        """On a notification (or a reconnect): serve what the table says, off the
        listener's thread (a fetch can take long)."""
        threading.Thread(target=self.follow, name="interlock-policy-follow",
                         daemon=True).start()

    def follow(self) -> None:
        """Serve the fleet's last switch of this repository if it was made after the
        last one this replica saw. The table, not the notification, says which: when
        two switches cross, the one committed last wins on every replica."""
        if self.fleet is None:
            return
        with self._switching:
            try:
                row = fleet_kept(self.fleet, self.repo.repo)
                if row is None or row.at <= self._seen:
                    return
                out = self.serve(row.commit)
            except ConfigError as exc:
                log.warning("policy: the fleet's switch not served here: %s", exc.render())
                return
            self._seen = row.at
            if out["ok"]:
                self.ref = row.ref
            else:
                log.warning("policy: the fleet's switch to %s refused here: %s", row.commit,
                            out["error"])

    def serve(self, ref: str) -> dict[str, Any]:
        """Serve ``ref`` now (not kept: the schedule, a replica following the fleet)."""
        previous = self.repo.commit
        commit, changed = self.repo.activate(ref)
        result = self.registry.reload(operator=True) if changed else None
        if result is not None and not result.ok:
            # The files are the new revision's but the registry kept the last good one;
            # put the last good files back so the next reload does not pick them up.
            self.repo.activate(previous, fetch=False)
            error = result.error.render() if result.error is not None else result.blocked
            return {"ok": False, "commit": previous, "refused": commit, "error": error}
        revision = int(self.registry.engine.revision)
        log.info("policy %s@%s active (revision %s)", self.repo.repo, commit, revision)
        return {"ok": True, "commit": commit, "changed": changed, "revision": revision}

    def handler(self) -> Any:
        from starlette.concurrency import run_in_threadpool
        from starlette.requests import Request
        from starlette.responses import Response

        def answer(status: int, data: dict[str, Any]) -> Response:
            return Response(json.dumps(data), status_code=status,
                            media_type="application/json")

        async def policy(request: Request) -> Response:
            body = await request.body()
            if self.secret is None:
                return answer(404, {"error": "signed policy reloads are off "
                                             "(serve --policy-secret-file FILE)"})
            if len(body) > 4096 or not signature_ok(self.secret, body,
                                                     request.headers.get(SIGNATURE_HEADER)):
                return answer(401, {"error": "the request's signature does not match"})
            try:
                data = json.loads(body)
                ref, at = str(data["ref"]), float(data["at"])
            except (ValueError, KeyError, TypeError):
                return answer(400, {"error": 'the body must be {"ref": "...", "at": UNIX_TIME}'})
            if abs(time.time() - at) > MAX_SKEW_S:
                return answer(401, {"error": "the request is older than 5 minutes (or from "
                                             "the future): sign a fresh one"})
            try:
                out = await run_in_threadpool(self.switch, ref)
            except ConfigError as exc:
                return answer(409, {"error": exc.render()})
            return answer(200 if out["ok"] else 503 if out.get("unavailable") else 409, out)

        return policy

    def schedule(self, seconds: float) -> None:
        def loop() -> None:
            while not self._stop.wait(seconds):
                try:
                    with self._switching:
                        self.serve(self.ref)
                except Exception as exc:  # the last good revision stays; try next time
                    log.warning("policy refresh failed: %s", exc)

        self._thread = threading.Thread(target=loop, name="interlock-policy", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            with contextlib.suppress(RuntimeError):
                self._thread.join(5)
