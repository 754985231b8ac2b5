"""Which argument a permission rule reads, when the model chooses the keys.

A rule reads ``command``, ``path``, ``task`` or ``title``, else the arguments as
JSON. A key the tool does not take (``"title": "x"`` added to ``shout(text)``)
must not hide the real argument from a deny rule, nor stand in for it before
an allow rule (docs/configuration.md, Permissions)."""

from __future__ import annotations

from interlock.agent.permissions import Action, PermissionPolicy, rule


def test_an_added_key_does_not_hide_an_argument_from_a_deny_rule() -> None:
    policy = PermissionPolicy([rule("shout", "*PRODUCTION*", "deny")])
    assert policy.decide("shout", {"text": "DEPLOY PRODUCTION"}) is Action.DENY
    assert policy.decide("shout", {"text": "DEPLOY PRODUCTION", "title": "x"}) is Action.DENY
    assert policy.decide("mcp__s__echo", {"text": "hi", "path": "ok"}) is None
    ask = PermissionPolicy([rule("mcp__*", "*secret*", "ask")])
    assert ask.decide("mcp__s__read", {"path": "notes", "extra": "secret"}) is Action.ASK


def test_an_added_key_does_not_stand_in_for_an_argument_before_an_allow_rule() -> None:
    policy = PermissionPolicy([rule("write_file", "src/*", "allow")])
    assert policy.decide("write_file", {"path": "src/a.py", "content": "x"}) is Action.ALLOW
    # Every subject argument present must be allowed, not only the first one found.
    assert policy.decide("write_file", {"path": "src/x", "title": "/etc/passwd"}) is None
    assert policy.decide("write_file", {"title": "/etc/passwd", "path": "src/x"}) is None


def test_a_deny_still_beats_an_allow_on_the_same_call() -> None:
    policy = PermissionPolicy([rule("shout", "*", "allow"),
                               rule("shout", "*PRODUCTION*", "deny")])
    assert policy.decide("shout", {"text": "PRODUCTION", "title": "fine"}) is Action.DENY
    assert policy.decide("shout", {"text": "staging"}) is Action.ALLOW


def test_a_pattern_with_non_ascii_text_matches_the_arguments_as_json() -> None:
    """Before: the JSON subject escaped every non-ASCII character (``caf\\u00e9``), so a
    deny rule written with the text itself never matched, and the call ran."""
    policy = PermissionPolicy([rule("mcp__*", "*café*", "deny"), rule("send", "*日本*", "ask")])
    assert policy.decide("mcp__s__post", {"text": "au café"}) is Action.DENY
    assert policy.decide("send", {"to": "東京", "body": "日本へ"}) is Action.ASK
    assert policy.decide("send", {"body": "hello"}) is None
