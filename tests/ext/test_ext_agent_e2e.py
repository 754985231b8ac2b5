"""Issue 7, must show: an extension that registers a tool, a command, a bus
listener (and a hook and a model provider) is installed from a local folder and
from a wheel, used in a scripted `interlock run`, then removed.

Everything goes through the real CLI in real processes: `interlock ext
install`, `interlock run` (the model calls the extension's tool, the extension's
hook blocks one call, its bus listener counts the calls), `interlock run
"/wc-stats"` (the extension's slash command), `interlock ext remove`, and a
last run in which the tool, the command and the provider are gone.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.agent import isolated_home  # noqa: F401 - autouse fixture
from helpers.wheels import extension_wheel
from interlock.store.paths import state_dir

MODULE = textwrap.dedent('''
    from interlock import block
    from interlock.testing import ScriptedModel

    SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}},
              "required": ["text"], "additionalProperties": False}


    def register(ctx):
        def word_count(args, tool_ctx):
            words = len(args["text"].split())
            ctx.events.publish("wc.counted", {"words": words})
            return {"words": words}

        ctx.register_tool("word_count", SCHEMA, word_count, description="Count words.")

        def stats(arguments, command_ctx):
            runs, last = ctx.state.get("runs", 0), ctx.state.get("last")
            return f"word_count ran {runs} time(s), last {last}"

        ctx.register_command("wc-stats", stats, description="How often word_count ran.")

        @ctx.events.subscribe("wc.counted")
        def tally(message):
            ctx.state.set("runs", ctx.state.get("runs", 0) + 1)
            ctx.state.set("last", message.data["words"])

        def no_secrets(event):
            if "classified" in event.args.get("text", ""):
                return block("word_count may not read classified text")
            return None

        ctx.on("before_tool_call", no_secrets, matcher="word_count", name="no-classified")
        ctx.register_provider("canned", lambda name: ScriptedModel.from_file(name))
    ''')

SCRIPT = textwrap.dedent('''
    - text: counting
      tool_calls:
        - {name: word_count, args: {text: "one two three four"}}
    - match: '"words": 4'
      tool_calls:
        - {name: word_count, args: {text: "the classified plans"}}
    - match: may not read classified text
      text: four words; the other text was refused
    ''')

GONE = textwrap.dedent('''
    - tool_calls:
        - {name: word_count, args: {text: "one two"}}
    - match: unknown tool
      text: no such tool any more
    ''')

WHEEL_DIST = "interlock-testext-wordcount"
WHEEL_MODULE = "interlock_testext_wordcount"


def interlock(*args: str, cwd: Path, stdin: str | None = None
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "interlock", *args], cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=60)


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "src" / "wordcount"
    folder.mkdir(parents=True)
    (folder / "extension.toml").write_text('name = "wordcount"\nversion = "1.0"\n'
                                           'module = "wordcount"\n')
    (folder / "wordcount.py").write_text(MODULE)
    return folder


def _wheel(tmp_path: Path) -> Path:
    return extension_wheel(tmp_path, dist=WHEEL_DIST, module=WHEEL_MODULE, source=MODULE,
                           entry_point="wordcount")


def _uninstall_wheel() -> None:
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-q", "-y", WHEEL_DIST],
                   capture_output=True, check=False)


def _tool_results(export: Path) -> list[str]:
    records = [json.loads(line) for line in export.read_text().splitlines()]
    return [str(r.get("content")) for r in records if r.get("role") == "tool"]


@pytest.mark.parametrize("how", ["folder", "wheel"])
def test_an_extension_is_installed_used_in_a_scripted_run_and_removed(tmp_path, how):
    project = tmp_path / "project"
    project.mkdir()
    script = tmp_path / "script.yaml"
    script.write_text(SCRIPT)
    source = _folder(tmp_path) if how == "folder" else _wheel(tmp_path)
    try:
        installed = interlock("ext", "install", str(source), "--yes", cwd=project)
        assert installed.returncode == 0, installed.stderr
        assert "installed wordcount" in installed.stdout

        # The model is served by the extension's provider (prefix "canned").
        run = interlock("run", "--model", f"canned:{script}", "--export", "t.jsonl", "-v",
                        "count the words", cwd=project)
        assert run.returncode == 0, run.stderr
        assert "> word_count {'text': 'one two three four'}" in run.stderr
        results = _tool_results(project / "t.jsonl")
        assert results[0] == '{"words": 4}'
        # The extension's hook is in the engine the agent runs with.
        assert "word_count may not read classified text" in results[1]
        assert "no-classified" in results[1]
        assert run.stdout.endswith("four words; the other text was refused\n")

        # The bus listener saw the one call that ran, and kept it in its state.
        state = json.loads((state_dir() / "extensions" / "wordcount" /
                            "state.json").read_text())
        assert state == {"runs": 1, "last": 4}
        stats = interlock("run", "--model", f"canned:{script}", "/wc-stats", cwd=project)
        assert stats.returncode == 0, stats.stderr
        assert stats.stdout == "word_count ran 1 time(s), last 4\n"

        if how == "folder":  # chat and demo build their hosts the same way
            chat_script = tmp_path / "chat.yaml"
            chat_script.write_text(
                "- tool_calls:\n    - {name: word_count, args: {text: 'a b'}}\n"
                "- match: '\"words\": 2'\n  text: two\n")
            chat = interlock("chat", "--model", f"scripted:{chat_script}", cwd=project,
                             stdin="/help\ncount a b\n")
            assert chat.returncode == 0, chat.stderr
            assert "/wc-stats  How often word_count ran." in chat.stdout
            assert "two" in chat.stdout
            demo = interlock("demo", cwd=project)
            assert demo.returncode == 0, demo.stdout + demo.stderr
            assert "extensions: wordcount" in demo.stdout

        removed = interlock("ext", "remove", "wordcount", cwd=project)
        assert removed.returncode == 0, removed.stderr
        gone = tmp_path / "gone.yaml"
        gone.write_text(GONE)
        after = interlock("run", "--model", f"scripted:{gone}", "--export", "after.jsonl",
                          "count again", cwd=project)
        assert after.returncode == 0, after.stderr
        assert "unknown tool 'word_count'" in _tool_results(project / "after.jsonl")[0]
        command = interlock("run", "--model", f"scripted:{gone}", "/wc-stats", cwd=project)
        assert "unknown command /wc-stats" in command.stdout
        assert command.returncode == 1
        provider = interlock("run", "--model", f"canned:{script}", "hi", cwd=project)
        assert provider.returncode == 2
        assert "unknown model provider 'canned'" in provider.stderr
    finally:
        if how == "wheel":
            _uninstall_wheel()


def test_a_project_extension_loads_in_a_run_only_once_approved(tmp_path):
    project = tmp_path / "project"
    folder = project / ".interlock" / "extensions" / "hello"
    folder.mkdir(parents=True)
    (folder / "extension.toml").write_text('name = "hello"\n')
    (folder / "extension.py").write_text(
        "def register(ctx):\n"
        "    ctx.register_command('hello', lambda arguments, c: f'hello {arguments}!')\n")
    script = tmp_path / "s.yaml"
    script.write_text("- text: unused\n")

    before = interlock("run", "--model", f"scripted:{script}", "/hello you", cwd=project)
    assert "unknown command /hello" in before.stdout
    assert before.returncode == 1
    assert "extension 'hello' disabled: project extension not approved" in before.stderr

    approved = interlock("ext", "approve", "hello", "--yes", cwd=project)
    assert approved.returncode == 0, approved.stderr
    after = interlock("run", "--model", f"scripted:{script}", "/hello you", cwd=project)
    assert after.returncode == 0, after.stderr
    assert after.stdout == "hello you!\n"
