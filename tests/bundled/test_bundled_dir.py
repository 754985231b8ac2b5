"""The bundled hooks are found where the package ships them (docs/configuration.md,
Bundled hooks and options), whichever module computes the folder."""

from __future__ import annotations

import pytest

from interlock.store.paths import bundled_dir


def test_the_package_bundled_folder_holds_the_bundled_hooks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INTERLOCK_BUNDLED", raising=False)
    for name in ("rate_limit", "destructive_guard", "secret_redaction"):
        assert (bundled_dir() / name / "HOOK.md").is_file(), bundled_dir()
