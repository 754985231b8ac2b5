"""Outbound network access for hooks: SSRF checks and pinned connections.

    from interlock.net import PinnedClient, SSRFError, check_url

- :mod:`interlock.net.ssrf`: which addresses may be reached, and why not.
- :mod:`interlock.net.pinned`: an httpx client that connects only to checked
  addresses.
- :mod:`interlock.net.signing`: HMAC signatures on hook requests.
"""

from interlock.net.pinned import PinnedClient, PinnedTransport
from interlock.net.ssrf import Allowlist, SSRFError, check_url

__all__ = ["Allowlist", "PinnedClient", "PinnedTransport", "SSRFError", "check_url"]
