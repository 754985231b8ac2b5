"""A Python hook: handle(event) returns a decision or None (no opinion)."""

from interlock import block


def handle(event):
    command = event.args.get("command", "")
    if "git push" in command and ("--force" in command.split() or " -f" in command):
        return block("force-push rewrites shared history", hint="use --force-with-lease")
    return None
