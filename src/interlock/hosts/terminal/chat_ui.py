"""The terminal of `interlock chat`: the prompt, the status line, extensions'
widgets and shortcuts, and the questions (permission asks and ``ctx.ui``
prompts alike).

On a TTY it is prompt_toolkit (imported only here, so `run` and `serve` never
pay for it): the status line is the prompt's bottom toolbar, widgets are
drawn above the prompt or under the status line, and both are redrawn when
an extension changes them (from any thread) and after every step of the
agent. A shortcut ends the prompt with the typed text kept, runs its handler
with the session in scope, and prompts again, so a handler may itself ask
(``await ctx.ui.confirm(...)``) without two prompts fighting for the terminal.

With no TTY (:class:`PlainUI`) lines and answers are read with ``read``, and
nothing is drawn: shortcuts, the status line and widgets are recorded only.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from interlock.agent.active import CURRENT
from interlock.engine.logs import logger
from interlock.ext.ui import Shortcut, UIState, Widget, call_handler

if TYPE_CHECKING:
    from interlock.agent.loop import Agent

log = logger("interlock.chat")


@dataclass(frozen=True, slots=True)
class Pressed:
    """The prompt ended because a shortcut was pressed."""

    shortcut: Shortcut
    text: str
    """What was typed so far (given back at the next prompt)."""


class _Asking:
    """One question at a time: calls of one reply run concurrently, and each
    answer must go to the question it was typed under."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()


async def _choose(ask: Callable[[str], Awaitable[str | None]], show: Callable[[str], None],
                  question: str, options: Sequence[str], default: str | None) -> str | None:
    show(question)
    for i, option in enumerate(options, 1):
        show(f"  {i}. {option}")
    for _ in range(3):
        answer = await ask(f"choose 1-{len(options)}: ")
        if answer is None:
            return default
        answer = answer.strip()
        if not answer and default is not None:
            return default
        if answer.isdigit() and 1 <= int(answer) <= len(options):
            return options[int(answer) - 1]
        if answer in options:
            return answer
    return default


class PlainUI:
    """No terminal to draw on: questions read a line with ``read``."""

    def __init__(self, read: Callable[[str], str], write: Callable[[str], None]) -> None:
        self._read = read
        self._write = write
        self._asking = _Asking()
        self.state = UIState()
        self.agent: Agent | None = None

    def attach(self, state: UIState, agent: Agent) -> None:
        self.state, self.agent = state, agent
        state.frontend = self

    def invalidate(self) -> None:
        return None

    async def read_line(self, message: str) -> str | Pressed:
        return await asyncio.to_thread(self._read, message)

    async def _line(self, message: str) -> str | None:
        async with self._asking.lock:
            try:
                return await asyncio.to_thread(self._read, message)
            except EOFError:
                return None

    async def confirm(self, question: str, default: bool) -> bool:
        answer = await self._line(f"{question} [{'Y/n' if default else 'y/N'}] ")
        if answer is None or not answer.strip():
            return default
        return answer.strip().lower() in ("y", "yes")

    async def select(self, question: str, options: Sequence[str],
                     default: str | None) -> str | None:
        return await _choose(self._line, self._write, question, options, default)

    async def input(self, question: str, default: str | None) -> str | None:
        answer = await self._line(f"{question} ")
        return default if answer is None else answer

    async def run_shortcut(self, pressed: Pressed) -> None:
        await _run_shortcut(self, pressed)


