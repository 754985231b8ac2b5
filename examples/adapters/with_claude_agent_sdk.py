import asyncio

from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query

from interlock.adapters.claude_agent_sdk import interlock_hooks


async def main() -> None:
    options = ClaudeAgentOptions(hooks=interlock_hooks(), max_turns=4)
    async for message in query(prompt="Delete notes.txt with rm", options=options):
        if isinstance(message, ResultMessage):
            print(message.result)


asyncio.run(main())
