"""The one redaction module: removes secrets from everything Interlock writes
or returns (audit records, dead letters, logs, transcripts, block reasons that
reach a model).

It covers common token formats, credentials in URLs, ``key=value`` secrets and
high-entropy strings. It is deliberately eager: a false positive costs a
``[REDACTED]`` in a log line, a false negative leaks a credential.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

MASK = "[REDACTED]"

# Token formats with a recognisable prefix or shape.
_TOKEN_PATTERNS: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ("anthropic", r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}"),
    ("github", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("gitlab", r"\bglpat-[A-Za-z0-9_\-]{20,}"),
    ("aws_access_key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"),
    ("slack", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("google_api", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("stripe", r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("huggingface", r"\bhf_[A-Za-z0-9]{30,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("bearer", r"\b[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9_\-\.=~+/]{16,}"),
    ("npm", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("twilio", r"\bSK[0-9a-fA-F]{32}\b"),
)
_TOKENS = re.compile("|".join(f"(?:{p})" for _n, p in _TOKEN_PATTERNS))

# user:password@ in any URL-like string.
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/\s:@]+):([^/\s@]+)@")

# key=value / key: value / "key": "value" where the key names a secret.
_SECRET_KEYS = (
    r"(?:[A-Za-z0-9_.\-]*?(?:password|passwd|pwd|secret|token|api[_\-]?key|apikey|"
    r"access[_\-]?key|private[_\-]?key|client[_\-]?secret|auth|credentials?|"
    r"cookie))"
)
_KEY_VALUE = re.compile(
    rf"""(?ix)
    (?P<key>["']?{_SECRET_KEYS}["']?)
    (?P<sep>\s*[:=]\s*)
    (?P<quote>["']?)
    (?P<value>[^\s"',;&}}]{{4,}})
    """
)

# Long base64/hex-ish runs: redacted when their entropy is high.
_CANDIDATE = re.compile(r"[A-Za-z0-9+/_\-=]{24,}")
ENTROPY_THRESHOLD = 4.0


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``."""
    if not text:
        return 0.0
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _looks_secret(run: str) -> bool:
    if run.isdigit() or run.isalpha():
        return False  # long words and numbers are not credentials
    if "/" in run.strip("/") and run.count("/") > 2:
        return False  # a path
    return shannon_entropy(run) >= ENTROPY_THRESHOLD


# Escapes of JSON (and most string literals): in `"x\\nAKIA..."` the token
# follows the letter n with no word boundary, and a mask over "nsk-..." would
# eat the escape. Each run between escapes is redacted on its own.
_ESCAPE = re.compile(r"(\\(?:u[0-9A-Fa-f]{4}|[nrtbf\"'/\\]))")
_PRIVATE_KEY = re.compile(_TOKEN_PATTERNS[0][1])


def redact(text: str) -> str:
    """``text`` with every secret found replaced by ``[REDACTED]``."""
    if not text:
        return text
    if "\\" not in text:
        return _redact_run(text)
    # A PEM key spans escaped newlines: mask it whole before splitting.
    text = _PRIVATE_KEY.sub(MASK, text)
    parts = _ESCAPE.split(text)
    return "".join(p if i % 2 else _redact_run(p) for i, p in enumerate(parts))


def _redact_run(text: str) -> str:
    text = _TOKENS.sub(MASK, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _KEY_VALUE.sub(
        lambda m: f"{m.group('key')}{m.group('sep')}{m.group('quote')}{MASK}", text)
    return _CANDIDATE.sub(lambda m: MASK if _looks_secret(m.group(0)) else m.group(0), text)


def redact_data(value: Any) -> Any:
    """Redact every string inside JSON-like data; keys named like secrets lose their values."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if isinstance(k, str) and re.fullmatch(_SECRET_KEYS, k, re.I) and v not in (None, ""):
                out[k] = MASK
            else:
                out[k] = redact_data(v)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value


def contains_secret(text: str) -> bool:
    return redact(text) != text
