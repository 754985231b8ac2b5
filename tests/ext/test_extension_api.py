"""The extension API: tools, commands, providers, the bus, state, isolation."""

from __future__ import annotations

import json
import threading

import pytest

from interlock import Engine, RegistrationError, block
from interlock.ext.bus import EventBus
from interlock.ext.loader import ExtensionSet, load_extension
from interlock.ext.state import ExtensionState
from interlock.models.tooling import ModelRequest, ModelResponse, ToolSpec
from interlock.testing import fire

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


@pytest.fixture
def engine():
    eng = Engine()
    yield eng
    eng.close()


@pytest.fixture
def exts(engine, tmp_path):
    s = ExtensionSet(engine, home=tmp_path / "home", use_entry_points=False,
                     reserved_tools=["terminal", "read_file"], reserved_commands=["new"])
    yield s
    s.close()


def _counter(ctx):
    ctx.register_tool("word_count", SCHEMA, lambda args, _c: len(args["text"].split()),
                      description="Count words", read_only=True)

    async def hello(arguments, _c):
        return f"hello {arguments}"

    ctx.register_command("/hello", hello, description="Say hello")

    class Echo:
        def __init__(self, model):
            self.model = model

        async def complete(self, request: ModelRequest) -> ModelResponse:
            return ModelResponse(text=f"{self.model}: {request.messages[-1]['content']}")

    ctx.register_provider("echo", Echo)


async def test_tools_commands_and_providers_are_collected(exts):
    info = exts.load("counter", _counter)
    assert info.status == "loaded"
    assert info.tools == ("word_count",)
    assert info.commands == ("hello",)
    spec = exts.tools["word_count"]
    assert isinstance(spec, ToolSpec)
    assert spec.source == "counter"
    assert spec.read_only
    assert spec.description == "Count words"
    assert await exts.call_tool("word_count", {"text": "a b c"}) == 3
    assert await exts.run_command("/hello", "world") == "hello world"
    provider = exts.provider("echo/tiny")
    reply = await provider.complete(ModelRequest(model="tiny", messages=[
        {"role": "user", "content": "hi"}]))
    assert reply.text == "tiny: hi"


def test_a_name_clash_is_a_load_error_not_an_override(exts):
    exts.load("counter", _counter)

    def second(ctx):
        ctx.register_tool("word_count", SCHEMA, lambda a, c: "mine")

    info = exts.load("impostor", second)
    assert info.status == "failed"
    assert "tool 'word_count' is already registered by extension 'counter'" in info.message
    assert exts.tools["word_count"].source == "counter"

    def builtin(ctx):
        ctx.register_tool("terminal", SCHEMA, lambda a, c: "mine")

    info = exts.load("shadow", builtin)
    assert info.status == "failed"
    assert "clashes with a built-in tool" in info.message

    def cmd(ctx):
        ctx.register_command("new", lambda a, c: "mine")

    assert "built-in command" in exts.load("cmd", cmd).message

    def prov(ctx):
        ctx.register_provider("echo", lambda m: None)

    assert "provider prefix 'echo' is already registered" in exts.load("prov", prov).message


def test_a_crash_disables_one_extension_and_undoes_its_half(exts, engine):
    def broken(ctx):
        ctx.on("before_tool_call", lambda e: None, name="watch")
        ctx.register_tool("half", SCHEMA, lambda a, c: 1)
        raise RuntimeError("boom")

    bad = exts.load("broken", broken)
    good = exts.load("counter", _counter)
    assert bad.status == "failed"
    assert "RuntimeError: boom" in bad.message
    assert good.status == "loaded"
    assert "half" not in exts.tools
    assert [h.name for h in engine.hooks] == []


def test_guarded_events_block_until_the_extension_loads_again(exts, engine):
    state = {"fixed": False}

    def flaky(ctx):
        if not state["fixed"]:
            raise ImportError("missing dependency")
        ctx.on("before_tool_call", lambda e: block("policy says no")
               if e.args.get("command") == "bad" else None, name="policy")

    info = exts.load("policy", flaky, guards=["before_tool_call", "user_input"])
    assert info.status == "failed"
    out = fire(engine, "before_tool_call", tool_name="terminal", args={"command": "ls"})
    assert out.blocked
    assert "policy.unavailable" in (out.reason or "")
    assert fire(engine, "user_input", text="hi").blocked
    # Observe-only and unguarded events are not affected.
    assert not fire(engine, "message_received", text="x").blocked

    state["fixed"] = True
    assert exts.reload("policy").status == "loaded"
    assert not fire(engine, "before_tool_call", tool_name="terminal",
                    args={"command": "ls"}).blocked
    assert fire(engine, "before_tool_call", tool_name="terminal",
                args={"command": "bad"}).blocked
    assert [h.name for h in engine.hooks] == ["policy.policy"]


