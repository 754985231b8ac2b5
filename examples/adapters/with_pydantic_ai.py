from pydantic_ai import Agent
from pydantic_ai.models.test import TestModel

from interlock.adapters.pydantic_ai import Interlock

agent = Agent(TestModel(call_tools=["delete_file"]), capabilities=[Interlock()])


@agent.tool_plain
def delete_file(path: str) -> str:
    """Delete a file."""
    raise AssertionError("the policy blocks this tool; it never runs")


print(agent.run_sync("Delete notes.txt").output)
