"""An extension: register(ctx) adds a hook, a tool and a command.

Install it with `interlock ext install ./examples/extension` (docs/extensions.md).
"""

from interlock import block

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def no_shouting(event):
    command = event.args.get("command", "")
    if command.isupper() and any(c.isalpha() for c in command):
        return block("commands in capitals are a typo", hint="use lower case")
    return None


def register(ctx):
    ctx.on("before_tool_call", no_shouting, matcher="terminal")
    ctx.register_tool("shout", SCHEMA, lambda args, tool_ctx: args["text"].upper(),
                      description="Upper-case some text")
    ctx.register_command("greet", lambda arguments, cmd_ctx: f"hi {arguments}")
