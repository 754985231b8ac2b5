"""boot-md: run a startup checklist from BOOT.md when a session or the gateway
starts.

BOOT.md is looked up in the session's working directory, then in
``$INTERLOCK_HOME``; with neither, nothing happens and no model is called.
Its text goes to the model in one call, with instructions to work through
the checklist and reply ``[SILENT]`` when nothing needs a person's attention.
``[SILENT]`` (alone, any case, surrounding whitespace ignored) means no
message; any other reply is the message.

The model is any :class:`interlock.models.tooling.ModelProvider`; the host supplies
it through ``configure({"provider": ...})``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from interlock.events import Event
from interlock.models.tooling import ModelProvider, ModelRequest
from interlock.policies._common import interlock_home

SILENT = "[SILENT]"
SYSTEM = (
    "You are running a startup checklist for an agent that just started. Work through "
    "the checklist below. If something needs a person's attention, reply with a short "
    f"message for them. If nothing does, reply with exactly {SILENT} and nothing else."
)
MAX_BOOT_CHARS = 20_000


@dataclass
class BootMd:
    provider: ModelProvider | None = None
    model: str = ""
    path: Path | None = None
    """An explicit BOOT.md; default: <cwd>/BOOT.md, then $INTERLOCK_HOME/BOOT.md."""
    timeout: float = 60.0

    def find(self, cwd: str) -> Path | None:
        candidates = [self.path] if self.path else [
            Path(cwd) / "BOOT.md" if cwd else None, interlock_home() / "BOOT.md"]
        for c in candidates:
            if c is not None and c.is_file():
                return c
        return None

    async def run(self, event: Event) -> str | None:
        """The message for a person, or None (no BOOT.md, or the model said [SILENT])."""
        if event.name not in ("session_start", "gateway_start"):
            return None
        boot = self.find(event.cwd)
        if boot is None:
            return None
        checklist = boot.read_text(encoding="utf-8", errors="replace")[:MAX_BOOT_CHARS]
        if not checklist.strip():
            return None
        if self.provider is None:
            raise RuntimeError("boot-md needs a model provider: configure({'provider': ...})")
        request = ModelRequest(model=self.model, messages=[
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Checklist from {boot.name}:\n\n{checklist}"},
        ], params={"temperature": 0})
        async with asyncio.timeout(self.timeout):
            response = await self.provider.complete(request)
        reply = (response.text or "").strip()
        if not reply or reply.upper() == SILENT:
            return None
        return reply
