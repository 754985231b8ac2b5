"""The project's policy in the MCP tests: one command hook (wire v1).

- refuses ``mcp__demo__delete_everything`` (exit 2, reason on stderr);
- rewrites echo's ``ORIGINAL`` into ``REWRITTEN`` (before_tool_call) and the
  result's ``SECRET`` into ``[hidden]`` (after_tool_call);
- crashes on echo's ``CRASH`` (the hook is fail-closed);
- refuses a resource read of a ``private`` note and the prompt ``greet`` for ``mallory``;
- adds context to a read of the public note and to the prompt ``greet`` for ``bob``.
"""

import json
import sys

request = json.loads(sys.stdin.readline())
event, payload = request["event"], request["payload"]
name, args = payload.get("tool_name", ""), payload.get("args") or {}
answer: dict = {}
if event == "before_tool_call":
    if name == "mcp__demo__delete_everything":
        sys.stderr.write("IL-MCP-REASON: deleting everything is refused by the project\n")
        sys.exit(2)
    if name == "mcp__demo__resources/read" and "private" in args.get("uri", ""):
        sys.stderr.write("IL-MCP-REASON: private notes stay private\n")
        sys.exit(2)
    if name == "mcp__demo__prompts/get" and (args.get("arguments") or {}).get("who") == "mallory":
        sys.stderr.write("IL-MCP-REASON: no prompts for mallory\n")
        sys.exit(2)
    if name == "mcp__demo__resources/read" and args.get("uri") == "demo://notes/public":
        answer = {"context": "IL-MCP-CONTEXT: this note is public"}
    if name == "mcp__demo__prompts/get" and (args.get("arguments") or {}).get("who") == "bob":
        answer = {"context": "IL-MCP-CONTEXT: bob prefers short greetings"}
    if name == "mcp__demo__echo" and args.get("text") == "CRASH":
        raise RuntimeError("the hook crashed")
    if name == "mcp__demo__echo" and "ORIGINAL" in args.get("text", ""):
        answer = {"decision": "modify",
                  "changes": {"args": {"text": args["text"].replace("ORIGINAL", "REWRITTEN")}}}
elif event == "after_tool_call" and name == "mcp__demo__echo":
    text = json.dumps(payload.get("result"))
    if "SECRET" in text:
        answer = {"decision": "modify", "changes": {"result": "echo: [hidden]"}}
print(json.dumps(answer))
