"""S3Proxy: a real S3-compatible server on loopback, keeping its objects in a folder of .stack/.

Chosen over s3s-fs and SeaweedFS because it is one jar from Maven Central, started like Kafka and
the registry, and because it honours conditional writes: a PUT with ``If-None-Match: *`` on a
key that exists fails with 412, and of racing ones exactly one wins
(``tests/integration/test_object_store.py``). Delta commits on S3 rest on that: each version of
a table's log is created once.

Its access key and secret are made on first use and kept in an AWS shared-credentials file only
the owner reads, beside a config file with the profile's region, so clients find them the
standard way (``AWS_SHARED_CREDENTIALS_FILE``, ``AWS_CONFIG_FILE`` and ``AWS_PROFILE``) and no
secret shows on a command line or in a log.
"""

from __future__ import annotations

import configparser
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gamelake_dev.localstack.artifacts import S3PROXY_JAR
from gamelake_dev.localstack.bind import bind_host
from gamelake_dev.localstack.java import java_for
from gamelake_dev.localstack.process import Server

S3_HEAP = "-Xms64m -Xmx256m"
BUCKET = "gamelake"
PROFILE = "gamelake-local"
REGION = "us-east-1"


@dataclass(frozen=True)
class S3Credentials:
    access_key_id: str
    secret_access_key: str = field(repr=False)


@dataclass(frozen=True)
class LocalS3:
    """Where the local S3 server answers and how a client signs in to it."""

    endpoint_url: str
    credentials_file: Path
    config_file: Path
    bucket: str = BUCKET

    def credentials(self) -> S3Credentials:
        return read_credentials(self.credentials_file)

    def client_environment(self) -> dict[str, str]:
        """The standard AWS variables that point a client (boto3, delta-rs, S3A) here."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint_url,
            "AWS_SHARED_CREDENTIALS_FILE": str(self.credentials_file),
            "AWS_CONFIG_FILE": str(self.config_file),
            "AWS_PROFILE": PROFILE,
            "AWS_REGION": REGION,
        }


def local_s3(state_dir: Path, port: int) -> LocalS3:
    return LocalS3(f"http://{bind_host()}:{port}", state_dir / "credentials", state_dir / "config")


def ensure_credentials(where: LocalS3) -> S3Credentials:
    """The server's key pair, made once and kept as profile ``gamelake-local`` (mode 0600)."""
    if not where.config_file.is_file():
        config = configparser.ConfigParser()
        config[f"profile {PROFILE}"] = {"region": REGION}
        _write_private(where.config_file, config)
    path = where.credentials_file
    if path.is_file():
        return read_credentials(path)
    made = S3Credentials(f"gamelake-{secrets.token_hex(4)}", secrets.token_urlsafe(30))
    profile = configparser.ConfigParser()
    profile[PROFILE] = {
        "aws_access_key_id": made.access_key_id,
        "aws_secret_access_key": made.secret_access_key,
    }
    _write_private(path, profile)
    return made


def read_credentials(path: Path) -> S3Credentials:
    profile = configparser.ConfigParser()
    profile.read(path)
    section = profile[PROFILE]
    return S3Credentials(section["aws_access_key_id"], section["aws_secret_access_key"])


def _write_private(path: Path, content: configparser.ConfigParser) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        content.write(handle)


def _properties(endpoint_url: str, credentials: S3Credentials, data_dir: Path) -> dict[str, str]:
    return {
        "s3proxy.endpoint": endpoint_url,
        "s3proxy.authorization": "aws-v2-or-v4",
        "s3proxy.identity": credentials.access_key_id,
        "s3proxy.credential": credentials.secret_access_key,
        # nio2: objects are plain files of data_dir; a bucket is one of its folders.
        "jclouds.provider": "filesystem-nio2",
        "jclouds.filesystem.basedir": str(data_dir),
    }


def s3_server(state_dir: Path, port: int) -> Server:
    """S3Proxy on ``port`` with bucket ``gamelake``; its settings file holds the secret (0600)."""
    java = java_for("S3Proxy", minimum=17)
    where = local_s3(state_dir, port)
    data_dir = state_dir / "data"
    (data_dir / BUCKET).mkdir(parents=True, exist_ok=True)
    config = state_dir / "s3proxy.conf"
    _write_properties(config, _properties(where.endpoint_url, ensure_credentials(where), data_dir))
    command = [
        java,
        *S3_HEAP.split(),
        "-XX:+UseSerialGC",
        "-jar",
        str(S3PROXY_JAR),
        "--properties",
        str(config),
    ]
    return Server(
        name="s3",
        command=command,
        ports={"S3_PORT": port},
        state_dir=state_dir,
        healthy=lambda: answers(where),
    )


def _write_properties(path: Path, values: dict[str, str]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.writelines(f"{key}={value}\n" for key, value in values.items())


def answers(where: LocalS3) -> bool:
    """True when a signed request for the bucket succeeds."""
    import botocore.exceptions

    try:
        client(where, timeout_s=2).head_bucket(Bucket=where.bucket)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError):
        return False
    return True


def client(where: LocalS3, timeout_s: float = 10) -> Any:
    """A boto3 S3 client signed with the server's own credentials."""
    import boto3
    from botocore.config import Config

    keys = where.credentials()
    return boto3.session.Session(botocore_session=_session_without_profile()).client(
        "s3",
        endpoint_url=where.endpoint_url,
        aws_access_key_id=keys.access_key_id,
        aws_secret_access_key=keys.secret_access_key,
        region_name=REGION,
        config=Config(
            connect_timeout=timeout_s,
            read_timeout=timeout_s,
            retries={"max_attempts": 1},
            s3={"addressing_style": "path"},
        ),
    )


def _session_without_profile() -> Any:
    """A botocore session that ignores AWS_PROFILE: the client is given its keys directly."""
    import botocore.session

    session = botocore.session.Session()
    session.set_config_variable("profile", None)
    return session
