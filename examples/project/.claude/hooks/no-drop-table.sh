#!/bin/sh
# Written for Claude Code: reads its PreToolUse JSON (tool_input.command) on stdin,
# exits 2 to block with stderr as the reason. Interlock runs it unchanged.
if grep -qi 'drop table'; then
    echo "DROP TABLE needs a human" >&2
    exit 2
fi
exit 0
