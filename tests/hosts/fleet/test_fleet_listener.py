"""The fleet's listener must notice a connection that went silent, not only one
that broke: caches are trusted only while notifications are being heard
(docs/fleet.md, Consistency). A network that drops packets (a failover, a
firewall) leaves the listener's ``SELECT 1`` waiting for ever; the replica
then has to stop trusting its caches within a few pings, and trust them again
once a new connection listens."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from helpers.pgserver import PgServer

pytestmark = pytest.mark.e2e

BINDIR = PgServer.find()
if BINDIR is None:
    pytest.skip("needs PostgreSQL's initdb (.ci/run installs it)", allow_module_level=True)


class SilentProxy:
    """TCP to PostgreSQL that can go silent: bytes still arrive (the kernel
    acknowledges them) but are passed on neither way, as in a black hole."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.silent = threading.Event()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen()
        self.port = self.listener.getsockname()[1]
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.conns += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if not self.silent.is_set():
                    dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self) -> None:
        """End the silence the way a failover finally does: connections reset."""
        for s in self.conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.conns.clear()
        self.silent.clear()

    def close(self) -> None:
        self.listener.close()
        self.cut()


def _until(check: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_a_listener_gone_silent_stops_the_caches_being_trusted(pg: PgServer) -> None:
    from interlock.hosts.fleet.shared import PING_S, Fleet

    proxy = SilentProxy(pg.port)
    fleet = Fleet(f"postgresql://postgres@127.0.0.1:{proxy.port}/postgres")
    try:
        assert _until(fleet.fresh, 10)
        proxy.silent.set()
        assert _until(lambda: not fleet.fresh(), PING_S * 3 + 5), \
            "a silent listener was still trusted"
        proxy.cut()
        assert _until(fleet.fresh, 15), "the listener did not come back once it could"
    finally:
        proxy.close()
        fleet.close()
