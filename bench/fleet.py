"""A fleet on one machine: evaluations/s with 1 and 2 replicas, and what a remote
bridge adds over a local one (docs/fleet.md, Sizing).

Parts, all real and on loopback: a private PostgreSQL (Debian's initdb, as the
tests start it; or ``$INTERLOCK_BENCH_PG_URL``), `interlock serve --fleet`
replicas with the 3-hook project policy of bench/bridge.py (Python handlers,
strict audit into PostgreSQL), and haproxy in front of two of them.

1. **Throughput**: keep-alive clients (4 threads) post ``before_tool_call`` for
   a few seconds to one replica, then to haproxy in front of two.
2. **Latency added by a remote bridge**: ``python -I -m interlock.bridge
   claude`` from process start to answer, with a Claude Code PreToolUse payload:
   local (Unix socket to a local `serve`), remote over HTTPS (a TCP and TLS
   handshake per call: a bridge is a new process each time), remote over
   plain HTTP to loopback (the handshake's cost is the difference), and via a
   local forwarder (`serve --upstream`) that keeps the HTTPS connection open.

On 2 shared cores both replicas compete with PostgreSQL, haproxy and the
clients for the same CPUs, so the 2-replica figure shows the overhead of
the balancer more than a scale-out; on separate machines throughput adds up
until PostgreSQL's commit rate is the limit. Run: ``python bench/fleet.py``.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from _common import drive, report  # noqa: E402
from bridge import HANDLERS  # noqa: E402

SECONDS = float(os.environ.get("INTERLOCK_BENCH_SECONDS", "3"))
RUNS = int(os.environ.get("INTERLOCK_BENCH_RUNS", "200"))
"""Bridge runs per figure: with 200, the p99 is the 198th-fastest run, not the slowest
(``INTERLOCK_BENCH_RUNS`` / ``_SECONDS`` shorten a trial run)."""
CLI = [sys.executable, "-m", "interlock"]
PAYLOAD = json.dumps({"hook_event_name": "PreToolUse", "session_id": "s1", "cwd": "/",
                      "tool_name": "Bash", "tool_input": {"command": "rm -rf ~"},
                      "tool_use_id": "t1"}).encode()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def project(root: Path) -> None:
    cfg = root / ".interlock"
    cfg.mkdir(parents=True, exist_ok=True)
    hooks = []
    for name, text in HANDLERS.items():
        (cfg / name).write_text(text)
        hooks.append(f'[[hooks]]\nname = "{name[:-3]}"\nevents = ["before_tool_call"]\n'
                     f'handler = "{name}"\n')
    (cfg / "config.toml").write_text("\n".join(hooks))


class Procs:
    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[str]] = []

    def serve(self, env: dict[str, str], *args: str) -> subprocess.Popen[str]:
        proc = subprocess.Popen([*CLI, "serve", *args], env=env, stderr=subprocess.PIPE,
                                text=True)
        self.procs.append(proc)
        assert proc.stderr is not None
        for line in proc.stderr:
            if "listening on" in line:
                break
        else:
            raise RuntimeError(f"serve {args} did not start")
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        return proc

    def close(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            proc.wait(30)


def timed(argv: list[str], env: dict[str, str]) -> list[float]:
    subprocess.run(argv, input=PAYLOAD, capture_output=True, env=env, check=False)
    samples = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        done = subprocess.run(argv, input=PAYLOAD, capture_output=True, env=env, check=False)
        samples.append((time.perf_counter() - t0) * 1000)
        if b"destructive" not in done.stdout:  # the policy's answer, not a failed-closed deny
            raise RuntimeError(done.stdout + done.stderr)
    return samples


def summary(name: str, samples: list[float]) -> dict[str, float]:
    """p50, p99 (nearest rank) and the slowest run. With fewer than 100 runs a p99
    would be the slowest run under another name, so it is left out."""
    ordered = sorted(samples)
    out = {"runs": len(ordered), "p50_ms": round(statistics.median(ordered), 2),
           "max_ms": round(ordered[-1], 2)}
    text = f"{name:<40} p50 {out['p50_ms']:7.2f} ms"
    if len(ordered) >= 100:
        out["p99_ms"] = round(ordered[math.ceil(len(ordered) * 0.99) - 1], 2)
        text += f"   p99 {out['p99_ms']:7.2f} ms"
    print(f"{text}   max {out['max_ms']:7.2f} ms ({len(ordered)} runs)", flush=True)
    return out


HAPROXY = """
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
frontend policy
    bind 127.0.0.1:{port}
    default_backend replicas
backend replicas
    balance roundrobin
    server a 127.0.0.1:{a}
    server b 127.0.0.1:{b}
