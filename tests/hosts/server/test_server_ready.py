"""`GET /v1/ready`: the readiness a load balancer's health check asks (docs/fleet.md)."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

import pytest

from interlock import Engine, block
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import TokenStore
from interlock.hosts.server.listen import Serving


def get_ready(serving: Serving) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", serving.port, timeout=10)
    try:
        conn.request("GET", "/v1/ready")  # no token: a balancer holds none
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def guarded_engine() -> Engine:
    engine = Engine()

    @engine.on("before_tool_call", name="no-rm")
    def no_rm(event: Any) -> Any:
        return block("no") if "rm" in event.args.get("command", "") else None

    return engine


def test_ready_follows_the_store_and_says_only_why() -> None:
    engine = guarded_engine()
    problem: list[str | None] = [None]
    app = create_app(engine, project_root=Path("/"), tokens=TokenStore(),
                     ready=lambda: problem[0])
    with Serving(app, port=0).running() as serving:
        assert get_ready(serving) == (200, {"ready": True})
        problem[0] = "the audit store is not committing"
        assert get_ready(serving) == (503, {"ready": False,
                                            "reason": "the audit store is not committing"})
        problem[0] = None
        assert get_ready(serving)[0] == 200
    engine.close()


def test_a_server_without_hooks_is_not_ready() -> None:
    engine = Engine()
    app = create_app(engine, project_root=Path("/"), tokens=TokenStore())
    with Serving(app, port=0).running() as serving:
        status, body = get_ready(serving)
    assert status == 503
    assert body == {"ready": False, "reason": "no hooks are loaded (nor a deny or ask rule)"}
    engine.close()


@pytest.mark.e2e  # a real `interlock serve` process
def test_a_project_whose_only_policy_is_a_deny_rule_is_served(tmp_path: Path) -> None:
    """As the bridge runs one (docs/one-policy.md, Permission rules). Before: serve
    refused to start ("no hooks are configured"), and the agents behind it fell back
    to no policy at all."""
    from helpers.serve import Serve

    served = Serve(tmp_path, '[[permissions]]\ntool = "terminal"\npattern = "rm *"\n'
                             'action = "deny"\n').start()
    try:
        assert served.request("GET", "/v1/ready", token=None) == (200, {"ready": True})
        said = served.event({"tool_name": "terminal", "args": {"command": "rm -rf /"}})
        assert (said["decision"], said["hook"]) == ("block", "permissions")
        assert served.event({"tool_name": "terminal", "args": {"command": "ls"}})[
            "decision"] == "none"
    finally:
        served.stop()


def test_a_server_with_only_allow_rules_is_not_ready() -> None:
    from interlock.agent.permissions import rule

    engine = Engine()
    app = create_app(engine, project_root=Path("/"), tokens=TokenStore(),
                     rules=lambda: [rule("terminal", "*", "allow")])
    with Serving(app, port=0).running() as serving:
        status, body = get_ready(serving)
    assert status == 503
    assert body == {"ready": False, "reason": "no hooks are loaded (nor a deny or ask rule)"}
    engine.close()


@pytest.mark.e2e  # a real `interlock serve` process
def test_interlock_serve_answers_ready_without_a_token(tmp_path: Path) -> None:
    from helpers.serve import Serve

    served = Serve(tmp_path, '[[hooks]]\nname = "quiet"\nevents = ["before_tool_call"]\n'
                             'command = "cat >/dev/null"\n').start()
    try:
        assert served.request("GET", "/v1/ready", token=None) == (200, {"ready": True})
    finally:
        served.stop()
