"""The local stack's shared metastore: PostgreSQL from Debian on loopback, for Spark's Hive client.

Password authentication (SCRAM) even on loopback; the password is generated once into the state
folder (0600) and handed to clients as ``GAMELAKE_METASTORE_PASSWORD``, never printed. PostgreSQL
refuses to run as root, so as root the server runs as the ``postgres`` user of Debian's package.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gamelake_dev.localstack.process import Server
from ingest.core.errors import StackError
from ingest.core.spark.metastore import PASSWORD_VARIABLE, URL_VARIABLE, USER_VARIABLE

USER = "gamelake"
DATABASE = "metastore"


@dataclass(frozen=True)
class LocalMetastore:
    port: int
    state_dir: Path
    database: str = DATABASE

    @property
    def url(self) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{self.database}"

    def psql(self, sql: str) -> list[str]:
        """Run ``sql`` in this database as USER; the result's values, one per row and column."""
        done = subprocess.run(
            [_bin("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, "-d", self.database,
             "-At", "-F", "\n", "-c", sql],
            env={**os.environ, "PGPASSWORD": self.password()},
            capture_output=True,
            text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise StackError(f"metastore: psql failed: {done.stderr.strip()}")
        return done.stdout.split("\n") if done.stdout.strip() else []

    def with_new_database(self, name: str) -> LocalMetastore:
        """A database of its own on this server, for a lakehouse (or a test) that shares nothing."""
        self.psql(f"CREATE DATABASE {name}")
        return LocalMetastore(self.port, self.state_dir, name)

    @property
    def password_file(self) -> Path:
        return self.state_dir / "password"

    def client_environment(self) -> dict[str, str]:
        """The variables that point Spark here, the password among them: not for printing."""
        return {URL_VARIABLE: self.url, USER_VARIABLE: USER, PASSWORD_VARIABLE: self.password()}

    def password(self) -> str:
        if not self.password_file.is_file():
            self.state_dir.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.password_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_urlsafe(24))
        return self.password_file.read_text().strip()


def _bin(tool: str) -> str:
    found = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{tool}"), key=lambda p: int(p.parts[-3]))
    if not found:
        raise StackError("PostgreSQL is not installed: run stack/ensure-postgresql.sh (the shared metastore)")
    return str(found[-1])


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def _initialise(where: LocalMetastore) -> Path:
    """The data folder, made once: a cluster owned by USER with its password, and the database."""
    data = where.state_dir / "data"
    if (data / "PG_VERSION").is_file():
        return data
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    password = where.state_dir / "initial-password"
    password.write_text(where.password())
    if os.geteuid() == 0:
        shutil.chown(data, "postgres")
        shutil.chown(password, "postgres")
    password.chmod(0o600)
    for command in (
        [_bin("initdb"), "-D", str(data), "-U", USER, "--auth=scram-sha-256", f"--pwfile={password}"],
        [_bin("postgres"), "--single", "-D", str(data), "postgres"],
    ):
        done = subprocess.run(
            _as_server_user(command),
            input=f"CREATE DATABASE {DATABASE};\n" if "--single" in command else None,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            shutil.rmtree(data, ignore_errors=True)
            password.unlink()
            raise StackError(f"metastore: {command[0]} failed:\n{done.stderr.strip()[-1500:]}")
    password.unlink()
    return data


def metastore_server(state_dir: Path, port: int) -> Server:
    where = LocalMetastore(port, state_dir)
    data = _initialise(where)
    command = [
        _bin("postgres"), "-D", str(data), "-p", str(port),
        "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={data}",
    ]  # fmt: skip
    return Server(
        name="metastore",
        command=_as_server_user(command),
        ports={"METASTORE_PORT": port},
        state_dir=state_dir,
        healthy=lambda: answers(where),
    )


def answers(where: LocalMetastore) -> bool:
    ready = subprocess.run(
        [_bin("pg_isready"), "-h", "127.0.0.1", "-p", str(where.port), "-d", DATABASE, "-U", USER, "-q"],
        capture_output=True,
    )
    return ready.returncode == 0
