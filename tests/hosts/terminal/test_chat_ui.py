"""`ctx.ui` in `interlock chat`: in a real terminal (tmux) a shortcut fires, the
status line updates, a widget renders and a shortcut's question is answered;
with no TTY and in `interlock run` the same extension loads and its UI calls
are harmless (the scripted model: nothing reaches the network)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.tmux import Tmux, tmux  # noqa: F401 - fixture
from interlock import RegistrationError
from interlock.ext.ui import ExtensionUI, UIState, parse_key

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent / "interlock"

EXTENSION = textwrap.dedent('''
    from rich.panel import Panel

    def register(ctx):
        seen = {"presses": 0, "turns": 0}

        def press():
            seen["presses"] += 1
            ctx.ui.status(f"pressed {seen['presses']}")

        async def ask():
            answer = await ctx.ui.confirm("really narrow?")
            if answer:
                ctx.tools.set_active(["read_file"])
            ctx.ui.status(f"confirmed {answer}; active {','.join(ctx.tools.active())}")

        ctx.ui.shortcut("ctrl+g", press, help="count presses")
        ctx.ui.shortcut("ctrl+y", ask, help="narrow the tools after asking")
        ctx.ui.status("pressed 0")
        ctx.ui.widget("turns", lambda: Panel(f"WIDGET turns={seen['turns']}"))

        @ctx.on("turn_end")
        def count(event):
            seen["turns"] += 1

        async def ask_cmd(arguments, cmd_ctx):
            return f"answer {await ctx.ui.confirm('go on?')}"

        ctx.register_command("ask", ask_cmd)
    ''')


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    folder = home / "extensions" / "uiext"
    folder.mkdir(parents=True)
    (folder / "extension.toml").write_text('name = "uiext"\nversion = "1.0"\nmodule = "uiext"\n')
    (folder / "uiext.py").write_text(EXTENSION)
    (tmp_path / "script.yaml").write_text("- text: hello back\n")
    (tmp_path / "project").mkdir()
    out = {k: v for k, v in os.environ.items()
           if not k.startswith(("INTERLOCK_", "OPENAI_"))}
    out.update(INTERLOCK_HOME=str(home), INTERLOCK_STATE_DIR=str(tmp_path / "state"),
               INTERLOCK_MANAGED=str(tmp_path / "managed"), TERM="xterm-256color")
    return out


def test_shortcut_status_widget_and_question_in_a_real_terminal(
        tmux: Tmux, env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    exports = " ".join(f"{k}={v!r}" for k, v in env.items()
                       if k.startswith(("INTERLOCK_", "TERM", "PATH", "HOME")))
    cmd = (f"env {exports} {BIN} chat --model scripted:{tmp_path / 'script.yaml'}; "
           "echo CHAT-EXITED $?; read _")
    tmux("new-session", "-d", "-s", "chat", "-x", "110", "-y", "30",
         "-c", str(tmp_path / "project"), cmd)
    screen = tmux.wait(lambda s: "pressed 0" in s and "WIDGET turns=0" in s, "the first prompt")
    assert "scripted" in screen  # the built-in part of the status line: the model

    tmux("send-keys", "-t", "chat", "C-g")
    tmux.wait(lambda s: "pressed 1" in s, "the status after ctrl+g")
    tmux("send-keys", "-t", "chat", "C-g")
    tmux.wait(lambda s: "pressed 2" in s, "the status after a second ctrl+g")

    # Typed text survives a shortcut; the widget redraws after the turn.
    tmux("send-keys", "-t", "chat", "h", "i", "C-g")
    tmux.wait(lambda s: "pressed 3" in s, "the status after ctrl+g while typing")
    tmux("send-keys", "-t", "chat", "Enter")
    tmux.wait(lambda s: "hello back" in s and "WIDGET turns=1" in s, "the reply and the widget")

    # A shortcut that asks: the same prompt permission asks use.
    tmux("send-keys", "-t", "chat", "C-y")
    tmux.wait(lambda s: "really narrow? [y/N]" in s, "the question")
    tmux("send-keys", "-t", "chat", "y", "Enter")
    tmux.wait(lambda s: "confirmed True; active read_file" in s, "the answer's effect")

    tmux("send-keys", "-t", "chat", "C-d")
    tmux.wait(lambda s: "CHAT-EXITED 0" in s, "chat to exit")


def run(env: dict[str, str], tmp_path: Path, *args: str, stdin: str = ""
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN), *args, "--model", f"scripted:{tmp_path / 'script.yaml'}"],
                          input=stdin, capture_output=True, text=True, env=env,
                          cwd=tmp_path / "project", timeout=120, check=False)


def test_no_tty_chat_reads_answers_as_lines_and_draws_nothing(
        env: dict[str, str], tmp_path: Path) -> None:
    proc = run(env, tmp_path, "chat", stdin="/ask\ny\nhi\n/ask\n\n/exit\n")
    assert proc.returncode == 0, proc.stderr
    assert "answer True" in proc.stdout
    assert "hello back" in proc.stdout
    assert "answer False" in proc.stdout  # an empty answer is the default, no
    assert "WIDGET" not in proc.stdout + proc.stderr
    assert "pressed" not in proc.stdout + proc.stderr
    assert "disabled" not in proc.stderr


def test_run_host_answers_prompts_with_their_default(env: dict[str, str], tmp_path: Path
                                                     ) -> None:
    proc = subprocess.run([str(BIN), "run", "/ask", "--model",
                           f"scripted:{tmp_path / 'script.yaml'}"], capture_output=True,
                          text=True, env=env, cwd=tmp_path / "project", timeout=120,
                          check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "answer False"


def test_keys_and_clashes_are_registration_errors() -> None:
    assert parse_key("ctrl+g") == "c-g"
    assert parse_key("Alt+X") == "escape x"
    assert parse_key("f5") == "f5"
    for bad in ("ctrl+", "g", "shift+g", "ctrl+alt+g", "f13"):
        with pytest.raises(RegistrationError, match="is not one of"):
            parse_key(bad)
    state = UIState()
    one, two = ExtensionUI(state, "one"), ExtensionUI(state, "two")
    one.shortcut("ctrl+g", lambda: None)
    with pytest.raises(RegistrationError, match="already bound by extension 'one'"):
        two.shortcut("ctrl+g", lambda: None)
    with pytest.raises(RegistrationError, match="belongs to the prompt"):
        two.shortcut("ctrl+c", lambda: None)
    with pytest.raises(RegistrationError, match="where must be one of above, below"):
        two.widget("w", lambda: "", where="left")
    one.status("hi")
    state.drop("one")
    assert state.shortcuts == {}
    assert state.statuses == {}
    two.shortcut("ctrl+g", lambda: None)  # free again once 'one' unloaded
