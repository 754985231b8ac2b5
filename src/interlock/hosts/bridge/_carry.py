"""Context a host only reads later in the same tool call, carried there.

Gemini CLI shows ``additionalContext`` to the model on AfterTool, BeforeAgent
and SessionStart, never on BeforeTool (docs/one-policy.md, What each agent
receives). Context a ``before_tool_call`` hook gives is kept here, under a key
made of the session, the tool and the arguments it runs with, and given with
the AfterTool answer of that call. Kept in the state dir (private, 0700),
one small file per call; one left by a call that never ran is removed after
an hour.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

KEEP_S = 3600.0


def _folder() -> Path:
    from interlock.store.paths import state_dir

    return state_dir() / "carried-context"


def _key(system: str, payload: dict[str, Any], args: Any) -> str:
    from interlock.engine.sha import sha256

    text = json.dumps([system, payload.get("session_id"), payload.get("tool_name"), args],
                      sort_keys=True, default=str)
    return sha256(text.encode()).hexdigest()[:32]


def keep(system: str, payload: dict[str, Any], args: Any, text: str) -> bool:
    """Keep ``text`` for the later answer of this call; False when it cannot be kept."""
    folder = _folder()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        now = time.time()
        for old in folder.iterdir():
            if now - old.stat().st_mtime > KEEP_S:
                old.unlink(missing_ok=True)
        path = folder / _key(system, payload, args)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    except OSError:
        return False
    return True


def take(system: str, payload: dict[str, Any]) -> str:
    """The context kept for this call (its arguments as the host ran it), once."""
    path = _folder() / _key(system, payload, payload.get("tool_input"))
    try:
        text = path.read_text()
        path.unlink()
    except OSError:
        return ""
    return text
