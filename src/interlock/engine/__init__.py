"""The core: the event catalog, hooks, plans, dispatch, merging and outcomes.

See docs/engine.md.
"""
