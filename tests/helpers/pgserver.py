"""A private PostgreSQL server for tests that must stop and restart it.

Debian's ``initdb`` and ``pg_ctl`` (the ``postgresql`` package `.ci/run`
installs) on a free loopback port in a temporary folder; run as the
``postgres`` user when the tests run as root (PostgreSQL refuses root).
``PgServer.find()`` is None when the binaries are not there.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer:
    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.dir = Path(tempfile.mkdtemp(prefix="il-pg-", dir="/tmp"))
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            shutil.chown(self.dir, "postgres")
        self._run("initdb", "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres")

    @classmethod
    def find(cls) -> Path | None:
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        return Path(found[-1]).parent if found else None

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, tool: str, *args: str) -> None:
        argv = [str(self.bindir / tool), *args]
        if self.as_postgres:
            argv = ["su", "postgres", "-c", subprocess.list2cmdline(argv)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stdout}{done.stderr}")

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-l", str(self.dir / "log"), "-w",
                  "-o", f"-k {self.dir} -c listen_addresses=127.0.0.1 -p {self.port} "
                        "-c fsync=off", "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", mode, "-w", "stop")

    def close(self) -> None:
        try:
            self.stop("immediate")
        except RuntimeError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
