"""Damaged stores fail loudly: a one-line error naming the file and the fix, never a
traceback nor a silent fresh file; `interlock store check|repair|export` keeps the
evidence."""

from __future__ import annotations

import json
import os
import sqlite3
import textwrap
import time
from pathlib import Path

import pytest

from helpers.serve import Serve
from interlock.engine.errors import ConfigError
from interlock.store import open_store
from interlock.store._sql import AUDIT_COLS

pytestmark = pytest.mark.e2e

CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "guard"
    events = ["before_tool_call"]
    handler = "guard.py"
    on_error = "closed"
    """)
GUARD = "def handle(event):\n    return None\n"
ROWS = 6000


def _filled(path: Path) -> None:
    """A store holding ROWS audit records, checkpointed into the main file."""
    store = open_store(str(path))
    now = time.time()
    rows = [(now, f"d-{i}", f"s-{i}", "before_tool_call", "terminal", "project:guard",
             "none", "applied", None, 0.1, 1, "none", None, None) for i in range(ROWS)]
    assert len(rows[0]) == len(AUDIT_COLS)
    store.backend.write(rows, [], [])
    store.close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _damage(path: Path, how: str) -> None:
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        if how == "header":
            fh.write(b"this is not a database, not any more" * 3)
        elif how == "truncated":
            fh.truncate(size // 2)
        elif how == "middle":
            fh.seek(size // 3)
            fh.write(os.urandom(min(64 * 1024, size // 3)))
        elif how == "empty":
            fh.truncate(0)


@pytest.mark.parametrize("how", ["header", "truncated", "middle", "empty"])
def test_a_damaged_store_is_a_one_line_error(tmp_path: Path, how: str) -> None:
    path = tmp_path / "state" / "interlock.db"
    _filled(path)
    _damage(path, how)
    with pytest.raises(ConfigError) as raised:
        open_store(str(path)).close()
    text = raised.value.render()
    assert str(path) in text
    assert "interlock store" in text  # the fix names the command that keeps the evidence
    assert path.stat().st_size == (0 if how == "empty" else path.stat().st_size)
    # The same for the commands: one line on stderr, no traceback, no fresh file.
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}, store=str(path))
    status = serve.cli("status", "--store", str(path))
    assert status.returncode == 2, status.stdout
    assert "Traceback" not in status.stderr
    assert str(path) in status.stderr
    assert len(status.stderr.strip().splitlines()) == 1, status.stderr
    with pytest.raises(AssertionError, match="serve exited before listening"):
        serve.start()
    log = "".join(serve.log)
    assert "Traceback" not in log
    assert str(path) in log
    if how == "empty":
        assert path.stat().st_size == 0  # not silently replaced by a fresh store


def test_store_check_export_and_repair_keep_the_evidence(tmp_path: Path) -> None:
    path = tmp_path / "state" / "interlock.db"
    _filled(path)
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}, store=str(path))
    good = serve.cli("store", "check", "--store", str(path))
    assert good.returncode == 0, good.stderr
    assert "ok" in good.stdout

    as_json = serve.cli("store", "check", "--store", str(path), "--json")
    assert as_json.returncode == 0, as_json.stderr
    report = json.loads(as_json.stdout)
    assert report["ok"] is True
    assert report["problems"] == []
    assert report["counts"]["interlock_audit"] == ROWS

    _damage(path, "middle")
    bad = serve.cli("store", "check", "--store", str(path))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert "damaged" in bad.stdout
    bad_json = serve.cli("store", "check", "--store", str(path), "--json")
    assert bad_json.returncode == 1
    assert json.loads(bad_json.stdout)["ok"] is False
    assert json.loads(bad_json.stdout)["problems"]

    out = tmp_path / "export.jsonl"
    exported = serve.cli("store", "export", "--store", str(path), "--out", str(out))
    assert exported.returncode == 0, exported.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    audit = [r for r in records if r["table"] == "interlock_audit"]
    assert 0 < len(audit) <= ROWS
    assert {"session_id", "hook", "verdict"} <= set(audit[0]["row"])

    repaired = serve.cli("store", "repair", "--store", str(path))
    assert repaired.returncode == 0, repaired.stderr
    kept = [p for p in path.parent.glob("interlock.db.damaged-*")
            if not p.name.endswith(("-wal", "-shm"))]
    assert len(kept) == 1  # the damaged file is kept beside, as evidence
    assert str(kept[0]) in repaired.stdout
    assert serve.cli("store", "check", "--store", str(path)).returncode == 0
    conn = sqlite3.connect(path)
    (count,), = conn.execute("SELECT COUNT(*) FROM interlock_audit")
    conn.close()
    assert count == len(audit)  # what could be read was carried over
    serve.start()
    try:
        assert serve.event({"tool_name": "terminal", "args": {"command": "ls"}})
    finally:
        assert serve.stop() == 0


def test_a_store_created_afresh_says_so(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "state" / "interlock.db"
    _filled(path)
    assert "created a new, empty store" in caplog.text
    first = open_store(str(path))
    created = first.backend.created_at()
    first.close()
    caplog.clear()
    reopened = open_store(str(path))  # the same store: nothing to say
    reopened.close()
    assert "created a new" not in caplog.text
    assert created is not None
    # The whole folder gone (a new machine, a wiped state dir): a new store, said aloud.
    for side in path.parent.iterdir():
        side.unlink()
    path.parent.rmdir()
    again = open_store(str(path))
    assert "created a new, empty store at " + str(path) in caplog.text
    later = again.backend.created_at()
    assert later is not None
    assert later >= created
    again.close()


def test_a_deleted_store_is_refused_not_replaced(tmp_path: Path) -> None:
    """The store file (and its journal) deleted while its folder stays: the records are
    gone, and a fresh store in its place would hide that. Opening it is a one-line
    error; `interlock store repair` starts a new one knowingly."""
    path = tmp_path / "state" / "interlock.db"
    _filled(path)
    for side in path.parent.glob("interlock.db*"):
        side.unlink()
    with pytest.raises(ConfigError) as raised:
        open_store(str(path)).close()
    text = raised.value.render()
    assert str(path) in text
    assert "gone" in text
    assert "interlock store repair" in text
    assert not path.exists()  # nothing was created in its place
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}, store=str(path))
    status = serve.cli("status", "--store", str(path))
    assert status.returncode == 2, status.stdout
    assert "Traceback" not in status.stderr
    assert len(status.stderr.strip().splitlines()) == 1, status.stderr
    with pytest.raises(AssertionError, match="serve exited before listening"):
        serve.start()
    assert not path.exists()
    repaired = serve.cli("store", "repair", "--store", str(path))
    assert repaired.returncode == 0, repaired.stderr
    assert "new store" in repaired.stdout
    fresh = open_store(str(path))  # knowingly new: it opens, and is protected again
    assert fresh.backend.created_at() is not None
    fresh.close()
    for side in path.parent.glob("interlock.db*"):
        side.unlink()
    with pytest.raises(ConfigError):
        open_store(str(path)).close()


def test_a_moved_store_and_its_ledger_are_protected(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's tools may not delete a store moved out of the state dir, nor the
    ledger that makes its deletion noticed."""
    from interlock.store.paths import protected_paths, secret_paths

    db = tmp_path / "evidence" / "audit.db"
    monkeypatch.setenv("INTERLOCK_STORE", str(db))
    for paths in (protected_paths(tmp_path / "project", tmp_path / "home"),
                  secret_paths(tmp_path / "home")):
        assert db.resolve() in paths
        assert (db.parent / ".interlock-stores").resolve() in paths


