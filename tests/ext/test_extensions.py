"""register(ctx), entry points, handles, and the public surface."""

from __future__ import annotations

import pytest

import interlock
from interlock import Engine, RegistrationError, block
from interlock.events import BeforeToolCall
from interlock.ext.loader import load_extension


def test_register_ctx_on_with_priority_and_matcher():
    engine = Engine()

    def register(ctx):
        ctx.on("before_tool_call", lambda e: block("nope"), priority=-10, matcher="terminal",
               name="guard")

        @ctx.on("before_tool_call")
        def watch(e):
            return None

    ext = load_extension(engine, "policy", register)
    assert [h.name for h in engine.hooks] == ["policy.guard", "policy.watch"]
    assert engine.hooks[0].source.label == "package"
    assert engine.emit_sync(BeforeToolCall(tool_name="terminal")).blocked
    assert not engine.emit_sync(BeforeToolCall(tool_name="read_file")).blocked
    ext.unload()
    assert engine.hooks == ()


def test_a_crashing_extension_registers_nothing():
    engine = Engine()

    def register(ctx):
        ctx.on("before_tool_call", lambda e: None)
        raise RuntimeError("half loaded")

    with pytest.raises(RegistrationError, match="half loaded"):
        load_extension(engine, "broken", register)
    assert engine.hooks == ()


def test_public_all_is_sorted_and_complete():
    names = interlock.__all__
    assert names == sorted(names)
    # dir(): public names are loaded lazily (PEP 562), so vars() lists them only once used
    public = {n for n in dir(interlock) if not n.startswith("_")}
    modules = {n for n in public if type(getattr(interlock, n)).__name__ == "module"}
    assert public - modules == set(names)


def test_present_reads_entry_points_as_importlib_metadata_does(tmp_path, monkeypatch):
    """The in-process bridge asks present() on every call without importing
    importlib.metadata; it finds what importlib.metadata finds."""
    from importlib.metadata import entry_points

    from interlock.ext.find import ENTRY_POINT_GROUP, present

    def both() -> tuple[bool, bool]:
        return (present(None, tmp_path / "home"),
                bool(entry_points(group=ENTRY_POINT_GROUP)))

    if entry_points(group=ENTRY_POINT_GROUP):
        pytest.skip("an extension package is installed in this environment")
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    other = site / "other-1.0.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: other\nVersion: 1.0\n")
    (other / "entry_points.txt").write_text("[console_scripts]\nother = other:main\n")
    (site / "plain.egg-info").write_text("Name: plain\n")  # a file, not a folder
    assert both() == (False, False)
    acme = site / "Acme_Policy-1.0.dist-info"
    acme.mkdir()
    (acme / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-policy\nVersion: 1.0\n")
    (acme / "entry_points.txt").write_text("[interlock.extensions]\nacme = acme_policy\n")
    assert both() == (True, True)


def test_entry_point_extensions_are_discovered(tmp_path, monkeypatch):
    import sys

    from interlock.ext.loader import load_entry_points

    pkg = tmp_path / "acme_policy.py"
    pkg.write_text(
        "from interlock import block\n"
        "def register(ctx):\n"
        "    ctx.on('before_tool_call', lambda e: block('acme says no'), name='deny')\n"
    )
    broken = tmp_path / "acme_broken.py"
    broken.write_text("def register(ctx):\n    raise RuntimeError('boom at load')\n")
    dist = tmp_path / "acme_policy-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-policy\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[interlock.extensions]\nacme = acme_policy\nbroken = acme_broken\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    engine = Engine()
    loaded, errors = load_entry_points(engine)
    assert [ctx.name for ctx in loaded] == ["acme"]
    assert len(errors) == 1
    assert "broken" in errors[0]
    assert "boom at load" in errors[0]
    assert engine.emit_sync(BeforeToolCall(tool_name="x")).reason == "acme says no"
    assert engine.hooks[0].qualified_name == "package:acme.deny"
    sys.modules.pop("acme_policy", None)
    sys.modules.pop("acme_broken", None)
