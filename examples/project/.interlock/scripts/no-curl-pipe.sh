#!/bin/sh
# A native command hook: the request is one JSON line on stdin.
# Exit 0 with no output: no opinion. Exit 2: block, with stderr as the reason.
request=$(cat)
case "$request" in
    *curl*"|"*sh*|*wget*"|"*sh*)
        echo "piping a download into a shell runs unreviewed code; download, read, then run" >&2
        exit 2 ;;
esac
exit 0
