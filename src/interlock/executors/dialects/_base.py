"""What every dialect shares: event names through the catalog, compact stdin,
JSON parsing with clear errors, and the "declare modifies = true" rule."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from interlock.engine.catalog import BY_NAME, COMMON, names_in
from interlock.engine.decisions import RANK, Decision, Verdict, context, modify
from interlock.engine.errors import ContractError
from interlock.engine.strictjson import AmbiguousJSON
from interlock.engine.strictjson import loads as strict_loads
from interlock.executors.toolnames import (
    args_to_host,
    args_to_ours,
    host_names,
    to_host,
    to_ours,
)

if TYPE_CHECKING:
    from interlock.engine.hooks import Invocation

COMMON_FIELDS = frozenset(f.name for f in COMMON)

_FALLBACK_SESSION = f"interlock-{os.getpid():x}-{os.urandom(4).hex()}"


class BaseDialect:
    """Event and tool naming shared by every dialect."""

    name = ""
    system = ""
    """The column of the catalog's alias table this dialect reads."""
    shell = True

    def event_name(self, event: str) -> str | None:
        spec = BY_NAME.get(event)
        if spec is None:
            return None
        names = names_in(self.system, spec)
        return names[0] if names else None

    @property
    def tools(self) -> dict[str, str]:
        """Interlock built-in tool name -> the host's name for it (executors.toolnames)."""
        return host_names(self.system)

    def tool_name(self, tool: str) -> str:
        """The host's name for one of Interlock's tools (interlock.executors.toolnames)."""
        return to_host(self.system, tool)

    def tool_from_host(self, tool: str) -> str:
        """Interlock's name for a host tool name (interlock.executors.toolnames)."""
        return to_ours(self.system, tool)

    def host_args(self, invocation: Invocation) -> dict[str, Any]:
        """The event's tool arguments with the host's argument names (``file_path``...)."""
        ev = invocation.event
        return args_to_host(self.system, getattr(ev, "tool_name", ""), getattr(ev, "args", {}))

    def our_args(self, invocation: Invocation, answer: dict[str, Any]) -> dict[str, Any]:
        """A rewrite of the arguments the script answered, back in Interlock's names."""
        ev = invocation.event
        return args_to_ours(self.system, getattr(ev, "tool_name", ""),
                            getattr(ev, "args", {}), answer)

    def env(self, invocation: Invocation, *, project_dir: str,
            plugin_root: str | None) -> dict[str, str]:
        return {}

    def host_event(self, invocation: Invocation) -> str:
        name = self.event_name(invocation.event.name)
        if name is None:
            raise ContractError(
                f"hook {label(invocation)}: the {self.name} dialect has no event for "
                f"{invocation.event.name!r} (fix: subscribe it only to events {self.name} has)")
        return name


def label(invocation: Invocation) -> str:
    return repr(invocation.hook.qualified_name)


def session_id(invocation: Invocation) -> str:
    """The event's session id; scripts key state on it, so never an empty string."""
    return invocation.event.session_id or _FALLBACK_SESSION


def dump(obj: Any) -> bytes:
    """Compact one-line JSON and a newline: real scripts read one line or grep."""
    return msgspec.json.encode(obj) + b"\n"


def extra_fields(invocation: Invocation, renames: Mapping[str, str] = {},
                 skip: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The event's own (non-common) fields, renamed for the host."""
    data = invocation.event.to_dict()
    return {renames.get(k, k): v for k, v in data.items()
            if k not in COMMON_FIELDS and k not in skip}


def parse_json(invocation: Invocation, dialect: str, stdout: bytes) -> Any:
    """Parse a JSON answer; a ContractError that quotes the output otherwise."""
    try:
        return strict_loads(stdout)
    except AmbiguousJSON as exc:
        raise ContractError(
            f"hook {label(invocation)} ({dialect} dialect) printed an ambiguous JSON answer "
            f"({exc}): {preview(stdout)} (fix: name each field once)") from None
    except ValueError:
        raise ContractError(
            f"hook {label(invocation)} ({dialect} dialect) printed something that is not "
            f"JSON: {preview(stdout)} (fix: print only the JSON answer on stdout; "
            "log to stderr or a file)") from None


def need_object(invocation: Invocation, dialect: str, value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ContractError(f"hook {label(invocation)} ({dialect} dialect): {what} must be a "
                            f"JSON object, got {type(value).__name__}")
    return value


def need_str(invocation: Invocation, dialect: str, value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise ContractError(f"hook {label(invocation)} ({dialect} dialect): {what} must be a "
                        f"string, got {type(value).__name__}")


def check_continue(invocation: Invocation, dialect: str, answer: dict[str, Any]) -> None:
    """``continue``, when given, must be a boolean: ``"false"`` or ``0`` read as "not
    false" would let a script that meant to stop the run pass a gate."""
    value = answer.get("continue", True)
    if not isinstance(value, bool):
        raise ContractError(f"hook {label(invocation)} ({dialect} dialect): continue must be "
                            f"true or false, got {value!r}")


def require_modifies(invocation: Invocation, dialect: str, what: str) -> None:
    """A rewrite from a check hook is a contract error that says how to fix it."""
    if not invocation.hook.modifies:
        raise ContractError(
            f"hook {label(invocation)} ({dialect} dialect) answered {what}, which changes "
            f"the {invocation.event.name} payload, but it is a check; declare "
            "`modifies = true` on the hook so it runs in the modify phase")


def contract(invocation: Invocation, dialect: str, message: str) -> ContractError:
    return ContractError(f"hook {label(invocation)} ({dialect} dialect) {message}")


def preview(data: bytes, limit: int = 120) -> str:
    text = data.decode("utf-8", "replace").strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


def combine(invocation: Invocation, dialect: str, decisions: list[Decision],
            changes: dict[str, Any], ctx: str | None) -> Decision | None:
    """Fold what one answer said into one decision.

    Interlock runs rewrites (modify phase) and verdicts (check phase)
    separately, so one hook answers one of them, except that an approval may
    carry the rewrite it approves (allow + updatedInput). A rewrite paired with
    a block is a block. A rewrite paired with ask cannot be honoured either
    way without dropping something (nor can one with respond), so it is a failure.
    """
    best = max(decisions, key=lambda d: RANK[d.verdict], default=None)
    if changes:
        if best is None:
            return modify(context=ctx, **changes)
        if best.verdict is Verdict.APPROVE:
            # Claude's allow + updatedInput approves the changed call: both stand.
            return Decision(verdict=Verdict.APPROVE, reason=best.reason, changes=changes,
                            context=ctx)
        if best.verdict not in (Verdict.BLOCK, Verdict.STOP):
            raise contract(invocation, dialect, f"answered a rewrite together with "
                           f"{best.verdict.value}; Interlock cannot do both in one hook (fix: "
                           "answer the rewrite alone, and decide in a separate check hook)")
    if best is None:
        return None if ctx is None else context(ctx)
    if ctx is not None:
        best = Decision(verdict=best.verdict, reason=best.reason, hint=best.hint,
                        changes=best.changes, value=best.value, context=ctx)
    return best