def test_state_persists_atomically(tmp_path, engine):
    ctx = load_extension(engine, "s", lambda c: None, state_dir=tmp_path / "s")
    ctx.state.set("count", 1)
    ctx.state.update({"items": [1, 2]})
    again = ExtensionState(tmp_path / "s")
    assert again.data() == {"count": 1, "items": [1, 2]}
    assert json.loads((tmp_path / "s" / "state.json").read_text()) == again.data()
    assert [p.name for p in (tmp_path / "s").iterdir()] == ["state.json"]  # no temp left
    with pytest.raises(Exception, match="JSON-serialisable"):
        ctx.state.set("bad", object())
    assert ExtensionState(tmp_path / "s").get("count") == 1  # the failed write changed nothing
    ctx.state.delete("count")
    assert ExtensionState(tmp_path / "s").get("count") is None


def test_corrupt_state_is_a_clear_error(tmp_path):
    (tmp_path / "state.json").write_text("{oops")
    with pytest.raises(Exception, match=r"state.json.*not valid JSON.*repair or delete"):
        ExtensionState(tmp_path).get("x")


def test_bus_delivers_between_extensions_asynchronously(exts):
    got: list[tuple[str, object, str]] = []
    release = threading.Event()

    def listener_ext(ctx):
        @ctx.events.subscribe("build.*")
        def on_build(message):
            release.wait(5)
            got.append((message.topic, message.data, message.sender))

    exts.load("listener", listener_ext)
    exts.load("publisher", lambda ctx: None)
    pub = exts._loaded["publisher"].events
    result = pub.publish("build.done", {"ok": True})
    assert result.queued == 1
    assert got == []  # publish returned before the (blocked) listener ran
    release.set()
    assert exts.bus.drain(5)
    assert got == [("build.done", {"ok": True}, "publisher")]
    assert pub.publish("other.topic").queued == 0


def test_bus_overflow_is_counted_and_reported():
    overflowed = []
    bus = EventBus(on_overflow=lambda sub, msg: overflowed.append(msg.data))
    release = threading.Event()
    seen = []

    def slow(message):
        release.wait(5)
        seen.append(message.data)

    sub = bus.subscribe("t", slow, subscriber="slow", maxsize=2)
    results = [bus.publish("t", i) for i in range(6)]
    release.set()
    assert bus.drain(5)
    dropped = [i for i, r in enumerate(results) if r.dropped]
    assert len(seen) + len(dropped) == 6
    assert sub.dropped == len(dropped) == len(overflowed) >= 3
    assert bus.stats()[0]["dropped"] == sub.dropped
    assert sorted(seen + overflowed) == list(range(6))  # every message accounted for
    bus.close()


def test_a_failing_listener_is_counted_and_others_still_get_messages():
    bus = EventBus()
    seen = []

    def bad(message):
        raise ValueError("listener bug")

    bad_sub = bus.subscribe("t", bad)
    bus.subscribe("t", lambda m: seen.append(m.data))
    bus.publish("t", 1)
    assert bus.drain(5)
    assert seen == [1]
    assert bad_sub.errors == 1
    bus.close()


def test_unloading_removes_bus_subscriptions(exts):
    exts.load("listener", lambda ctx: ctx.events.subscribe("x", lambda m: None))
    assert len(exts.bus.stats()) == 1
    exts.unload("listener")
    assert exts.bus.stats() == []


def test_invalid_registrations_are_clear(engine):
    with pytest.raises(RegistrationError, match="tool name 'bad name'"):
        load_extension(engine, "e", lambda c: c.register_tool("bad name", SCHEMA, print))
    with pytest.raises(RegistrationError, match="JSON Schema of type object"):
        load_extension(engine, "e", lambda c: c.register_tool("t", {"type": "string"}, print))


def test_guards_recorded_in_a_pin_hold_when_the_module_cannot_load(engine, tmp_path):
    from interlock.ext.pins import FilePinStore, Pin

    pins = FilePinStore(tmp_path / "pins")
    pins.put("pkg", Pin(name="pkg", kind="package", source="pkg.whl", dist="pkg",
                        guards=["before_tool_call"]))
    exts = ExtensionSet(engine, home=tmp_path, pins=pins, use_entry_points=False)

    def cannot_import(ctx):
        raise ModuleNotFoundError("No module named 'pkg'")

    info = exts.load("pkg", cannot_import)
    assert info.status == "failed"
    assert info.guards == ("before_tool_call",)
    assert fire(engine, "before_tool_call", tool_name="read_file").blocked
    exts.close()
    assert not fire(engine, "before_tool_call", tool_name="read_file").blocked


def test_async_listeners_and_folder_hook_sources(exts, engine, tmp_path):
    got = []

    async def listener(message):
        got.append(message.data)

    exts.load("a", lambda ctx: ctx.events.subscribe("t", listener))
    exts.bus.publish("t", 42)
    assert exts.bus.drain(5)
    assert got == [42]

    folder = exts.home / "extensions" / "hooky"
    folder.mkdir(parents=True)
    (folder / "extension.toml").write_text('name = "hooky"\n')
    (folder / "extension.py").write_text(
        "def register(ctx):\n"
        "    ctx.on('before_tool_call', lambda e: None, name='watch', priority=-5)\n")
    infos = {i.name: i for i in exts.load_all()}
    assert infos["hooky"].status == "loaded"
    (hook,) = [h for h in engine.hooks if h.name == "hooky.watch"]
    assert hook.source.label == "user"
    assert hook.priority == -5


