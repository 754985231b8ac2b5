"""boot-md: run the BOOT.md startup checklist; [SILENT] means no message."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from interlock.engine.decisions import Decision, context
from interlock.engine.logs import logger
from interlock.events import Event
from interlock.policies.boot_md import BootMd

log = logger("interlock.bundled.boot_md")

_boot = BootMd()
_deliver: Callable[[str, Event], Any] | None = None


def configure(options: dict[str, Any]) -> None:
    """Options: provider (a ModelProvider), model, path, timeout, deliver
    (``deliver(message, event)``, for gateway_start, where a hook cannot answer)."""
    global _boot, _deliver
    _boot = BootMd(provider=options.get("provider"), model=str(options.get("model", "")),
                   path=Path(options["path"]) if options.get("path") else None,
                   timeout=float(options.get("timeout", 60.0)))
    _deliver = options.get("deliver")


async def handle(event: Event) -> Decision | None:
    message = await _boot.run(event)
    if message is None:
        return None
    if event.name == "session_start":
        return context(f"Startup checklist (BOOT.md):\n{message}")
    if _deliver is not None:
        _deliver(message, event)
    else:
        log.warning("boot-md: %s", message)
    return None
