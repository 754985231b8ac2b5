"""Chat senders are strangers: their read tools stay in the project root, refuse
secret-bearing places, and what a read returns is redacted before the model
sees it. A real server on 127.0.0.1, a scripted model that reads on request."""

from __future__ import annotations

import http.client
import json
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from helpers.agent import isolated_home
from interlock import Engine
from interlock.agent.permissions import PermissionRule, rule
from interlock.hosts.server.app import create_app
from interlock.hosts.server.auth import Role, TokenStore
from interlock.hosts.server.gateway import Gateway
from interlock.hosts.server.listen import Serving
from interlock.models.tooling import ModelRequest, ModelResponse, ToolCall
from interlock.store.paths import state_dir
from interlock.testing import ScriptedModel

pytestmark = pytest.mark.e2e

__all__ = ["isolated_home"]

TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def brain(request: ModelRequest) -> ModelResponse:
    """"read_file X", "list_dir X", "grep X" call that tool; a result is reported back."""
    last = request.messages[-1]
    content = str(last.get("content") or "")
    if last["role"] == "tool":
        return ModelResponse(text=f"tool said: {content}")
    tool, _, arg = content.partition(" ")
    args = {"pattern": arg} if tool == "grep" else {"path": arg}
    return ModelResponse(tool_calls=[ToolCall(id="t1", name=tool, args=args)])


@dataclass
class Readers:
    serving: Serving
    root: Path
    token: str
    rules: list[PermissionRule]
    models: list[ScriptedModel] = field(default_factory=list)

    def ask(self, text: str) -> dict[str, Any]:
        conn = http.client.HTTPConnection("127.0.0.1", self.serving.port, timeout=20)
        try:
            conn.request("POST", "/v1/chat", body=json.dumps({"channel": "c", "text": text}),
                         headers={"Authorization": f"Bearer {self.token}",
                                  "Content-Type": "application/json"})
            frame = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        assert frame["type"] == "reply", frame
        return json.loads(frame["text"].removeprefix("tool said: "))

    def seen_by_models(self) -> str:
        return json.dumps([c.messages for m in self.models for c in m.calls])


@pytest.fixture
def readers(isolated_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Readers]:
    home = isolated_home / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY MATERIAL")
    monkeypatch.setenv("HOME", str(home))
    root = Path(tempfile.mkdtemp(prefix="il-readers-")).resolve()
    (root / "notes.txt").write_text(f"deploy with token {TOKEN}\n")
    (root / ".env").write_text("DB_PASSWORD=hunter2hunter2\n")
    outside = root.parent / (root.name + "-outside")
    outside.mkdir()
    (outside / "other.txt").write_text("someone else's file\n")
    state = state_dir()
    state.mkdir(parents=True)
    (state / "server-tokens.json").write_text('{"admin": "il_admin_secret_value"}')
    engine = Engine()
    tokens = TokenStore()
    chat_token = tokens.create("stranger", Role.CHAT, sender="mallory")
    rules: list[PermissionRule] = []
    box: list[Readers] = []

    def factory(sender: str, channel: str) -> ScriptedModel:
        model = ScriptedModel([brain] * 50)
        box[0].models.append(model)
        return model

    gateway = Gateway(engine, factory, project_root=root, rules=lambda: rules)
    serving = Serving(create_app(engine, project_root=root, tokens=tokens, gateway=gateway),
                      port=0)
    made = Readers(serving, root, chat_token, rules)
    box.append(made)
    with serving.running():
        yield made
    engine.close()


def test_a_project_file_is_read_and_its_secret_redacted_before_the_model_sees_it(readers):
    result = readers.ask("read_file notes.txt")
    assert result["content"].startswith("deploy with")
    assert "[REDACTED]" in result["content"]
    assert "ghp_" not in result["content"]
    assert TOKEN not in readers.seen_by_models()


@pytest.mark.parametrize(("tool", "where", "why"), [
    ("read_file", "/proc/self/environ", "environment"),
    ("read_file", "{state}/server-tokens.json", "tokens"),
    ("list_dir", "{state}", "tokens"),
    ("grep", "il_admin", None),
    ("read_file", "{outside}/other.txt", "outside the folders"),
    ("read_file", "../{outside_name}/other.txt", "outside the folders"),
    ("list_dir", "/root", "outside the folders"),
    ("read_file", "~/.ssh/id_ed25519", ".ssh"),
    ("read_file", ".env", ".env files"),
    ("read_file", "/etc/passwd", "outside the folders"),
])
def test_strangers_cannot_read_secrets_or_outside_the_project(readers, tool, where, why):
    outside = readers.root.parent / (readers.root.name + "-outside")
    path = where.format(state=state_dir(), outside=outside, outside_name=outside.name)
    result = readers.ask(f"{tool} {path}")
    seen = readers.seen_by_models()
    for secret in ("il_admin_secret_value", "PRIVATE KEY MATERIAL", "hunter2hunter2",
                   "someone else's file", "root:x:0"):
        assert secret not in seen
    if why is None:  # grep searched the project only
        assert result["matches"] == []
    else:
        assert "refused by the engine" in result["error"]
        assert why in result["error"]


def test_grep_in_the_project_skips_env_files(readers):
    result = readers.ask("grep hunter2")
    assert result["matches"] == []
    assert "hunter2hunter2" not in readers.seen_by_models()


def test_an_allow_rule_with_a_pattern_widens_the_scope_and_a_star_does_not(readers):
    outside = readers.root.parent / (readers.root.name + "-outside")
    readers.rules.append(rule("read_file", "*", "allow"))
    assert "outside the folders" in readers.ask(f"read_file {outside}/other.txt")["error"]
    readers.rules.append(rule("read_file", f"{outside}/*", "allow"))
    assert readers.ask(f"read_file {outside}/other.txt")["content"] == "someone else's file\n"
    # the state dir stays refused whatever a rule says
    readers.rules.append(rule("read_file", "/*", "allow"))
    error = readers.ask(f"read_file {state_dir()}/server-tokens.json")["error"]
    assert "tokens" in error
