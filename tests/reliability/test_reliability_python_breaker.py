"""In-process Python hooks get a circuit breaker too (per hook definition, as every
other kind), and an open breaker never opens a fail-closed gate; the doctor says
what is true for each kind."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from interlock import Engine
from interlock.config.registry import close_engine, open_engine
from interlock.engine.errors import FailureMode
from interlock.reliability import BreakerBook, BreakerKey, BreakerState, Policy, harden
from interlock.testing import RecordingSink, afire, fire

CRASH = textwrap.dedent("""\
    import os

    def handle(event):
        with open(os.environ["CALLS"], "a") as fh:
            fh.write("x")
        raise RuntimeError("policy lookup failed")
    """)


def _project(tmp_path: Path, on_error: str, extra: str = "") -> Path:
    root = tmp_path / "project"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "crash.py").write_text(CRASH)
    (root / ".interlock" / "config.toml").write_text(textwrap.dedent(f"""\
        [[hooks]]
        name = "crash"
        events = ["before_tool_call"]
        handler = "crash.py"
        on_error = "{on_error}"
        """) + extra)
    return root


@pytest.mark.parametrize("on_error", ["open", "closed"])
def test_a_crashing_python_hook_opens_its_breaker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  on_error: str) -> None:
    calls = tmp_path / "calls"
    monkeypatch.setenv("CALLS", str(calls))
    monkeypatch.setenv("INTERLOCK_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INTERLOCK_MANAGED", str(tmp_path / "managed"))
    monkeypatch.setenv("INTERLOCK_ACCEPT_HOOKS", "1")
    engine, registry = open_engine(_project(tmp_path, on_error))
    sink = RecordingSink()
    engine.add_sink(sink)
    try:
        outcomes = [fire(engine, "before_tool_call", tool_name="terminal",
                         args={"command": "ls"}) for _ in range(10)]
        assert len(calls.read_text()) == 3  # three crashes, then the breaker refuses
        modes = [f.mode for f in sink.failures]
        assert modes == [FailureMode.CRASH] * 3 + [FailureMode.BREAKER_OPEN] * 7
        assert registry.breakers.snapshot()[0].state is BreakerState.OPEN
        # Fail closed: every call blocked, before and after the breaker opened.
        assert [o.blocked for o in outcomes] == [on_error == "closed"] * 10
    finally:
        close_engine(engine, registry)


def test_a_python_hooks_breaker_settings_apply(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    for name, value in (("CALLS", str(calls)), ("INTERLOCK_HOME", str(tmp_path / "home")),
                        ("INTERLOCK_MANAGED", str(tmp_path / "managed")),
                        ("INTERLOCK_ACCEPT_HOOKS", "1")):
        monkeypatch.setenv(name, value)
    root = _project(tmp_path, "open", "breaker_threshold = 1\nbreaker_cooldown = 600\n")
    engine, registry = open_engine(root)
    try:
        for _ in range(4):
            fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
        assert len(calls.read_text()) == 1
    finally:
        close_engine(engine, registry)


async def test_harden_gives_sync_and_async_python_hooks_a_breaker() -> None:
    book = BreakerBook()
    engine = Engine()
    calls = {"sync": 0, "async": 0}

    def sync_crash(event):  # type: ignore[no-untyped-def]
        calls["sync"] += 1
        raise RuntimeError("down")

    async def async_crash(event):  # type: ignore[no-untyped-def]
        calls["async"] += 1
        raise RuntimeError("down")

    raw_sync = engine.on("before_tool_call", sync_crash, name="s", on_error="open").hook
    raw_async = engine.on("before_tool_call", async_crash, name="a", on_error="open").hook
    policy = Policy(breaker_threshold=2)
    hardened = [harden(h, policy, breakers=book) for h in (raw_sync, raw_async)]
    assert all(h is not r for h, r in zip(hardened, (raw_sync, raw_async), strict=True))
    assert hardened[0].timeout == raw_sync.timeout  # the engine still times Python hooks
    engine.replace_hooks(hardened)
    for _ in range(5):
        await afire(engine, "before_tool_call", tool_name="t", args={})
    assert calls == {"sync": 2, "async": 2}
    assert {book.state(BreakerKey.of(h)) for h in hardened} == {BreakerState.OPEN}
    engine.close()


def test_the_doctor_tells_the_truth_about_breakers() -> None:
    from interlock.reliability import fail_open_warnings

    engine = Engine()
    hook = engine.on("before_tool_call", lambda e: None, name="py", on_error="open").hook
    (with_breaker,) = fail_open_warnings([hook], Policy())
    assert "circuit breaker opens" in with_breaker
    (without,) = fail_open_warnings([hook], Policy(breaker_threshold=0))
    assert "breaker" in without
    assert "opens" not in without  # no breaker: nothing turns it off, each failure is skipped
    engine.close()


async def test_an_async_python_hook_that_times_out_counts_toward_its_breaker() -> None:
    """The engine's timer cancels a hung async hook; that cancellation is a failure
    of the hook (docs/reliability.md), so a hook that keeps hanging opens its breaker
    instead of costing every call its full timeout."""
    import asyncio

    book = BreakerBook()
    engine = Engine()
    calls = 0

    async def hangs(event):  # type: ignore[no-untyped-def]
        nonlocal calls
        calls += 1
        await asyncio.Event().wait()

    raw = engine.on("before_tool_call", hangs, name="h", on_error="closed", timeout=0.05).hook
    hooked = harden(raw, Policy(breaker_threshold=2, breaker_cooldown=600), breakers=book)
    engine.replace_hooks([hooked])
    sink = RecordingSink()
    engine.add_sink(sink)
    outcomes = [await afire(engine, "before_tool_call", tool_name="t", args={})
                for _ in range(4)]
    assert calls == 2  # two timeouts, then the breaker answers without calling it
    assert [f.mode for f in sink.failures] == [FailureMode.TIMEOUT] * 2 + \
        [FailureMode.BREAKER_OPEN] * 2
    assert all(o.blocked for o in outcomes)  # fail closed throughout
    assert book.state(BreakerKey.of(hooked)) is BreakerState.OPEN
    engine.close()


async def test_an_async_python_hook_cancelled_early_is_no_verdict() -> None:
    """A cancellation well before the hook's timeout (an ending run, a shutdown) is
    no verdict: the breaker neither fails nor succeeds it."""
    import asyncio

    book = BreakerBook()
    engine = Engine()
    started = asyncio.Event()

    async def slow(event):  # type: ignore[no-untyped-def]
        started.set()
        await asyncio.Event().wait()

    raw = engine.on("before_tool_call", slow, name="s", on_error="open", timeout=30).hook
    hooked = harden(raw, Policy(breaker_threshold=1, breaker_cooldown=600), breakers=book)
    engine.replace_hooks([hooked])
    task = asyncio.ensure_future(afire(engine, "before_tool_call", tool_name="t", args={}))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert book.state(BreakerKey.of(hooked)) is BreakerState.CLOSED
    engine.close()


EXT = textwrap.dedent("""\
    import os

    def register(ctx):
        def crash(event):
            with open(os.environ["CALLS"], "a") as fh:
                fh.write("x")
            raise RuntimeError("policy lookup failed")
        ctx.on("before_tool_call", crash, name="crash", on_error=os.environ["ON_ERROR"])
    """)


@pytest.mark.parametrize("on_error", ["open", "closed"])
def test_an_extension_hook_has_the_registrys_breaker(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     on_error: str) -> None:
    from interlock.config.doctor import diagnose
    from interlock.hosts.assembly import Host

    calls = tmp_path / "calls"
    home = tmp_path / "home"
    folder = home / "extensions" / "flaky"
    folder.mkdir(parents=True)
    (folder / "extension.toml").write_text('name = "flaky"\n')
    (folder / "extension.py").write_text(EXT)
    for name, value in (("CALLS", str(calls)), ("ON_ERROR", on_error),
                        ("INTERLOCK_HOME", str(home)),
                        ("INTERLOCK_MANAGED", str(tmp_path / "managed"))):
        monkeypatch.setenv(name, value)
    root = tmp_path / "project"
    (root / ".interlock").mkdir(parents=True)
    host = Host.open(root, home=home, record=False, use_entry_points=False)
    sink = RecordingSink()
    host.engine.add_sink(sink)
    try:
        assert host.extensions is not None
        assert host.extensions.infos["flaky"].status == "loaded"
        outcomes = [fire(host.engine, "before_tool_call", tool_name="terminal",
                         args={"command": "ls"}) for _ in range(10)]
        # Before: no breaker; every call ran the failing hook.
        assert len(calls.read_text()) == 3
        modes = [f.mode for f in sink.failures]
        assert modes == [FailureMode.CRASH] * 3 + [FailureMode.BREAKER_OPEN] * 7
        # An open breaker never opens a fail-closed gate.
        assert [o.blocked for o in outcomes] == [on_error == "closed"] * 10
        findings = [f for f in diagnose(host.registry, smoke=False).findings
                    if f.hook.endswith("flaky.crash")]
        assert any(f.check == "breaker" and "open" in f.message for f in findings)
        assert any(f.check == "fail-open" for f in findings) == (on_error == "open")
    finally:
        host.close()
