#!/usr/bin/env python3
"""A worker hook: started once, it answers one JSON line per request, matched by id.

Plain Python with no imports from interlock, so any python3 runs it
(interlock.worker.run does this loop for you: docs/wire-contract.md, Workers).
"""

import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    command = request["payload"].get("args", {}).get("command", "")
    answer = {"id": request["id"]}
    if ".env" in command.replace(".envrc", ""):
        answer.update(decision="block", reason="reading .env files exposes secrets",
                      hint="ask the user for the one value you need")
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()
