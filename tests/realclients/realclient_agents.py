"""The real agent CLIs, run headless on a throwaway home against the fake model server.

Each :class:`Agent` knows where its pinned CLI is installed (``.ci/clients.sh``
puts all three in ``.cache/realclients``), how to point it at loopback (its
base-URL variable or config, with telemetry, update checks and logins off)
and how to run one prompt non-interactively. The hooks each agent runs are
written by ``interlock bridge install <agent>``, never by hand.

Every run gets a fresh environment built from nothing but what is set here:
no API key, proxy or CI variable of the developer's leaks in. HTTP(S)_PROXY
point at the fake server, which records and refuses any request meant for
another host, so a client that tried to reach the internet is seen in
:attr:`FakeModels.requests` (as ``wire == "escape"``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_models import FakeModels, Request

REPO = Path(__file__).resolve().parents[2]
PINS = Path(__file__).resolve().parent / "npm" / "package.json"
CLIENTS = Path(os.environ.get("INTERLOCK_REALCLIENTS") or REPO / ".cache" / "realclients")
RUN_TIMEOUT = 120


@dataclass
class Run:
    argv: list[str]
    code: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (f"$ {' '.join(self.argv[:3])} ... -> exit {self.code}\n"
                f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}")


@dataclass
class Agent:
    """One agent CLI: its package, its binary and how to run it."""

    name: str
    """The bridge's name for it: ``claude``, ``codex``, ``gemini``."""
    package: str
    binary: str

    @property
    def version(self) -> str:
        pins: dict[str, str] = json.loads(PINS.read_text())["dependencies"]
        return pins[self.package]

    def installed_version(self) -> str | None:
        manifest = CLIENTS / "node_modules" / self.package / "package.json"
        try:
            return str(json.loads(manifest.read_text())["version"])
        except (OSError, ValueError, KeyError):
            return None

    @property
    def path(self) -> Path:
        return CLIENTS / "node_modules" / ".bin" / self.binary

    def require(self) -> Path:
        """The installed binary, or a skip that says why it is missing."""
        installed = self.installed_version()
        if installed == self.version and self.path.exists():
            return self.path
        found = f"version {installed} is" if installed else "it is not"
        if os.environ.get("INTERLOCK_REALCLIENTS_REQUIRED"):
            pytest.fail(f"{self.package}@{self.version} is pinned but {found} installed in "
                        f"{CLIENTS}, although .ci/clients.sh reported the clients installed")
        if installed:
            pytest.skip(f"{self.package}@{self.version} is pinned but {found} installed in "
                        f"{CLIENTS}; `bash .ci/clients.sh` installs the pinned clients")
        why = CLIENTS / "UNREACHABLE"
        if why.exists():
            pytest.skip(f"{self.package}@{self.version} is not installed: "
                        f"{why.read_text().strip()}")
        pytest.skip(f"{self.package}@{self.version} is not installed in {CLIENTS}; "
                    "`bash .ci/clients.sh` installs the pinned clients (`bash .ci/run` does)")

    # -- per-agent setup ------------------------------------------------------------

    def configure(self, home: Path, project: Path, fake: FakeModels) -> dict[str, str]:
        """Write the agent's user config under ``home``; return its environment."""
        if self.name == "claude":
            # -p mode with an API key needs no login; nonessential traffic is
            # the update check, telemetry, error reports and feature flags.
            return {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "sk-ant-fake",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                    "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
                    "DISABLE_ERROR_REPORTING": "1"}
        if self.name == "codex":
            codex_home = home / ".codex"
            codex_home.mkdir(parents=True, exist_ok=True)
            (codex_home / "config.toml").write_text(
                'model = "gpt-fake"\n'
                'model_provider = "fake"\n'
                "check_for_update_on_startup = false\n"
                "[analytics]\nenabled = false\n"
                # The curated-plugin sync clones from GitHub and chatgpt.com at start.
                "[features]\nplugins = false\nremote_plugin = false\napps = false\n"
                "[model_providers.fake]\n"
                'name = "fake"\n'
                f'base_url = "{fake.base_url}/v1"\n'
                'env_key = "FAKE_OPENAI_API_KEY"\n'
                'wire_api = "responses"\n'
                # Project trust: an untrusted project's .codex/ layer is not loaded.
                f'[projects."{project}"]\ntrust_level = "trusted"\n')
            return {"CODEX_HOME": str(codex_home), "FAKE_OPENAI_API_KEY": "sk-fake"}
        if self.name == "gemini":
            gemini_home = home / ".gemini"
            gemini_home.mkdir(parents=True, exist_ok=True)
            # Folder trust: in an untrusted folder Gemini ignores project hooks.
            (gemini_home / "trustedFolders.json").write_text(
                json.dumps({str(project): "TRUST_FOLDER"}))
            (gemini_home / "settings.json").write_text(json.dumps({
                "security": {"auth": {"selectedType": "gemini-api-key"},
                             "folderTrust": {"enabled": True}},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
            }))
            return {"GEMINI_API_KEY": "fake-gemini-key",
                    "GOOGLE_GEMINI_BASE_URL": fake.base_url}
        raise ValueError(self.name)

    def argv(self, prompt: str) -> list[str]:
        binary = str(self.require())
        if self.name == "claude":
            # Bash pre-approved, as a team's settings would: the hooks are the
            # policy under test, and no person is there to answer a prompt.
            return [binary, "-p", prompt, "--output-format", "json", "--allowedTools", "Bash"]
        if self.name == "codex":
            # The sandbox is off (a container may not allow bwrap); the hooks
            # decide. Hook trust is bypassed as a headless run must
            # (`/hooks` is interactive).
            return [binary, "exec", "--json", "--skip-git-repo-check",
                    "--dangerously-bypass-approvals-and-sandbox",
                    "--dangerously-bypass-hook-trust", prompt]
        return [binary, "-p", prompt, "--approval-mode", "yolo", "--output-format", "json"]


