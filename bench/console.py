"""What the web console costs `interlock serve`: evaluations per second with 0 and
with 20 live viewers (SSE streams of every decision), in one run.

The server runs in its own process with 3 in-process hooks and the console's
decision feed attached, as `interlock serve` has it. Four client threads post
before_tool_call over keep-alive HTTP/1.1. Rounds alternate: 0 viewers, then
20 viewers, repeated; the figure is the median of the per-round ratios
(with viewers / without), with its spread. The viewers read every event they
are sent, so the server does all the work a browser would cause.

A second figure: the server-side page of the newest 200 of 10,000 decisions
(what the console asks on load and on each scroll), median over repeats.

Run: ``python bench/console.py``.
"""

from __future__ import annotations

import http.client
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report

ROUND_S = 1.5
ROUNDS = 4
CLIENTS = 4
VIEWERS = 20
BODY = json.dumps({"tool_name": "terminal", "args": {"command": "ls -la"},
                   "session_id": "bench"}).encode()

SERVER = textwrap.dedent('''
    import sys
    from pathlib import Path
    from interlock import Engine, block, context
    from interlock.hosts.server.app import create_app
    from interlock.hosts.server.auth import Role, TokenStore
    from interlock.hosts.server.console import Console
    from interlock.hosts.server.console_feed import DecisionFeed
    from interlock.hosts.server.listen import Serving

    engine = Engine()
    engine.on("before_tool_call", lambda e: block("destructive")
              if "rm -rf" in e.args.get("command", "") else None, name="no-rm")
    engine.on("before_tool_call", lambda e: None, name="audit")
    engine.on("before_tool_call", lambda e: context("checked"), name="note")
    feed = DecisionFeed()
    engine.add_sink(feed)
    tokens = TokenStore()
    token = tokens.create("bench")
    viewer = tokens.create("viewer", Role.READ)
    root = Path(sys.argv[1])
    console = Console(tokens=tokens, feed=feed)
    app = create_app(engine, project_root=root, tokens=tokens, console=console)
    serving = Serving(app, port=0, socket_path=None)
    with serving.running():
        print(serving.port, token, viewer, flush=True)
        sys.stdin.read()
''')


def post_loop(port: int, token: str, stop: threading.Event, counts: list[int], i: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    while not stop.is_set():
        conn.request("POST", "/v1/events/before_tool_call", body=BODY, headers=headers)
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 200
        counts[i] += 1
    conn.close()


def login(port: int, token: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/ui/api/login", body=json.dumps({"token": token}),
                 headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    resp.read()
    cookie = (resp.getheader("set-cookie") or "").split(";", 1)[0]
    conn.close()
    return cookie


VIEWERS_PROC = textwrap.dedent('''
    import http.client, sys, threading
    port, cookie, n = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    seen = [0] * n
    ready = threading.Barrier(n + 1)

    def view(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", "/ui/api/stream", headers={"Cookie": cookie})
        resp = conn.getresponse()
        assert resp.status == 200
        ready.wait()
        for line in resp:
            if line.startswith(b"data: "):
                seen[i] += 1

    for i in range(n):
        threading.Thread(target=view, args=(i,), daemon=True).start()
    ready.wait()
    print("ready", flush=True)
    sys.stdin.readline()
    print(min(seen), flush=True)
''')


def rate(port: int, token: str) -> float:
    stop = threading.Event()
    counts = [0] * CLIENTS
    threads = [threading.Thread(target=post_loop, args=(port, token, stop, counts, i))
               for i in range(CLIENTS)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    time.sleep(ROUND_S)
    stop.set()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - t0)


def with_viewers(port: int, token: str, cookie: str) -> tuple[float, int]:
    """The rate while VIEWERS streams are open, read by another process (as browsers
    elsewhere would), and the fewest events any viewer received."""
    proc = subprocess.Popen([sys.executable, "-c", VIEWERS_PROC, str(port), cookie,
                             str(VIEWERS)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None
    assert proc.stdin is not None
    assert proc.stdout.readline().strip() == "ready"
    figure = rate(port, token)
    time.sleep(0.3)  # let the last batch arrive
    proc.stdin.write("done\n")
    proc.stdin.flush()
    seen = int(proc.stdout.readline())
    proc.kill()
    proc.wait()
    return figure, seen


def post_once(port: int, token: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("POST", "/v1/events/before_tool_call", body=BODY,
                 headers={"Authorization": f"Bearer {token}",
                          "Content-Type": "application/json"})
    conn.getresponse().read()
    conn.close()


def fill(port: int, token: str, n: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for _ in range(n):
        conn.request("POST", "/v1/events/before_tool_call", body=BODY, headers=headers)
        conn.getresponse().read()
    conn.close()


def page_ms(port: int, cookie: str) -> float:
    times = []
    for _ in range(20):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        t0 = time.perf_counter()
        conn.request("GET", "/ui/api/decisions?limit=200", headers={"Cookie": cookie})
        body = conn.getresponse().read()
        times.append((time.perf_counter() - t0) * 1e3)
        conn.close()
        assert len(json.loads(body)["rows"]) == 200
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.Popen([sys.executable, "-c", SERVER, tmp], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout is not None
            port_s, token, viewer_token = proc.stdout.readline().split()
            port = int(port_s)
            cookie = login(port, viewer_token)
            rate(port, token)  # warm up
            ratios: list[float] = []
            bare: list[float] = []
            watched: list[float] = []
            delivered = []
            for _ in range(ROUNDS):
                r0 = rate(port, token)
                r20, got = with_viewers(port, token, cookie)
                bare.append(r0)
                watched.append(r20)
                delivered.append(got)
                ratios.append(r20 / r0)
            fill(port, token, 10_000)  # the feed keeps the newest 10,000
            page = page_ms(port, cookie)
        finally:
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(30)
    med = statistics.median(ratios)
    print(f"evaluations/s, 0 viewers:  {statistics.median(bare):8.0f} (median of {ROUNDS})")
    print(f"evaluations/s, {VIEWERS} viewers: {statistics.median(watched):8.0f}")
    print(f"ratio with/without viewers: median {med:.2f}, "
          f"spread {min(ratios):.2f}-{max(ratios):.2f}")
    print(f"every viewer received >= {min(delivered)} events per round")
    print(f"newest 200 of 10,000 decisions: {page:.1f} ms (median of 20)")
    report({"bench": "console", "evals_per_s_0_viewers": round(statistics.median(bare)),
            "evals_per_s_20_viewers": round(statistics.median(watched)),
            "ratio_20_to_0": round(med, 3), "ratio_min": round(min(ratios), 3),
            "ratio_max": round(max(ratios), 3), "page_200_of_10000_ms": round(page, 2)})


if __name__ == "__main__":
    main()
