"""The programs that host the engine: the CLI, the server, the agent bridges, the terminal agent."""
