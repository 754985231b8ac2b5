"""The one redaction module (docs/reliability.md, Redaction)."""

from __future__ import annotations

import pytest

from interlock.engine.redact import MASK, contains_secret, redact, redact_data

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
        "/usr/local/lib/python3.11/site-packages/interlock/engine/dispatch.py",
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


MORE_SECRETS = [
    "pypi-AgEIcHlwaS5vcmcCJGFiY2RlZmdoaWprbG1u",
    "SG.abcdefghijklmnopqrstuv.ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abc",
    "ya29.a0AfH6SMBxxxxxxxxxxxxxxxxxxxxxxxx",
    "dop_v1_" + "a1" * 32,
    "shpat_" + "0123456789abcdef" * 2,
    "dapi" + "0123456789abcdef" * 2,
    "glsa_abcdefghijklmnopqrstuvwxyz012345",
    "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
]


@pytest.mark.parametrize("secret", MORE_SECRETS)
def test_more_token_formats(secret):
    assert secret not in redact(f"value: {secret} ")


@pytest.mark.parametrize(
    ("text", "gone"),
    [
        ("Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw"),
        ("Authorization: Token abcdefghijklmnopqrstuvwx12", "abcdefghijklmnopqrstuvwx12"),
        ("mysql --password hunter2 -h db", "hunter2"),
        ("curl -u x --token s3cr3tvalue", "s3cr3tvalue"),
        ("STRIPE_KEY=abcd1234", "abcd1234"),
        ("opts foo=password=hunter22 next", "hunter22"),
        ("X-Amz-Signature=0a1b2c3d4e5f", "0a1b2c3d4e5f"),
        ("AccountKey=abcdEFGH1234", "abcdEFGH1234"),
    ],
)
def test_flags_headers_and_nested_pairs(text, gone):
    assert gone not in redact(text)


@pytest.mark.parametrize("benign", ["monkey=banana", "turkey: roast", "ls --all -l",
                                    "RuntimeError: backend unavailable"])
def test_words_that_only_contain_a_secret_word_are_kept(benign):
    assert redact(benign) == benign


def test_repeated_text_gives_the_same_answer():
    text = "token=abcdef123456 and sk-abcdefghijklmnopqrstuvwx"
    assert redact(text) == redact(text) == redact(redact(text))


def test_long_text_stays_cheap():
    import time

    text = " ".join(f"word{i} key{i}:value{i} a=b path/to/file{i}.py" for i in range(5000))
    t0 = time.perf_counter()
    assert redact(text) == text
    assert time.perf_counter() - t0 < 5  # generous: guards against catastrophic backtracking


def test_log_lines_are_redacted(caplog):
    import logging

    caplog.set_level(logging.INFO, logger="interlock")
    logging.getLogger("interlock").warning("hook said %s", "password=hunter22hunter")
    logging.getLogger("interlock.extensions").error("loaded sk-abcdefghijklmnopqrstuvwx")
    text = caplog.text
    assert "hunter22hunter" not in text
    assert "sk-abcdefghijklmnopqrstuvwx" not in text
    assert text.count(MASK) == 2


def test_a_malformed_log_call_does_not_raise_through_the_filter(caplog):
    import logging

    caplog.set_level(logging.INFO, logger="interlock")
    logging.getLogger("interlock").warning("two %s %s", "token=abcdef123456")  # one arg short
    assert "abcdef123456" not in caplog.text


def test_a_line_on_an_interlock_child_logger_is_redacted(caplog):
    # Filters on "interlock" do not apply to what a child logger propagates.
    import logging

    from interlock.engine.logs import logger

    caplog.set_level(logging.INFO, logger="interlock")
    logger("interlock.registry").warning("loaded password=hunter22hunter")
    assert "hunter22hunter" not in caplog.text
    assert MASK in caplog.text


def test_lines_are_redacted_when_logging_is_imported_after_interlock():
    # The application imports Interlock first (it imports no logging), then logs.
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from interlock import Engine\n"
        "assert 'logging' not in sys.modules\n"
        "import logging\n"
        "logging.basicConfig(stream=sys.stdout, format='%(name)s %(message)s')\n"
        "logging.getLogger('interlock').warning('a password=hunter22hunter')\n"
        "logging.getLogger('interlock.extensions').warning('b password=hunter22hunter')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "hunter22hunter" not in out
    assert out.count(MASK) == 2


LOGGING_MODULES = [
    "interlock.agent.mcp", "interlock.bundled.boot_md.handler", "interlock.executors.http",
    "interlock.executors.net.ssrf", "interlock.executors.prompt",
    "interlock.hosts.fleet.approvals", "interlock.hosts.fleet.policy",
    "interlock.hosts.fleet.shared", "interlock.hosts.fleet.state",
    "interlock.hosts.mcp.proxy", "interlock.hosts.server.auth",
    "interlock.hosts.server.gateway", "interlock.hosts.server.upstream",
    "interlock.hosts.terminal.chat_ui",
]


@pytest.mark.parametrize("module", LOGGING_MODULES)
def test_every_interlock_module_logs_through_the_filter(caplog, module):
    import importlib
    import logging

    caplog.set_level(logging.INFO)
    importlib.import_module(module).log.warning("%s password=hunter22hunter", module)
    assert "hunter22hunter" not in caplog.text
    assert MASK in caplog.text


def test_no_module_makes_a_logger_the_filter_is_not_on():
    # logs.logger() puts the filter on the logger it names; logging.getLogger() does
    # not, and a child's records skip its parents' filters.
    from pathlib import Path

    import interlock

    src = Path(interlock.__file__).parent
    allowed = {src / "engine" / "logs.py", src / "hosts" / "bridge" / "_common.py"}
    found = [str(p.relative_to(src)) for p in src.rglob("*.py")
             if p not in allowed and "logging.getLogger(" in p.read_text()]
    assert found == []


def test_the_shortest_match_of_each_pattern_is_what_redact_skips_below() -> None:
    """A text shorter than a pattern's shortest match is not searched with it
    (so short reasons compile no patterns); those lengths are the patterns' own."""
    import re._parser

    from interlock.engine import redact as module

    for name, least in module.MIN_MATCH.items():
        compiled = getattr(module, name)
        pattern = getattr(compiled, "_pattern", None) or compiled.pattern
        assert re._parser.parse(pattern).getwidth()[0] == least, name


def test_a_short_text_compiles_no_token_pattern() -> None:
    import subprocess
    import sys

    code = ("import re\nfrom interlock.engine import redact as r\n"
            "print(r.redact('destructive'), type(r._TOKENS).__name__)\n"
            "print(r.redact('x' * 3 + 'sk-ant-api03-abcdefghijklmnop'), type(r._TOKENS).__name__)")
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:2] == ["destructive _Pattern", f"xxx{MASK} Pattern"]