def test_bus_drops_and_listener_crashes_become_dead_letters(tmp_path):
    # A message an extension published and nobody got is a failure like a
    # hook's: it reaches the engine's sinks and so the durable store.
    from interlock.reliability.sinks import DeadLetterSink
    from interlock.store import open_store

    store = open_store(str(tmp_path / "interlock.db"))
    engine = Engine(sinks=[DeadLetterSink(store)])
    exts = ExtensionSet(engine, home=tmp_path / "home", use_entry_points=False)
    release = threading.Event()

    def listener_ext(ctx):
        @ctx.events.subscribe("jobs", maxsize=1)
        def slow(message):
            release.wait(5)

        @ctx.events.subscribe("crash")
        def broken(message):
            raise RuntimeError("listener bug")

    try:
        exts.load("listener", listener_ext)
        exts.load("publisher", lambda ctx: None)
        pub = exts._loaded["publisher"].events
        results = [pub.publish("jobs", i) for i in range(4)]
        pub.publish("crash", "x")
        release.set()
        assert exts.bus.drain(5)
        dropped = sum(r.dropped for r in results)
        assert dropped >= 2
        assert store.flush(10)
        letters = store.dead_letters()
        by_mode: dict[str, list] = {}
        for dl in letters:
            by_mode.setdefault(str(dl.mode), []).append(dl)
        # One dead letter at the 1st, 10th, 100th ... drop, not one per message.
        assert len(by_mode["dropped"]) == 1
        assert "1 message(s) dropped so far" in by_mode["dropped"][0].error
        assert {(dl.hook, dl.event, dl.subject) for dl in by_mode["dropped"]} == {
            ("extension:listener", "bus:jobs", "publisher")}
        [crash] = by_mode["crash"]
        assert (crash.hook, crash.event) == ("extension:listener", "bus:crash")
        assert "listener bug" in crash.error
    finally:
        exts.close()
        engine.close()
        store.close()


def test_a_drop_flood_leaves_few_dead_letters_and_an_on_overflow_bug_blocks_nothing(tmp_path):
    from interlock.testing import RecordingSink

    sink = RecordingSink()
    engine = Engine(sinks=[sink])
    exts = ExtensionSet(engine, home=tmp_path / "home", use_entry_points=False)
    release = threading.Event()
    try:
        exts.load("listener", lambda ctx: ctx.events.subscribe(
            "jobs", lambda m: release.wait(5), maxsize=1))
        results = [exts.bus.publish("jobs", i) for i in range(150)]
        assert sum(r.dropped for r in results) >= 100
        assert [f.error.split("; ")[1] for f in sink.failures] == [
            "1 message(s) dropped so far", "10 message(s) dropped so far",
            "100 message(s) dropped so far"]

        def broken(sub, message):
            raise RuntimeError("overflow handler bug")

        exts.bus.on_overflow = broken
        seen: list[object] = []
        exts.bus.subscribe("jobs", lambda m: seen.append(m.data))  # a queue with room
        # One publish: the full queue calls the broken handler, the other queues.
        result = exts.bus.publish("jobs", "more")
        assert (result.queued, result.dropped) == (1, 1)
        release.set()
        assert exts.bus.drain(5)  # nothing queued was stranded
        assert seen == ["more"]
    finally:
        release.set()
        exts.close()
        engine.close()


def test_an_unreadable_consent_record_fails_that_extension_closed(engine, tmp_path):
    from interlock.ext.pins import FilePinStore

    pins = FilePinStore(tmp_path / "pins")
    (tmp_path / "pins").mkdir()
    (tmp_path / "pins" / "policy.pin.json").write_text("{not json")
    exts = ExtensionSet(engine, home=tmp_path, pins=pins, use_entry_points=False)
    info = exts.load("policy", lambda ctx: None, guards=["before_tool_call"])
    assert info.status == "failed"
    assert "pin file is not valid JSON" in info.message
    assert fire(engine, "before_tool_call", tool_name="read_file").blocked
    assert exts.load("counter", _counter).status == "loaded"
    exts.close()


def test_an_unreadable_manifest_is_one_failed_extension(exts, engine):
    root = exts.home / "extensions"
    (root / "garbled").mkdir(parents=True)
    (root / "garbled" / "extension.toml").write_bytes(b'name = "\xff"\n')
    (root / "folder" / "extension.toml").mkdir(parents=True)
    infos = {i.name: i for i in exts.load_all()}
    assert infos["garbled"].status == infos["folder"].status == "failed"
    assert "extension.toml: cannot be read" in infos["garbled"].message
    assert "extension.toml: cannot be read" in infos["folder"].message
