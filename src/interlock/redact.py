"""The one redaction module: removes secrets from everything Interlock writes
or returns (audit records, dead letters, logs, transcripts, block reasons that
reach a model).

It covers common token formats, credentials in URLs, ``key=value`` secrets and
high-entropy strings. It is deliberately eager: a false positive costs a
``[REDACTED]`` in a log line, a false negative leaks a credential.
"""

from __future__ import annotations

import functools
import logging
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
    ("pypi", r"\bpypi-AgE[A-Za-z0-9_\-]{16,}"),
    ("sendgrid", r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("google_oauth", r"\bya29\.[A-Za-z0-9_\-]{20,}"),
    ("digitalocean", r"\bdo[pro]_v1_[a-f0-9]{32,}"),
    ("shopify", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("databricks", r"\bdapi[a-f0-9]{32}"),
    ("grafana", r"\bgl(?:sa|c)_[A-Za-z0-9_\-]{20,}"),
    ("slack_webhook", r"hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
    ("basic_auth", r"\b[Bb]asic\s+[A-Za-z0-9+/]{8,}={0,2}"),
    ("token_auth", r"\b(?:[Tt]oken|[Dd]igest)\s+[A-Za-z0-9_\-\.=~+/]{20,}"),
)
# Tokens start a word: the lookbehind rejects most positions before the
# alternation is tried at all, which keeps redact() near linear.
_TOKENS = re.compile(
    "(?<![A-Za-z0-9_])(?:" + "|".join(f"(?:{p})" for _n, p in _TOKEN_PATTERNS) + ")")

# user:password@ in any URL-like string.
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)([^/\s:@]+):([^/\s@]+)@")

# key=value / key: value / "key": "value" where the key names a secret. Any
# key=value is matched, then its key is checked: one pass, no backtracking
# over every prefix of every word.
_SECRET_WORDS = (
    r"(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|apikey|"
    r"access[_\-]?key|private[_\-]?key|account[_\-]?key|client[_\-]?secret|auth|"
    r"credentials?|cookie|signature|(?<![A-Za-z0-9])key)"
)
_SECRET_KEYS = rf"(?:[A-Za-z0-9_.\-]*?{_SECRET_WORDS})"
"""A whole key that names a secret (for redact_data's dict keys)."""
_SECRET_NAME = re.compile(rf"(?i){_SECRET_WORDS}$")
_KEY_VALUE = re.compile(
    r"""(?x)
    (?<![A-Za-z0-9_.\-])
    (?P<key>["']?(?P<name>[A-Za-z0-9_.\-]+)["']?)
    (?P<sep>\s*[:=]\s*)
    (?P<quote>["']?)
    (?P<value>[^\s"',;&}]{4,})
    """
)


def _key_value(m: re.Match[str]) -> str:
    if _SECRET_NAME.search(m.group("name")):
        return f"{m.group('key')}{m.group('sep')}{m.group('quote')}{MASK}"
    value = m.group("value")
    # a=password=x: the value may hold a secret pair of its own
    inner = _KEY_VALUE.sub(_key_value, value) if ("=" in value or ":" in value) else value
    return m.group(0)[: m.end("quote") - m.start()] + inner


# Command-line flags with the secret after a space: --password hunter2.
_FLAG_VALUE = re.compile(
    r"(?i)(?<![A-Za-z0-9])(--?(?:password|passwd|pass|token|secret|api[_\-]?key|auth-token)"
    r"\s+)(?!-)(\S{3,})")

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
    if len(text) <= _CACHED_LEN:
        return _redact_cached(text)
    return _redact(text)


def _redact(text: str) -> str:
    if "\\" not in text:
        return _redact_run(text)
    # A PEM key spans escaped newlines: mask it whole before splitting.
    text = _PRIVATE_KEY.sub(MASK, text)
    parts = _ESCAPE.split(text)
    return "".join(p if i % 2 else _redact_run(p) for i, p in enumerate(parts))


def _redact_run(text: str) -> str:
    text = _TOKENS.sub(MASK, text)
    if "--" in text or " -" in text:
        text = _FLAG_VALUE.sub(lambda m: f"{m.group(1)}{MASK}", text)
    if "://" in text:
        text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    if "=" in text or ":" in text:
        text = _KEY_VALUE.sub(_key_value, text)
    return _CANDIDATE.sub(lambda m: MASK if _looks_secret(m.group(0)) else m.group(0), text)


# A failing hook tends to fail the same way again and again: its error text
# repeats, so remembering recent answers makes dead letters cheap to redact.
_CACHED_LEN = 2000
_redact_cached = functools.lru_cache(maxsize=1024)(_redact)


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


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message and traceback text.

    Installed on Interlock's loggers when this module is imported (the engine
    imports it), so no Interlock log line carries a secret whatever handler
    an application attaches.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:
            # a malformed call; logging reports it when formatting. Never raise here:
            # a filter's exception would reach the code that logged.
            record.msg, record.args = redact(str(record.msg)), None
            return True
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        return True


LOG_FILTER = RedactingFilter()

LOGGERS = ("interlock", "interlock.extensions")
"""Interlock's loggers. Filters do not apply to records that propagate up from a
child logger, so each one gets the filter."""


def install_log_filter(*names: str) -> None:
    """Attach the redacting filter to ``names`` (Interlock's own loggers by default)."""
    for name in names or LOGGERS:
        logger = logging.getLogger(name)
        if LOG_FILTER not in logger.filters:
            logger.addFilter(LOG_FILTER)


install_log_filter()
