"""Interlock's exceptions. There is one root, and everything a user can cause
names the file, the field and the fix.

    InterlockError
    ├── ConfigError            bad config, HOOK.md or payload a user wrote
    │   └── UnknownEventError  an event name not in the catalog (did-you-mean)
    ├── RegistrationError      a hook that cannot be registered as declared
    └── HookFailure            one hook invocation failed (dispatch isolates it)
        ├── HookTimeout        it ran past its timeout
        ├── HookCrash          it raised, died or exited with an error code
        └── ContractError      it answered something its event does not accept
"""

from __future__ import annotations

import enum
import sys


def install_extra(extra: str) -> str:
    """The fix for a missing optional dependency: the extra that brings it, and
    where the README says how to install one: the package is not on PyPI, so an
    install line naming it by its name alone would not resolve."""
    return (f"install the {extra} extra: see README.md, Install "
            f"(pip install -e '.[{extra}]' from a checkout)")


class InterlockError(Exception):
    """Root of every exception Interlock raises on purpose."""


class ConfigError(InterlockError):
    """A configuration, payload or definition a user wrote is invalid.

    The message names where (``file``), what (``field``) and how to fix it.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
        fix: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        self.fix = fix
        super().__init__(self.render())

    def render(self) -> str:
        where = ""
        if self.file:
            where = self.file + (f":{self.line}" if self.line else "") + ": "
        text = where + (f"{self.field}: " if self.field else "") + self.message
        if self.fix:
            text += f" (fix: {self.fix})"
        return text


class UnknownEventError(ConfigError):
    """An event name that is not in the catalog."""

    def __init__(self, name: str, known: list[str], **where: str | int | None) -> None:
        import difflib  # here: loading the engine must not pay ~2 ms for a mistake's hint

        close = difflib.get_close_matches(name, known, n=1)
        fix = f"did you mean {close[0]!r}?" if close else "run `interlock events` for the list"
        super().__init__(f"unknown event {name!r}", fix=fix, **where)  # type: ignore[arg-type]
        self.suggestion = close[0] if close else None


class RegistrationError(InterlockError):
    """A hook was declared in a way the engine cannot honour."""


class FailureMode(enum.StrEnum):
    """Why one hook invocation produced no usable answer."""

    TIMEOUT = "timeout"
    CRASH = "crash"
    CONTRACT = "contract"
    EXHAUSTED = "exhausted"
    DROPPED = "dropped"
    BREAKER_OPEN = "breaker_open"
    INELIGIBLE = "ineligible"
    UNAPPROVED = "unapproved"
    DRIFTED = "drifted"
    """A file its approval pinned changed since (the failure names it)."""
    UNLOADABLE = "unloadable"
    """Its Python handler compiles but could not be loaded: the import raised, or it
    defines no handle() (the failure names the file, line and error)."""


HOOK_EXITS: tuple[type[BaseException], ...] = (SystemExit, KeyboardInterrupt, GeneratorExit)
HOOK_ERRORS: tuple[type[BaseException], ...] = (Exception, *HOOK_EXITS)
"""What a hook may raise that counts as its crash: every exception except
cancellation. ``SystemExit`` from a hook's ``sys.exit()`` must not end the host
(a bridge that exits 0 with no answer reads as "allow"), so isolating a hook
catches these, and only cancellation propagates (docs/engine.md, Failures)."""


def sync_cancelled(exc: BaseException) -> bool:
    """Is ``exc``, raised by a sync hook, asyncio's CancelledError? Always the hook's
    own (it ran a loop of its own, say with ``asyncio.run``): sync code is never
    cancelled by asyncio, so it is the hook's crash (docs/engine.md, Failures).
    asyncio is not imported to ask: a hook that raised one has imported it."""
    asyncio = sys.modules.get("asyncio")
    return asyncio is not None and isinstance(exc, asyncio.CancelledError)


class HookFailure(InterlockError):
    """One hook invocation failed; the dispatcher applies the hook's on_error."""

    mode: FailureMode = FailureMode.CRASH
    retryable: bool = False

    def __init__(self, message: str, *, mode: FailureMode | None = None,
                 retryable: bool | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        if mode is not None:
            self.mode = mode
        if retryable is not None:
            self.retryable = retryable
        self.retry_after = retry_after


class HookTimeout(HookFailure):
    mode = FailureMode.TIMEOUT
    retryable = True


class HookCrash(HookFailure):
    mode = FailureMode.CRASH
    retryable = True


class ContractError(HookFailure):
    mode = FailureMode.CONTRACT
