"""Turn a Python script into a worker hook in a few lines.

    # guard.py
    from interlock import block
    from interlock.worker import run

    def handle(request):
        if "rm -rf" in request["payload"]["args"].get("command", ""):
            return block("no rm -rf")

    run(handle)

``handler`` receives the wire contract v1 request (a dict: event, hook,
session_id, cwd, replay, payload, ...) and returns ``None`` (no opinion), a
:class:`~interlock.Decision`, or a wire answer dict. It may be a coroutine
function. An exception becomes an ``error`` answer, which the engine
treats as the hook's failure. ``print`` inside the handler goes to stderr,
since stdout carries the protocol. The loop ends when stdin closes, so a
worker never outlives its host.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from collections.abc import Callable
from typing import IO, Any

import msgspec

from interlock.engine.decisions import Decision
from interlock.engine.errors import HOOK_ERRORS

Handler = Callable[[dict[str, Any]], Any]


def answer_of(result: Any) -> dict[str, Any]:
    """A handler's return value as a wire answer dict."""
    if result is None:
        return {}
    if isinstance(result, Decision):
        return result.to_wire()
    if isinstance(result, dict):
        return result
    raise TypeError(f"a worker handler returns None, a Decision or a dict, "
                    f"not {type(result).__name__}")


def run(handler: Handler, *, stdin: IO[bytes] | None = None,
        stdout: IO[bytes] | None = None) -> None:
    """Answer requests from ``stdin`` on ``stdout``, one JSON line each, until EOF."""
    inp = stdin if stdin is not None else sys.stdin.buffer
    out = stdout if stdout is not None else sys.stdout.buffer
    if stdout is None:
        sys.stdout = sys.stderr  # a stray print must not corrupt the protocol
    decoder = msgspec.json.Decoder()
    encoder = msgspec.json.Encoder()
    runner: asyncio.Runner | None = None
    try:
        for line in inp:
            if not line.strip():
                continue
            try:
                request = decoder.decode(line)
                rid = request.pop("id")
            except (msgspec.DecodeError, AttributeError, KeyError, TypeError):
                print(f"interlock.worker: ignored a line that is not a request: {line[:80]!r}",
                      file=sys.stderr)
                continue
            try:
                result = handler(request)
                if inspect.isawaitable(result):
                    if runner is None:
                        runner = asyncio.Runner()
                    result = runner.run(_awaited(result))
                answer = answer_of(result)
            except HOOK_ERRORS as exc:  # a handler's sys.exit() answers, like any crash
                answer = {"error": f"{type(exc).__name__}: {exc}"}
            # The request's id last: a handler's own "id" must not route its answer
            # to another request.
            out.write(encoder.encode({**answer, "id": rid}) + b"\n")
            out.flush()
    finally:
        if runner is not None:
            runner.close()


async def _awaited(value: Any) -> Any:
    return await value


__all__ = ["answer_of", "run"]
