"""Model providers: ``scripted:FILE`` and ``openai:NAME`` (any OpenAI-compatible
chat-completions server), plus providers extensions register by prefix."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from interlock.engine.errors import ConfigError

if TYPE_CHECKING:  # tooling builds the agent's contracts, which a config load does not need
    from interlock.models.tooling import ModelProvider, ProviderFactory


def resolve_model(spec: str | None, *, providers: Mapping[str, ProviderFactory] = (
        {}), base_url: str | None = None, api_key: str | None = None
        ) -> tuple[ModelProvider, str]:
    """Turn ``scripted:FILE``, ``openai:NAME`` or ``PREFIX:NAME`` into a provider.

    With no spec, ``$INTERLOCK_MODEL`` is used; a bare name means ``openai:NAME``.
    Returns the provider and the model name shown in events.
    """
    spec = spec or os.environ.get("INTERLOCK_MODEL")
    if not spec:
        raise ConfigError("no model given", field="--model",
                          fix="pass --model scripted:FILE or --model openai:NAME, "
                              "or set INTERLOCK_MODEL")
    prefix, sep, name = spec.partition(":")
    if not sep:
        prefix, name = "openai", spec
    if prefix == "scripted":
        from interlock.models.scripted import ScriptedModel

        if not name:
            raise ConfigError("scripted needs a file", field="--model",
                              fix="--model scripted:path/to/script.yaml")
        model = ScriptedModel.from_file(name)
        return model, f"scripted:{model.name}"
    if prefix == "openai":
        from interlock.models.openai import OpenAIModel

        return OpenAIModel(name, base_url=base_url, api_key=api_key), name
    factory = providers.get(prefix)
    if factory is None:
        known = ", ".join(sorted({"scripted", "openai", *providers}))
        raise ConfigError(f"unknown model provider {prefix!r}", field="--model",
                          fix=f"use one of: {known}")
    return factory(name), spec
