"""A run's edges, read the same way by every adapter that fires them: a tool or a
model call that failed, and the final answer (docs/adapters.md, Events each
adapter fires).

Each function takes the outcome its adapter emitted and says what to do; the
adapter carries it out in its framework's terms. An adapter emits these events
only while a hook is on them (:meth:`Policy.listens`), so a run nobody watches
there pays nothing per call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from interlock.adapters._core import DecisionNotSupported, hook_name
from interlock.engine.decisions import Verdict

if TYPE_CHECKING:
    from interlock.adapters._core import Policy
    from interlock.engine.outcome import Outcome

__all__ = ["LLM_RETRY_CAP", "NOT_OFFERED", "TOOL_RETRY_CAP", "ToolFailure", "chosen_model",
           "error_text", "keep_working", "llm_retry", "not_offered", "status_code",
           "tool_failure"]

TOOL_RETRY_CAP = 2
"""Retries of one tool call a tool_error hook may ask for, as in the reference agent."""
LLM_RETRY_CAP = 2
"""Retries of one model call an llm_error hook may ask for, as in the reference agent."""


@dataclass(slots=True)
class ToolFailure:
    """What to do with a tool call that failed, from its tool_error outcome."""

    retry: bool
    """Run the call again (back through before_tool_call)."""
    error: str
    """The error for the model (a hook's rewrite, else the original)."""
    context: str
    """Hook context for the model ('' when none)."""
    rewritten: bool = False
    """Whether a hook replaced the error."""

    @property
    def answered(self) -> bool:
        """Whether a hook changed the error or added context: the model is then to
        read it, where the framework would otherwise raise the tool's exception."""
        return bool(self.context) or self.rewritten


def error_text(error: BaseException) -> str:
    """An exception as the redacted one line a hook reads."""
    from interlock.engine.redact import redact

    return redact(f"{type(error).__name__}: {error}")


def status_code(error: BaseException) -> int | None:
    """The HTTP status of a provider's error, where it carries one."""
    for name in ("status_code", "status"):
        value = getattr(error, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def tool_failure(policy: Policy, outcome: Outcome, attempt: int) -> ToolFailure:
    """tool_error's decision: retry (up to :data:`TOOL_RETRY_CAP`), a rewrite of
    ``error``, context. A retry past the cap is no retry: the failure stands."""
    policy.apply(outcome, can=("retry", "modify", "context"))
    error = outcome.changes.get("error", getattr(outcome.payload, "error", ""))
    return ToolFailure(retry=outcome.verdict is Verdict.RETRY and attempt <= TOOL_RETRY_CAP,
                       error=str(error), context=outcome.context_text(),
                       rewritten="error" in outcome.changes)


def llm_retry(policy: Policy, outcome: Outcome, attempt: int) -> bool:
    """llm_error's decision: whether to call the model again (up to
    :data:`LLM_RETRY_CAP`); else the framework's error stands."""
    policy.apply(outcome, can=("retry",))
    return outcome.verdict is Verdict.RETRY and attempt <= LLM_RETRY_CAP


def keep_working(policy: Policy, outcome: Outcome) -> str | None:
    """before_stop's decision: the instruction to send the model (a block's reason,
    and any context with it), or None to let the run end. Context on a stop that
    goes ahead has no next model call in this run to reach, so it is refused."""
    policy.apply(outcome, can=("block", "context"))
    if not outcome.blocked:
        if outcome.contexts:
            raise DecisionNotSupported(
                policy.framework, outcome.name, "context", hook_name(outcome),
                "the run ends here, so no model call is left to read it; block with the "
                "text as the reason to keep the agent working (docs/adapters.md, Events "
                "each adapter fires)")
        return None
    hook = hook_name(outcome) or "before_stop"
    reason = outcome.reason or "Keep working: the task is not done."
    text = f'<hook-context hook="{hook}">\n{reason}\n</hook-context>'
    extra = outcome.context_text()
    return f"{text}\n{extra}" if extra else text


def chosen_model(policy: Policy, outcome: Outcome, current: str, models: Mapping[str, Any],
                 make: Callable[[str], Any], *, cannot: str, option: str,
                 section: str) -> Any | None:
    """model_select's modify of ``model``: the model the call is to go to, or None
    to keep ``current``. A name in ``models`` (the adapter's ``models=``) is that
    model; any other is made by the framework's ``make`` ('provider:model'), and
    a name it cannot make raises :class:`DecisionNotSupported` naming the fix."""
    policy.apply(outcome, can=("modify",))
    name = outcome.changes.get("model")
    if name is None or name == current:
        return None
    model = models.get(name)
    if model is not None:
        return model
    try:
        return make(name)
    except Exception as exc:  # an unknown provider, a missing package or key
        raise DecisionNotSupported(
            policy.framework, outcome.name, "modify", hook_name(outcome),
            f"{cannot} of {name!r} ({error_text(exc)}); name a 'provider:model' it can "
            f"make, or pass the model as {option}(models={{{name!r}: model}}) "
            f"(docs/adapters.md, {section})") from exc


NOT_OFFERED = "engine.active-tools"
"""The ``hook`` of the block a call to a tool the model was not offered gets, as the
reference agent names its refusal (docs/adapters.md, Which policy applies)."""


def not_offered(name: str, offered: Iterable[str]) -> dict[str, Any]:
    """The structured block the model reads for a call to ``name``, a tool a
    before_llm_call hook took off this model call's offer."""
    return {"error": "tool call blocked", "tool_name": name,
            "reason": f"tool {name!r} was not offered to the model; the offered tools are: "
                      f"{', '.join(sorted(offered)) or 'none'}",
            "hint": "use one of the offered tools", "hook": NOT_OFFERED}
