"""The interactive loop behind `interlock chat`.

Input is read off the event loop's thread so hooks keep running; a tool that
needs permission asks at the terminal (after a notification event), with the
same prompt extensions get from ``ctx.ui.confirm``. On a TTY the terminal is
:class:`interlock.hosts.terminal.chat_ui.ChatUI` (status line, widgets, shortcuts);
otherwise lines and answers are plain reads.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from interlock.agent.options import PermissionPrompt
from interlock.ext.ui import UIState
from interlock.hosts.terminal.chat_ui import ChatUI, PlainUI, Pressed
from interlock.hosts.terminal.runner import RunSpec, _print_step, build_agent


def terminal_asker(ui: PlainUI) -> Callable[[PermissionPrompt], Awaitable[bool]]:
    """Ask the person at the terminal (one question at a time: see PlainUI)."""

    async def ask_person(prompt: PermissionPrompt) -> bool:
        return await ui.confirm(f"allow {prompt.tool_name} {prompt.args}? ({prompt.reason})",
                                False)

    return ask_person


def _write(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def chat(spec: RunSpec, read: Callable[[str], str] = input, *, tty: bool | None = None) -> int:
    if tty is None:
        tty = read is input and sys.stdin.isatty() and sys.stdout.isatty()
    ui = ChatUI(_write) if tty else PlainUI(read, _write)

    def on_text(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def on_step(kind: str, data: dict[str, Any]) -> None:
        _print_step(kind, data)
        ui.invalidate()

    agent, host = build_agent(spec, interactive=True, on_text=on_text, on_step=on_step,
                              ask_person=terminal_asker(ui))
    state = host.extensions.ui if host.extensions is not None else UIState()
    ui.attach(state, agent)
    sys.stderr.write(f"session {agent.session.id} · model {agent.session.model} · "
                     "/help for commands, /exit to quit\n")
    sys.stderr.write(agent.sandbox.status.line() + "\n")

    async def loop() -> None:
        try:
            while True:
                try:
                    line = await ui.read_line("> ")
                except EOFError:
                    break
                if isinstance(line, Pressed):
                    await ui.run_shortcut(line)
                    continue
                line = line.strip()
                if not line:
                    continue
                if line in ("/exit", "/quit"):
                    break
                if line.startswith("/"):
                    reply: Any = await agent.command(line)
                    if reply:
                        sys.stdout.write(f"{reply}\n")
                    continue
                result = await agent.run(line)
                if not result.ok:
                    sys.stderr.write(f"[{result.status.value}] {result.text}\n")
            await agent.close()
        finally:
            state.frontend = None
            host.close()

    asyncio.run(loop())
    return 0
