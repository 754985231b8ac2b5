"""A cloned repository's `[[permissions]]` go through the same consent as its
hooks: its allow and ask rules apply only once approved, its deny rules apply
at once, and removing or weakening a deny rule waits for an operator. Played
through the real CLI (`interlock run` with a scripted model, `hooks list`,
`hooks approve`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ASKS = textwrap.dedent("""\
    from interlock import ask

    def handle(event):
        return ask("the user reviews every terminal command")
    """)

USER_CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "review-terminal"
    events = ["before_tool_call"]
    matcher = "terminal"
    handler = "review.py"
    """)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    out = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    out.update(INTERLOCK_HOME=str(home / "config"), INTERLOCK_STATE_DIR=str(home / "state"),
               INTERLOCK_MANAGED=str(home / "managed"), INTERLOCK_STORE=str(home / "db"))
    return out


def interlock(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "interlock", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def project(tmp_path: Path, rules: str) -> Path:
    root = tmp_path / "project"
    (root / ".interlock").mkdir(parents=True)
    (root / ".interlock" / "config.toml").write_text(rules)
    return root


def run(env: dict[str, str], root: Path, command: str, *flags: str) -> str:
    """One scripted turn that runs ``command`` in the terminal; returns the tool result."""
    script = root.parent / "script.yaml"
    script.write_text(textwrap.dedent(f"""\
        - tool_calls:
            - {{name: terminal, args: {{command: {json.dumps(command)}}}}}
        - text: done
        """))
    export = root.parent / "t.jsonl"
    proc = interlock(env, "run", "--model", f"scripted:{script}", "--export", str(export),
                     *flags, "go", cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    records = [json.loads(line) for line in export.read_text().splitlines()]
    [result] = [str(r.get("content")) for r in records if r.get("role") == "tool"]
    return result


def listing(env: dict[str, str], root: Path) -> dict[str, object]:
    proc = interlock(env, "hooks", "list", "--json", "-C", str(root), cwd=root)
    assert proc.returncode == 0, proc.stderr
    out: dict[str, object] = json.loads(proc.stdout)
    return out


def user_asks(env: dict[str, str]) -> None:
    home = Path(env["INTERLOCK_HOME"])
    home.mkdir(parents=True)
    (home / "review.py").write_text(ASKS)
    (home / "config.toml").write_text(USER_CONFIG)


ALLOW_ALL = '[[permissions]]\ntool = "terminal"\naction = "allow"\n'


def test_a_repository_allow_all_rule_does_nothing_until_approved(tmp_path, env):
    user_asks(env)  # the user's own hook sends every terminal call to a person
    root = project(tmp_path, ALLOW_ALL)
    result = run(env, root, "echo pwned > pwned.txt")
    assert "no person can answer" in result
    assert not (root / "pwned.txt").exists()  # the repository's allow did not apply
    consent = listing(env, root)["permissions"]
    assert consent["name"] == "project:permissions"  # type: ignore[index]
    assert consent["approved"] is False  # type: ignore[index]
    text = interlock(env, "hooks", "list", "-C", str(root), cwd=root).stdout
    assert "project:permissions" in text
    # Once the operator approves the rules, they are the policy (nothing lost).
    out = interlock(env, "hooks", "approve", "--all", "-C", str(root), cwd=root)
    assert "project:permissions" in out.stdout, out.stderr
    run(env, root, "echo approved > pwned.txt")
    assert (root / "pwned.txt").read_text() == "approved\n"
    # And the operator can take the consent back by its name.
    out = interlock(env, "hooks", "revoke", "project:permissions", "-C", str(root), cwd=root)
    assert out.returncode == 0, out.stderr
    assert "revoked: project:permissions" in out.stdout
    assert listing(env, root)["permissions"]["approved"] is False  # type: ignore[index]


def test_editing_approved_rules_needs_approval_again(tmp_path, env):
    user_asks(env)
    root = project(tmp_path, '[[permissions]]\ntool = "terminal"\npattern = "git *"\n'
                             'action = "allow"\n')
    interlock(env, "hooks", "approve", "--all", "-C", str(root), cwd=root)
    (root / ".interlock" / "config.toml").write_text(ALLOW_ALL)  # widened by a commit
    result = run(env, root, "echo pwned > pwned.txt")
    assert "no person can answer" in result
    assert not (root / "pwned.txt").exists()


def test_accept_hooks_approves_the_rules_like_hooks(tmp_path, env):
    user_asks(env)
    root = project(tmp_path, ALLOW_ALL)
    run(env, root, "echo accepted > ok.txt", "--accept-hooks")
    assert (root / "ok.txt").read_text() == "accepted\n"
    assert listing(env, root)["permissions"]["approved"] is True  # type: ignore[index]


def test_an_unapproved_deny_rule_applies_at_once(tmp_path, env):
    root = project(tmp_path, '[[permissions]]\ntool = "terminal"\npattern = "touch *"\n'
                             'action = "deny"\n')
    result = run(env, root, "touch marker.txt")
    assert "denied by a permission rule" in result
    assert not (root / "marker.txt").exists()


DENY = '[[permissions]]\ntool = "terminal"\npattern = "touch *"\naction = "deny"\n'


@pytest.mark.parametrize("weakened", [
    "",                                                          # removed
    DENY.replace('"deny"', '"allow"'),                           # turned into an allow
    DENY.replace('"deny"', '"ask"'),                             # turned into an ask
    DENY.replace('"touch *"', '"touch /nothing"'),               # narrowed
], ids=["removed", "to-allow", "to-ask", "narrowed"])
def test_removing_or_weakening_a_project_deny_rule_is_withheld(tmp_path, env, weakened):
    root = project(tmp_path, DENY)
    assert "denied by a permission rule" in run(env, root, "touch marker.txt")
    (root / ".interlock" / "config.toml").write_text(weakened)  # a pull brings this
    result = run(env, root, "touch marker.txt", "--accept-hooks")  # not an operator
    assert "denied by a permission rule" in result
    assert not (root / "marker.txt").exists()
    assert "project:permissions" in listing(env, root)["withheld"]  # type: ignore[operator]
    # The operator releases it: the change takes effect (and nothing else is lost).
    out = interlock(env, "hooks", "approve", "project:permissions", "-C", str(root), cwd=root)
    assert "project:permissions" in out.stdout, out.stderr
    assert listing(env, root)["withheld"] == []
    result = run(env, root, "touch marker.txt", "--accept-hooks")
    assert "denied by a permission rule" not in result
    if '"ask"' in weakened:  # what the repository now says: ask, and nobody can answer
        assert "a permission rule asks" in result
    else:
        assert (root / "marker.txt").exists()
