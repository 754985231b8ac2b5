from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from interlock.adapters.langchain import InterlockMiddleware


@tool
def shout(text: str) -> str:
    """Say it loudly."""
    return f"shouted: {text}"


class ScriptedChat(GenericFakeChatModel):  # a stand-in for a real chat model
    def bind_tools(self, tools, **kwargs):
        return self


model = ScriptedChat(messages=iter([
    AIMessage("", tool_calls=[{"id": "c1", "name": "shout", "args": {"text": "hello"}}]),
    AIMessage("done"),
]))
agent = create_agent(model, tools=[shout], middleware=[InterlockMiddleware()])
result = agent.invoke({"messages": [{"role": "user", "content": "Shout hello"}]})
print(result["messages"][-2].content)
