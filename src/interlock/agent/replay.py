"""Replay: re-evaluate a recorded session's events through the current hooks.

No tool and no model runs: each recorded gate event is rebuilt from its
payload and emitted, and its new merged decision is compared with the one
recorded. Operators use it to try a policy change on real sessions before
turning it on. Observe events are not re-fired (their hooks may have side
effects and have no decision to compare). Payloads were redacted when they
were recorded, so a hook that keys on a secret's value sees ``[REDACTED]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from interlock.engine.catalog import BY_NAME, Kind
from interlock.engine.dispatch import Engine
from interlock.engine.errors import ConfigError
from interlock.engine.invoke import replay_mode
from interlock.events import make


@dataclass(frozen=True, slots=True)
class Difference:
    """One recorded decision that the current hooks would make differently."""

    index: int
    """Position of the event in the transcript's events (0-based)."""
    event: str
    subject: str | None
    """Tool name or command, where the event has one."""
    before: str
    after: str
    reason: str | None
    hook: str | None
    changes_before: dict[str, Any]
    changes_after: dict[str, Any]

    def describe(self) -> str:
        subject = f" {self.subject}" if self.subject else ""
        text = f"#{self.index} {self.event}{subject}: {self.before} -> {self.after}"
        if self.after != self.before and self.hook:
            text += f" by {self.hook}"
        if self.reason:
            text += f" ({self.reason})"
        if self.before == self.after:
            text += f"; changes {sorted(self.changes_before)} -> {sorted(self.changes_after)}"
        return text


@dataclass(slots=True)
class ReplayReport:
    evaluated: int = 0
    skipped_observe: int = 0
    differences: list[Difference] | None = None

    def __post_init__(self) -> None:
        if self.differences is None:
            self.differences = []


def read_events(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, record) of every event line of a JSONL transcript."""
    p = Path(path)
    try:
        handle = p.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the transcript: {exc.strerror}", file=str(p),
                          fix="export one with `interlock run --export FILE`") from None
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ConfigError(f"not JSON: {exc.msg}", file=str(p), line=lineno,
                                  fix="each line is one JSON object") from None
            if not isinstance(record, dict):
                raise ConfigError("each line must be a JSON object", file=str(p), line=lineno)
            if record.get("type") == "event":
                if not isinstance(record.get("name"), str) or not isinstance(
                        record.get("payload"), dict):
                    raise ConfigError("an event line needs 'name' and 'payload'", file=str(p),
                                      line=lineno, field="name")
                yield lineno, record


def replay(engine: Engine, records: Iterable[tuple[int, dict[str, Any]]], *,
           source: str = "transcript") -> ReplayReport:
    report = ReplayReport()
    diffs = report.differences
    assert diffs is not None
    for index, (lineno, record) in enumerate(records):
        name = record["name"]
        spec = BY_NAME.get(name)
        if spec is None:
            raise ConfigError(f"unknown event {name!r}", file=source, line=lineno, field="name")
        if spec.kind is Kind.OBSERVE:
            report.skipped_observe += 1
            continue
        event = make(name, record["payload"], source=f"{source}:{lineno}")
        with replay_mode():  # hooks see Invocation.replay / engine.invoke.is_replay()
            outcome = engine.emit_sync(event)
        now = outcome.to_record(event)
        old = record.get("outcome") or {}
        report.evaluated += 1
        before, after = str(old.get("decision", "none")), now.decision
        changes_before = dict(old.get("changes") or {})
        if before != after or changes_before != now.changes:
            subject = getattr(event, spec.subject) if spec.subject else None
            diffs.append(Difference(index=index, event=name, subject=subject, before=before,
                                    after=after, reason=now.reason, hook=now.hook,
                                    changes_before=changes_before,
                                    changes_after=dict(now.changes)))
    return report
