import asyncio

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.testing.model import ScriptedModel, assistant_message, function_call

from interlock.adapters.openai_agents import Interlock

set_tracing_disabled(True)  # this example runs offline


@function_tool
def delete_file(path: str) -> str:
    """Delete a file."""
    raise AssertionError("the policy blocks this tool; it never runs")


model = ScriptedModel([[function_call("delete_file", {"path": "notes.txt"}, call_id="c1")],
                       [assistant_message("I was not allowed to delete it.")]])

interlock = Interlock()
agent = Agent(name="assistant", model=model, tools=interlock.tools([delete_file]))
result = asyncio.run(Runner.run(agent, "Delete notes.txt", hooks=interlock))
print(result.new_items[1].output)
print(result.final_output)
