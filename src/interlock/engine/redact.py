"""The one redaction module: removes secrets from everything Interlock writes
or returns (audit records, dead letters, logs, transcripts, block reasons that
reach a model).

It covers common token formats, credentials in URLs, ``key=value`` secrets and
high-entropy strings. It is deliberately eager: a false positive costs a
``[REDACTED]`` in a log line, a false negative leaks a credential.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from typing import Any

MASK = "[REDACTED]"


class _Pattern:
    """A pattern compiled at its first use, which puts the compiled one in its
    place: compiling them all is a third of importing this module, which
    ``from interlock import Engine`` would pay for nothing (docs/one-policy.md,
    Speed). After the first use the module's name holds a plain ``re.Pattern``."""

    __slots__ = ("_name", "_pattern")

    def __init__(self, name: str, pattern: str) -> None:
        self._name = name
        self._pattern = pattern

    def __getattr__(self, attr: str) -> Any:
        compiled = re.compile(self._pattern)
        globals()[self._name] = compiled
        return getattr(compiled, attr)


def _lazy(name: str, pattern: str) -> re.Pattern[str]:
    return _Pattern(name, pattern)  # type: ignore[return-value]  # a Pattern once used

# Token formats with a recognisable prefix or shape. Distinctive prefixes are
# found anywhere, glued to letters, digits or percent-escapes (`xAKIA...`,
# `%20ghp_...`, `keyid:1AKIA...`) and with anything after them
# (`AKIA..._old`): a real key is exactly that long, the rest is not part of it.
_DISTINCT_PATTERNS: tuple[tuple[str, str], ...] = (
    ("private_key", r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----"),
    ("anthropic", r"sk-ant-[A-Za-z0-9_\-]{16,}"),
    ("openai_scoped", r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_\-]{16,}"),
    ("github", r"(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("gitlab", r"glpat-[A-Za-z0-9_\-]{20,}"),
    ("aws_access_key", r"(?:AKIA|ASIA)[A-Z0-9]{16}"),
    ("slack", r"xox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("google_api", r"AIza[0-9A-Za-z_\-]{35}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("pypi", r"pypi-AgE[A-Za-z0-9_\-]{16,}"),
    ("google_oauth", r"ya29\.[A-Za-z0-9_\-]{20,}"),
    ("digitalocean", r"do[pro]_v1_[a-f0-9]{32,}"),
    ("shopify", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("slack_webhook", r"hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
)
# Short or word-like prefixes (`sk-` is in `task-runner-...`): not right after a
# letter, unless a percent-escape (`%2Fsk-...`) ends there.
_GENERIC_PATTERNS: tuple[tuple[str, str], ...] = (
    ("openai", r"sk-[A-Za-z0-9_\-]{16,}"),
    ("stripe", r"[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("huggingface", r"hf_[A-Za-z0-9]{30,}"),
    ("bearer", r"[Bb][Ee][Aa][Rr][Ee][Rr]\s+[A-Za-z0-9_\-\.=~+/]{16,}"),
    ("npm", r"npm_[A-Za-z0-9]{36}"),
    ("twilio", r"SK[0-9a-fA-F]{32}"),
    ("sendgrid", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"),
    ("databricks", r"dapi[a-f0-9]{32}"),
    ("grafana", r"gl(?:sa|c)_[A-Za-z0-9_\-]{20,}"),
    ("basic_auth", r"[Bb]asic\s+[A-Za-z0-9+/]{8,}={0,2}"),
    ("token_auth", r"(?:[Tt]oken|[Dd]igest)\s+[A-Za-z0-9_\-\.=~+/]{20,}"),
)
_TOKEN_PATTERNS = _DISTINCT_PATTERNS + _GENERIC_PATTERNS
_TOKENS = _lazy("_TOKENS",
    "(?:" + "|".join(f"(?:{p})" for _n, p in _DISTINCT_PATTERNS) + ")"
    "|(?:(?<![A-Za-z])|(?<=%[0-9A-Fa-f]{2}))(?:"
    + "|".join(f"(?:{p})" for _n, p in _GENERIC_PATTERNS) + ")")

# user:password@ in any URL-like string.
_URL_CREDENTIALS = _lazy("_URL_CREDENTIALS", r"(?i)([a-z][a-z0-9+.\-]*://)([^/\s:@]+):([^/\s@]+)@")

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
_SECRET_NAME = _lazy("_SECRET_NAME", rf"(?i){_SECRET_WORDS}$")
_KEY_VALUE = _lazy("_KEY_VALUE",
    r"""(?x)
    (?<![A-Za-z0-9_.\-])
    (?P<key>["']?(?P<name>[A-Za-z0-9_.\-]+)["']?)
    (?P<sep>\s*[:=]\s*)
    (?P<quote>["']?)
    (?P<value>[^\s"',;&}`]{4,})
    """
)
_PLACEHOLDER = _lazy("_PLACEHOLDER",
    r"(?i)(?:value|values|string|str|text|none|null|nil|true|false|undefined|example|"
    r"placeholder|redacted|\*+|x{3,})|<.*|\$\{?[A-Z_][A-Z0-9_]*\}?")
"""Values that stand for a secret without being one: `key: value`, `<your token>`,
`$OPENAI_API_KEY` (a reference to a variable, not its content)."""


def _key_value(m: re.Match[str]) -> str:
    if _SECRET_NAME.search(m.group("name")) and not _PLACEHOLDER.fullmatch(m.group("value")):
        return f"{m.group('key')}{m.group('sep')}{m.group('quote')}{MASK}"
    value = m.group("value")
    # a=password=x: the value may hold a secret pair of its own
    inner = _KEY_VALUE.sub(_key_value, value) if ("=" in value or ":" in value) else value
    return m.group(0)[: m.end("quote") - m.start()] + inner


# Command-line flags with the secret after a space: --password hunter2.
_FLAG_VALUE = _lazy("_FLAG_VALUE",
    r"(?i)(?<![A-Za-z0-9])(--?(?:password|passwd|pass|token|secret|api[_\-]?key|auth-token)"
    r"\s+)(?!-)(\S{3,})")

# Long base64/hex-ish runs: redacted when their entropy is high.
_CANDIDATE = _lazy("_CANDIDATE", r"[A-Za-z0-9+/_\-=]{24,}")
ENTROPY_THRESHOLD = 4.0


def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``."""
    if not text:
        return 0.0
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


_SEPARATORS = _lazy("_SEPARATORS", r"[_\-=./+:]+")
_WORDLIKE = _lazy("_WORDLIKE", r"(?:[A-Z]?[a-z]{2,})+|[A-Z]+[0-9]*|[a-z]+[0-9]*|[0-9]+")


def _identifier(run: str) -> bool:
    """Names, not credentials: HERMES_ALLOW_DESTRUCTIVE=1, a_snake_case_name,
    tmp/interlock-cwd-abc123. Every part between separators reads as a word
    (one case, or CamelCase) or a number, or every part is short."""
    parts = [p for p in _SEPARATORS.split(run) if p]
    if not parts:
        return True
    return all(_WORDLIKE.fullmatch(p) for p in parts) or (
        len(parts) > 1 and max(map(len, parts)) <= 8)


def _looks_secret(run: str) -> bool:
    if run.isdigit() or run.isalpha():
        return False  # long words and numbers are not credentials
    if "/" in run.strip("/") and run.count("/") > 2:
        return False  # a path
    if _identifier(run):
        return False
    return shannon_entropy(run) >= ENTROPY_THRESHOLD


# Escapes of JSON (and most string literals): in `"x\\nAKIA..."` the token
# follows the letter n with no word boundary, and a mask over "nsk-..." would
# eat the escape. Each run between escapes is redacted on its own.
_ESCAPE = _lazy("_ESCAPE", r"(\\(?:u[0-9A-Fa-f]{4}|[nrtbf\"'/\\]))")
_PRIVATE_KEY = _lazy("_PRIVATE_KEY", _TOKEN_PATTERNS[0][1])


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


# The fewest characters each pattern matches (a test holds them to the patterns):
# a shorter text holds no match, so it is not searched, and a short reason
# ("destructive") does not compile the token patterns (~3 ms, a first bridge
# call's; docs/one-policy.md, Speed).
MIN_MATCH = {"_TOKENS": 14, "_FLAG_VALUE": 9, "_URL_CREDENTIALS": 8, "_KEY_VALUE": 6,
             "_CANDIDATE": 24}


def _redact_run(text: str) -> str:
    if len(text) >= MIN_MATCH["_TOKENS"]:
        text = _TOKENS.sub(MASK, text)
    if len(text) >= MIN_MATCH["_FLAG_VALUE"] and ("--" in text or " -" in text):
        text = _FLAG_VALUE.sub(lambda m: f"{m.group(1)}{MASK}", text)
    if len(text) >= MIN_MATCH["_URL_CREDENTIALS"] and "://" in text:
        text = _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    if len(text) >= MIN_MATCH["_KEY_VALUE"] and ("=" in text or ":" in text):
        text = _KEY_VALUE.sub(_key_value, text)
    if len(text) < MIN_MATCH["_CANDIDATE"]:
        return text
    return _CANDIDATE.sub(lambda m: MASK if _looks_secret(m.group(0)) else m.group(0), text)


# A failing hook tends to fail the same way again and again: its error text
# repeats, so remembering recent answers makes dead letters cheap to redact.
_CACHED_LEN = 2000
_redact_cached = functools.lru_cache(maxsize=1024)(_redact)


def redact_data(value: Any) -> Any:
    """Redact every string inside JSON-like data, keys as well as values; keys
    named like secrets lose their values."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for k, v in value.items():
            key = redact(k) if isinstance(k, str) else k
            if key in out:  # two keys redacted alike: keep both values
                key = f"{key}#{sum(1 for o in out if str(o).startswith(str(key))) + 1}"
            if isinstance(k, str) and re.fullmatch(_SECRET_KEYS, k, re.I) and v not in (None, ""):
                out[key] = MASK
            else:
                out[key] = redact_data(v)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_data(v) for v in value]
    return value


def contains_secret(text: str) -> bool:
    return redact(text) != text