"""


def load(port: int, token: str, clients: int = 4) -> float:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    return drive(lambda: http.client.HTTPConnection("127.0.0.1", port, timeout=30), headers,
                 clients, SECONDS)


def main() -> None:
    import trustme

    tmp = Path(tempfile.mkdtemp(prefix="il-fleet-bench-"))
    pg = None
    url = os.environ.get("INTERLOCK_BENCH_PG_URL", "")
    if not url:
        from helpers.pgserver import PgServer

        bindir = PgServer.find()
        if bindir is None:  # `make bench` runs the others; say why this one did not
            print("skipped: needs PostgreSQL's initdb (Debian's postgresql) or "
                  "INTERLOCK_BENCH_PG_URL", flush=True)
            report({"skipped": "no PostgreSQL"})
            return
        pg = PgServer(bindir)
        pg.start()
        url = pg.url
    root = tmp / "project"
    project(root)
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERLOCK_")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update({"INTERLOCK_HOME": str(tmp / "home"), "INTERLOCK_ACCEPT_HOOKS": "1",
                "INTERLOCK_STORE": url})
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.cert_chain_pems[0].write_to_path(str(tmp / "cert.pem"))
    cert.private_key_pem.write_to_path(str(tmp / "key.pem"))
    ca.cert_pem.write_to_path(str(tmp / "ca.pem"))
    procs = Procs()
    figures: dict[str, Any] = {}
    try:
        made = subprocess.run([*CLI, "serve", "token", "create", "bench", "--fleet"], env=env,
                              capture_output=True, text=True, check=True)
        token = made.stdout.strip()
        token_file = tmp / "token"
        token_file.write_text(token)
        token_file.chmod(0o600)
        ports = [free_port(), free_port()]
        for port in ports:
            procs.serve(env, "--project", str(root), "--fleet", "--no-socket", "--port",
                        str(port))
        figures["evals_per_s_1_replica"] = round(load(ports[0], token))
        if shutil.which("haproxy"):
            lb = free_port()
            (tmp / "haproxy.cfg").write_text(HAPROXY.format(port=lb, a=ports[0], b=ports[1]))
            haproxy = subprocess.Popen(["haproxy", "-db", "-f", str(tmp / "haproxy.cfg")],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                time.sleep(0.5)  # haproxy binds in well under this; no readiness signal
                figures["evals_per_s_2_replicas_haproxy"] = round(load(lb, token))
            finally:
                haproxy.terminate()
                haproxy.wait(10)
        print(f"evaluations/s, 4 keep-alive clients: 1 replica "
              f"{figures['evals_per_s_1_replica']}, 2 replicas behind haproxy "
              f"{figures.get('evals_per_s_2_replicas_haproxy', 'n/a')}", flush=True)

        tls_port, sock_dir = free_port(), Path(tempfile.mkdtemp(prefix="il-", dir="/tmp"))
        procs.serve(env, "--project", str(root), "--fleet", "--no-socket", "--port",
                    str(tls_port), "--tls-cert", str(tmp / "cert.pem"), "--tls-key",
                    str(tmp / "key.pem"))
        local_sock = sock_dir / "local.sock"
        procs.serve({**env, "INTERLOCK_STORE": str(tmp / "local.db")}, "--project", str(root),
                    "--no-tcp", "--socket", str(local_sock))
        fwd_sock = sock_dir / "fwd.sock"
        procs.serve(env, "--upstream", f"https://127.0.0.1:{tls_port}", "--token-file",
                    str(token_file), "--ca", str(tmp / "ca.pem"), "--socket", str(fwd_sock))
        bridge = [sys.executable, "-I", "-m", "interlock.bridge", "claude", "--deadline", "20"]
        remote = ["--token-file", str(token_file), "--ca", str(tmp / "ca.pem")]
        runs = {
            "local_socket": ([*bridge, "--project", str(root)],
                             {**env, "INTERLOCK_SOCKET": str(local_sock)}),
            "remote_https": ([*bridge, "--server", f"https://127.0.0.1:{tls_port}", *remote],
                             env),
            "remote_http_loopback": ([*bridge, "--server", f"http://127.0.0.1:{ports[0]}",
                                      *remote], env),
            "forwarder_socket": ([*bridge, "--project", str(root)],
                                 {**env, "INTERLOCK_SOCKET": str(fwd_sock)}),
        }
        for name, (argv, run_env) in runs.items():
            figures[name] = summary(f"bridge, {name}", timed(argv, run_env))
        base = figures["local_socket"]
        tail = "p99_ms" if "p99_ms" in base else "max_ms"
        for name in ("remote_https", "remote_http_loopback", "forwarder_socket"):
            figures[f"{name}_adds_p50_ms"] = round(figures[name]["p50_ms"] - base["p50_ms"], 2)
            figures[f"{name}_adds_{tail}"] = round(figures[name][tail] - base[tail], 2)
        figures["tls_handshake_per_call_p50_ms"] = round(
            figures["remote_https"]["p50_ms"] - figures["remote_http_loopback"]["p50_ms"], 2)
        print(f"a remote HTTPS bridge adds p50 {figures['remote_https_adds_p50_ms']} ms, "
              f"{tail[:-3]} {figures[f'remote_https_adds_{tail}']} ms over a local one; the TLS "
              f"handshake (+ ssl import) is ~{figures['tls_handshake_per_call_p50_ms']} ms of "
              f"it; via the forwarder: p50 {figures['forwarder_socket_adds_p50_ms']} ms",
              flush=True)
    finally:
        procs.close()
        if pg is not None:
            pg.close()
        shutil.rmtree(tmp, ignore_errors=True)
    report(figures)


if __name__ == "__main__":
    main()
