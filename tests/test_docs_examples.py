"""Every Python example in README.md and docs/ runs as written.

A ``python`` block is run in a fresh process in an empty folder. One that
defines ``register(ctx)`` is then loaded as an extension into a real engine
(a name it uses but never defines fails there); one that defines
``handle(event)`` is called with a tool call. A block that is a fragment of a
larger program (it awaits at top level or uses names the page set up earlier)
says so on the line above its fence: ``<!-- fragment: why -->``.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"(?:^(<!-- fragment:[^\n]*-->)\n)?^```python\n(.*?)^```", re.S | re.M)

HARNESS = """
import sys
source, label = open(sys.argv[1]).read(), sys.argv[2]
ns = {"__name__": "docs_example"}
exec(compile(source, label, "exec"), ns)
if callable(ns.get("register")):
    from pathlib import Path
    from interlock import Engine
    from interlock.ext.loader import ExtensionSet
    engine = Engine()
    exts = ExtensionSet(engine, home=Path("home"), use_entry_points=False)
    info = exts.load("docs-example", ns["register"])
    exts.close()
    engine.close()
    if info.status != "loaded":
        sys.exit(f"{label}: register(ctx) failed: {info.message}")
if callable(ns.get("handle")) and "run" not in ns:
    from interlock import Decision
    from interlock.events import BeforeToolCall
    answer = ns["handle"](BeforeToolCall(tool_name="terminal", args={"command": "rm -rf /"}))
    if answer is not None and not isinstance(answer, Decision):
        sys.exit(f"{label}: handle(event) returned {answer!r}")
"""


def _examples() -> list[tuple[str, str | None, str]]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for m in BLOCK.finditer(text):
            line = text[:m.start(2)].count("\n")
            found.append((f"{page.relative_to(ROOT)}:{line}", m.group(1), m.group(2)))
    return found


EXAMPLES = _examples()


def test_the_pages_have_examples_to_run():
    runnable = [label for label, fragment, _ in EXAMPLES if fragment is None]
    assert len(runnable) >= 8, runnable


@pytest.mark.parametrize(("label", "fragment", "source"), EXAMPLES,
                         ids=[label for label, _, _ in EXAMPLES])
@pytest.mark.slow
def test_docs_example_runs(label, fragment, source, tmp_path):
    if fragment is not None:
        compile(source, label, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)  # still Python
        return
    script = tmp_path / "example.py"
    script.write_text(source)
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, "-c", HARNESS, str(script), label], cwd=work,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
