"""`serve --policy REPO@COMMIT`, the signed switch to another revision, and
`interlock policy diff` (docs/fleet.md, Policy distribution), on a local git
repository reached through file:// (never the network)."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from helpers.serve import Serve, wait_for

pytestmark = pytest.mark.e2e

NO_RM = """
[[hooks]]
name = "no-rm"
events = ["before_tool_call"]
matcher = "terminal"
command = "if grep -q 'rm -rf'; then echo 'no rm' >&2; exit 2; fi"
"""

NO_CURL = """
[[hooks]]
name = "no-curl"
events = ["before_tool_call"]
matcher = "terminal"
command = "if grep -q 'curl example'; then echo 'no curl' >&2; exit 2; fi"

[[permissions]]
tool = "terminal"
pattern = "git *"
action = "allow"
"""


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
                          cwd=repo, capture_output=True, text=True, check=True).stdout.strip()


class Repo:
    def __init__(self, tmp: Path) -> None:
        self.path = tmp / "policy-repo"
        (self.path / ".interlock").mkdir(parents=True)
        git(self.path, "init", "-q", "-b", "main")
        (self.path / ".interlock" / "config.toml").write_text(NO_RM)
        git(self.path, "add", "-A")
        git(self.path, "commit", "-qm", "no rm")
        self.c1 = git(self.path, "rev-parse", "HEAD")
        (self.path / ".interlock" / "config.toml").write_text(NO_RM + NO_CURL)
        git(self.path, "commit", "-qam", "no curl")
        self.c2 = git(self.path, "rev-parse", "HEAD")
        self.url = f"git+file://{self.path}"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Serve, Repo, bytes]]:
    tmp = tmp_path_factory.mktemp("policy")
    repo = Repo(tmp)
    secret = b"s3cret-for-tests-only"
    secret_file = tmp / "policy.secret"
    secret_file.write_bytes(secret)
    secret_file.chmod(0o600)
    serve = Serve(tmp, "# unused: --policy names the policy\n", extra=[
        "--policy", f"{repo.url}@{repo.c1}", "--policy-secret-file", str(secret_file),
        "--no-socket", "--audit-payloads"])
    serve.start()
    try:
        yield serve, repo, secret
    finally:
        serve.stop()


def decide(serve: Serve, command: str) -> str:
    out = serve.event({"tool_name": "terminal", "args": {"command": command}})
    return str(out["decision"])


def switch(serve: Serve, body: dict[str, Any], secret: bytes,
           signature: str | None = None) -> tuple[int, Any]:
    raw = json.dumps(body).encode()
    sig = signature or "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", serve.port, timeout=60)
    try:
        conn.request("POST", "/v1/runtime/policy", raw,
                     {"Content-Type": "application/json", "X-Interlock-Signature": sig})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_serves_the_pinned_revision_and_switches_on_a_signed_request(
        served: tuple[Serve, Repo, bytes]) -> None:
    serve, repo, secret = served
    assert "policy " in "".join(serve.log)
    assert decide(serve, "rm -rf /") == "block"
    assert decide(serve, "curl example.com") == "none"
    before = serve.request("GET", "/v1/status")[1]["revision"]

    # Refused: a wrong signature, an old request, a signature over another body.
    code, _ = switch(serve, {"ref": repo.c2, "at": time.time()}, b"wrong secret")
    assert code == 401
    code, _ = switch(serve, {"ref": repo.c2, "at": time.time() - 3600}, secret)
    assert code == 401
    code, _ = switch(serve, {"ref": repo.c2, "at": time.time()}, secret,
                     signature="sha256=" + "0" * 64)
    assert code == 401
    assert decide(serve, "curl example.com") == "none"

    code, out = switch(serve, {"ref": repo.c2, "at": time.time()}, secret)
    assert code == 200, out
    assert out["commit"] == repo.c2
    assert decide(serve, "curl example.com") == "block"
    assert decide(serve, "rm -rf /") == "block"
    assert serve.request("GET", "/v1/status")[1]["revision"] > before

    # Back to the first revision: a ref the repository does not hold is refused (409)
    # and the served revision stays.
    code, out = switch(serve, {"ref": "no-such-branch", "at": time.time()}, secret)
    assert code == 409
    assert decide(serve, "curl example.com") == "block"
    code, out = switch(serve, {"ref": repo.c1, "at": time.time()}, secret)
    assert code == 200
    assert decide(serve, "curl example.com") == "none"


def test_policy_diff_shows_hooks_rules_and_replayed_decisions(
        served: tuple[Serve, Repo, bytes], tmp_path: Path) -> None:
    serve, repo, _ = served
    transcript = tmp_path / "t.jsonl"
    events = [("curl example.com", "none"), ("ls", "none"), ("rm -rf /", "block")]
    transcript.write_text("".join(json.dumps({
        "type": "event", "name": "before_tool_call",
        "payload": {"tool_name": "terminal", "args": {"command": c}},
        "outcome": {"decision": d}}) + "\n" for c, d in events))
    done = serve.cli("policy", "diff", repo.c1, repo.c2, "--repo", str(repo.path),
                     "--transcript", str(transcript), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["hooks_added"] == ["project:no-curl"]
    assert report["hooks_removed"] == []
    assert report["rules_added"] == [["terminal", "git *", "allow"]]
    assert report["replayed"] == 3
    assert [(d["subject"], d["a"], d["b"]) for d in report["decisions_changed"]] == [
        ("terminal", "none", "block")]

    text = serve.cli("policy", "diff", repo.c1, repo.c2, "--repo", str(repo.path))
    assert "+ hook project:no-curl" in text.stdout


def test_policy_diff_replays_the_audited_gate_events(
        served: tuple[Serve, Repo, bytes]) -> None:
    serve, repo, _ = served
    for command in ("curl example.com/audited", "ls -la", "cat ~/.aws/credentials"):
        decide(serve, command)
    done = serve.cli("policy", "diff", repo.c1, repo.c2, "--repo", str(repo.path),
                     "--audit", "--since", "1h", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["without_payload"] == 0  # served with --audit-payloads
    assert report["replayed"] >= 3
    changed = [d for d in report["decisions_changed"] if d["a"] != d["b"]]
    assert [(d["a"], d["b"]) for d in changed] == [("none", "block")] * len(changed)
    assert changed
    assert all(d["where"].startswith("dispatch ") for d in changed)
    text = serve.cli("policy", "diff", repo.c1, repo.c2, "--repo", str(repo.path), "--audit")
    assert "decided differently" in text.stdout


def test_a_bad_policy_source_is_a_clear_error(tmp_path: Path) -> None:
    lone = Serve(tmp_path, NO_RM)
    done = lone.cli("serve", "--policy", f"{tmp_path / 'nope'}@main", "--port", "0")
    assert done.returncode != 0
    assert "does not exist" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_scheduled_refresh_serves_what_the_branch_names_now(tmp_path: Path) -> None:
    repo = Repo(tmp_path)
    git(repo.path, "checkout", "-q", "-b", "live", repo.c1)
    serve = Serve(tmp_path, "# unused\n", extra=[
        "--policy", f"{repo.url}@live", "--policy-refresh", "0.2", "--no-socket"]).start()
    try:
        assert decide(serve, "curl example.com") == "none"
        git(repo.path, "merge", "-q", "--ff-only", repo.c2)
        wait_for(lambda: decide(serve, "curl example.com") == "block",
                 what="the refreshed branch's policy")
    finally:
        serve.stop()


def served_commit(serve: Serve) -> str:
    """The commit the last start of ``serve`` named (its "policy REPO@COMMIT" line);
    a decision alone cannot tell: a fail-closed hook a revision dropped keeps
    blocking after a restart (docs/configuration.md, Trust)."""
    lines = [line for line in serve.log if line.startswith("interlock serve: policy ")]
    return lines[-1].strip().rpartition("@")[2]


def secret_file(tmp: Path) -> tuple[Path, bytes]:
    secret = b"s3cret-for-tests-only"
    path = tmp / "policy.secret"
    path.write_bytes(secret)
    path.chmod(0o600)
    return path, secret


def test_a_signed_switch_survives_a_restart_with_the_same_policy(tmp_path: Path) -> None:
    """Without --fleet the switch is kept in the state dir: a restart with the same
    --policy REPO@REF serves the switched revision; one with another REF serves that
    REF (docs/fleet.md, Policy distribution)."""
    repo = Repo(tmp_path)
    git(repo.path, "tag", "v1", repo.c1)
    path, secret = secret_file(tmp_path)
    serve = Serve(tmp_path, "# unused\n", extra=[
        "--policy", f"{repo.url}@{repo.c1}", "--policy-secret-file", str(path),
        "--no-socket"]).start()
    try:
        code, out = switch(serve, {"ref": repo.c2, "at": time.time()}, secret)
        assert code == 200, out
        assert decide(serve, "curl example.com") == "block"
        serve.stop()
        serve.start()
        assert served_commit(serve) == repo.c2  # still the switched revision
        assert decide(serve, "curl example.com") == "block"
        serve.stop()
        serve.extra[1] = f"{repo.url}@v1"  # a new deployment names another ref
        serve.start()
        assert served_commit(serve) == repo.c1
        serve.stop()
        # A kept switch whose commit cannot be served: one clear line, no start.
        (kept,) = serve.state.glob("policies/*/switch.json")
        kept.write_text(json.dumps({"deployed": "v1", "ref": "gone", "commit": "0" * 40,
                                    "at": time.time()}))
        done = serve.cli("serve", *serve.extra, "--port", "0")
        assert done.returncode != 0
        assert "switch.json names commit" in done.stderr
        assert "Traceback" not in done.stderr
    finally:
        if serve.proc is not None and serve.proc.poll() is None:
            serve.stop()


def test_a_signed_switch_reaches_every_replica_and_outlives_a_restart(
        tmp_path: Path) -> None:
    """With --fleet the switch is kept in fleet_policy and announced: the other
    replica serves it too, and so does a replica restarted afterwards; one
    deployed with another ref serves that ref; with PostgreSQL down a switch is
    refused and the served revision stays."""
    from helpers.pgserver import PgServer

    bindir = PgServer.find()
    if bindir is None:
        pytest.skip("needs PostgreSQL's initdb (.ci/run installs it)")
    pg = PgServer(bindir)
    pg.start()
    repo = Repo(tmp_path)
    git(repo.path, "tag", "v1", repo.c1)
    path, secret = secret_file(tmp_path)
    replicas: list[Serve] = []
    try:
        for name in ("a", "b"):
            serve = Serve(tmp_path / name, "# unused\n", store=pg.url, extra=[
                "--fleet", "--policy", f"{repo.url}@{repo.c1}",
                "--policy-secret-file", str(path), "--no-socket"])
            made = serve.cli("serve", "token", "create", f"ops-{name}", "--admin", "--fleet")
            assert made.returncode == 0, made.stderr
            serve.token = made.stdout.strip()
            replicas.append(serve.start())
        a, b = replicas
        assert decide(b, "curl example.com") == "none"
        code, out = switch(a, {"ref": repo.c2, "at": time.time()}, secret)
        assert code == 200, out
        assert decide(a, "curl example.com") == "block"
        wait_for(lambda: decide(b, "curl example.com") == "block", timeout=30,
                 what="B to serve the revision A was switched to")
        b.stop()
        b.start()
        assert served_commit(b) == repo.c2  # the fleet's switch, not --policy's c1
        assert decide(b, "curl example.com") == "block"
        b.stop()
        b.extra[2] = f"{repo.url}@v1"  # a new deployment names another ref
        b.start()
        assert served_commit(b) == repo.c1
        b.stop()
        pg.stop()
        try:
            code, out = switch(a, {"ref": repo.c1, "at": time.time()}, secret)
            assert code in (409, 503), out  # the fleet's approvals or its row: unreachable
            assert out["commit"] == repo.c2
        finally:
            pg.start()
        wait_for(lambda: a.request("POST", "/v1/events/before_tool_call", {
            "tool_name": "terminal", "args": {"command": "curl example.com"}})[0] == 200,
            timeout=30, what="A to answer again")
        assert decide(a, "curl example.com") == "block"  # still c2
    finally:
        for serve in replicas:
            if serve.proc is not None and serve.proc.poll() is None:
                serve.stop()
        pg.close()
