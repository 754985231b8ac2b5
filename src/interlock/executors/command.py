"""The command executor: spawn one process per call.

Native hooks speak the wire contract v1 (docs/wire-contract.md): the request body on
stdin as one line of JSON; exit 0 means "read stdout" (empty is no
opinion), exit 2 means block with stderr as the reason, any other exit is a
failure. A hook with a ``dialect`` speaks that host's protocol instead (see
``interlock.executors.dialects`` and docs/dialects.md).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from interlock.engine.decisions import Decision, block, decode_wire
from interlock.engine.errors import ConfigError, ContractError, HookCrash
from interlock.engine.hooks import Executor
from interlock.engine.strictjson import AmbiguousJSON
from interlock.engine.strictjson import loads as strict_loads
from interlock.executors._process import Completed, argv_for, clean_env, host_env, run_once

if TYPE_CHECKING:
    from interlock.engine.hooks import Invocation
    from interlock.executors.dialects import Dialect

DEFAULT_OUTPUT_CAP = 1_048_576
_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class CommandExecutor(Executor):
    """Runs a hook as one process per call (an :class:`interlock.engine.hooks.Executor`)."""

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        hook_name: str,
        dialect: str | None = None,
        cwd: str | Path,
        env: Mapping[str, str] | None = None,
        env_passthrough: Sequence[str] = (),
        timeout: float = 60.0,
        output_cap: int = DEFAULT_OUTPUT_CAP,
        project_dir: str | Path | None = None,
        plugin_root: str | Path | None = None,
    ) -> None:
        """
        ``command``: a string (``sh -c``, or shlex-split for the Hermes dialect)
        or a list (argv). ``cwd``: where the process runs (the project root, or
        a Moltis HOOK.md hook's own folder). ``env`` is set on top of the
        environment; ``env_passthrough`` names host variables a native hook may
        see (dialect hooks see the whole user environment, as in their hosts).
        ``project_dir`` defaults to ``cwd``; ``plugin_root`` is exported to
        dialects that have such a variable (CLAUDE_PLUGIN_ROOT).
        """
        from interlock.executors.dialects import get

        self.hook_name = hook_name
        self.dialect: Dialect | None = get(dialect) if dialect is not None else None
        try:
            self.argv = argv_for(command, shell=self.dialect.shell if self.dialect else True)
        except ValueError as exc:
            raise ConfigError(str(exc), field="command",
                              fix=f"give hook {hook_name!r} a command to run") from None
        if timeout <= 0:
            raise ConfigError(f"timeout must be positive, got {timeout!r}", field="timeout")
        if output_cap <= 0:
            raise ConfigError(f"output_cap must be positive, got {output_cap!r}",
                              field="output_cap")
        self.exec_form = not isinstance(command, str)
        self.cwd = str(cwd)
        self.env = dict(env or {})
        self.env_passthrough = tuple(env_passthrough)
        self.timeout = float(timeout)
        self.output_cap = int(output_cap)
        self.project_dir = str(project_dir if project_dir is not None else cwd)
        self.plugin_root = str(plugin_root) if plugin_root is not None else None

    def __repr__(self) -> str:
        dialect = f", dialect={self.dialect.name!r}" if self.dialect else ""
        return f"CommandExecutor({self.argv!r}{dialect})"

    async def __call__(self, invocation: Invocation) -> Decision | None:
        label = repr(invocation.hook.qualified_name)
        dialect = self.dialect
        argv = self.argv
        if dialect is None:
            stdin = msgspec.json.encode(invocation.wire()) + b"\n"
            env = clean_env({"INTERLOCK_PROJECT_DIR": self.project_dir, **self.env},
                            self.env_passthrough)
        else:
            stdin = dialect.encode(invocation, project_dir=self.project_dir)
            host = dialect.env(invocation, project_dir=self.project_dir,
                               plugin_root=self.plugin_root)
            env = host_env(host, self.env)
            if self.exec_form and host:
                # Claude Code substitutes its variables in an exec-form command
                # (no shell would expand them); a shell string expands them itself.
                argv = [_PLACEHOLDER.sub(lambda m: host.get(m[1], m[0]), a) for a in argv]
        result = await run_once(argv, stdin=stdin, cwd=self.cwd, env=env,
                                timeout=self.timeout, output_cap=self.output_cap, label=label)
        if dialect is not None:
            return dialect.decode(invocation, result)
        return decode_native(result, label)


def decode_native(result: Completed, label: str) -> Decision | None:
    """Wire contract v1: exit 0 reads stdout, exit 2 blocks, anything else failed."""
    code = result.exit_code
    if code == 0:
        return decode_answer(result.stdout, label)
    if code == 2:
        return block(result.stderr_text() or f"blocked by hook {label} (exit 2)")
    raise HookCrash(exit_message(label, result))


def decode_answer(stdout: bytes, label: str) -> Decision | None:
    """Decode a native answer document (empty means no opinion)."""
    if not stdout.strip():
        return None
    try:
        answer = strict_loads(stdout)
    except AmbiguousJSON as exc:
        raise ContractError(
            f"hook {label} printed an ambiguous JSON answer ({exc}): {_preview(stdout)} "
            "(fix: name each field once)") from None
    except ValueError:
        raise ContractError(
            f"hook {label} printed something that is not a JSON answer: "
            f"{_preview(stdout)} (fix: print one JSON object such as "
            '{"decision": "block", "reason": "..."}, or nothing)') from None
    try:
        return decode_wire(answer)
    except ValueError as exc:
        raise ContractError(f"hook {label} answered {_preview(stdout)}: {exc}") from None


def exit_message(label: str, result: Completed) -> str:
    code = result.exit_code
    what = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
    first = result.stderr_text().splitlines()
    return f"hook {label} {what}" + (f": {first[0]}" if first else "")


def _preview(data: bytes, limit: int = 120) -> str:
    text = data.decode("utf-8", "replace").strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")
