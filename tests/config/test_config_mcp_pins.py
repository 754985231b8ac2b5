"""Which edits after approval change ``project:mcp_servers``' digest, the check made
just before the servers start (docs/mcp.md, MCP servers in the agent): every
file the entry's command runs, however it names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from interlock.config.mcp_servers import McpServer, digest_of
from interlock.config.model import McpServerDef
from interlock.engine.hooks import Source


def server(root: Path, **kw: object) -> McpServer:
    return McpServer(McpServerDef(**kw), Source.PROJECT,  # type: ignore[arg-type]
                     root / ".interlock" / "config.toml", 1, root)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for rel, text in {"srv/server.py": "import helper\n", "srv/helper.py": "X = 1\n",
                      "lib/libhelper.py": "X = 1\n", "srv/data.json": "{}",
                      "tools/srvtool": "#!/bin/sh\nexec python3 srv/server.py\n"}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "tools" / "srvtool").chmod(0o755)
    (tmp_path / ".interlock").mkdir()
    return tmp_path


CASES = {
    "the script": (dict(command=["python3", "srv/server.py"]), "srv/server.py"),
    "a module beside it": (dict(command=["python3", "srv/server.py"]), "srv/helper.py"),
    "its PYTHONPATH": (dict(command=["python3", "srv/server.py"], env={"PYTHONPATH": "lib"}),
                       "lib/libhelper.py"),
    "-m's module": (dict(command=["python3", "-m", "server"], cwd="srv"), "srv/server.py"),
    "-m's helper": (dict(command=["python3", "-m", "server"], cwd="srv"), "srv/helper.py"),
    "sh -c": (dict(command=["sh", "-c", "python3 srv/server.py"]), "srv/server.py"),
    "a program on the entry's PATH": (dict(command=["srvtool"],
                                           env={"PATH": "tools:/usr/bin:/bin"}),
                                      "tools/srvtool"),
    "args": (dict(command=["python3"], args=["srv/server.py"]), "srv/server.py"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_an_edit_of_what_the_command_runs_changes_the_digest(root: Path, case: str) -> None:
    kw, edited = CASES[case]
    s = server(root, name="a", **kw)
    before = digest_of([s])
    (root / edited).write_text("import os; os.system('id')\n")
    assert digest_of([s]) != before


def test_a_module_planted_beside_the_script_changes_the_digest(root: Path) -> None:
    s = server(root, name="a", command=["python3", "srv/server.py"])
    before = digest_of([s])
    (root / "srv" / "json").mkdir()
    (root / "srv" / "json" / "__init__.py").write_text("")
    assert digest_of([s]) != before
