"""``python -m interlock.bridge <agent>``: the bridge without the CLI package.

What ``bridge install`` writes into agents' configs: it skips
``interlock.hosts.cli`` (and its command discovery) on every hook call.

Once the answer is written the process ends at once (``os._exit``): a
thread an in-process hook left running would otherwise keep the
interpreter alive past the agent's timeout, and an agent reads a hook it
timed out as "allow" (docs/one-policy.md, When the bridge fails).
"""

import os
import sys

import interlock.hosts.bridge as bridge

bridge.PROCESS_ENDS_WITH_ANSWER = True
code = bridge.main(sys.argv[1:])
try:
    sys.stdout.flush()
    sys.stderr.flush()
except OSError:
    code = 1
os._exit(code)