def test_a_short_lived_open_of_a_large_store_checks_it_whole_only_once_damage_is_known(
        tmp_path: Path) -> None:
    """A bridge call that loads the hooks itself opens the store for one record: it
    reads the whole file only while the file is small (about 0.25 s per 100 MB
    otherwise, on every such call). A whole-file check that finds damage marks
    the store, and every later open, short-lived or not, refuses it."""
    path = tmp_path / "state" / "interlock.db"
    _filled(path)
    _damage(path, "middle")
    small = path.stat().st_size // 4
    open_store(str(path), check_up_to=small).close()  # past the limit: not read whole
    with pytest.raises(ConfigError, match="damaged"):
        open_store(str(path)).close()  # a long-lived open reads it whole
    with pytest.raises(ConfigError, match="damaged") as raised:
        open_store(str(path), check_up_to=small).close()  # and the damage is now known
    assert "interlock store repair" in raised.value.render()
    # A damaged header is seen by every open, however short.
    _damage(path, "header")
    with pytest.raises(ConfigError, match="damaged"):
        open_store(str(path), check_up_to=small).close()


@pytest.mark.parametrize("restore", ["write", "copy2"])
def test_a_store_put_back_from_a_backup_is_checked_again_not_refused(
        tmp_path: Path, restore: str) -> None:
    import shutil

    path = tmp_path / "state" / "interlock.db"
    _filled(path)
    backup = tmp_path / "backup.db"
    shutil.copy2(path, backup)  # keeps the modification time, as cp -p and rsync -a do
    stamp = path.stat()
    _damage(path, "middle")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))  # as failing sectors would
    with pytest.raises(ConfigError, match="damaged"):
        open_store(str(path)).close()
    if restore == "copy2":
        shutil.copy2(backup, path)  # the very modification time the damaged file had
        assert path.stat().st_mtime_ns == stamp.st_mtime_ns
    else:
        path.write_bytes(backup.read_bytes())
    open_store(str(path), check_up_to=1024).close()  # checked whole again, and fine
    open_store(str(path)).close()


def test_check_and_repair_clear_a_note_that_no_longer_holds(tmp_path: Path) -> None:
    from interlock.store import _ledger

    path = tmp_path / "state" / "interlock.db"
    _filled(path)
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}, store=str(path))
    for command in ("check", "repair"):
        _ledger.mark_damaged(path, _ledger.identity(path))  # however it came to be there
        with pytest.raises(ConfigError, match="damaged"):
            open_store(str(path), check_up_to=1024).close()
        done = serve.cli("store", command, "--store", str(path))
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.startswith("ok")
        open_store(str(path), check_up_to=1024).close()


def test_repair_clears_what_a_check_found(tmp_path: Path) -> None:
    path = tmp_path / "state" / "interlock.db"
    _filled(path)
    _damage(path, "middle")
    with pytest.raises(ConfigError):
        open_store(str(path)).close()
    serve = Serve(tmp_path, CONFIG, files={"guard.py": GUARD}, store=str(path))
    assert serve.cli("store", "repair", "--store", str(path)).returncode == 0
    open_store(str(path), check_up_to=1024).close()
