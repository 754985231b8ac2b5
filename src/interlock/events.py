"""Typed, immutable event payloads, generated from the catalog table.

Each catalog entry becomes a frozen ``msgspec.Struct`` subclass of
:class:`Event` (``before_tool_call`` -> ``BeforeToolCall``). Build one with
keyword arguments; a hook that wants a change returns ``modify(...)`` and the
engine makes the changed copy.

The public path of :mod:`interlock.engine.events` (the engine imports that
module, never this one, so imports flow one way: docs/architecture.md).
"""

from typing import TYPE_CHECKING

from interlock.engine.events import *  # noqa: F403  (every generated payload class)
from interlock.engine.events import EVENT_TYPES as EVENT_TYPES
from interlock.engine.events import Event as Event
from interlock.engine.events import __all__ as __all__
from interlock.engine.events import __getattr__ as __getattr__
from interlock.engine.events import event_type as event_type
from interlock.engine.events import make as make
from interlock.engine.events import schema as schema
from interlock.engine.events import type_declarations as type_declarations

if TYPE_CHECKING:  # the generated classes, declared for type checkers
    from interlock.engine.event_types import *  # noqa: F403
