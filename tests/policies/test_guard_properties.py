"""Property tests of the destructive-command guard: a dangerous command stays
blocked whatever benign commands, comments or redirections surround it, and
a benign one stays allowed next to benign neighbours."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers.guard_table import CASES, CWD
from interlock.policies.destructive import check

pytestmark = pytest.mark.slow

DANGEROUS = [(c[2], c[4]) for c in CASES if c[1] == "block"]
BENIGN = [(c[2], c[4]) for c in CASES if c[1] == "allow"]

PREFIXES = [
    "cd x && ", "cd /tmp; ", "true && ", "echo start; ", "# a comment\n", "ls -la | head -1; ",
    "export FOO=1; ", "set -e; ", "{ echo a; }; ", "git status >/dev/null; ", "sleep 0 &\n",
    "if true; then echo in; fi; ", "pwd 2>&1; ", "X=1 ", "cd -- x; ",
]
SUFFIXES = [
    "; echo done", " && echo ok", " 2>/dev/null", " > /tmp/out.log", " # trailing comment",
    " || true", "\necho next", " 2>&1 | tee -a /tmp/log", "; wait", " </dev/null",
]
# A prefix that is a word of the command (`X=1 `, redirections) cannot stand before
# a compound command or a function definition; those get the list prefixes only.
_WORD_PREFIXES = {"X=1 "}


def _wrap(command: str, prefixes: list[str], suffixes: list[str]) -> str:
    head = "".join(p for p in prefixes if p not in _WORD_PREFIXES or command[:1].isalpha())
    # After a heredoc, its terminator must stay alone on its line.
    # `cmd &; next` is a syntax error in bash: after `&` the next command follows directly.
    glue = "\n" if "\n" in command else ""
    tail = ""
    for s in suffixes:
        ends_open = (command + tail).rstrip().endswith("&") and \
            not (command + tail).rstrip().endswith("&&")
        if ends_open and s.lstrip(" ;").startswith(("&&", "||", "|")):
            continue
        tail += glue + s.lstrip(" ;") if glue else " " + s.lstrip(" ;") if ends_open else s
    return head + command + tail


_settings = settings(max_examples=300, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.too_slow])


@_settings
@given(case=st.sampled_from(DANGEROUS),
       prefixes=st.lists(st.sampled_from(PREFIXES), max_size=3),
       suffixes=st.lists(st.sampled_from(SUFFIXES), max_size=3))
def test_a_dangerous_command_stays_blocked_among_benign_neighbours(case, prefixes, suffixes):
    home, command = case
    wrapped = _wrap(command, prefixes, suffixes)
    assert check(wrapped, home=home, cwd=CWD) is not None, repr(wrapped)


@_settings
@given(case=st.sampled_from(BENIGN),
       prefixes=st.lists(st.sampled_from(PREFIXES[:10]), max_size=2),
       suffixes=st.lists(st.sampled_from(SUFFIXES), max_size=2))
def test_a_benign_command_stays_allowed_among_benign_neighbours(case, prefixes, suffixes):
    home, command = case
    wrapped = _wrap(command, prefixes, suffixes)
    finding = check(wrapped, home=home, cwd=CWD)
    assert finding is None, f"{wrapped!r}: {finding}"
