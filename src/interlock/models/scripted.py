"""A scripted model: a queue of steps, for tests, demos and offline runs.

A script is a list of steps (JSON or YAML, or Python values):

    - text: "Let me look."
      tool_calls:
        - {name: terminal, args: {command: "ls"}}
    - error: "rate limited"        # the call fails with a ModelError
      status_code: 429
    - match: "exit_code"           # optional: regex the last message must contain
      text: "Done."

Every call is recorded (``calls``). The model fails loudly: a call with no
step left raises :class:`ScriptExhausted`, a step whose ``match`` does not
hold raises :class:`ScriptMismatch`, and ``assert_done()`` raises when steps
are left over.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interlock.engine.errors import ConfigError
from interlock.models.tooling import ModelError, ModelRequest, ModelResponse, ToolCall

StepFn = Callable[[ModelRequest], "ModelResponse | Step"]
_STEP_KEYS = frozenset({"text", "tool_calls", "error", "status_code", "match",
                        "finish_reason", "usage"})


class ScriptExhausted(ModelError):
    """The model was called with no step left."""


class ScriptMismatch(ModelError):
    """A step's ``match`` did not hold for the last message."""


@dataclass(slots=True)
class Step:
    """One scripted reply."""

    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    error: str | None = None
    """When set, the call raises ModelError(error) instead of replying."""
    status_code: int | None = None
    match: str | None = None
    """A regex the last message's content must contain (re.search)."""
    finish_reason: str | None = None
    usage: dict[str, int] = field(default_factory=dict)


def _last_content(request: ModelRequest) -> str:
    if not request.messages:
        return ""
    content = request.messages[-1].get("content")
    if isinstance(content, str):
        return content
    return json.dumps(content, default=str)


def parse_step(raw: Any, *, where: str = "script", index: int = 0) -> Step:
    """Build a Step from JSON-like data, with errors naming the step and field."""
    label = f"steps[{index}]"
    if isinstance(raw, str):
        return Step(text=raw)
    if not isinstance(raw, dict):
        raise ConfigError(f"a step must be an object or a string, got {type(raw).__name__}",
                          file=where, field=label, fix="write {text: ...} or {tool_calls: [...]}")
    unknown = set(raw) - _STEP_KEYS
    if unknown:
        raise ConfigError(f"unknown key(s) {sorted(unknown)}", file=where, field=label,
                          fix=f"use only {sorted(_STEP_KEYS)}")
    text = raw.get("text", "")
    if not isinstance(text, str):
        raise ConfigError("must be a string", file=where, field=f"{label}.text")
    calls: list[ToolCall] = []
    raw_calls = raw.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ConfigError("must be a list", file=where, field=f"{label}.tool_calls")
    for j, call in enumerate(raw_calls):
        f = f"{label}.tool_calls[{j}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ConfigError("a tool call needs a 'name' string", file=where, field=f,
                              fix="write {name: terminal, args: {command: ls}}")
        args = call.get("args", {})
        if not isinstance(args, dict):
            raise ConfigError("'args' must be an object", file=where, field=f"{f}.args")
        calls.append(ToolCall(id=str(call.get("id") or f"call_{index}_{j}"),
                              name=call["name"], args=args))
    error = raw.get("error")
    if error is not None and not isinstance(error, str):
        raise ConfigError("must be a string", file=where, field=f"{label}.error")
    match = raw.get("match")
    if match is not None:
        try:
            re.compile(match)
        except (re.error, TypeError) as exc:
            raise ConfigError(f"not a valid regex: {exc}", file=where,
                              field=f"{label}.match") from None
    status = raw.get("status_code")
    if status is not None and not isinstance(status, int):
        raise ConfigError("must be an integer", file=where, field=f"{label}.status_code")
    return Step(text=text, tool_calls=calls, error=error, status_code=status, match=match,
                finish_reason=raw.get("finish_reason"), usage=dict(raw.get("usage") or {}))


class ScriptedModel:
    """A ModelProvider that replays a script of steps and records every call."""

    def __init__(self, steps: Sequence[Step | dict[str, Any] | str | StepFn] = (),
                 *, name: str = "scripted", source: str = "script") -> None:
        self.name = name
        self.source = source
        self._steps: list[Step | StepFn] = [
            parse_step(s, where=source, index=i) if isinstance(s, (dict, str)) else s
            for i, s in enumerate(steps)
        ]
        self._next = 0
        self.calls: list[ModelRequest] = []
        """Every request, in order (deep copies: later changes do not leak in)."""

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """Load a JSON or YAML script: a list of steps, or ``{steps: [...]}``."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read the script: {exc.strerror}", file=str(p),
                              fix="pass an existing file: --model scripted:PATH") from None
        try:
            if p.suffix in (".yaml", ".yml"):
                import yaml

                data = yaml.safe_load(text)
            else:
                data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid JSON: {exc.msg}", file=str(p), line=exc.lineno,
                              fix="check the syntax near that line") from None
        except Exception as exc:  # yaml.YAMLError: keep yaml imported lazily
            mark = getattr(exc, "problem_mark", None)
            raise ConfigError(f"invalid YAML: {getattr(exc, 'problem', exc)}", file=str(p),
                              line=(mark.line + 1) if mark is not None else None,
                              fix="check the syntax near that line") from None
        if isinstance(data, dict) and "steps" in data:
            data = data["steps"]
        if not isinstance(data, list):
            raise ConfigError("a script is a list of steps (or an object with 'steps')",
                              file=str(p), fix="write a YAML list: - text: hello")
        return cls(data, name=p.stem, source=str(p))

    @property
    def remaining(self) -> int:
        return len(self._steps) - self._next

    def add(self, *steps: Step | dict[str, Any] | str | StepFn) -> None:
        start = len(self._steps)
        for i, s in enumerate(steps):
            self._steps.append(parse_step(s, where=self.source, index=start + i)
                               if isinstance(s, (dict, str)) else s)

    def assert_done(self) -> None:
        """Raise when steps are left over (a test expected more calls)."""
        if self.remaining:
            raise AssertionError(f"scripted model {self.name!r}: {self.remaining} step(s) "
                                 f"left unused after {len(self.calls)} call(s)")

    def _take(self, request: ModelRequest) -> ModelResponse:
        self.calls.append(copy.deepcopy(request))
        index = self._next
        if index >= len(self._steps):
            raise ScriptExhausted(
                f"scripted model {self.name!r} ({self.source}) has no step left for call "
                f"{index + 1}; last message: {_last_content(request)[:200]!r}")
        self._next += 1
        step = self._steps[index]
        if callable(step):
            made = step(request)
            if isinstance(made, ModelResponse):
                return made
            step = made
        if step.match is not None and re.search(step.match, _last_content(request)) is None:
            raise ScriptMismatch(
                f"scripted model {self.name!r} step {index}: expected the last message to "
                f"match {step.match!r}, got {_last_content(request)[:200]!r}")
        if step.error is not None:
            raise ModelError(step.error, status_code=step.status_code)
        calls = [ToolCall(id=c.id, name=c.name, args=copy.deepcopy(c.args))
                 for c in step.tool_calls]
        return ModelResponse(text=step.text, tool_calls=calls,
                             finish_reason=step.finish_reason
                             or ("tool_calls" if calls else "stop"),
                             usage=dict(step.usage))

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return self._take(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[str | ModelResponse]:
        response = self._take(request)
        for word in re.findall(r"\S+\s*|\s+", response.text):
            yield word
        yield response
