"""Whatever a user writes, loading gives a revision or one clear ConfigError, never a crash."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from interlock.config.sources import Place, discover
from interlock.engine.errors import ConfigError
from interlock.engine.hooks import Source

pytestmark = pytest.mark.slow

_FIELDS = ["name", "events", "command", "handler", "matcher", "timeout", "on_error", "kind",
           "dialect", "requires", "env", "enabled", "priority", "modifies", "bogus"]
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 700) | st.floats(allow_nan=False)
    | st.sampled_from(["before_tool_call", "terminal", "(", "*", "closed", "open", "worker",
                       "claude", "x.py", "", "PreToolUse", "linux", "mac"]),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.sampled_from(["os", "bins", "env", "X", "tool_name"]), inner,
                      max_size=3),
    max_leaves=6)


def _check(folder: Path, name: str, text: str, root: Path | None = None) -> int:
    (folder / name).write_text(text)
    error: ConfigError | None = None
    try:
        found = discover([Place(Source.USER, root or folder)])
    except ConfigError as exc:
        error = exc
    finally:
        (folder / name).unlink()
    if error is None:
        return len(found.hooks)
    assert error.file is not None  # every user mistake names its file
    assert str(error)
    return -1


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(hooks=st.lists(st.dictionaries(st.sampled_from(_FIELDS), _VALUES, max_size=6),
                      max_size=3))
def test_any_yaml_hook_list_loads_or_fails_clearly(tmp_path: Path, hooks: list) -> None:
    import yaml

    _check(tmp_path, "config.yaml", yaml.safe_dump({"hooks": hooks}))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list('[]{}=",\n hoksnamevt1:+-')), max_size=80))
def test_any_toml_text_loads_or_fails_clearly(tmp_path: Path, text: str) -> None:
    _check(tmp_path, "config.toml", text)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("-+:\n abc[]{}=events")), max_size=60))
def test_any_hook_md_loads_or_fails_clearly(tmp_path: Path, text: str) -> None:
    folder = tmp_path / "hooks" / "h"
    folder.mkdir(parents=True, exist_ok=True)
    _check(folder, "HOOK.md", text, root=tmp_path)


def test_the_hook_md_check_really_reads_the_folder(tmp_path: Path) -> None:
    folder = tmp_path / "hooks" / "h"
    folder.mkdir(parents=True)
    text = '+++\nevents = ["user_input"]\ncommand = "true"\n+++\n'
    assert _check(folder, "HOOK.md", text, root=tmp_path) == 1
    assert _check(folder, "HOOK.md", "+++\n", root=tmp_path) == -1
