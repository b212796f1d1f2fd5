"""The local stack: real servers start, answer, stop, and fail with clear messages."""

from __future__ import annotations

import socket

import pytest
import requests
from confluent_kafka.admin import AdminClient
from gamelake_dev.localstack import process
from gamelake_dev.localstack.apicurio import confluent_url, registry
from gamelake_dev.localstack.kafka import broker
from gamelake_dev.localstack.object_store import answers, client, local_s3, s3_server
from gamelake_dev.localstack.stack import StackPorts, describe, up

from ingest.core.errors import StackError
from tests.integration.ingest_support import free_port

pytestmark = pytest.mark.integration


def test_private_stack_starts_on_other_ports_and_stops_leaving_nothing(tmp_path):
    kafka_port, controller_port, registry_port = free_port(), free_port(), free_port()
    servers = [
        broker(tmp_path / "kafka", kafka_port, controller_port),
        registry(tmp_path / "registry", registry_port, free_port()),
    ]
    try:
        for server in servers:
            assert process.start(server) is True
            assert process.start(server) is False, "a second start finds it running"
        topics = AdminClient({"bootstrap.servers": f"127.0.0.1:{kafka_port}"}).list_topics(timeout=10)
        assert topics.brokers
        assert requests.get(f"{confluent_url(registry_port)}/subjects", timeout=10).json() == []
    finally:
        pids = [server.pid() for server in servers]
        for server in servers:
            process.stop(server)
    assert all(pid is not None for pid in pids)
    assert all(not process._alive(pid) for pid in pids)
    assert all(server.pid() is None for server in servers)
    assert all(process.port_is_free(port) for port in (kafka_port, controller_port, registry_port))
    assert process.stop(servers[0]) is False, "stopping twice is fine"


def test_up_is_idempotent_on_a_running_stack(stack, capsys, monkeypatch):
    port = stack.bootstrap_servers.rsplit(":", 1)[1]
    monkeypatch.setenv("KAFKA_PORT", port)
    monkeypatch.setenv("SCHEMA_REGISTRY_PORT", stack.registry_url.split(":")[2].split("/")[0])
    ports = StackPorts.from_env()
    up(ports)
    out = capsys.readouterr().out
    assert "kafka: already running" in out and "schema-registry: already running" in out
    assert "s3: already running" in out
    assert describe(ports) is True


def test_private_s3_server_serves_its_bucket_keeps_its_secret_and_stops_leaving_nothing(tmp_path):
    port = free_port()
    server = s3_server(tmp_path / "s3", port)
    where = local_s3(tmp_path / "s3", port)
    try:
        assert process.start(server) is True
        s3 = client(where)
        s3.put_object(Bucket=where.bucket, Key="probe/hello.txt", Body=b"hello")
        assert s3.get_object(Bucket=where.bucket, Key="probe/hello.txt")["Body"].read() == b"hello"
        assert (tmp_path / "s3" / "data" / where.bucket / "probe" / "hello.txt").read_bytes() == b"hello"
        secret = where.credentials().secret_access_key
        assert secret not in " ".join(server.command), "the secret stays off the command line"
        assert secret not in server.log_file.read_text()
        assert secret not in repr(where.credentials())
        for private in (where.credentials_file, where.config_file, tmp_path / "s3" / "s3proxy.conf"):
            assert private.stat().st_mode & 0o077 == 0, f"{private} is readable by others"
    finally:
        pid = server.pid()
        process.stop(server)
    assert pid is not None and not process._alive(pid)
    assert process.port_is_free(port)
    assert answers(where) is False


def test_s3_server_refuses_a_request_signed_with_the_wrong_secret(local_s3, tmp_path):
    import botocore.exceptions
    from gamelake_dev.localstack.object_store import LocalS3

    wrong = tmp_path / "credentials"
    key = local_s3.credentials().access_key_id
    wrong.write_text(f"[gamelake-local]\naws_access_key_id = {key}\naws_secret_access_key = not-the-secret\n")
    impostor = client(LocalS3(local_s3.endpoint_url, wrong, local_s3.config_file))
    with pytest.raises(botocore.exceptions.ClientError, match=r"SignatureDoesNotMatch|AccessDenied"):
        impostor.list_objects_v2(Bucket=local_s3.bucket)


def test_busy_port_is_named_before_anything_starts(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        with pytest.raises(StackError, match=f"port {port} is busy"):
            process.start(registry(tmp_path, port, free_port()))
    assert not (tmp_path / "schema-registry.pid").exists()


def test_server_that_dies_at_startup_names_its_log(tmp_path):
    server = process.Server("doomed", ["sh", "-c", "echo boom; exit 3"], {}, tmp_path, healthy=lambda: False)
    with pytest.raises(StackError, match="exited with code 3") as err:
        process.start(server)
    assert str(server.log_file) in str(err.value)
    assert "boom" in server.log_file.read_text()


def test_server_that_never_gets_healthy_is_stopped_after_the_bound(tmp_path):
    server = process.Server(
        "sleepy", ["sleep", "60"], {}, tmp_path, healthy=lambda: False, startup_timeout_s=1.5
    )
    with pytest.raises(StackError, match=r"did not become healthy within 2s: see .*sleepy\.log"):
        process.start(server)
    assert server.pid() is None
