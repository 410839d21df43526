"""A real PostgreSQL server for tests and benches: ``initdb`` + ``pg_ctl`` in a temporary directory,
listening on a free loopback port, trust authentication for the superuser ``fastagent``.

The binaries come from the distribution's ``postgresql`` package (Debian keeps them in
``/usr/lib/postgresql/<version>/bin``, off ``PATH``). ``initdb`` refuses to run as root, so a root
process runs the server as the package's ``postgres`` user.

::

    server = PgServer.start()            # ~1-2 s
    url = server.create_database()       # postgresql://fastagent@127.0.0.1:<port>/<fresh name>
    ...
    server.stop()
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PgServer", "find_pg_bin", "pg_missing_reason"]

SUPERUSER = "fastagent"
_FAST = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def find_pg_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl`` (newest version first), or ``None``."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]), reverse=True
    )
    return Path(candidates[0]).parent if candidates else None


def pg_missing_reason() -> str | None:
    if find_pg_bin() is None:
        return (
            "PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): "
            "apt-get install postgresql"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PgServer:
    bin: Path
    root: Path
    port: int
    user: str | None

    @classmethod
    def start(cls, *, durable: bool = False, max_connections: int = 300) -> PgServer:
        """Create and start a server; ``durable`` keeps PostgreSQL's default fsync settings (for
        benches); tests run without them."""
        problem = pg_missing_reason()
        if problem is not None:
            raise RuntimeError(problem)
        bin_dir = find_pg_bin()
        assert bin_dir is not None
        user = "postgres" if os.geteuid() == 0 else None
        root = Path(tempfile.mkdtemp(prefix="fastagent-pg-"))
        if user is not None:
            shutil.chown(root, user)
        data = root / "data"
        subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", SUPERUSER, "-E", "UTF8"]
            + ["--no-sync", "--no-instructions", "--locale", "C"],
            check=True,
            capture_output=True,
            user=user,
            timeout=120,
        )
        settings = {
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": "",
            "max_connections": str(max_connections),
            "shared_buffers": "32MB",
            "log_min_messages": "warning",
            **({} if durable else _FAST),
        }
        last_error = ""
        for _ in range(5):
            port = _free_port()
            options = " ".join(f"-c {k}={v!r}" if v == "" else f"-c {k}={v}" for k, v in settings.items())
            started = subprocess.run(
                [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"), "-w", "-t", "60"]
                + ["-o", f"-p {port} {options}", "start"],
                capture_output=True,
                text=True,
                user=user,
                timeout=90,
            )
            if started.returncode == 0:
                return cls(bin_dir, root, port, user)
            last_error = started.stderr + _tail(root / "server.log")
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"PostgreSQL did not start: {last_error}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def psql(self, sql: str, database: str = "postgres") -> str:
        psql = self.bin / "psql"
        command = str(psql) if psql.exists() else "psql"
        done = subprocess.run(
            [command, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", self.url(database), "-c", sql],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return done.stdout.strip()

    def create_database(self) -> str:
        name = f"fa_{uuid.uuid4().hex[:12]}"
        self.psql(f"CREATE DATABASE {name}")
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        with contextlib.suppress(subprocess.SubprocessError):
            self.psql(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            subprocess.run(
                [str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop"],
                capture_output=True,
                user=self.user,
                timeout=60,
            )
        shutil.rmtree(self.root, ignore_errors=True)

    def log(self) -> str:
        return _tail(self.root / "server.log")


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def wait_until_down(server: PgServer, within: float = 30) -> None:
    """Block until the server stops answering (after an immediate stop)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", server.port)) != 0:
                return
        time.sleep(0.05)
