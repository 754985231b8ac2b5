"""Evaluations per second through `interlock serve` on loopback.

One event (before_tool_call) with 3 in-process hooks (a check that blocks
on a pattern, an audit check, a context note), posted with a bearer token
over keep-alive HTTP/1.1 connections to 127.0.0.1, and over the Unix
socket. The server runs in its own process, as `interlock serve` does;
clients are 1 and 4 threads in this process. An in-process ``emit_sync`` of
the same event is the ceiling the HTTP layer is measured against.

The same server is then run recording into a SQLite store, with fast audit
(answers at once) and strict audit (an answer leaves only once its audit rows
have committed, what `interlock serve` does by default); each is reported
as a ratio to the unrecorded server of the same run.

Run: ``python bench/serve.py``.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import GATE_BODY as BODY
from _common import best_ns, drive, report
from interlock import Engine, block, context
from interlock.events import BeforeToolCall

SECONDS = 2.0

SERVER = textwrap.dedent('''
    import sys
    from pathlib import Path
    from interlock import Engine, block, context
    from interlock.hosts.server.app import create_app
    from interlock.hosts.server.auth import TokenStore
    from interlock.hosts.server.listen import Serving

    engine = Engine()
    engine.on("before_tool_call", lambda e: block("destructive")
              if "rm -rf" in e.args.get("command", "") else None, name="no-rm")
    engine.on("before_tool_call", lambda e: None, name="audit")
    engine.on("before_tool_call", lambda e: context("checked"), name="note")
    tokens = TokenStore()
    token = tokens.create("bench")
    root, sock, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    gate = None
    if mode != "none":
        from interlock.reliability.sinks import attach

        store = attach(engine, url=str(root / f"{mode}.db"), tracing=False).store
        gate = store.settled if mode == "strict" else None
    app = create_app(engine, project_root=root, tokens=tokens, socket_path=sock,
                     audit_gate=gate)
    serving = Serving(app, port=0, socket_path=sock)
    with serving.running():
        print(serving.port, token, flush=True)
        sys.stdin.read()
''')


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=10)
        self.path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)


def tcp(port: int) -> http.client.HTTPConnection:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.connect()
    assert conn.sock is not None
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


def start(root: Path, mode: str) -> tuple[subprocess.Popen[bytes], int, Path,
                                         dict[str, str]]:
    sock = Path(tempfile.mkdtemp(prefix="il-", dir="/tmp")) / "run" / "serve.sock"
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(root), str(sock), mode],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=os.environ)
    assert server.stdout is not None
    port_text, token = server.stdout.readline().decode().split()
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return server, int(port_text), sock, headers


def recorded(root: Path, figures: dict[str, Any], rounds: int = 3) -> None:
    """Fast and strict audit against an unrecorded server, measured in turns (best of
    ``rounds``), so load from elsewhere on the machine falls on all three alike."""
    servers = {mode: start(root, mode) for mode in ("none", "fast", "strict")}
    best: dict[str, float] = {}
    try:
        for _ in range(rounds):
            for mode, (_server, port, _sock, headers) in servers.items():
                for clients in (1, 4):
                    key = f"{mode}_{clients}"
                    rate = drive(lambda port=port: tcp(port), headers, clients, SECONDS)
                    best[key] = max(best.get(key, 0.0), rate)
    finally:
        for server, *_ in servers.values():
            server.terminate()
            server.wait(30)
    for mode in ("fast", "strict"):
        for clients in (1, 4):
            name = f"tcp_{clients}_{'client' if clients == 1 else 'clients'}"
            rate, anchor = best[f"{mode}_{clients}"], best[f"none_{clients}"]
            figures[f"{mode}_audit_{name}_per_s"] = round(rate)
            figures[f"{mode}_audit_{name}_ratio"] = round(rate / anchor, 3)
            print(f"{mode + ' audit, ' + name:<28} {rate:9.0f} evaluations/s  "
                  f"({rate / anchor:.2f}x unrecorded, {anchor:.0f}/s in turn)", flush=True)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="il-bench-")).resolve()
    server, port, sock, headers = start(root, "none")
    figures: dict[str, Any] = {}
    try:
        check = tcp(port)
        check.request("POST", "/v1/events/before_tool_call", body=BODY, headers=headers)
        answer = json.loads(check.getresponse().read())
        check.close()
        assert answer["context"] == [{"hook": "code:note", "text": "checked"}], answer
        for name, make, clients in (
                ("tcp_1_client", lambda: tcp(port), 1),
                ("tcp_4_clients", lambda: tcp(port), 4),
                ("unix_1_client", lambda: UnixConnection(str(sock)), 1)):
            rate = drive(make, headers, clients, SECONDS)
            figures[name + "_per_s"] = round(rate)
            print(f"{name:<16} {rate:9.0f} evaluations/s  ({1e6 / rate:7.1f} us each)",
                  flush=True)
    finally:
        server.terminate()
        server.wait(10)
    recorded(root, figures)

    engine = Engine()
    engine.on("before_tool_call", lambda e: block("destructive")
              if "rm -rf" in e.args.get("command", "") else None, name="no-rm")
    engine.on("before_tool_call", lambda e: None, name="audit")
    engine.on("before_tool_call", lambda e: context("checked"), name="note")

    def loop(n: int) -> None:
        emit = engine.emit_sync
        for _ in range(n):
            emit(BeforeToolCall(tool_name="terminal", args={"command": "ls -la"},
                                session_id="bench")).to_dict()

    ns = best_ns(loop, 20_000, repeat=3)
    engine.close()
    figures["in_process_per_s"] = round(1e9 / ns)
    figures["http_share_of_in_process"] = round(figures["tcp_1_client_per_s"] * ns / 1e9, 4)
    print(f"{'in process':<16} {1e9 / ns:9.0f} evaluations/s  ({ns / 1000:7.1f} us each, "
          "emit_sync + to_dict)")
    report(figures)


if __name__ == "__main__":
    main()
