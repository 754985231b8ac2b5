"""A soak of `interlock serve` with faults injected, checked answer by answer.

Concurrent clients post before_tool_call events, each with a unique session id
and a known right answer, to a real `interlock serve` (strict audit unless
``--audit fast``) over loopback TCP, while faults are injected:

- a fail-closed command hook that crashes (``crashtool``): must block;
- a fail-open command hook that hangs past its timeout (``hangtool``): must
  not block;
- a worker hook (``workertool``), whose process is killed with SIGKILL;
- a store outage (every write fails for a while; on PostgreSQL with
  ``--pg-ctl``, the database killed and restarted): strict audit answers 503
  then, never an unrecorded decision;
- `interlock serve` killed with SIGKILL and started again.

Afterwards every answer is checked: a call that must be blocked and was not,
or a harmless call blocked for anything but a failing fail-closed hook, is a
wrong answer (there must be none). Every answered decision must be in the
audit log. The run reports evaluations/s, latency p50/p99/max, the worst
one-second stalls, the server's event-loop lag since its restart, wrong
answers and records expected vs stored.

Run: ``python bench/soak.py --seconds 60 --clients 16``. ``--store URL`` runs it on
PostgreSQL; add ``--pg-ctl CMD`` and the store outage is a PostgreSQL kill
(``pg_ctl stop -m immediate``) and restart.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import report

GUARD = textwrap.dedent("""\
    from interlock import block

    def handle(event):
        if "rm " in event.args.get("command", ""):
            return block("no deleting")
        return None
    """)
CRASH = "#!/bin/sh\ncat > /dev/null\necho 'policy server down' >&2\nexit 3\n"
HANG = "#!/bin/sh\ncat > /dev/null\nexec sleep 30\n"
WORKER = textwrap.dedent("""\
    import json, sys
    for line in sys.stdin:
        req = json.loads(line)
        args = req["payload"].get("args", {})
        out = {"id": req["id"]}
        if args.get("deny"):
            out.update(decision="block", reason="denied by the worker")
        sys.stdout.write(json.dumps(out) + "\\n")
        sys.stdout.flush()
    """)
CONFIG = textwrap.dedent("""\
    [[hooks]]
    name = "guard"
    events = ["before_tool_call"]
    handler = "guard.py"
    on_error = "closed"

    [[hooks]]
    name = "crasher"
    events = ["before_tool_call"]
    matcher = "crashtool"
    command = "./crash.sh"
    on_error = "closed"
    timeout = 5

    [[hooks]]
    name = "hanger"
    events = ["before_tool_call"]
    matcher = "hangtool"
    command = "./hang.sh"
    on_error = "open"
    timeout = 0.5
    breaker_threshold = 0

    [[hooks]]
    name = "gatekeeper"
    events = ["before_tool_call"]
    matcher = "workertool"
    kind = "worker"
    command = ["{python}", "{worker}"]
    on_error = "closed"
    timeout = 5
    """)
BREAK = ("CREATE TRIGGER soak_outage BEFORE INSERT ON interlock_audit "
         "BEGIN SELECT RAISE(ABORT, 'soak: injected store outage'); END")
MEND = "DROP TRIGGER IF EXISTS soak_outage"


def _call(rng: random.Random) -> tuple[dict[str, Any], bool]:
    """(the event's fields, whether it must be blocked)."""
    roll = rng.random()
    if roll < 0.15:
        return {"tool_name": "terminal", "args": {"command": "rm -rf build"}}, True
    if roll < 0.20:
        return {"tool_name": "crashtool", "args": {}}, True
    if roll < 0.23:
        return {"tool_name": "workertool", "args": {"deny": True}}, True
    if roll < 0.26:
        return {"tool_name": "workertool", "args": {}}, False
    if roll < 0.265:
        return {"tool_name": "hangtool", "args": {}}, False
    return {"tool_name": "terminal", "args": {"command": "ls -la"}}, False


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    """Of every answer except hangtool's (which wait out the hang's timeout)."""
    answered: dict[str, str] = field(default_factory=dict)
    """session id -> decision, for every 200 answer."""
    wrong: list[str] = field(default_factory=list)
    failure_blocks: int = 0
    """Harmless calls blocked because a fail-closed hook failed (right, but counted)."""
    failure_reasons: dict[str, int] = field(default_factory=dict)
    refused_unaudited: int = 0
    """503s of strict audit while the store could not write."""
    errors: int = 0
    """Connection errors (serve killed, restarting)."""
    by_second: dict[int, float] = field(default_factory=dict)
    """Max latency per second of the run."""
    lock: threading.Lock = field(default_factory=threading.Lock)


class Soak:
    def __init__(self, work: Path, *, store: str | None = None, audit: str = "strict") -> None:
        self.work = work
        self.project = work / "project"
        (self.project / ".interlock").mkdir(parents=True, exist_ok=True)
        files = {"guard.py": GUARD, "crash.sh": CRASH, "hang.sh": HANG, "worker.py": WORKER,
                 "config.toml": CONFIG.format(
                     python=sys.executable, worker=self.project / ".interlock" / "worker.py")}
        for name, text in files.items():
            path = self.project / ".interlock" / name
            path.write_text(text)
            path.chmod(0o755)
        self.store = store or str(work / "state" / "interlock.db")
        self.audit = audit
        self.env = {k: v for k, v in os.environ.items()
                    if k not in ("INTERLOCK_STORE", "INTERLOCK_STATE_DIR", "INTERLOCK_AUDIT")}
        self.env.update({"INTERLOCK_HOME": str(work / "home"),
                         "INTERLOCK_MANAGED": str(work / "managed"),
                         "INTERLOCK_ACCEPT_HOOKS": "1", "INTERLOCK_STORE": self.store,
                         "INTERLOCK_SOCKET": str(Path(tempfile.mkdtemp(prefix="il-soak-",
                                                                       dir="/tmp")) / "s")})
        made = subprocess.run([sys.executable, "-m", "interlock", "serve", "token", "create",
                               "soak"], env=self.env, capture_output=True, text=True,
                              check=True)
        self.token = made.stdout.strip()
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0
        self.restarts = 0
        self.log: list[str] = []

    # -- the server ---------------------------------------------------------------
    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "interlock", "serve", "--project", str(self.project),
             "--port", str(self.port), "--audit", self.audit],
            env=self.env, stderr=subprocess.PIPE, text=True)
        assert self.proc.stderr is not None
        while True:
            line = self.proc.stderr.readline()
            if not line:
                raise RuntimeError("serve exited:\n" + "".join(self.log[-30:]))
            self.log.append(line)
            if "listening on http://127.0.0.1:" in line:
                self.port = int(line.split("http://127.0.0.1:")[1].split()[0].rstrip(",/"))
                break
        threading.Thread(target=self._drain, args=(self.proc,), daemon=True).start()

    def _drain(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        with proc.stderr:
            for line in proc.stderr:
                self.log.append(line)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(60)

    def abort(self) -> None:
        """Stop serve and its worker after a failed run: none is left behind."""
        if self.proc is None or self.proc.poll() is not None:
            return
        for pid in self._worker_pids():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(30)

    def worker_pids(self, wait: float = 10.0) -> list[int]:
        """Our worker hook's processes (children of our serve, running worker.py),
        waiting up to ``wait`` seconds for one; a call of its own starts it if the
        clients have not yet."""
        deadline = time.monotonic() + wait
        poked = False
        while not (found := self._worker_pids()) and time.monotonic() < deadline:
            if not poked:
                poked = True
                threading.Thread(target=self._poke, daemon=True).start()
            time.sleep(0.05)
        return found

    def _poke(self) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("POST", "/v1/events/before_tool_call",
                         json.dumps({"tool_name": "workertool", "args": {},
                                     "session_id": "soak-poke"}),
                         {"Authorization": f"Bearer {self.token}",
                          "Content-Type": "application/json"})
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()

    def loop_lag(self) -> dict[str, Any]:
        """The server's own event-loop lag since its last start (docs/reliability.md,
        Stalls): a stall as long as the loop lag was the loop being held; a stall
        with little loop lag was the process waiting for the CPU or the disk."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            conn.request("GET", "/v1/status", headers={"Authorization": f"Bearer {self.token}"})
            status = json.loads(conn.getresponse().read())
            return dict(status.get("event_loop_lag", {}))
        except (OSError, http.client.HTTPException, ValueError):
            return {}
        finally:
            conn.close()

    def _worker_pids(self) -> list[int]:
        assert self.proc is not None
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            if ppid == self.proc.pid and b"worker.py" in cmd:
                out.append(int(entry))
        return out

    def outage(self, seconds: float, pg_ctl: str | None = None) -> bool:
        if "://" in self.store and not self.store.startswith("sqlite://"):
            if pg_ctl is None:
                return False
            # PostgreSQL killed (immediate shutdown: no checkpoint, connections cut)
            # and started again after ``seconds``.
            subprocess.run(pg_ctl.format(action="stop -m immediate"), shell=True, check=True,
                           capture_output=True)
            time.sleep(seconds)
            subprocess.run(pg_ctl.format(action="start"), shell=True, check=True,
                           capture_output=True)
            return True
        conn = sqlite3.connect(self.store, timeout=30, isolation_level=None)
        try:
            conn.execute(BREAK)
            time.sleep(seconds)
        finally:
            conn.execute(MEND)
            conn.close()
        return True

    # -- the clients ----------------------------------------------------------------
    def client(self, n: int, until: float, tally: Tally, t0: float) -> None:
        rng = random.Random(n)
        conn: http.client.HTTPConnection | None = None
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        i = 0
        while time.monotonic() < until:
            body, must_block = _call(rng)
            session = f"c{n}-{i}"
            i += 1
            body["session_id"] = session
            started = time.monotonic()
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                conn.request("POST", "/v1/events/before_tool_call", json.dumps(body), headers)
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None
                with tally.lock:
                    tally.errors += 1
                time.sleep(0.05)  # serve is restarting
                continue
            took = time.monotonic() - started
            if resp.status == 503:
                with tally.lock:
                    tally.refused_unaudited += 1
                continue
            if resp.status != 200:
                with tally.lock:
                    tally.wrong.append(f"{session}: HTTP {resp.status} {data[:200]!r}")
                continue
            out = json.loads(data)
            blocked = out["decision"] == "block"
            by_failure = blocked and str(out.get("reason", "")).startswith(
                "blocked by the engine")
            with tally.lock:
                if body["tool_name"] != "hangtool":  # those wait out their hook's timeout
                    tally.latencies.append(took)
                    second = int(started - t0)
                    tally.by_second[second] = max(tally.by_second.get(second, 0.0), took)
                tally.answered[session] = out["decision"]
                if must_block and not blocked:
                    tally.wrong.append(f"{session}: {body} was allowed")
                elif not must_block and blocked and not by_failure:
                    tally.wrong.append(f"{session}: {body} was blocked: {out.get('reason')}")
                elif not must_block and by_failure:
                    tally.failure_blocks += 1
                    why = f"{body['tool_name']}: {out.get('reason')}"
                    tally.failure_reasons[why] = tally.failure_reasons.get(why, 0) + 1
        if conn is not None:
            conn.close()

    def audited(self) -> set[str]:
        if "://" in self.store and not self.store.startswith("sqlite://"):
            import psycopg

            with psycopg.connect(self.store) as conn:
                rows = conn.execute("SELECT DISTINCT session_id FROM interlock_audit").fetchall()
        else:
            conn = sqlite3.connect(self.store)
            rows = conn.execute("SELECT DISTINCT session_id FROM interlock_audit").fetchall()
            conn.close()
        return {str(r[0]) for r in rows}


def run(work: Path, *, seconds: float = 30.0, clients: int = 8, faults: bool = True,
        store: str | None = None, audit: str = "strict", quiet: bool = False,
        pg_ctl: str | None = None) -> dict[str, Any]:
    """One soak; returns its figures (``wrong`` and ``missing_from_audit`` must be 0)."""
    soak = Soak(work, store=store, audit=audit)
    try:
        return _run(soak, seconds=seconds, clients=clients, faults=faults, quiet=quiet,
                    pg_ctl=pg_ctl)
    except BaseException:
        soak.abort()
        raise


def _run(soak: Soak, *, seconds: float, clients: int, faults: bool, quiet: bool,
         pg_ctl: str | None) -> dict[str, Any]:
    soak.start()
    tally = Tally()
    t0 = time.monotonic()
    until = t0 + seconds
    threads = [threading.Thread(target=soak.client, args=(n, until, tally, t0), daemon=True)
               for n in range(clients)]
    for t in threads:
        t.start()
    injected: list[str] = []

    def at(fraction: float) -> None:
        wait = t0 + seconds * fraction - time.monotonic()
        if wait > 0:
            time.sleep(wait)

    def say(what: str) -> None:
        injected.append(f"{time.monotonic() - t0:6.1f}s {what}")
        if not quiet:
            print("  fault:", injected[-1], flush=True)

    if faults:
        at(0.15)
        pids = soak.worker_pids()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        say(f"worker killed ({len(pids)} process)")
        at(0.35)
        say("store outage begins")
        if soak.outage(min(2.0, seconds * 0.1), pg_ctl):
            say("store outage ends")
        at(0.6)
        soak.kill()
        say("serve SIGKILLed")
        soak.restarts += 1
        soak.start()
        say("serve restarted")
        at(0.8)
        pids = soak.worker_pids()
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        say(f"worker killed ({len(pids)} process)")
    for t in threads:
        t.join(seconds + 60)
    elapsed = time.monotonic() - t0
    lag = soak.loop_lag()
    code = soak.stop()
    audited = soak.audited()
    missing = sorted(set(tally.answered) - audited)
    lat = sorted(tally.latencies)

    def pct(q: float) -> float:
        return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 2) if lat else 0.0

    stalls = sorted(tally.by_second.items(), key=lambda kv: -kv[1])[:5]
    return {
        "seconds": round(elapsed, 1), "clients": clients, "audit": soak.audit,
        "answered": len(tally.answered), "eval_per_s": round(len(tally.answered) / elapsed),
        "p50_ms": pct(0.5), "p99_ms": pct(0.99), "max_ms": pct(1.0),
        "wrong": len(tally.wrong), "wrong_examples": tally.wrong[:5],
        "failure_blocks": tally.failure_blocks, "failure_reasons": tally.failure_reasons,
        "refused_unaudited_503": tally.refused_unaudited,
        "connection_errors": tally.errors,
        "records_expected": len(tally.answered),
        "records_stored": len(tally.answered) - len(missing),
        "missing_from_audit": len(missing), "missing_examples": missing[:5],
        "worst_seconds": [{"at_s": s, "max_ms": round(v * 1000, 1)} for s, v in stalls],
        "event_loop_lag_max_ms": round(lag.get("max_s", 0.0) * 1000, 1),
        "faults": injected, "serve_exit": code,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--store", default=None, help="a postgresql:// URL (default: SQLite)")
    parser.add_argument("--audit", choices=("strict", "fast"), default="strict")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--pg-ctl", default=None, metavar="CMD",
                        help="with a postgresql:// --store: a shell command with {action} "
                             "that runs pg_ctl on that server, e.g. \"su postgres -c "
                             "'pg_ctl -D DIR -l LOG -w {action}'\"; the store outage "
                             "then kills PostgreSQL and starts it again")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="il-soak-"))
    figures = run(work, seconds=args.seconds, clients=args.clients, faults=not args.no_faults,
                  store=args.store, audit=args.audit, pg_ctl=args.pg_ctl)
    for key in ("answered", "eval_per_s", "p50_ms", "p99_ms", "max_ms", "wrong",
                "records_expected", "records_stored", "refused_unaudited_503",
                "event_loop_lag_max_ms"):
        print(f"{key:<24} {figures[key]}")
    report(figures)
    if figures["wrong"] or figures["missing_from_audit"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