class ChatUI(PlainUI):
    """prompt_toolkit on a TTY."""

    def __init__(self, write: Callable[[str], None]) -> None:
        super().__init__(input, write)
        from prompt_toolkit import PromptSession

        self._session: Any = PromptSession(erase_when_done=True)
        self._pending = ""
        self.error = ""
        """The last shortcut or widget failure, shown in the status line."""

    def invalidate(self) -> None:
        app = self._session.app
        if app.is_running:
            app.invalidate()  # thread-safe: it schedules a redraw on the app's loop

    async def read_line(self, message: str) -> str | Pressed:
        from prompt_toolkit.key_binding import KeyBindings

        bindings = KeyBindings()
        with self.state.lock:
            shortcuts = list(self.state.shortcuts.values())
        for shortcut in shortcuts:
            bindings.add(*shortcut.binding.split())(self._pressed(shortcut))
        default, self._pending = self._pending, ""
        while True:
            try:
                # Erased when done: the widgets and the status line live only
                # under the prompt; the line typed is echoed back plain.
                result: str | Pressed = await self._session.prompt_async(
                    lambda: self._message(message), bottom_toolbar=self._toolbar,
                    key_bindings=bindings, default=default)
                if isinstance(result, str):
                    self._write(f"{message}{result}")
                return result
            except KeyboardInterrupt:  # ctrl+c clears the line, as in a shell
                default = ""

    def _pressed(self, shortcut: Shortcut) -> Callable[[Any], None]:
        def handler(event: Any) -> None:
            event.app.exit(result=Pressed(shortcut, event.app.current_buffer.text))
        return handler

    async def run_shortcut(self, pressed: Pressed) -> None:
        self._pending = pressed.text
        await super().run_shortcut(pressed)

    async def _line(self, message: str) -> str | None:
        from prompt_toolkit import PromptSession

        async with self._asking.lock:
            try:
                answer: str = await PromptSession().prompt_async(message)
                return answer
            except (EOFError, KeyboardInterrupt):
                return None

    # -- drawing ------------------------------------------------------------------
    def _message(self, prompt: str) -> Any:
        from prompt_toolkit.formatted_text import ANSI

        above = self._widgets("above")
        return ANSI((above + "\n" if above else "") + prompt)

    def _toolbar(self) -> Any:
        from prompt_toolkit.formatted_text import ANSI

        with self.state.lock:
            statuses = list(self.state.statuses.values())
        parts = [*self._builtin(), *statuses]
        if self.error:
            parts.append(f"! {self.error}")
        below = self._widgets("below")
        return ANSI(" · ".join(parts) + ("\n" + below if below else ""))

    def _builtin(self) -> list[str]:
        agent = self.agent
        if agent is None:
            return []
        from interlock.agent.compaction import estimate_tokens

        parts = [agent.session.model or "no model",
                 f"~{estimate_tokens(agent.session.messages)} tokens"]
        branch = git_branch(agent.cwd)
        if branch:
            parts.append(f"git {branch}")
        return parts

    def _widgets(self, where: str) -> str:
        with self.state.lock:
            widgets = [w for w in self.state.widgets.values() if w.where == where]
        return "\n".join(self._render(w) for w in widgets)

    def _render(self, widget: Widget) -> str:
        try:
            value = widget.render()
        except Exception as exc:  # an extension's bug shows in its place, never kills the chat
            return f"[widget {widget.name} failed: {type(exc).__name__}: {exc}]"
        if isinstance(value, str):
            return value.rstrip("\n")
        from rich.console import Console

        width = self._session.app.output.get_size().columns
        console = Console(file=io.StringIO(), width=width, force_terminal=True,
                          color_system="standard")
        with console.capture() as captured:
            console.print(value, end="")
        return captured.get().rstrip("\n")


async def _run_shortcut(ui: PlainUI, pressed: Pressed) -> None:
    token = CURRENT.set(ui.agent)
    try:
        await call_handler(pressed.shortcut.handler)
    except Exception as exc:  # an extension's bug: reported, the chat goes on
        message = f"shortcut {pressed.shortcut.key} ({pressed.shortcut.extension}) failed: " \
                  f"{type(exc).__name__}: {exc}"
        log.error(message)
        if isinstance(ui, ChatUI):
            ui.error = message
    finally:
        CURRENT.reset(token)


def git_branch(cwd: Path) -> str:
    """The checked-out branch (short commit when detached), read from .git/HEAD."""
    for folder in (cwd, *cwd.parents):
        dot = folder / ".git"
        if not dot.exists():
            continue
        try:
            if dot.is_file():  # a worktree or submodule: "gitdir: <path>"
                dot = (folder / dot.read_text(encoding="utf-8").partition(":")[2].strip())
            text = (dot / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            return ""
        return text.removeprefix("ref: refs/heads/") if text.startswith("ref:") else text[:8]
    return ""
