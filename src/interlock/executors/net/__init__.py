"""Outbound network access for hooks: SSRF checks and pinned connections.

    from interlock.executors.net import PinnedClient, SSRFError, check_url

- :mod:`interlock.executors.net.ssrf`: which addresses may be reached, and why not.
- :mod:`interlock.executors.net.pinned`: an httpx client that connects only to checked
  addresses.
- :mod:`interlock.executors.net.signing`: HMAC signatures on hook requests.
"""

from interlock.executors.net.pinned import PinnedClient, PinnedTransport
from interlock.executors.net.ssrf import Allowlist, SSRFError, check_url

__all__ = ["Allowlist", "PinnedClient", "PinnedTransport", "SSRFError", "check_url"]
