"""The command logger: every slash command, one JSON line each.

Lines hold the time, session, platform, command and its (redacted)
arguments. Writes are appends of one line under a lock, so concurrent
sessions in one process never interleave half lines.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from interlock.engine.redact import redact
from interlock.events import Event
from interlock.policies._common import interlock_home, is_replay


@dataclass
class CommandLogger:
    path: Path = field(default_factory=lambda: interlock_home() / "logs" / "commands.jsonl")
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, event: Event) -> None:
        if event.name != "command" or is_replay():
            return
        line = json.dumps({
            "ts": time.time(),
            "session_id": event.session_id,
            "platform": event.platform,
            "command": event.command,  # type: ignore[attr-defined]
            "arguments": redact(event.arguments),  # type: ignore[attr-defined]
        }, ensure_ascii=False)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line + "\n")
