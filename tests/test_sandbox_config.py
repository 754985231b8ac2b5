"""`sandbox = "required"` and `sandbox_network = false`: declared in any config
file, strictest wins, checked with file/field/fix errors, shown by doctor."""

from __future__ import annotations

import pytest

from _cfg import World, run, world

__all__ = ["world"]
from interlock._errors import ConfigError


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