AGENTS = {
    "claude": Agent("claude", "@anthropic-ai/claude-code", "claude"),
    "codex": Agent("codex", "@openai/codex", "codex"),
    "gemini": Agent("gemini", "@google/gemini-cli", "gemini"),
}


# -- one project, one home, one run ---------------------------------------------------

@dataclass
class Workspace:
    """A throwaway home and project for one agent run."""

    agent: Agent
    root: Path
    fake: FakeModels
    runtime: Path
    """A short private dir for sockets (TMPDIR): ``sun_path`` holds 108 bytes."""
    python: str = sys.executable
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    def env(self) -> dict[str, str]:
        node_dir = str(Path(shutil.which("node") or "/usr/bin/node").parent)
        proxy = self.fake.base_url
        return {
            "HOME": str(self.home),
            "PATH": os.pathsep.join([node_dir, "/usr/local/bin", "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.runtime),
            "TERM": "dumb",
            "NO_COLOR": "1",
            "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "http_proxy": proxy,
            "https_proxy": proxy, "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
            **self.extra_env,
        }

    def interlock(self, *args: str, python: str | None = None,
                  check: bool = True) -> subprocess.CompletedProcess[str]:
        """``interlock ARGS`` in the project, as the person setting it up runs it."""
        proc = subprocess.run([python or self.python, "-m", "interlock", *args],
                              cwd=self.project, env=self.env(), capture_output=True,
                              text=True, timeout=120)
        if check:
            assert proc.returncode == 0, (f"interlock {' '.join(args)}:\n"
                                          f"{proc.stdout}{proc.stderr}")
        return proc

    def install(self, *, timeout: int = 20, python: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        """Approve the project's hooks, then `interlock bridge install <agent>`.

        ``check=False``: a refused install is returned, not raised (the agent is
        then left unconfigured).
        """
        self.interlock("hooks", "approve", "--all")
        proc = self.interlock("bridge", "install", self.agent.name, "--project",
                              str(self.project), "--timeout", str(timeout), python=python,
                              check=check)
        if proc.returncode == 0:
            self.extra_env.update(self.agent.configure(self.home, self.project, self.fake))
        return proc

    def run(self, prompt: str = "Run the command, please.") -> Run:
        argv = self.agent.argv(prompt)
        proc = subprocess.run(argv, cwd=self.project, env=self.env(), capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT)
        return Run(argv, proc.returncode, proc.stdout, proc.stderr)


# -- what the client sent back to the model ---------------------------------------------

def tool_results(req: Request) -> list[str]:
    """The tool results in a request (the whole conversation), as text, in any wire."""
    body: Any = req.body or {}
    out: list[str] = []
    if req.wire == "anthropic":
        for message in body.get("messages") or []:
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append(_text(block.get("content")))
    elif req.wire == "openai":
        out += [_text(i.get("output")) for i in body.get("input") or []
                if isinstance(i, dict) and str(i.get("type", "")).endswith("_output")]
    elif req.wire == "gemini":
        out += [json.dumps(p["functionResponse"]) for c in body.get("contents") or []
                if isinstance(c, dict) for p in c.get("parts") or []
                if isinstance(p, dict) and "functionResponse" in p]
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v.get("text") if isinstance(v, dict) else v) for v in value)
    return json.dumps(value)


def followup(fake: FakeModels, run: Run) -> Request:
    """The first request that carried a tool result back to the model."""
    for req in fake.main_requests():
        if tool_results(req):
            return req
    raise AssertionError(f"no tool result ever reached the model\n{run}")
