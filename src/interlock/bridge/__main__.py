"""``python -m interlock.bridge <agent>``: the bridge without the CLI package.

What ``bridge install`` writes into agents' configs: it skips
``interlock.cli`` (and its command discovery) on every hook call.
"""

import sys

from interlock.bridge import main

sys.exit(main(sys.argv[1:]))
