#!/usr/bin/env bash
# Installs the real agent CLIs that tests/realclients runs (Claude Code, Codex
# CLI, Gemini CLI), at the versions pinned in tests/realclients/npm/, into
# .cache/realclients (git-ignored; $INTERLOCK_REALCLIENTS overrides it).
#
# Idempotent: a stamp holding the lockfile's hash skips a second install.
# When npm cannot reach its registry, it writes why into the cache dir and
# exits 0, so the tests skip with that message; any other failure fails.
set -euo pipefail
cd "$(dirname "$0")/.."

pins=tests/realclients/npm
dest=${INTERLOCK_REALCLIENTS:-.cache/realclients}
mkdir -p "$dest"
[ -e .cache/.gitignore ] || { mkdir -p .cache && echo '*' > .cache/.gitignore; }
stamp="$dest/.installed"
want=$(cat "$pins/package.json" "$pins/package-lock.json" | sha256sum | cut -d' ' -f1)

versions_ok() {
    local bin="$dest/node_modules/.bin"
    [ "$("$bin/claude" --version 2>/dev/null | awk '{print $1}')" = "$1" ] &&
    [ "$("$bin/codex" --version 2>/dev/null | awk '{print $2}')" = "$2" ] &&
    [ "$("$bin/gemini" --version 2>/dev/null)" = "$3" ]
}
pinned() {
    node -e 'const d = require(process.argv[1]).dependencies;
             console.log(d["@anthropic-ai/claude-code"], d["@openai/codex"], d["@google/gemini-cli"])' \
        "$(pwd)/$pins/package.json"
}

unreachable() {
    echo "real-client tests will be skipped: $1" >&2
    echo "$1" > "$dest/UNREACHABLE"
    exit 0
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "real clients already installed in $dest"
    exit 0
fi
command -v npm >/dev/null && command -v node >/dev/null ||
    unreachable "npm (with node) is not installed, so the pinned agent CLIs cannot be fetched"
if ! timeout 60 npm ping >/dev/null 2>&1; then
    unreachable "the npm registry ($(npm config get registry 2>/dev/null)) cannot be reached"
fi
rm -f "$dest/UNREACHABLE" "$stamp"

cp "$pins/package.json" "$pins/package-lock.json" "$dest/"
# --ignore-scripts: no native builds (node-pty, keytar: Gemini runs without
# them headless); Claude Code's one postinstall, which puts its native binary
# in place, is run by hand below.
echo "installing the pinned agent CLIs into $dest (about 900 MB) ..."
npm ci --prefix "$dest" --ignore-scripts --no-audit --no-fund --loglevel=error
(cd "$dest/node_modules/@anthropic-ai/claude-code" && node install.cjs)
read -r claude codex gemini < <(pinned)
if ! versions_ok "$claude" "$codex" "$gemini"; then
    echo "the installed agent CLIs do not report the pinned versions" \
         "(claude $claude, codex $codex, gemini $gemini)" >&2
    exit 1
fi
echo "$want" > "$stamp"
echo "installed Claude Code $claude, Codex CLI $codex, Gemini CLI $gemini in $dest"
