"""`sandbox = "required"` and `sandbox_network = false`: declared in any config
file, strictest wins, checked with file/field/fix errors, shown by doctor."""

from __future__ import annotations

import pytest

from helpers.cfg import World, run, world

__all__ = ["world"]
from interlock.engine.errors import ConfigError


def test_any_place_may_require_the_sandbox_and_none_can_lift_it(world: World) -> None:
    registry = world.registry()
    registry.load()
    assert registry.sandbox == ("auto", True)
    world.config(world.home, 'sandbox = "required"\nsandbox_network = false\n')
    world.config(world.project, 'sandbox = "auto"\nsandbox_network = true\n')
    registry = world.registry()
    registry.load()
    assert registry.sandbox == ("required", False)


def test_a_bad_sandbox_value_names_the_file_the_field_and_the_fix(world: World) -> None:
    path = world.config(world.project, 'sandbox = "strict"\n')
    registry = world.registry()
    with pytest.raises(ConfigError) as caught:
        registry.load()
    text = str(caught.value)
    assert str(path) in text
    assert "sandbox" in text
    assert caught.value.fix


def test_the_config_files_read_are_pinned(world: World) -> None:
    path = world.config(world.project, 'sandbox = "auto"\n')
    registry = world.registry()
    registry.load()
    assert path.resolve() in {p.resolve() for p in registry.pinned_files}


def test_doctor_says_when_there_is_no_sandbox_and_fails_when_one_is_required(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INTERLOCK_BWRAP", "")
    code, out, _ = run(world, "doctor")
    assert "sandbox: NONE" in out
    assert code == 0
    world.config(world.project, 'sandbox = "required"\n')
    code, out, _ = run(world, "doctor")
    assert 'sandbox = "required" refuses to start' in out
    assert code == 1


@pytest.mark.slow
def test_interlock_run_refuses_to_start_when_the_sandbox_is_required_and_absent(
        world: World, tmp_path) -> None:
    import os
    import subprocess
    import sys

    world.config(world.project, 'sandbox = "required"\n')
    script = tmp_path / "script.json"
    script.write_text('[{"tool_calls": [{"name": "terminal", "args": {"command": '
                      '"touch ran"}}]}, {"text": "done"}]')
    env = {**os.environ, "INTERLOCK_BWRAP": ""}
    proc = subprocess.run([sys.executable, "-m", "interlock", "run", "--model",
                           f"scripted:{script}", "go"], cwd=world.root, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert 'sandbox = "required"' in proc.stderr
    assert "bubblewrap" in proc.stderr
    assert not (world.root / "ran").exists()
    (world.project / "config.toml").write_text('sandbox = "auto"\n')
    proc = subprocess.run([sys.executable, "-m", "interlock", "run", "--model",
                           f"scripted:{script}", "go"], cwd=world.root, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "sandbox: NONE" in proc.stderr
    assert (world.root / "ran").exists()


def test_the_chat_gateway_refuses_to_start_when_the_sandbox_is_required_and_absent(
        world: World, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from interlock.hosts.server.gateway import build_gateway

    script = tmp_path / "script.json"
    script.write_text('[{"text": "hi"}]')
    world.config(world.project, 'sandbox = "required"\n')
    registry = world.registry()
    registry.load()
    monkeypatch.setenv("INTERLOCK_BWRAP", "")
    with pytest.raises(ConfigError) as caught:
        build_gateway(registry.engine, project_root=world.root, model=f"scripted:{script}",
                      registry=registry)
    assert caught.value.field == "sandbox"
