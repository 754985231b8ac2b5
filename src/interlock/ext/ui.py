"""``ctx.ui``: shortcuts, a status line, widgets and prompts for extensions.

What an extension registers is kept in one :class:`UIState` per
ExtensionSet, whatever the host. A host with a terminal (``interlock chat``
on a TTY, :mod:`interlock.hosts.terminal.chat_ui`) attaches a :class:`Frontend` that
draws the status line and the widgets, binds the shortcuts and asks the
questions. Without one (``run``, ``serve``, bridges, chat with no TTY):

- ``shortcut``, ``status`` and ``widget`` are recorded and do nothing else;
- ``confirm`` answers its ``default`` (False unless given), ``select`` and
  ``input`` answer theirs (None unless given): nobody is there to answer,
  and "no" never lets anything through.

The prompts are coroutines (``await ctx.ui.confirm(...)``) so the terminal
is never read on the event loop's thread.
"""

from __future__ import annotations

import inspect
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from interlock.engine.errors import RegistrationError

WHERE = ("above", "below")
RESERVED_KEYS = frozenset({"c-c", "c-d", "c-h", "c-i", "c-j", "c-m", "c-["})
"""Interrupt, end of input, backspace, tab and enter: the prompt's own."""
_KEY = re.compile(r"^(?:(?P<mod>ctrl|alt)\+(?P<key>[a-z0-9\[\]\\/_-])|(?P<fn>f(?:[1-9]|1[0-2])))$")


def parse_key(spec: str) -> str:
    """``ctrl+g`` -> ``c-g``, ``alt+x`` -> ``escape x``, ``f5`` -> ``f5``
    (prompt_toolkit's names); RegistrationError for anything else."""
    m = _KEY.match(spec.strip().lower()) if isinstance(spec, str) else None
    if m is None:
        raise RegistrationError(f"shortcut {spec!r} is not one of ctrl+KEY, alt+KEY or F1-F12")
    if m.group("fn"):
        return m.group("fn")
    key = m.group("key")
    return f"c-{key}" if m.group("mod") == "ctrl" else f"escape {key}"


@dataclass(frozen=True, slots=True)
class Shortcut:
    key: str
    """As written (``ctrl+g``)."""
    binding: str
    """prompt_toolkit's name (``c-g``)."""
    extension: str
    handler: Callable[[], Any]
    help: str = ""


@dataclass(frozen=True, slots=True)
class Widget:
    name: str
    extension: str
    render: Callable[[], Any]
    """Returns text or a rich renderable; called at every redraw."""
    where: str = "above"


class Frontend(Protocol):
    """A terminal that can draw and ask (the chat's; see interlock.hosts.terminal.chat_ui)."""

    def invalidate(self) -> None: ...

    async def confirm(self, question: str, default: bool) -> bool: ...

    async def select(self, question: str, options: Sequence[str],
                     default: str | None) -> str | None: ...

    async def input(self, question: str, default: str | None) -> str | None: ...


@dataclass
class UIState:
    """Everything the extensions of one host registered for a terminal."""

    shortcuts: dict[str, Shortcut] = field(default_factory=dict)
    """By binding."""
    statuses: dict[str, str] = field(default_factory=dict)
    """By extension, in registration order."""
    widgets: dict[str, Widget] = field(default_factory=dict)
    frontend: Frontend | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def changed(self) -> None:
        frontend = self.frontend
        if frontend is not None:
            frontend.invalidate()

    def drop(self, extension: str) -> None:
        """Remove what ``extension`` registered (it unloaded)."""
        with self.lock:
            self.shortcuts = {k: s for k, s in self.shortcuts.items()
                              if s.extension != extension}
            self.statuses.pop(extension, None)
            self.widgets = {k: w for k, w in self.widgets.items() if w.extension != extension}
        self.changed()


class ExtensionUI:
    """``ctx.ui`` of one extension."""

    def __init__(self, state: UIState, extension: str) -> None:
        self._state = state
        self._name = extension

    @property
    def interactive(self) -> bool:
        """True when a person at a terminal sees the UI and answers prompts."""
        return self._state.frontend is not None

    def shortcut(self, key: str, handler: Callable[[], Any], *, help: str = "") -> None:
        """Run ``handler()`` (sync or async) when ``key`` is pressed at the chat prompt."""
        binding = parse_key(key)
        if binding in RESERVED_KEYS:
            raise RegistrationError(f"extension {self._name!r}: shortcut {key!r} belongs to the "
                                    "prompt itself; choose another key")
        if not callable(handler):
            raise RegistrationError(f"extension {self._name!r}: shortcut {key!r} handler is "
                                    "not callable")
        with self._state.lock:
            taken = self._state.shortcuts.get(binding)
            if taken is not None:
                raise RegistrationError(f"extension {self._name!r}: shortcut {key!r} is already "
                                        f"bound by extension {taken.extension!r}")
            self._state.shortcuts[binding] = Shortcut(key, binding, self._name, handler, help)

    def status(self, text: str | None) -> None:
        """Set (or with None, clear) this extension's part of the status line."""
        with self._state.lock:
            if text is None:
                self._state.statuses.pop(self._name, None)
            else:
                self._state.statuses[self._name] = str(text).replace("\n", " ")[:200]
        self._state.changed()

    def widget(self, name: str, render: Callable[[], Any] | None, *,
               where: str = "above") -> None:
        """Show ``render()`` (text or a rich renderable) above or below the prompt;
        None removes the widget."""
        if where not in WHERE:
            raise RegistrationError(f"extension {self._name!r}: widget {name!r}: where must be "
                                    f"one of {', '.join(WHERE)}")
        key = f"{self._name}.{name}"
        with self._state.lock:
            if render is None:
                self._state.widgets.pop(key, None)
            elif not callable(render):
                raise RegistrationError(f"extension {self._name!r}: widget {name!r} render is "
                                        "not callable")
            else:
                self._state.widgets[key] = Widget(key, self._name, render, where)
        self._state.changed()

    async def confirm(self, question: str, *, default: bool = False) -> bool:
        frontend = self._state.frontend
        return default if frontend is None else await frontend.confirm(question, default)

    async def select(self, question: str, options: Sequence[str], *,
                     default: str | None = None) -> str | None:
        if isinstance(options, str) or not options:
            raise ValueError("select needs a non-empty list of options")
        frontend = self._state.frontend
        return default if frontend is None else await frontend.select(
            question, [str(o) for o in options], default)

    async def input(self, question: str, *, default: str | None = None) -> str | None:
        frontend = self._state.frontend
        return default if frontend is None else await frontend.input(question, default)


async def call_handler(handler: Callable[[], Any]) -> Any:
    result = handler()
    if inspect.isawaitable(result):
        result = await result
    return result
