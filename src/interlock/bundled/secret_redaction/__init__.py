"""Bundled hook: see HOOK.md."""
