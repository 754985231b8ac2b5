"""The one redaction module (issue 5 extends the table)."""

from __future__ import annotations

import pytest

from interlock.redact import MASK, contains_secret, redact, redact_data

SECRETS = [
    "sk-abcdefghijklmnopqrstuvwx",
    "sk-ant-api03-abcdefghijklmnopqrstuv",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
    "AKIAIOSFODNN7EXAMPLE",
    "xoxb-1234567890-abcdefghij",
    "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "sk_live_abcdefghijklmnop1234",
    "glpat-abcdefghijklmnopqrst",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "hf_abcdefghijklmnopqrstuvwxyzABCDEF",
    "9fXk2LqP8zR4tY7wV1mN3bC6hJ0sD5gA",
]


@pytest.mark.parametrize("secret", SECRETS)
def test_token_formats_are_removed(secret):
    out = redact(f"the value is {secret} ok")
    assert secret not in out
    assert MASK in out
    assert out.startswith("the value is ")


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("https://bob:hunter2@example.com/x", "hunter2"),
        ("postgres://app:s3cretpw@db:5432/app", "s3cretpw"),
        ("password=hunter22 next", "hunter22"),
        ('{"api_key": "abcd1234"}', "abcd1234"),
        ("DB_PASSWORD: 'correct horse'", "correct"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz123", "abcdefghijklmnop"),
    ],
)
def test_urls_and_key_values(text, gone):
    assert gone not in redact(text)


@pytest.mark.parametrize(
    "benign",
    [
        "rm -rf ./build",
        "/usr/local/lib/python3.11/site-packages/interlock/_dispatch.py",
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "session_id=abc-123",
        "hello world, nothing to see",
    ],
)
def test_ordinary_text_is_kept(benign):
    assert redact(benign) == benign
    assert not contains_secret(benign)


def test_redact_data_walks_json():
    data = {"api_key": "x12345", "nested": ["sk-abcdefghijklmnopqrstuv"], "n": 3}
    assert redact_data(data) == {"api_key": MASK, "nested": [MASK], "n": 3}
