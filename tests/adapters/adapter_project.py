"""One project for every adapter test: its `.interlock/` policy, and its audit.

The policy (Python hooks, as a team would write them) decides by tool name,
so each framework's test drives the same cases through its own agent loop:

- ``delete_file``: blocked, with a hint;
- ``shout``: its ``text`` argument rewritten to upper case (a modifier);
- ``weather``: allowed with context added for the model;
- ``deploy``: sent to a person (ask);
- ``explode``: the hook crashes; the hook is fail-closed, so the call is blocked;
- ``read_secret``: runs, and its result is rewritten (after_tool_call);
- a ``[[permissions]]`` rule denies ``shout`` when its text names production,
  after the hook's rewrite (rules judge the arguments the tool would run with).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

POLICY = '''
from interlock import ask, block, context, modify


def handle(event):
    name = event.tool_name
    if name == "delete_file":
        return block("deleting files is not allowed", hint="move it to archive/ instead")
    if name == "shout":
        return modify(args={**event.args, "text": event.args["text"].upper()})
    if name == "weather":
        return context("the weather tool reports Celsius")
    if name == "deploy":
        return ask("deploys need a person")
    if name == "explode":
        raise RuntimeError("the policy hook has a bug")
    return None
'''

RESULTS = '''
from interlock import modify


def handle(event):
    if event.tool_name == "read_secret":
        return modify(result="[redacted by policy]")
    return None
'''

CONFIG = '''
[[hooks]]
name = "policy"
events = ["before_tool_call"]
handler = "policy.py"
modifies = true

[[hooks]]
name = "results"
events = ["after_tool_call"]
handler = "results.py"
modifies = true

[[permissions]]
tool = "shout"
pattern = "*PRODUCTION*"
action = "deny"
'''


def make_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project holding the policy, as the working folder, its hooks approved."""
    root = tmp_path / "project"
    (root / ".interlock").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".interlock" / "config.toml").write_text(CONFIG)
    (root / ".interlock" / "policy.py").write_text(POLICY)
    (root / ".interlock" / "results.py").write_text(RESULTS)
    home = tmp_path / "home"
    monkeypatch.setenv("INTERLOCK_HOME", str(home / "config"))
    monkeypatch.setenv("INTERLOCK_STATE_DIR", str(home / "state"))
    monkeypatch.setenv("INTERLOCK_MANAGED", str(home / "managed"))
    monkeypatch.setenv("INTERLOCK_BUNDLED", str(home / "bundled"))
    # As `interlock hooks approve` would: consent to the project's hooks.
    monkeypatch.setenv("INTERLOCK_ACCEPT_HOOKS", "1")
    monkeypatch.delenv("INTERLOCK_STORE", raising=False)
    monkeypatch.chdir(root)
    yield root
    from interlock.adapters._core import close_hosts

    close_hosts()


def session() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


Row = tuple[str, str, str | None, str]


def audit(session_id: str, *, want: int = 1, timeout: float = 10.0) -> list[Row]:
    """(event, verdict, subject, hook) of the session's audit entries, once at
    least ``want`` are written (the store writes in the background)."""
    from interlock.store import AuditQuery, open_store

    store = open_store()
    try:
        deadline = time.monotonic() + timeout
        while True:
            rows = store.audit(AuditQuery(session=session_id, limit=0))
            if len(rows) >= want or time.monotonic() > deadline:
                return [(r.event, r.verdict, r.subject, r.hook) for r in rows]
            time.sleep(0.05)
    finally:
        store.close()
