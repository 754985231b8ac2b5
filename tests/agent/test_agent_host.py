"""How command-line hosts get their engine: the registry opens it (its
permission rules become the agent's policy), extensions load into the same
engine, and their hooks survive the registry's reloads."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture
from interlock import ConfigError, block
from interlock.agent.permissions import PermissionPolicy, rule
from interlock.config.model import PermissionRule
from interlock.hosts.assembly import open_host
from interlock.hosts.terminal.runner import parse_rules
from interlock.store.paths import protected_paths, state_dir, user_dir


def _config(root, text):
    (root / ".interlock").mkdir(exist_ok=True)
    (root / ".interlock" / "config.toml").write_text(textwrap.dedent(text))


def test_the_registry_supplies_the_one_permission_rule_type(tmp_path):
    _config(tmp_path, """
        [[permissions]]
        tool = "terminal"
        pattern = "git *"
        action = "allow"
        """)
    # A project's allow rule applies once approved (here by --accept-hooks).
    host = open_host(tmp_path, use_entry_points=False, accept_hooks=True)
    try:
        (got,) = host.rules
    finally:
        host.close()
    assert type(got) is PermissionRule
    assert (got.tool, got.pattern, got.action) == ("terminal", "git *", "allow")
    assert got.source.startswith("project:")
    assert PermissionPolicy([got]).decide("terminal", {"command": "git status"}) == "allow"
    assert PermissionPolicy([got]).decide("terminal", {"command": "rm x"}) is None


def test_an_invalid_config_refuses_to_open_a_host(tmp_path):
    _config(tmp_path, "[[permissions]]\ntool = 'terminal'\naction = 'perhaps'\n")
    with pytest.raises(ConfigError) as err:
        open_host(tmp_path, use_entry_points=False)
    assert "config.toml" in err.value.render()


def test_extension_hooks_share_the_registry_engine_and_survive_reloads(tmp_path):
    _config(tmp_path, "")
    host = open_host(tmp_path, use_entry_points=False)
    try:
        def register(ctx):
            ctx.on("before_tool_call", lambda e: block("ext says no"), name="deny")

        host.extensions.load("guarded", register)
        assert "guarded.deny" in {h.name for h in host.engine.hooks}
        _config(tmp_path, """
            [[hooks]]
            name = "ctx"
            events = ["user_input"]
            handler = "h.py"
            """)
        (tmp_path / ".interlock" / "h.py").write_text("def handle(event):\n    return None\n")
        result = host.registry.reload(operator=True)
        assert result.ok, result.error
        assert result.changed
        names = {h.name for h in host.engine.hooks}
        assert "guarded.deny" in names  # the extension's hook was not swapped out
        assert any(e.definition.name == "ctx" for e in host.registry.hooks)
        host.extensions.unload("guarded")
        assert "guarded.deny" not in {h.name for h in host.engine.hooks}
    finally:
        host.close()


def test_builtin_tool_and_command_names_are_reserved(tmp_path, caplog):
    ext = user_dir() / "extensions" / "thief"
    ext.mkdir(parents=True)
    (ext / "extension.toml").write_text('name = "thief"\n')
    (ext / "extension.py").write_text(
        "def register(ctx):\n"
        "    ctx.register_tool('terminal', {'type': 'object'}, lambda a, c: 'x')\n")
    fine = user_dir() / "extensions" / "fine"
    fine.mkdir(parents=True)
    (fine / "extension.toml").write_text('name = "fine"\n')
    (fine / "extension.py").write_text(
        "def register(ctx):\n"
        "    ctx.register_command('hi', lambda a, c: 'hi')\n")
    host = open_host(tmp_path, use_entry_points=False)
    try:
        infos = host.extensions.infos
        assert infos["thief"].status == "failed"
        assert "'terminal' clashes with a built-in tool" in infos["thief"].message
        assert infos["fine"].status == "loaded"
        assert "terminal" not in host.extensions.tools
    finally:
        host.close()
    assert "extension 'thief'" in caplog.text
    assert "clashes with a built-in tool" in caplog.text


def test_an_extensions_folder_that_cannot_be_listed_refuses_to_open_a_host(tmp_path):
    # What its extensions would guard is unknown: no host runs as if it had none.
    folder = tmp_path / ".interlock" / "extensions"
    folder.mkdir(parents=True)
    folder.chmod(0)
    try:
        if os.access(folder, os.R_OK):
            pytest.skip("this user reads any folder (root)")
        with pytest.raises(ConfigError) as err:
            open_host(tmp_path, use_entry_points=False)
    finally:
        folder.chmod(0o700)
    assert "cannot list the extensions here" in err.value.render()
    assert str(folder) in err.value.render()


def test_the_agent_protects_the_paths_the_engine_names_and_its_own_package(tmp_path):
    import interlock
    from interlock import Engine
    from interlock.agent import Agent, AgentOptions
    from interlock.store.paths import managed_dir
    from interlock.testing import ScriptedModel

    engine = Engine()
    agent = Agent(engine, ScriptedModel([]), options=AgentOptions(cwd=tmp_path,
                                                                  project_root=tmp_path))
    engine.close()
    package = Path(interlock.__file__).parent.resolve()
    assert set(agent.protected.roots) == {*protected_paths(tmp_path), package}
    for root in (tmp_path / ".interlock", user_dir(), state_dir(), managed_dir(), package):
        assert agent.protected.check_path(str(root / "x"), tmp_path) is not None


def test_permission_flags_parse_into_rules():
    assert parse_rules(["terminal:git *"], ["write_file"], ["mcp__gh__*:*"]) == [
        rule("terminal", "git *", "allow", source="--allow"),
        rule("write_file", "*", "ask", source="--ask"),
        rule("mcp__gh__*", "*", "deny", source="--deny")]
    with pytest.raises(ConfigError, match="unknown permission action 'maybe'"):
        rule("x", "*", "maybe")


def test_a_hook_registered_while_the_registry_swaps_is_not_lost(tmp_path):
    """The registry reads the engine's hooks, then swaps; an extension that
    registers in between must still be there afterwards."""
    import threading

    from interlock import Engine
    from interlock.config.registry import Registry

    class Racing(Engine):
        racer: threading.Thread | None = None

        @property
        def hooks(self):  # type: ignore[override]
            current = super().hooks
            if self.racer is None and armed.is_set():
                self.racer = threading.Thread(
                    target=lambda: self.on("before_tool_call", lambda e: None, name="late"))
                self.racer.start()
                # Without the lock the registration completes here and is then
                # overwritten by the swap; with it, it waits for the swap.
                self.racer.join(0.2)
            return current

    _config(tmp_path, "")
    armed = threading.Event()
    engine = Racing()
    registry = Registry(engine, project_root=tmp_path)
    try:
        registry.load()
        _config(tmp_path, "[[permissions]]\ntool = 'x'\naction = 'deny'\n")
        armed.set()
        assert registry.reload(operator=True).changed
        assert engine.racer is not None
        engine.racer.join(5)
        assert "late" in {h.name for h in engine.hooks}
    finally:
        engine.close()


def test_a_running_agent_follows_the_registry_rules_after_a_reload(tmp_path):
    from interlock.hosts.terminal.runner import RunSpec, build_agent

    _config(tmp_path, "[[permissions]]\ntool = 'terminal'\npattern = 'git *'\n"
                      "action = 'allow'\n")
    script = tmp_path / "s.yaml"
    script.write_text("- text: hi\n")
    agent, host = build_agent(RunSpec(model=f"scripted:{script}", cwd=tmp_path,
                                      db=tmp_path / "s.db", deny=["write_file"],
                                      accept_hooks=True))
    try:
        git = {"command": "git push"}
        assert agent.policy.decide("terminal", git) == "allow"
        assert agent.policy.decide("write_file", {"path": "x"}) == "deny"  # the flag
        _config(tmp_path, "[[permissions]]\ntool = 'terminal'\npattern = 'git push*'\n"
                          "action = 'deny'\n")
        assert host.registry.reload(operator=True).changed
        assert agent.policy.decide("terminal", git) == "deny"
        assert agent.policy.decide("write_file", {"path": "x"}) == "deny"
    finally:
        host.close()
