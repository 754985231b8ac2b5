"""The project's policy in the real-client tests: one native command hook (wire v1).

Copied into the project's ``.interlock/`` and run by the bridge; its mode is
its first argument:

- ``gate``: blocks (exit 2) a shell command that contains ``BLOCKME``;
- ``context``: adds context naming the event;
- ``rewrite``: turns ``ORIGINAL``/``original`` into ``REWRITTEN``/``rewritten``;
- ``approve``: approves the call.
"""

import json
import sys

REASON = "IL-REASON-4b1d: commands marked BLOCKME are refused by the project's policy"
CONTEXT = {"before_tool_call": "IL-CTX-BEFORE-91c2", "after_tool_call": "IL-CTX-AFTER-5e07"}

mode = sys.argv[1]
request = json.loads(sys.stdin.readline())
event = request["event"]
args = request["payload"].get("args") or {}
command = args.get("command")
answer: dict = {}
if mode == "gate" and "BLOCKME" in json.dumps(command):
    sys.stderr.write(REASON + "\n")
    sys.exit(2)
elif mode == "context":
    answer = {"context": f"{CONTEXT[event]}: policy note for this call"}
elif mode == "rewrite" and isinstance(command, str) and "ORIGINAL" in command:
    command = command.replace("ORIGINAL", "REWRITTEN").replace("original", "rewritten")
    answer = {"decision": "modify", "changes": {"args": {**args, "command": command}}}
elif mode == "approve":
    answer = {"decision": "approve", "reason": "the project's policy approves this call"}
print(json.dumps(answer))
