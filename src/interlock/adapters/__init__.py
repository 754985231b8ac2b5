"""Interlock on agent frameworks: one adapter module per framework.

Each needs its extra (``pip install -e '.[pydantic-ai]'`` and so on) and
is imported by name (``interlock.adapters.pydantic_ai``); importing this
package imports no framework. docs/adapters.md has the mapping of each.
"""

from interlock.adapters._core import (
    AfterTool,
    DecisionNotSupported,
    Policy,
    PolicyStopped,
    ToolGate,
)

__all__ = ["AfterTool", "DecisionNotSupported", "Policy", "PolicyStopped", "ToolGate"]
