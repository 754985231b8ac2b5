from interlock import block, modify

NO_DELETE = block("deleting files is not allowed", hint="move it to archive/ instead")


def handle(event):
    if event.tool_name == "delete_file":
        return NO_DELETE
    # The Claude Agent SDK's Bash is `terminal` here, as for every agent's shell.
    if event.tool_name == "terminal" and event.args.get("command", "").startswith("rm "):
        return NO_DELETE
    if event.tool_name == "shout":
        return modify(args={"text": event.args["text"].upper()})
    return None
