"""SHA-256 for digests and names, without ``hashlib`` where Python has its own.

``hashlib`` loads OpenSSL on import (~4 ms), which a first bridge call,
loading and pinning every hook itself, cannot spare (docs/one-policy.md,
Speed). CPython's builtin module computes the same digests; an interpreter
built without it uses ``hashlib``'s.
"""

TYPE_CHECKING = False  # not typing's: this module is on the bridge's fast path
if TYPE_CHECKING:
    from hashlib import sha256 as sha256
else:
    try:  # 3.11
        from _sha256 import sha256
    except ImportError:  # 3.12+, or a build without the builtin
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256

__all__ = ["sha256"]
