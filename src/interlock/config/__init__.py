"""Configuration: where hooks are declared, how they are read and checked.

- :mod:`~interlock.config.model`: the fields a user writes (HookDef, Requires,
  PermissionRule);
- :mod:`~interlock.config.parse`: TOML / YAML / HOOK.md front matter, with
  line numbers for every error;
- :mod:`~interlock.config.validate`: what the fields mean (events, matchers,
  timeouts, dialects);
- :mod:`~interlock.config.sources`: discovery in the managed, project, user and
  bundled places;
- :mod:`~interlock.config.refs`: referenced files, requirements and digests;
- :mod:`~interlock.config.build`: turning a definition into a registered Hook.

The registry (:mod:`interlock.config.registry`) puts these together.

Its names load on first use (interlock.engine.lazy): the bridge's fast path walks
to the project with :mod:`interlock.config.project` (standard library only) and
must not load the config model for it (docs/one-policy.md, Speed).
"""

from interlock.engine import lazy as _lazy

_TYPE_CHECKING = False
if _TYPE_CHECKING:
    from interlock.config.model import HookDef, HookKind, PermissionRule, Requires

__all__ = ["HookDef", "HookKind", "PermissionRule", "Requires"]

_LAZY: dict[str, str] = dict.fromkeys(__all__, "interlock.config.model")


def __getattr__(name: str) -> object:
    return _lazy.attribute(globals(), _LAZY, name)


def __dir__() -> list[str]:
    return _lazy.names(globals(), _LAZY)
