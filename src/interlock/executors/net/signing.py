"""HMAC signatures on HTTP hook requests, so a hook server can tell Interlock's
requests from anyone else's.

    X-Interlock-Timestamp: 1767225600
    X-Interlock-Signature: sha256=<hex HMAC-SHA256(secret, timestamp + "." + body)>

The timestamp is inside the signed text, so a captured request cannot be
replayed later than the receiver's tolerance; the body carries the invocation
id, which the receiver can also use to drop duplicates.
"""

from __future__ import annotations

import hashlib
import hmac
import time

TIMESTAMP_HEADER = "X-Interlock-Timestamp"
SIGNATURE_HEADER = "X-Interlock-Signature"
_SCHEME = "sha256="


def signature(secret: str | bytes, timestamp: str, body: bytes) -> str:
    """The value of the signature header for this timestamp and body."""
    key = secret.encode() if isinstance(secret, str) else secret
    mac = hmac.new(key, timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return _SCHEME + mac.hexdigest()


def sign(secret: str | bytes, body: bytes, *, now: float | None = None) -> dict[str, str]:
    """The two headers to send with ``body``."""
    ts = str(int(time.time() if now is None else now))
    return {TIMESTAMP_HEADER: ts, SIGNATURE_HEADER: signature(secret, ts, body)}


def verify(secret: str | bytes, body: bytes, timestamp: str | None, sig: str | None, *,
           tolerance: float = 300.0, now: float | None = None) -> bool:
    """True when ``sig`` signs ``body`` at ``timestamp``, and that is within ``tolerance``.

    For hook servers written in Python; the comparison is constant-time.
    """
    if not timestamp or not sig or not timestamp.isdigit():
        return False
    current = time.time() if now is None else now
    if abs(current - int(timestamp)) > tolerance:
        return False
    return hmac.compare_digest(signature(secret, timestamp, body), sig)
