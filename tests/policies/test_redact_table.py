"""Redaction without gaps: every secret format in every surrounding is removed,
and ordinary text (names, prose, short words, identifiers) stays as it was."""

from __future__ import annotations

import json

import pytest

from interlock.engine.redact import MASK, redact, redact_data

# (format, secret as it appears, the part that must never survive)
FORMATS: list[tuple[str, str, str]] = [
    ("openai", "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv", "Ab3dEf6hIj9kLm2nOp5qRs8tUv"),
    ("openai-legacy", "sk-Zx8cV7bN6mA5sD4fG3hJ2kL1qW", "Zx8cV7bN6mA5sD4fG3hJ2kL1qW"),
    ("anthropic", "sk-ant-api03-Qw3rTy6uIo9pAs2dFg5hJk", "Qw3rTy6uIo9pAs2dFg5hJk"),
    ("github", "ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"),
    ("github-pat", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "11ABCDEFG0123456789"),
    ("gitlab", "glpat-Xy7zW8vU9tS0rQ1pO2nM", "Xy7zW8vU9tS0rQ1pO2nM"),
    ("aws", "AKIAIOSFODNN7EXAMPLE", "IOSFODNN7EXAMPLE"),
    ("aws-session", "ASIAY34FZKBOKMUTVV7A", "Y34FZKBOKMUTVV7A"),
    ("slack", "xoxb-1234567890-AbCdEfGhIjKl", "1234567890-AbCdEfGhIjKl"),
    ("google", "AIzaSyA1234567890abcdefghijklmnopqrstuv", "SyA1234567890abcdefghijklmnop"),
    ("stripe", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "4eC39HqLyjWDarjtT1zdp7dc"),
    ("huggingface", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOpQrStUvWxYz"),
    ("jwt", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9P",
     "dozjgNryP4J3jVmNHl0w5N"),
    ("bearer", "Bearer Tq8Wm3Zr6Yp1Xk4Vn7Bs2Lc9", "Tq8Wm3Zr6Yp1Xk4Vn7Bs2Lc9"),
    ("npm", "npm_" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0Uv1Wx2", "Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0"),
    ("twilio", "SK" + "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    ("pypi", "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1u", "AgEIcHlwaS5vcmcCJGFiY2RlZmdo"),
    ("sendgrid", "SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abc",
     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abc"),
    ("google-oauth", "ya29.a0AfH6SMBq8Zt3xLm5Nv7Kp9Rw2Yc4", "a0AfH6SMBq8Zt3xLm5Nv7Kp9Rw2Yc4"),
    ("digitalocean", "dop_v1_" + "a1" * 32, "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"),
    ("shopify", "shpat_" + "0123456789abcdef" * 2, "0123456789abcdef0123456789abcdef"),
    ("databricks", "dapi" + "0123456789abcdef" * 2, "0123456789abcdef0123456789abcdef"),
    ("grafana", "glsa_abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345"),
    ("slack-webhook", "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
     "XXXXXXXXXXXXXXXXXXXXXXXX"),
    ("basic-auth", "Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw"),
    ("url-credentials", "postgres://app:Sup3rS3cretPw@db:5432/app", "Sup3rS3cretPw"),
    ("password-pair", "password=Hunt3r2Hunt3r2", "Hunt3r2Hunt3r2"),
    ("private-key", "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq8Zt3x\n"
                    "-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEAq8Zt3x"),
    ("high-entropy", "9fXk2LqP8zR4tY7wV1mN3bC6hJ0sD5gA", "9fXk2LqP8zR4tY7wV1mN3bC6hJ0sD5gA"),
]

SURROUNDINGS = {
    "glued": lambda s: f"keyid:1{s}_old and more",
    "percent": lambda s: f"q=%20{s}%20&x=1",
    "quoted": lambda s: f"value '{s}' and \"{s}\"",
    "json-value": lambda s: json.dumps({"note": f"see {s}"}),
    "url": lambda s: f"https://api.example.com/v1/cb?next={s}&page=2",
    "multi-line": lambda s: f"first line\n{s}\nlast line",
    "json-escaped-lines": lambda s: json.dumps(f"first\n{s}\nlast"),
}


@pytest.mark.parametrize("surrounding", list(SURROUNDINGS))
@pytest.mark.parametrize(("name", "secret", "core"), FORMATS, ids=[f[0] for f in FORMATS])
def test_every_format_is_removed_in_every_surrounding(name, secret, core, surrounding):
    text = SURROUNDINGS[surrounding](secret)
    out = redact(text)
    assert core not in out, f"{name} survived {surrounding}: {out!r}"
    assert MASK in out


@pytest.mark.parametrize(("name", "secret", "core"), FORMATS, ids=[f[0] for f in FORMATS])
def test_every_format_is_removed_from_dict_keys_and_values(name, secret, core):
    data = {secret: {"nested": [secret]}, "plain": "kept"}
    out = json.dumps(redact_data(data))
    assert core not in out
    assert '"plain": "kept"' in out


@pytest.mark.parametrize("glued", [
    "xAKIAIOSFODNN7EXAMPLE", "1AKIAIOSFODNN7EXAMPLE", "%20ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6",
    "keyid:xAKIAIOSFODNN7EXAMPLE", "hook exited 2: key AKIAIOSFODNN7EXAMPLE_old is revoked",
    "zghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6", "tokxoxb-1234567890-AbCdEfGhIjKl",
    "%2Fsk-Zx8cV7bN6mA5sD4fG3hJ2kL1qW",
])
def test_tokens_glued_to_letters_digits_or_escapes(glued):
    out = redact(glued)
    assert "IOSFODNN7EXAMPLE" not in out
    assert "a1B2c3D4e5F6" not in out
    assert "1234567890-AbCd" not in out
    assert "Zx8cV7bN6mA5" not in out


def test_colliding_redacted_keys_keep_every_value_apart():
    out = redact_data({"ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6": 1,
                       "ghp_Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4": 2})
    assert sorted(out.values()) == [1, 2]
    assert all(k.startswith(MASK) for k in out)


BENIGN = [
    "re-run with HERMES_ALLOW_DESTRUCTIVE=1",
    "write `key: value` lines, e.g. `hooks:` with a list under it",
    "set INTERLOCK_STATE_DIR=/var/lib/interlock/state",
    "export PYTHONDONTWRITEBYTECODE=1",
    "MAX_RETRY_BUDGET_SECONDS=30",
    "run `interlock hooks approve project:guard`",
    "the task-runner-configuration-file is missing",
    "see risk-assessment-framework-version-two",
    "disk-usage-report-generator-2024 finished",
    "configure_the_reliability_wrapper_for_hooks",
    "CamelCaseIdentifierForTheReliabilityWrapper",
    "tests/adversarial/test_adv_contain_injection.py::test_routes",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "/usr/local/lib/python3.11/site-packages/interlock/engine/dispatch.py",
    "https://docs.python.org/3/library/asyncio-task.html#asyncio.wait_for",
    "https://github.com/org/repo/pull/1234/files",
    "key=value pairs are separated by commas",
    "token: <your token here>",
    "password: ${DB_PASSWORD}",
    "api_key = $OPENAI_API_KEY",
    "Authorization header missing",
    "a secret is never logged",
    "Xk9mP2q is a short word",
    "id=a1B2c3D4",
    "version 1.2.3-rc.4+build.567",
    "2026-11-23T19:12:34.123456+00:00",
    "SELECT id, name FROM users WHERE id = 42",
    "ls -la /tmp/interlock-cwd-abc123",
    "docker run --rm -it python:3.11-slim bash",
    "monkey=banana",
    "turkey: roast",
    "base64 of hello is aGVsbG8=",
    "HOME=/root PATH=/usr/bin:/bin",
    "the word AKIAPROTOCOL is not a key",
    "RuntimeError: backend unavailable",
    "hook project:no-force-push blocked: refusing git push --force to main",
]


@pytest.mark.parametrize("benign", BENIGN)
def test_ordinary_text_stays(benign):
    assert redact(benign) == benign
    assert redact_data({benign: benign}) == {benign: benign}


def test_the_table_is_as_large_as_promised():
    assert len(FORMATS) >= 20
    assert len(SURROUNDINGS) >= 5
    assert len(BENIGN) >= 30
