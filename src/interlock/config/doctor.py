"""`interlock hooks doctor`: what could stop a hook from doing its job.

Checks, per hook: the script exists and is executable, consent (and drift
since the last approval), requirements, a smoke run on a sample payload (with
``replay = true``, so hooks with side effects can skip them) and its latency,
and fail-open hooks on gate events (three crashes open a breaker on them and
let traffic through for a minute).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interlock.config.model import LLM_KINDS
from interlock.config.registry import HookEntry, Registry
from interlock.engine.catalog import BY_NAME, Field
from interlock.engine.errors import ConfigError, HookFailure
from interlock.engine.hooks import Hook, Invocation
from interlock.engine.invoke import new_id
from interlock.events import Event, make

_SAMPLES: dict[str, Any] = {"str": "", "str | None": None, "int": 0, "bool": False,
                            "dict[str, Any]": {}, "list[dict[str, Any]]": [], "list[str]": [],
                            "Any": None, "float": 0.0, "int | None": None,
                            "bool | None": None}


def sample_event(name: str, *, tool: str | None = None, payload: dict[str, Any] | None = None,
                 cwd: str = "") -> Event:
    """A payload for ``name`` with every required field filled in, then ``payload`` on top."""
    spec = BY_NAME.get(name, None)
    data: dict[str, Any] = {"session_id": "hooks-test", "cwd": cwd}
    if spec is not None:
        for f in spec.fields:
            if f.required:
                data[f.name] = _sample_value(name, f)
        if tool is not None and any(f.name == "tool_name" for f in spec.fields):
            data["tool_name"] = tool
    data.update(payload or {})
    return make(name, data)


def _sample_value(event: str, f: Field) -> Any:
    if f.name == "tool_name":
        return "terminal"
    if f.name in ("text", "content", "task", "title"):
        return "hello"
    if f.name == "command":
        return "help"
    if f.name == "model":
        return "test-model"
    return _SAMPLES.get(f.type)


@dataclass(slots=True)
class Finding:
    hook: str
    level: str
    """ok | warn | error"""
    check: str
    message: str


@dataclass(slots=True)
class Report:
    findings: list[Finding] = field(default_factory=list)

    def add(self, hook: str, level: str, check: str, message: str) -> None:
        self.findings.append(Finding(hook, level, check, message))

    @property
    def problems(self) -> int:
        return sum(1 for f in self.findings if f.level != "ok")


def _script(entry: HookEntry) -> Path | None:
    cmd = entry.command
    if cmd is None:
        return None
    first = cmd[0] if isinstance(cmd, list) else (shlex.split(cmd) or [""])[0]
    return Path(first) if os.path.isabs(first) else None


async def _smoke(hook: Hook, event: Event) -> tuple[str, float, str]:
    t0 = time.perf_counter()
    result: Any
    try:
        if hook.executor is not None:
            inv = Invocation(event=event, hook=hook, invocation_id=new_id(), replay=True)
            result = await asyncio.wait_for(hook.executor(inv), hook.timeout)
        else:
            assert hook.fn is not None
            if hook.blocking:
                result = await asyncio.wait_for(asyncio.to_thread(hook.fn, event), hook.timeout)
            else:
                result = hook.fn(event)
                if inspect.isawaitable(result):
                    result = await asyncio.wait_for(result, hook.timeout)
    except TimeoutError:
        return "error", time.perf_counter() - t0, f"timed out after {hook.timeout:g}s"
    except HookFailure as exc:
        return "error", time.perf_counter() - t0, f"failed ({exc.mode.value}): {exc}"
    except Exception as exc:
        return "error", time.perf_counter() - t0, f"raised {type(exc).__name__}: {exc}"
    verdict = getattr(result, "verdict", None)
    return "ok", time.perf_counter() - t0, \
        f"answered {verdict.value if verdict is not None else 'no opinion'}"


def _fail_open(e: HookEntry) -> list[str]:
    """The definition's fail-open gate events, with its own breaker numbers; judged on
    the definition, so an unapproved (not yet running) hook is warned about too."""
    from interlock.config.build import Refusal, make_hook, policy_for
    from interlock.engine.errors import FailureMode
    from interlock.reliability import fail_open_warnings

    probe = make_hook(e.declared, e.digest, executor=Refusal(FailureMode.CRASH, "doctor"))
    try:
        policy = policy_for(e.definition)
    except ConfigError:  # already refused by validation; keep the defaults here
        policy = None
    return [w.replace(f"hook {e.qualified_name} ", "", 1)
            for w in fail_open_warnings([probe], policy)]


def diagnose(registry: Registry, *, smoke: bool = True) -> Report:
    report = Report()
    runs: list[tuple[str, Hook, Event]] = []
    approvals = registry.trust.approvals()
    for name in registry.withheld:
        report.add(name, "error", "removed",
                   f"a fail-closed hook was removed or weakened; it blocks until an operator "
                   f"runs `interlock hooks approve {name}`")
    for e in registry.hooks:
        q = e.qualified_name
        d = e.definition
        if not e.enabled or e.shadowed_by is not None:
            report.add(q, "ok", "state", e.state)
            continue
        script = _script(e)
        if script is not None:
            if not script.exists():
                report.add(q, "error", "script", f"{script} does not exist")
            elif not os.access(script, os.X_OK):
                report.add(q, "error", "script", f"{script} is not executable "
                           f"(fix: chmod +x {script})")
        if e.needs_approval and not e.approved:
            old = approvals.get(e.key)
            if old is not None:
                report.add(q, "error", "consent", "changed since it was approved (drift); "
                           f"review it, then `interlock hooks approve {q}`")
            else:
                report.add(q, "error", "consent", f"not approved; `interlock hooks approve {q}`")
        if not e.eligible:
            report.add(q, "warn" if e.hook is None else "error", "requirements", e.why)
        for warning in _fail_open(e):
            report.add(q, "warn", "fail-open", warning)
        if smoke and e.hook is not None and e.state == "active" \
                and d.effective_kind in LLM_KINDS:
            # A smoke run of a judge would call (and pay for) a model.
            report.add(q, "ok", "smoke", f"skipped: a {d.effective_kind.value} hook calls a "
                       "model; try it with `interlock hooks test`")
        elif smoke and e.hook is not None and e.state == "active":
            runs.append((q, e.hook, sample_event(e.declared.events[0],
                                                 cwd=str(registry.project_root))))
    _extension_hooks(registry, report)
    if runs:
        asyncio.run(_smoke_all(registry, runs, report))
    return report


def _extension_hooks(registry: Registry, report: Report) -> None:
    """Extensions' hooks (``ctx.on``): their breaker's state, and the fail-open
    warning every kind gets (docs/reliability.md, Circuit breaker)."""
    from interlock.reliability import BreakerKey, fail_open_warnings

    book = registry.breakers
    held = {b.key: b for b in book.snapshot()}
    for hook in registry.engine.hooks:
        if "extension" not in hook.meta:
            continue
        q = hook.qualified_name
        key = BreakerKey.of(hook)
        breaker = held.get(key)
        state = str(book.state(key))  # as callers see it: an expired cooldown is half-open
        report.add(q, "ok" if state == "closed" else "warn", "breaker",
                   f"extension {hook.meta['extension']}'s hook: circuit breaker {state}"
                   + ("" if breaker is None else f" ({breaker.failures} failure(s) in a row)"))
        for warning in fail_open_warnings([hook]):
            report.add(q, "warn", "fail-open", warning.replace(f"hook {q} ", "", 1))


async def _smoke_all(registry: Registry, runs: list[tuple[str, Hook, Event]],
                     report: Report) -> None:
    # One loop for every smoke run, and the workers are stopped in it.
    try:
        for q, hook, event in runs:
            level, seconds, message = await _smoke(hook, event)
            report.add(q, level, "smoke", f"{message} in {seconds * 1000:.1f} ms "
                       f"(sample {event.name})")
    finally:
        await registry.aclose()
