"""The protocol :func:`interlock.executors._process.run_once` reads a hook process with.

Apart from ``_process``: a subclass of an asyncio class, so importing it
imports asyncio, which only running a hook process needs.
"""

from __future__ import annotations

import asyncio


class Collector(asyncio.SubprocessProtocol):
    """Collects capped stdout/stderr and tells when the process and pipes are done."""

    def __init__(self, loop: asyncio.AbstractEventLoop, cap: int) -> None:
        self.cap = cap
        self.out = bytearray()
        self.err = bytearray()
        self.err_truncated = False
        self.overflow = loop.create_future()
        """Set when stdout passes the cap (the caller kills the group)."""
        self.exited = loop.create_future()
        self.drained = loop.create_future()
        """Set when stdout and stderr have both reached EOF."""
        self._open = {1, 2}
        self.transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        buf = self.out if fd == 1 else self.err
        room = self.cap - len(buf)
        if len(data) <= room:
            buf += data
            return
        if room > 0:
            buf += data[:room]
        if fd == 1:
            if not self.overflow.done():
                self.overflow.set_result(None)
        else:
            self.err_truncated = True  # stderr is only ever a reason: keep its head

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        # fd 0 is stdin: a script that never reads it breaks the pipe, which is fine.
        self._open.discard(fd)
        if not self._open and not self.drained.done():
            self.drained.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)
