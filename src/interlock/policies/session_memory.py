"""Session memory: when a session is cleared with /new or /reset, what was
said is saved as a Markdown file, so a later session (or a person) can pick
it up.

The transcript is read from the event's ``transcript_path``: JSON lines of
``{"role", "content"}`` messages (or one JSON list of them); the last
``max_messages`` user and assistant messages are kept, redacted. A session
without a transcript saves nothing.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from interlock.engine.redact import redact
from interlock.events import Event
from interlock.policies._common import interlock_home, is_replay

COMMANDS = frozenset({"new", "reset"})


def read_messages(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8", errors="replace")
    stripped = text.lstrip()
    if stripped.startswith("["):
        data = json.loads(stripped)
        return [m for m in data if isinstance(m, dict)]
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append(item.get("message", item) if isinstance(item.get("message"), dict)
                       else item)
    return out


def _content(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else str(content)


@dataclass
class SessionMemory:
    directory: Path = field(default_factory=lambda: interlock_home() / "memory")
    max_messages: int = 40

    def save(self, event: Event) -> Path | None:
        """Write the memory file for a /new or /reset command; its path, or None."""
        if event.name != "command" or is_replay():
            return None
        if event.command not in COMMANDS:  # type: ignore[attr-defined]
            return None
        if not event.transcript_path:
            return None
        source = Path(event.transcript_path)
        if not source.is_file():
            return None
        messages = [m for m in read_messages(source)
                    if m.get("role") in ("user", "assistant") and _content(m).strip()]
        if not messages:
            return None
        kept = messages[-self.max_messages:]
        stamp = time.strftime("%Y-%m-%d-%H%M%S", time.gmtime())
        safe_id = re.sub(r"[^A-Za-z0-9_.-]", "_", event.session_id or "session")[:64]
        self.directory.mkdir(parents=True, exist_ok=True)
        target = self.directory / f"{stamp}-{safe_id}.md"
        lines = [f"# Session {event.session_id or '(unnamed)'}",
                 f"Saved on /{event.command} at {stamp} UTC "  # type: ignore[attr-defined]
                 f"({len(kept)} of {len(messages)} messages).", ""]
        for m in kept:
            lines += [f"## {m['role']}", "", redact(_content(m)).strip(), ""]
        tmp = target.with_suffix(".tmp")
        tmp.write_text("\n".join(lines), encoding="utf-8")
        tmp.replace(target)
        return target
