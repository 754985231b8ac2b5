"""Sessions persisted in SQLite, resumable by id, exportable as JSONL.

A session is its messages (OpenAI chat shape), its todo list, the paths it
watches and every event it fired with the merged outcome (what
``interlock replay`` re-evaluates). Everything written is redacted first.
Hook context rides on a message under ``hook_context``, apart from what the
user wrote, and is merged into the content only when a request is built.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from interlock.engine.errors import ConfigError
from interlock.engine.redact import redact_data

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, parent_id TEXT, depth INTEGER NOT NULL DEFAULT 0,
    model TEXT NOT NULL DEFAULT '', cwd TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL DEFAULT '{}', created REAL NOT NULL, updated REAL NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (session_id, seq));
CREATE TABLE IF NOT EXISTS events (
    session_id TEXT NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL,
    payload TEXT NOT NULL, outcome TEXT NOT NULL, at REAL NOT NULL,
    PRIMARY KEY (session_id, seq));
"""


def new_session_id() -> str:
    return uuid.uuid4().hex[:16]


@dataclass(slots=True)
class Session:
    """One conversation's state."""

    id: str = field(default_factory=new_session_id)
    parent_id: str | None = None
    depth: int = 0
    model: str = ""
    cwd: str = ""
    system_prompt: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    todos: list[dict[str, Any]] = field(default_factory=list)
    watch_paths: list[str] = field(default_factory=list)
    compactions: int = 0
    active_tools: list[str] | None = None
    """The tools the model sees, when narrowed for the session (agent/active.py)."""
    events: list[tuple[str, dict[str, Any], dict[str, Any]]] = field(default_factory=list)
    """Events not yet written: (name, payload, outcome record)."""
    saved_messages: int = 0
    saved_events: int = 0

    def state(self) -> dict[str, Any]:
        return {"system_prompt": self.system_prompt, "todos": self.todos,
                "watch_paths": self.watch_paths, "compactions": self.compactions,
                "active_tools": self.active_tools}

    def repair(self) -> int:
        """Give every tool call without a result an error result; returns how many.

        A run that died between a model reply and its tool results (a crash, a
        kill) leaves calls the next model request must not see unanswered.
        """
        answered = {m.get("tool_call_id") for m in self.messages if m.get("role") == "tool"}
        fixed = 0
        out: list[dict[str, Any]] = []
        for msg in self.messages:
            out.append(msg)
            for call in msg.get("tool_calls") or []:
                if call.get("id") not in answered:
                    out.append({"role": "tool", "tool_call_id": call.get("id"),
                                "content": json.dumps({"error": "interrupted: the tool call "
                                                                "never finished"})})
                    fixed += 1
        self.messages = out
        return fixed


class SessionStore:
    """A SQLite file of sessions. Safe to share between threads of one process."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        db: sqlite3.Connection | None = None
        try:
            db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:  # not SQLite, a folder, not ours to write
            if db is not None:
                db.close()
            raise ConfigError(f"cannot open it as a SQLite sessions database ({exc})",
                              file=str(path), field="--db",
                              fix="pass a new file or one Interlock made: --db PATH "
                                  "(default: the state dir's sessions.db)") from None
        self._db = db

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def save(self, session: Session) -> None:
        """Write what changed, in one transaction (all of a turn or none of it)."""
        now = time.time()
        new_msgs = session.messages[session.saved_messages:]
        events = session.events
        with self._lock:
            db = self._db
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute(
                    "INSERT INTO sessions (id, parent_id, depth, model, cwd, state, created, "
                    "updated) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT(id) DO UPDATE SET "
                    "model=excluded.model, cwd=excluded.cwd, state=excluded.state, "
                    "updated=excluded.updated",
                    (session.id, session.parent_id, session.depth, session.model, session.cwd,
                     json.dumps(session.state(), default=str), now, now))
                if session.saved_messages > len(session.messages):
                    # Compaction shortened the transcript: rewrite it whole.
                    db.execute("DELETE FROM messages WHERE session_id=?", (session.id,))
                    session.saved_messages = 0
                    new_msgs = session.messages
                db.executemany(
                    "INSERT OR REPLACE INTO messages (session_id, seq, body) VALUES (?,?,?)",
                    [(session.id, session.saved_messages + i,
                      json.dumps(redact_data(m), default=str)) for i, m in enumerate(new_msgs)])
                db.executemany(
                    "INSERT INTO events (session_id, seq, name, payload, outcome, at) "
                    "VALUES (?,?,?,?,?,?)",
                    [(session.id, session.saved_events + i, name,
                      json.dumps(redact_data(payload), default=str),
                      json.dumps(redact_data(outcome), default=str), now)
                     for i, (name, payload, outcome) in enumerate(events)])
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        session.saved_messages = len(session.messages)
        session.saved_events += len(events)
        session.events = []

    def rewrite_messages(self, session: Session) -> None:
        """After compaction: the stored transcript is replaced by the compacted one."""
        session.saved_messages = len(session.messages) + 1  # forces a rewrite in save()
        self.save(session)

    def load(self, session_id: str) -> Session:
        with self._lock:
            row = self._db.execute(
                "SELECT id, parent_id, depth, model, cwd, state FROM sessions WHERE id=?",
                (session_id,)).fetchone()
            if row is None:
                raise ConfigError(f"no session {session_id!r} in {self.path}",
                                  field="session", fix="list sessions with `interlock "
                                                       "run --list-sessions`")
            msgs = [json.loads(b) for (b,) in self._db.execute(
                "SELECT body FROM messages WHERE session_id=? ORDER BY seq", (session_id,))]
            n_events = self._db.execute("SELECT COUNT(*) FROM events WHERE session_id=?",
                                        (session_id,)).fetchone()[0]
        state = json.loads(row[5])
        session = Session(id=row[0], parent_id=row[1], depth=row[2], model=row[3], cwd=row[4],
                          system_prompt=state.get("system_prompt", ""), messages=msgs,
                          todos=state.get("todos", []), watch_paths=state.get("watch_paths", []),
                          compactions=state.get("compactions", 0),
                          active_tools=state.get("active_tools"), saved_messages=len(msgs),
                          saved_events=n_events)
        if session.repair():
            session.saved_messages = len(session.messages) + 1  # rewrite on next save
        return session

    def list_sessions(self) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT id, parent_id, depth, model, updated FROM sessions ORDER BY updated DESC"
            ).fetchall()
        return [{"id": r[0], "parent_id": r[1], "depth": r[2], "model": r[3], "updated": r[4]}
                for r in rows]

    def events(self, session_id: str) -> list[dict[str, Any]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT name, payload, outcome FROM events WHERE session_id=? ORDER BY seq",
                (session_id,)).fetchall()
        return [{"name": n, "payload": json.loads(p), "outcome": json.loads(o)}
                for n, p, o in rows]

    def export_lines(self, session_id: str) -> Iterator[dict[str, Any]]:
        """The transcript as JSONL records: a header, messages, then events."""
        session = self.load(session_id)
        yield {"type": "session", "id": session.id, "parent_id": session.parent_id,
               "depth": session.depth, "model": session.model, "cwd": session.cwd}
        for msg in session.messages:
            yield {"type": "message", **msg}
        for ev in self.events(session_id):
            yield {"type": "event", **ev}

    def export_jsonl(self, session_id: str, out: IO[str]) -> int:
        n = 0
        for record in self.export_lines(session_id):
            out.write(json.dumps(record, default=str) + "\n")
            n += 1
        return n
