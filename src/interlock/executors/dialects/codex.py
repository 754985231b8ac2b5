"""The Codex dialect: Claude's shapes, checked as strictly as Codex checks them.

What differs from Claude (docs/dialects.md has the table): answers Codex
rejects (bare allow, ask, deny with no reason, updatedInput without allow,
continue: false, unknown fields, ...) are failures; exit 2 blocks only on
PreToolUse, PermissionRequest, PostToolUse, Stop and SubagentStop, and only
with a non-empty stderr; edits reach the script as ``apply_patch`` with the
patch text in ``tool_input.command``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interlock.engine.decisions import Decision, block
from interlock.engine.errors import HookCrash
from interlock.executors.command import exit_message
from interlock.executors.dialects._base import contract, label
from interlock.executors.dialects.claude import ClaudeDialect

if TYPE_CHECKING:
    from interlock.engine.hooks import Invocation
    from interlock.executors._process import Completed

_EXIT2_BLOCKS = frozenset({"before_tool_call", "permission_request", "after_tool_call",
                           "before_stop", "subagent_stop", "user_input"})
_EDIT_TOOLS = frozenset({"write_file", "edit_file", "patch", "Write", "Edit", "MultiEdit"})


class CodexDialect(ClaudeDialect):
    name = "codex"
    system = "codex"
    strict = True
    json_starts = (b"{", b"[")  # codex-rs/hooks output_parser.rs: looks_like_json

    def env(self, invocation: Invocation, *, project_dir: str,
            plugin_root: str | None) -> dict[str, str]:
        if plugin_root is None:
            return {}
        return {"PLUGIN_ROOT": plugin_root, "CLAUDE_PLUGIN_ROOT": plugin_root}

    def adapt(self, invocation: Invocation, body: dict[str, Any]) -> None:
        if invocation.event.turn_id is not None:
            body["turn_id"] = invocation.event.turn_id
        tool_input = body.get("tool_input")
        ours = getattr(invocation.event, "tool_name", None)
        if (ours in _EDIT_TOOLS or body.get("tool_name") in _EDIT_TOOLS) and isinstance(
                tool_input, dict):
            patch = patch_text(tool_input)
            if patch is not None:
                body["tool_name"] = "apply_patch"
                body["tool_input"] = {"command": patch}

    def check_rewrite(self, invocation: Invocation) -> None:
        ev = invocation.event
        args = getattr(ev, "args", None)
        if (getattr(ev, "tool_name", None) in _EDIT_TOOLS and isinstance(args, dict)
                and patch_text(args) is not None):
            raise contract(invocation, self.name, "answered updatedInput for an edit it saw "
                           "as apply_patch; Interlock cannot turn a patch back into the "
                           "edit's arguments (fix: deny, or rewrite in a native hook)")

    def _exit2(self, invocation: Invocation, result: Completed) -> Decision | None:
        if invocation.event.name not in _EXIT2_BLOCKS:
            honoured = ", ".join(sorted(_EXIT2_BLOCKS))
            raise HookCrash(exit_message(label(invocation), result) +
                            f" (codex honours exit 2 only on {honoured})")
        reason = result.stderr_text()
        if not reason:
            raise contract(invocation, self.name, "exited 2 with nothing on stderr; codex "
                           "treats that as a failure, not a block (fix: print the reason "
                           "to stderr)")
        return block(reason)


def patch_text(args: dict[str, Any]) -> str | None:
    """An edit's arguments as an apply_patch document (what Codex hooks see)."""
    path = args.get("path") or args.get("file_path")
    if not isinstance(path, str):
        return None
    content = args.get("content")
    if isinstance(content, str):
        body = "".join(f"+{line}\n" for line in content.splitlines())
        return f"*** Begin Patch\n*** Add File: {path}\n{body}*** End Patch"
    old = args.get("old_string", args.get("old"))
    new = args.get("new_string", args.get("new"))
    if isinstance(old, str) and isinstance(new, str):
        lines = [f"-{line}" for line in old.splitlines()]
        lines += [f"+{line}" for line in new.splitlines()]
        body = "".join(line + "\n" for line in lines)
        return f"*** Begin Patch\n*** Update File: {path}\n@@\n{body}*** End Patch"
    return None


CODEX = CodexDialect()
