"""The hook kinds that are not a local program: http, prompt and agent.

Checking (at discovery, approved or not) and building (once approved) live
together here, so both read a definition the same way. Every error names the
file, line, field and fix through the caller's error builder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from interlock.config.model import LLM_KINDS, MAX_TIMEOUT, HookDef, HookKind
from interlock.engine.errors import ConfigError
from interlock.engine.hooks import Executor

Err = Callable[[str, str, str], ConfigError]

REMOTE_KINDS = frozenset({HookKind.HTTP, HookKind.PROMPT, HookKind.AGENT})

_OWNERS: dict[str, frozenset[HookKind]] = {
    "url": frozenset({HookKind.HTTP}),
    "headers_from_env": frozenset({HookKind.HTTP}),
    "hmac_secret_env": frozenset({HookKind.HTTP}),
    "allow_private": frozenset({HookKind.HTTP}),
    "prompt": LLM_KINDS,
    "prompt_file": LLM_KINDS,
    "model": LLM_KINDS,
    "max_output": LLM_KINDS,
    "max_input": LLM_KINDS,
    "max_turns": frozenset({HookKind.AGENT}),
    "max_cost": frozenset({HookKind.AGENT}),
    "server": frozenset({HookKind.MCP}),
    "tool": frozenset({HookKind.MCP}),
}
_LOCAL_ONLY = ("command", "handler", "dialect", "env", "env_passthrough", "cwd")
"""Fields about a local program, meaningless for a URL or a model."""
_BLANK = HookDef(name="_")


def check(d: HookDef, err: Err, events: tuple[str, ...], folder: Path) -> None:
    """Fields belong to their kind; an http/prompt/agent hook is complete and valid."""
    kind = d.effective_kind
    for name, owners in _OWNERS.items():
        if kind not in owners and getattr(d, name) != getattr(_BLANK, name):
            kinds = " or ".join(sorted(k.value for k in owners))
            raise err(name, f"{name} is for {kinds} hooks, and this is a {kind.value} hook",
                      f"remove {name}, or write kind = \"{sorted(k.value for k in owners)[0]}\"")
    if kind is HookKind.MCP:
        if not d.tool:
            raise err("tool", "an mcp hook needs the tool it calls",
                      'add tool = "check" (a tool of the server that command starts)')
        if d.dialect is not None:
            raise err("dialect", "an mcp hook speaks MCP, not a host's hook protocol",
                      "remove dialect")
    if kind not in REMOTE_KINDS:
        return
    for name in _LOCAL_ONLY:
        if getattr(d, name) != getattr(_BLANK, name):
            raise err(name, f"a {kind.value} hook runs no local program, so it takes no {name}",
                      f"remove {name}")
    if kind is HookKind.HTTP:
        _check_http(d, err)
        return
    if d.modifies:
        raise err("modifies", f"a {kind.value} hook may answer only block, ask, context or "
                              "nothing (it reads text an attacker may have written)",
                  "remove modifies = true; use a command or python hook to change calls")
    for name in ("max_output", "max_input", "max_turns", "max_cost"):
        value = getattr(d, name)
        if value is not None and value <= 0:
            raise err(name, f"{name} must be positive, got {value}", f"give {name} a positive "
                                                                     "number")
    from interlock.executors.prompt import PromptTemplate

    text = template(d, err, folder)
    try:
        PromptTemplate(text).validate(events)
    except ConfigError as exc:
        raise err("prompt_file" if d.prompt_file else "prompt", exc.message,
                  exc.fix or "see docs/extensions.md") from None


def _check_http(d: HookDef, err: Err) -> None:
    if not d.url:
        raise err("url", "an http hook needs a url", 'add url = "https://hooks.example.com/check"')
    try:
        _http(d)  # builds nothing yet: connections open on first use
    except ConfigError as exc:
        raise err(exc.field or "url", exc.message, exc.fix or "see docs/http-hooks.md") from None


def template(d: HookDef, err: Err, folder: Path) -> str:
    """The judge's prompt template, from ``prompt`` or ``prompt_file``."""
    if (d.prompt is None) == (d.prompt_file is None):
        raise err("prompt", f"a {d.effective_kind.value} hook needs prompt or prompt_file "
                            "(one of them)",
                  'add prompt = "Does this break POLICY.md? {{invocation_json}}"')
    if d.prompt is not None:
        if not d.prompt.strip():
            raise err("prompt", "the prompt is empty", "write what the judge must decide")
        return d.prompt
    assert d.prompt_file is not None
    path = prompt_path(d, folder)
    assert path is not None
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise err("prompt_file", f"cannot read {path}: {exc}",
                  "point prompt_file at a UTF-8 text file, relative to this file's "
                  "folder") from None


def prompt_path(d: HookDef, folder: Path) -> Path | None:
    return (folder / d.prompt_file).resolve() if d.prompt_file is not None else None


def model_path(d: HookDef, folder: Path) -> Path | None:
    """The script of a ``scripted:FILE`` model, resolved from the declaring folder."""
    if d.model is None or not d.model.startswith("scripted:"):
        return None
    return (folder / d.model.partition(":")[2]).resolve()


def referenced_files(d: HookDef, folder: Path) -> list[Path]:
    """Files the digest must cover: the template file and a scripted model's script."""
    return [p for p in (prompt_path(d, folder), model_path(d, folder)) if p is not None]


def _http(d: HookDef) -> Executor:
    from interlock.executors.http import HttpExecutor

    assert d.url is not None
    return HttpExecutor(d.url, hook_name=d.name, timeout=min(d.timeout, MAX_TIMEOUT),
                        headers_from_env=dict(d.headers_from_env),
                        hmac_secret_env=d.hmac_secret_env, allow_private=list(d.allow_private))


def build(d: HookDef, folder: Path, project_root: Path, events: tuple[str, ...],
          err: Err, protected: Sequence[Path] = ()) -> Executor:
    """The executor of an http, prompt or agent hook (only once it is approved).

    ``protected``: the registry's own policy and state folders, which an agent
    judge may not read (beside those the environment names).
    """
    kind = d.effective_kind
    if kind is HookKind.HTTP:
        return _http(d)
    from interlock.models import resolve_model

    spec = d.model
    script = model_path(d, folder)
    if script is not None:
        spec = f"scripted:{script}"
    try:
        provider, model_name = resolve_model(spec)
    except ConfigError as exc:
        raise err("model", exc.message.replace("--model", "model"),
                  'write model = "openai:NAME" or "scripted:FILE" (relative to this file), '
                  "or set INTERLOCK_MODEL") from None
    text = template(d, err, folder)
    timeout = min(d.timeout, MAX_TIMEOUT)
    kwargs: dict[str, Any] = {"model": model_name, "timeout": timeout}
    if d.max_output is not None:
        kwargs["max_output_chars"] = d.max_output
    if d.max_input is not None:
        kwargs["max_input_chars"] = d.max_input
    if kind is HookKind.PROMPT:
        from interlock.executors.prompt import PromptExecutor

        executor: Executor = PromptExecutor(text, provider, **kwargs)
        return executor
    from interlock.executors.agent import AgentExecutor

    if d.max_turns is not None:
        kwargs["max_turns"] = d.max_turns
    if d.max_cost is not None:
        kwargs["max_cost"] = d.max_cost
    judge = AgentExecutor(text, provider, project_root=project_root, protected=protected,
                          **kwargs)
    judge.validate(events)
    return judge
