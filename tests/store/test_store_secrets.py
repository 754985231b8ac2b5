"""Secrets planted in hook errors and block reasons reach neither store nor log."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from helpers.procs import ShellExecutor, exec_hook
from helpers.stores import BACKENDS, fresh_url
from interlock import Engine, block
from interlock.reliability.sinks import attach
from interlock.store import AuditQuery
from interlock.testing import fire

SECRETS = {
    "openai": "sk-proj-Zq8xW3vN5bT7yU1iO9pA2sD4",
    "github": "ghp_R4nd0mT0k3nV4lu3xxxxxxxxxxyyyyyy12",
    "aws": "AKIAZ7QW3ERT5YUI8OPA",
    "url_password": "tr0ub4dor-horse",
    "kv_password": "correct-battery-staple",
    "bearer": "abcdefghijklmnopqrstuvwxyz012345",
    "flag": "letmein-please",
    "entropy": "Qm9vZ2llV29vZ2llMTIzNDU2Nzg5MGFiY2RlZg",
}


def _error_text() -> str:
    return (f"upstream said no: key={SECRETS['openai']} token {SECRETS['github']} "
            f"aws {SECRETS['aws']} via https://deploy:{SECRETS['url_password']}@db.internal/x "
            f"DB_PASSWORD={SECRETS['kv_password']} Authorization: Bearer {SECRETS['bearer']} "
            f"mysql --password {SECRETS['flag']} blob {SECRETS['entropy']}")


@pytest.mark.parametrize("kind", BACKENDS)
def test_planted_secrets_never_reach_store_or_logs(kind, tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="interlock")
    engine = Engine()
    text = _error_text()

    @engine.on("before_tool_call", name="raiser", on_error="open")
    def raiser(event):
        raise RuntimeError(text)

    @engine.on("before_tool_call", name="leaky_blocker", matcher="terminal")
    def leaky_blocker(event):
        return block(f"denied, {text}", hint=f"try {SECRETS['openai']}")

    # a real process whose stderr carries the secrets, failing closed
    script = f"cat >/dev/null; echo '{text}' >&2; exit 1"
    engine.register(exec_hook("proc", ShellExecutor(script), event="before_llm_call"))

    with fresh_url(kind, tmp_path) as url:
        attached = attach(engine, url=url, tracing=False)
        fire(engine, "before_tool_call", tool_name="read_file", args={"path": "x"})
        outcome = fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
        assert outcome.blocked
        model_sees = repr(outcome.tool_block_error()) + repr(outcome.to_dict())
        assert fire(engine, "before_llm_call", messages=[], model="m").blocked
        store = attached.store
        assert store.flush(10)
        letters = store.dead_letters(limit=0)
        audit = store.audit(AuditQuery(limit=0))
        assert {d.hook for d in letters} == {"code:raiser", "code:proc"}
        assert any(a.verdict == "block" and a.reason for a in audit)
        stored = repr([d for d in letters]) + repr(audit)
        if kind == "postgres":
            stored += _dump_postgres(store)
        files = b""
        if kind == "sqlite":  # while open (database, WAL and shared memory) and after
            folder = Path(url).parent
            files = b"".join(p.read_bytes() for p in folder.iterdir())
            assert Path(url + "-wal").exists()
        attached.close()
        if kind == "sqlite":
            files += b"".join(p.read_bytes() for p in folder.iterdir())
            assert files
    engine.close()
    logs = "\n".join(r.getMessage() for r in caplog.records)
    assert "upstream said no" in logs  # the failures were logged...
    assert "[REDACTED]" in stored
    assert "[REDACTED]" in model_sees
    for name, secret in SECRETS.items():  # ...without a single secret anywhere
        assert secret not in stored, name
        assert secret.encode() not in files, name
        assert secret not in logs, name
        assert secret not in model_sees, name


def _dump_postgres(store) -> str:
    rows = store.backend._query(
        "SELECT string_agg(t::text, ' ') FROM (SELECT * FROM interlock_dead_letters) t "
        "UNION ALL SELECT string_agg(t::text, ' ') FROM (SELECT * FROM interlock_audit) t")
    return repr(rows)


def test_tracebacks_in_logs_are_redacted(caplog):
    caplog.set_level(logging.DEBUG, logger="interlock")
    log = logging.getLogger("interlock")
    try:
        raise ValueError(f"token={SECRETS['kv_password']}")
    except ValueError:
        log.exception("failed with %s", SECRETS["openai"])
    formatted = logging.Formatter().format(caplog.records[-1])
    assert SECRETS["openai"] not in formatted
    assert SECRETS["kv_password"] not in formatted
    assert "ValueError" in formatted

