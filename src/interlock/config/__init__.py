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
"""

from interlock.config.model import HookDef, HookKind, PermissionRule, Requires

__all__ = ["HookDef", "HookKind", "PermissionRule", "Requires"]
