"""Tests written before tests/helpers/ import the helpers by their old names
(``from _cfg import World``); tests/conftest.py keeps those names working."""

from __future__ import annotations

import importlib

from helpers.old_names import OLD_HELPER_NAMES


def test_every_old_helper_name_is_the_helpers_module_itself() -> None:
    for old, new in OLD_HELPER_NAMES.items():
        module = importlib.import_module(old)
        assert module is importlib.import_module(new)
        assert module.__spec__ is not None
        assert module.__spec__.name == new
