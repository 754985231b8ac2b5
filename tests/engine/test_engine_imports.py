"""What loading the engine costs: ``from interlock import Engine, block`` and a
sync hook's dispatch import no asyncio and no logging; what needs them (an
async hook, ``await emit``, a line logged) imports them then, and works as
before (docs/one-policy.md, Speed).

Each test runs in a fresh ``python -I``: this process has imported asyncio
long ago.
"""

from __future__ import annotations

import subprocess
import sys

from helpers.imports import module_level_imports

HEAVY = ("asyncio", "concurrent.futures", "ssl", "logging", "hashlib", "sqlite3", "json",
         "difflib", "random", "tomllib")
"""Nothing loading the engine or a sync dispatch needs (docs/one-policy.md, Speed)."""
NOT_AT_IMPORT = ("inspect",)
"""Modules no Interlock module the engine loads imports when it is imported: ``inspect``
(~11 ms) still comes, by msgspec's ``typing_extensions`` and by ``dataclasses``,
but the engine must not be what needs it (interlock.engine.coroutines)."""

PRELUDE = """
import sys
from interlock import Engine, block
from interlock.events import BeforeToolCall

def event(command):
    return BeforeToolCall(tool_name="terminal", args={"command": command})
"""


def run(code: str) -> str:
    proc = subprocess.run([sys.executable, "-I", "-c", PRELUDE + code], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_loading_the_engine_imports_no_asyncio_or_logging() -> None:
    out = run(f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    assert out == "[]"


def test_a_sync_hook_dispatched_through_emit_sync_imports_no_asyncio_or_logging() -> None:
    out = run(f"""
engine = Engine()
engine.on("before_tool_call", lambda e: block("no rm") if "rm" in e.args["command"] else None)
print(engine.emit_sync(event("rm -rf /")).verdict.value,
      engine.emit_sync(event("ls")).verdict.value)
print(sorted(m for m in {HEAVY!r} if m in sys.modules))
""")
    assert out.splitlines() == ["block none", "[]"]


def test_async_hooks_and_await_emit_import_asyncio_when_they_run() -> None:
    out = run("""
async def slow(e):
    import asyncio
    await asyncio.sleep(0)  # suspends: it runs on the engine's loop
    return block("async says no")

engine = Engine()
print(engine.emit_sync(event("x")).verdict.value)
engine.on("before_tool_call", slow)
print(engine.emit_sync(event("x")).reason)
import asyncio

async def main():
    quiet = Engine()
    return (await quiet.emit(event("x"))).verdict.value, (await engine.emit(event("x"))).reason

print(asyncio.run(main()))
engine.close()
""")
    assert out.splitlines() == ["none", "async says no", "('none', 'async says no')"]


def test_emit_reads_as_async_whether_asyncio_is_imported_before_or_after() -> None:
    """``asyncio.iscoroutinefunction`` and ``AsyncMock(spec=Engine)`` see an async
    ``emit`` (on Python 3.11 its marker is asyncio's own object, set when asyncio
    arrives), and asyncio's module still reads as its own file."""
    out = run("""
import asyncio, inspect
import asyncio.coroutines
from unittest.mock import AsyncMock, MagicMock

print(asyncio.iscoroutinefunction(Engine().emit),
      isinstance(MagicMock(spec=Engine).emit, AsyncMock))
print(asyncio.coroutines.__spec__.loader.__class__.__name__, "def iscoroutinefunction" in
      inspect.getsource(asyncio.coroutines))
""")
    assert out.splitlines() == ["True True", "SourceFileLoader True"]


def test_a_line_logged_after_a_late_logging_import_is_still_redacted() -> None:
    """The redacting filter is on Interlock's loggers before their first record,
    even when the application imports logging only after the engine."""
    out = run("""
engine = Engine()
def leaky(e):
    raise RuntimeError("token sk-ant-api03-abcdefghijklmnopqrstuvwx leaked")
engine.on("before_tool_call", leaky)
import logging
handler = logging.StreamHandler(sys.stdout)
logging.getLogger("interlock").addHandler(handler)
engine.emit_sync(event("ls"))
""")
    assert "leaky" in out, out
    assert "RuntimeError" in out, out
    assert "sk-ant-api03" not in out
    assert "[REDACTED]" in out


def test_no_module_the_engine_loads_imports_inspect_when_imported() -> None:
    """Each Interlock module ``from interlock import Engine, block`` loads, read for
    the imports its import runs (not those inside functions or TYPE_CHECKING)."""
    out = run("print('\\n'.join(sorted(m.__file__ for n, m in sys.modules.items() "
              "if n.startswith('interlock') and getattr(m, '__file__', None))))")
    files = out.splitlines()
    assert any(f.endswith("dispatch.py") for f in files)  # it did load the engine
    offenders = {f: sorted(set(module_level_imports(f)) & set(NOT_AT_IMPORT)) for f in files}
    assert not {f: names for f, names in offenders.items() if names}

