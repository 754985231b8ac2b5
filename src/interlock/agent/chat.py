"""The interactive loop behind `interlock chat`.

Input is read on a worker thread so hooks keep running on the loop; a tool
that needs permission asks on the terminal (after a notification event).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from interlock.agent.options import PermissionPrompt
from interlock.agent.runner import RunSpec, _print_step, build_agent


def terminal_asker(read: Callable[[str], str]
                   ) -> Callable[[PermissionPrompt], Awaitable[bool]]:
    """Ask the person at the terminal. Calls of one reply run concurrently; their
    questions are put one at a time, so each answer goes to the prompt it was
    typed under."""
    one_at_a_time = asyncio.Lock()

    async def ask_person(prompt: PermissionPrompt) -> bool:
        async with one_at_a_time:
            answer = await asyncio.to_thread(
                read, f"allow {prompt.tool_name} {prompt.args}? ({prompt.reason}) [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    return ask_person


def chat(spec: RunSpec, read: Callable[[str], str] = input) -> int:
    ask_person = terminal_asker(read)

    def on_text(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    agent, host = build_agent(spec, interactive=True, on_text=on_text, on_step=_print_step,
                        ask_person=ask_person)
    sys.stderr.write(f"session {agent.session.id} · model {agent.session.model} · "
                     "/help for commands, /exit to quit\n")
    sys.stderr.write(agent.sandbox.status.line() + "\n")

    async def loop() -> None:
        try:
            while True:
                try:
                    line = await asyncio.to_thread(read, "> ")
                except EOFError:
                    break
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
            host.close()

    asyncio.run(loop())
    return 0
