"""Bearer tokens for `interlock serve`, stored hashed.

A token is 32 random bytes (``ilk_`` + urlsafe base64). Only its SHA-256 is
kept, in ``<state>/server-tokens.json`` (mode 0600). A slow hash (scrypt)
protects guessable passwords; a 256-bit random token cannot be guessed, so a
fast hash loses nothing and keeps each request's check to microseconds.

Roles: ``events`` may evaluate events; ``admin`` may also read dead
letters, resolve them, reload the configuration and act in the web console;
``chat`` may use the chat gateway only; ``read`` may only view the console.
"""

from __future__ import annotations

import enum
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interlock.engine.errors import ConfigError
from interlock.engine.logs import logger

log = logger("interlock.server")

TOKEN_PREFIX = "ilk_"
TOKENS_FILE = "server-tokens.json"


class TokensUnavailable(Exception):
    """The tokens cannot be read now (a fleet's PostgreSQL is down): refuse with a 503."""


class Role(enum.StrEnum):
    EVENTS = "events"
    ADMIN = "admin"
    CHAT = "chat"
    """Only the chat gateway, as the token's sender."""
    READ = "read"
    """Only viewing the web console (decisions, hooks, dead letters, health)."""

    def allows(self, needed: Role) -> bool:
        return self is Role.ADMIN or self is needed


@dataclass(frozen=True, slots=True)
class TokenInfo:
    name: str
    role: Role
    digest: str
    """``sha256:<hex>`` of the token."""
    created: float
    sender: str = ""
    """The chat sender this token speaks for (bound when it is created); its name when
    empty. A chat request never names its sender itself."""

    expires: float = 0.0
    """Unix time after which the token is refused; 0: never (a machine's token in a
    fleet should expire: docs/fleet.md)."""

    def expired(self, now: float) -> bool:
        return 0 < self.expires <= now

    @property
    def sender_id(self) -> str:
        return self.sender or self.name


def digest_of(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


class TokenStore:
    """Hashed tokens, in memory and optionally in a 0600 JSON file.

    ``TokenStore(path)`` loads ``path`` if it exists; ``TokenStore()`` keeps
    tokens in memory only (tests, embedding).
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._tokens: dict[str, TokenInfo] = {}
        self._seen: tuple[int, int, int] | None = None
        """(inode, size, mtime) of the file as last read: a token created or revoked by
        another process (`interlock serve token revoke`) counts at the next request."""
        if path is not None and path.exists():
            self._load(path)

    @classmethod
    def for_state_dir(cls, state: Path) -> TokenStore:
        return cls(state / TOKENS_FILE)

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int, int] | None:
        try:
            st = path.stat()
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def _fresh(self) -> None:
        """Re-read the file if another process changed it (one stat per call)."""
        if self.path is None:
            return
        stamp = self._stamp(self.path)
        if stamp == self._seen:
            return
        with self._lock:
            if stamp is None:
                self._tokens = {}
                self._seen = None
                return
            try:
                self._load(self.path)
            except ConfigError as exc:  # a damaged file admits nobody until it is fixed
                self._tokens = {}
                self._seen = stamp
                log.error("%s", exc.render())

    def _load(self, path: Path) -> None:
        self._seen = self._stamp(path)
        tokens: dict[str, TokenInfo] = {}
        try:
            data = json.loads(path.read_text())
            for entry in data["tokens"]:
                info = TokenInfo(name=str(entry["name"]), role=Role(entry["role"]),
                                 digest=str(entry["digest"]), created=float(entry["created"]),
                                 sender=str(entry.get("sender") or ""),
                                 expires=float(entry.get("expires") or 0))
                if not info.digest.startswith("sha256:"):
                    raise ValueError(f"token {info.name!r}: digest must start with 'sha256:'")
                tokens[info.name] = info
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"cannot read the token file: {exc}", file=str(path),
                              fix="recreate it with `interlock serve token create NAME`") from None
        self._tokens = tokens

    def _save(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        data = {"tokens": [
            {"name": t.name, "role": t.role.value, "digest": t.digest, "created": t.created,
             **({"sender": t.sender} if t.sender else {}),
             **({"expires": t.expires} if t.expires else {})}
            for t in self._tokens.values()]}
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)
        self._seen = self._stamp(self.path)

    def create(self, name: str, role: Role | str = Role.EVENTS, *,
               sender: str | None = None, ttl: float | None = None) -> str:
        """Make a token named ``name``; returns it. Only its hash is kept.

        ``sender``: the chat sender id the token speaks for (default: ``name``).
        ``ttl``: seconds until it expires (default: never).
        """
        if ttl is not None and not ttl > 0:
            raise ConfigError(f"a token's lifetime must be positive, not {ttl!r}",
                              field="expires", fix="give a number of days above 0")
        if not name or not name.replace("-", "").replace("_", "").isalnum():
            raise ConfigError(f"token name {name!r} is not valid", field="name",
                              fix="use letters, digits, '-' and '_'")
        if sender is not None and (not sender.strip() or len(sender) > 200
                                   or not sender.isprintable()):
            raise ConfigError(f"sender {sender!r} is not valid", field="sender",
                              fix="use 1 to 200 printable characters")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self._fresh()  # another process's tokens are kept, not overwritten
        with self._lock:
            if name in self._tokens:
                raise ConfigError(f"a token named {name!r} exists", field="name",
                                  fix=f"revoke it first: `interlock serve token revoke {name}`")
            self._tokens[name] = TokenInfo(name=name, role=Role(role), digest=digest_of(token),
                                           created=time.time(), sender=sender or "",
                                           expires=time.time() + ttl if ttl else 0.0)
            self._save()
        return token

    def revoke(self, name: str) -> bool:
        self._fresh()
        with self._lock:
            if self._tokens.pop(name, None) is None:
                return False
            self._save()
            return True

    def entries(self) -> list[TokenInfo]:
        self._fresh()
        return sorted(self._tokens.values(), key=lambda t: t.name)

    def verify(self, token: str) -> TokenInfo | None:
        """The token's entry, or None. Compares every digest in constant time."""
        if not token.startswith(TOKEN_PREFIX):
            return None
        self._fresh()
        presented = digest_of(token)
        found = None
        for info in self._tokens.values():
            if hmac.compare_digest(info.digest, presented):
                found = info
        if found is not None and found.expired(time.time()):
            return None
        return found

    def describe(self) -> list[dict[str, Any]]:
        return [{"name": t.name, "role": t.role.value, "created": t.created,
                 **({"expires": t.expires} if t.expires else {}),
                 **({"sender": t.sender_id} if t.role is Role.CHAT else {})}
                for t in self.entries()]
