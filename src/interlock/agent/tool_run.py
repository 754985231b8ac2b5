"""Phase 3, run tools: every call of one reply runs concurrently, each gated.

For one call: the arguments are validated against the tool's schema, then
before_tool_call (block, modify + re-validation, respond, approve, ask,
context), the engine's protected paths, declarative permission rules and
permission_request (then a person, or policy where none can answer), the
tool itself under a timeout, tool_error (a retry goes back through every gate,
and is capped), after_tool_call (fired for blocked calls too) and
tool_result_persist. Context from tool events goes into that tool's result
message.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import time
from typing import TYPE_CHECKING, Any

from interlock.agent.loop import Gate, RunStopped
from interlock.agent.options import PermissionPrompt
from interlock.agent.permissions import Action, PermissionPolicy, pinned, rule_outcome
from interlock.agent.tools import ToolContext, ToolError, call_handler
from interlock.engine.decisions import Verdict
from interlock.engine.redact import redact, redact_data
from interlock.models.openai import MALFORMED
from interlock.models.tooling import ModelResponse, PermissionRule, ToolCall, ToolSpec

if TYPE_CHECKING:
    from interlock.agent.loop import Agent


async def run_tools(agent: Agent, reply: ModelResponse) -> None:
    """Run every call concurrently; append one result message per call, in call order."""
    stopping = asyncio.Event()  # set by the first call whose hooks stop the run

    async def one(call: ToolCall) -> dict[str, Any]:
        try:
            return await run_one(agent, call, stopping)
        except RunStopped:
            stopping.set()
            raise

    results = await asyncio.gather(*(one(call) for call in reply.tool_calls),
                                   return_exceptions=True)
    stopped: RunStopped | None = None
    for call, result in zip(reply.tool_calls, results, strict=True):
        if isinstance(result, dict):
            agent.session.messages.append(result)
            continue
        if isinstance(result, RunStopped):
            stopped = stopped or result
            error = {"error": "run stopped", "reason": redact(str(result))}
        elif isinstance(result, asyncio.CancelledError):
            raise result
        else:
            error = {"error": f"internal error running {call.name}: "
                              f"{type(result).__name__}: {redact(str(result))}"}
        # Every call gets a result, so the transcript stays consistent and resumable.
        agent.session.messages.append({"role": "tool", "tool_call_id": call.id,
                                       "content": json.dumps(error)})
    if stopped is not None:
        raise stopped


def _problem(agent: Agent, call: ToolCall) -> str | None:
    if MALFORMED in call.args:
        return (f"the arguments of {call.name!r} are not a JSON object: "
                f"{str(call.args[MALFORMED])[:200]!r}; send arguments as a JSON object")
    if agent.tools.get(call.name) is None:
        return (f"unknown tool {call.name!r}; available tools: "
                f"{', '.join(agent.tools.names())}")
    problem = agent.tools.validate(call.name, call.args)
    return f"invalid arguments for {call.name}: {problem}" if problem else None


async def run_one(agent: Agent, call: ToolCall,
                  stopping: asyncio.Event | None = None) -> dict[str, Any]:
    cap = agent.options.context_cap
    contexts: list[str] = []
    args = {} if MALFORMED in call.args else call.args
    started = time.perf_counter()
    problem = _problem(agent, call)
    if problem is not None:
        agent.step("tool_error", tool=call.name, error=problem)
        status, result = "error", {"error": problem}
    else:
        status, result, args = await _gated_execute(agent, call, contexts, stopping)
    after = await agent.gate("after_tool_call", tool_call_id=call.id, tool_name=call.name,
                             args=args, result=result, status=status,
                             duration_ms=round((time.perf_counter() - started) * 1000, 3))
    contexts.append(after.context(cap))
    if after.blocked:
        result = {"error": "tool result blocked", "tool_name": call.name,
                  "reason": agent.reason_for_model(after)}
    else:
        result = after.payload.result
    persist = await agent.gate("tool_result_persist", tool_call_id=call.id,
                               tool_name=call.name, result=result)
    if persist.blocked:
        result = {"withheld": "a hook kept this result out of the transcript",
                  "reason": agent.reason_for_model(persist)}
    else:
        result = persist.payload.result
    # Redact before serializing: in JSON text a token right after an escaped
    # newline ("\\nAKIA...") has no word boundary and would slip through.
    content = redact(result) if isinstance(result, str) else json.dumps(
        redact_data(result), default=str)
    message: dict[str, Any] = {"role": "tool", "tool_call_id": call.id, "content": content}
    joined = "\n".join(c for c in contexts if c)
    if joined:
        message["hook_context"] = joined
    agent.step("tool_result", tool=call.name, status=status, result=message["content"])
    return message


def _engine_block(tool: str, reason: str) -> dict[str, Any]:
    return {"error": "tool call blocked", "tool_name": tool, "reason": reason, "hint": None,
            "hook": "engine"}


async def _gated_execute(agent: Agent, call: ToolCall, contexts: list[str],
                         stopping: asyncio.Event | None = None
                         ) -> tuple[str, Any, dict[str, Any]]:
    """(status, result, final args) of a valid call, through every gate."""
    cap = agent.options.context_cap
    tool = agent.tools.get(call.name)
    assert tool is not None
    args = call.args
    attempt = 1
    while True:
        gate = await agent.gate("before_tool_call", tool_call_id=call.id, tool_name=call.name,
                                args=args)
        contexts.append(gate.context(cap))
        if gate.blocked:
            refusal = gate.outcome.tool_block_error()
            refusal["reason"] = redact(refusal["reason"])
            by = gate.outcome.hook
            agent.step("blocked", event="before_tool_call", tool=call.name, args=args,
                       reason=refusal["reason"], hook=refusal["hook"],
                       stand_in=by is not None and by.kind == "extension-guard")
            return "blocked", refusal, args
        if gate.payload.args != args:
            agent.step("rewritten", tool=call.name, args=args, new_args=gate.payload.args,
                       hook=", ".join(h.hook for h in gate.outcome.hooks
                                      if h.verdict == "modify"))
        args = gate.payload.args
        # Where the hooks judged the call is where it runs and is checked: a
        # sibling call's `cd` must not move it after approval.
        cwd = gate.payload.cwd or str(agent.cwd)
        if gate.verdict is Verdict.RESPOND:
            agent.step("responded", tool=call.name, value=gate.outcome.value)
            return "responded", gate.outcome.value, args
        refused = protected_reason(agent, tool, args, cwd)
        if refused is not None:
            agent.step("blocked", event="protected", tool=call.name, args=args, reason=refused)
            return "blocked", _engine_block(call.name, refused), args
        with pinned(gate.live):  # the rules of the revision whose hooks judged it
            denied = await _permit(agent, call, tool, args, gate)
        if denied is not None:
            agent.step("blocked", event="permission", tool=call.name, args=args, reason=denied)
            return "blocked", _engine_block(call.name, denied), args
        if stopping is not None and stopping.is_set():
            # A sibling call's hooks stopped the run: nothing more starts.
            reason = "the run was stopped by a hook on another call of this reply"
            agent.step("blocked", event="stop", tool=call.name, args=args, reason=reason)
            return "blocked", _engine_block(call.name, reason), args
        agent.step("tool_call", tool=call.name, args=args)
        ctx = ToolContext(agent=agent, tool_call_id=call.id, tool_name=call.name,
                          gated_cwd=cwd)
        try:
            result = await asyncio.wait_for(call_handler(tool, args, ctx),
                                            agent.options.tool_timeout)
        except TimeoutError:
            error = f"{call.name} did not finish within {agent.options.tool_timeout:g}s"
        except (ToolError, OSError, ValueError) as exc:
            error = redact(str(exc))
        except Exception as exc:  # a tool's bug: the model hears of it, the run goes on
            error = redact(f"{type(exc).__name__}: {exc}")
        else:
            await _files_changed(agent, ctx)
            return "ok", result, args
        await _files_changed(agent, ctx)
        failed = await agent.gate("tool_error", tool_call_id=call.id, tool_name=call.name,
                                  args=args, error=error, attempt=attempt)
        contexts.append(failed.context(cap))
        if failed.verdict is Verdict.RETRY and attempt <= agent.options.tool_retry_cap:
            attempt += 1  # back through before_tool_call and permissions (docs/agent.md)
            continue
        return "error", {"error": failed.payload.error}, args


def protected_reason(agent: Agent, tool: ToolSpec, args: dict[str, Any],
                     cwd: str) -> str | None:
    """The engine's own refusal (protected paths) for a call run in ``cwd``,
    independent of any hook."""
    if tool.name == "terminal" and isinstance(args.get("command"), str):
        return agent.protected.check_command(args["command"], cwd)
    if tool.writes_files and isinstance(args.get("path"), str):
        return agent.protected.check_path(args["path"], cwd)
    if tool.read_only or tool.source == "builtin":
        return None
    # A tool from elsewhere (an extension) that may change things: we cannot
    # know what its arguments mean, so any top-level string that reads as a
    # command or path naming a protected place refuses the call. A floor, as
    # for the terminal, not a sandbox.
    for value in args.values():
        if isinstance(value, str):
            reason = agent.protected.check_command(value, cwd)
            if reason is not None:
                return reason
    return None


async def _permit(agent: Agent, call: ToolCall, tool: ToolSpec, args: dict[str, Any],
                  gate: Gate) -> str | None:
    """None when the call may run, else why it may not (docs/agent.md, What each
    decision does here)."""
    rule = agent.policy.decide(call.name, args)
    if rule is Action.DENY:
        return await _denied(agent, call, args, _ruled(agent, gate, args,
                                                       "denied by a permission rule"))
    if gate.verdict is Verdict.APPROVE:
        return None
    asked = gate.verdict is Verdict.ASK
    if not (asked or rule is Action.ASK or (rule is None and tool.needs_approval)):
        return None
    reason = gate.outcome.reason if asked else (
        "a permission rule asks" if rule is Action.ASK else f"{call.name} needs approval")
    agent.step("asked", tool=call.name, args=args, reason=reason,
               hook=gate.outcome.hook.qualified_name
               if asked and gate.outcome.hook is not None else None)
    request = await agent.gate("permission_request", tool_call_id=call.id, tool_name=call.name,
                               args=args, reason=reason)
    # Rules a hook suggests for later calls count only once this call is
    # allowed (by a hook's approve or a person's yes): a refused or unanswered
    # request must not loosen the policy for the next one.
    updates = _valid_updates(agent, request.payload.permission_updates)
    if request.verdict is Verdict.APPROVE:
        _apply_updates(agent, updates)
        return None
    if request.blocked:
        return await _denied(agent, call, args, agent.reason_for_model(request))
    ask_person = agent.options.ask_person
    if ask_person is None:
        # Non-interactive: declarative rules are the policy; an ask nobody can
        # answer is a block.
        tentative = PermissionPolicy([*agent.policy.rules, *updates], live=agent.policy.live)
        if tentative.decide(call.name, args) is Action.ALLOW and rule is not Action.ASK:
            _apply_updates(agent, updates)  # they are what allowed it
            return None
        reason = f"{reason}; no person can answer in a non-interactive run"
        if rule is Action.ASK and not asked:
            _ruled(agent, gate, args, reason)
        return await _denied(agent, call, args, reason)
    await agent.observe("notification", kind="permission_prompt",
                        message=f"{call.name} needs permission: {redact(reason or '')}")
    answer = ask_person(PermissionPrompt(call.name, dict(args), reason, agent.session.id))
    if inspect.isawaitable(answer):
        try:
            answer = await asyncio.wait_for(_awaited(answer), agent.options.permission_timeout)
        except TimeoutError:
            return await _denied(agent, call, args, "nobody answered the permission prompt "
                                 f"within {agent.options.permission_timeout:g}s")
    if answer:
        _apply_updates(agent, updates)
        return None
    return await _denied(agent, call, args, "denied by the user")


def _ruled(agent: Agent, gate: Gate, args: dict[str, Any], reason: str) -> str:
    """Record that a rule refused the call of ``gate`` (its audit row by
    ``code:permissions``, docs/agent.md, Permissions); returns ``reason``."""
    call = gate.payload
    if call.args is not args:
        call = call.replace(args=args)
    agent.engine.record(rule_outcome(call, "block", reason, gate.outcome.revision))
    return reason


def _valid_updates(agent: Agent, updates: Any) -> list[PermissionRule]:
    valid = []
    for update in updates:
        try:
            valid.append(PermissionPolicy.coerce(update))
        except Exception as exc:
            agent.step("warning", message=f"ignored permission update {update!r}: {exc}")
    return valid


def _apply_updates(agent: Agent, updates: list[PermissionRule]) -> None:
    for update in updates:
        agent.policy.add(update)


async def _awaited(value: Any) -> Any:
    return await value


async def _denied(agent: Agent, call: ToolCall, args: dict[str, Any], reason: str) -> str:
    await agent.observe("permission_denied", tool_call_id=call.id, tool_name=call.name,
                        args=args, reason=reason)
    return reason


def _watched(agent: Agent, changed: list[tuple[str, str]]) -> list[tuple[str, str]]:
    watched = [os.path.realpath(os.path.join(agent.cwd, p)) for p in agent.session.watch_paths]
    out = []
    for path, change in changed:
        real = os.path.realpath(path)
        if any(real == w or real.startswith(w.rstrip(os.sep) + os.sep) for w in watched):
            out.append((real, change))
    return out


async def _files_changed(agent: Agent, ctx: ToolContext) -> None:
    if not ctx.changed or not agent.session.watch_paths:
        return
    for path, change in _watched(agent, ctx.changed):
        await agent.observe("file_changed", path=path, change=change, tool_name=ctx.tool_name)
