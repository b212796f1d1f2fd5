"""Schema Registry lookups: schema id -> protobuf message descriptor, once per id.

The registry (Confluent API, or Apicurio's ccompat API) returns a protobuf schema either as
base64 of a serialized ``FileDescriptorProto`` or as ``.proto`` text, plus its references
(imports) by subject and version. Both forms are accepted; text is compiled once with protoc.
Each schema id gets a descriptor pool of its own, so two versions of the same file never clash.

Failure classes differ on purpose:

* the registry answers "no such id" (40403): ``UnknownSchemaId``; the caller retries a
  bounded number of times, then dead-letters the message;
* the registry cannot be reached or fails (connection error, 5xx): ``RegistryUnavailable``;
  the caller drops the uncommitted batch and tries again later, never dead-lettering good data;
* the registry refuses us (401/403): ``ConfigError``; the service stops with that message;
* the schema comes back but cannot be built (an import nobody registered, a malformed
  descriptor): ``SchemaBuildError``, remembered per id; its messages become dead letters.

Well-known imports (``google/protobuf/timestamp.proto`` ...) that a producer registered without
a reference (confluent-kafka's default ``skip.known.types``) come from the protobuf runtime's
own descriptors.
"""

from __future__ import annotations

import base64
import binascii
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
from google.protobuf import descriptor, descriptor_pb2, descriptor_pool

from ingest.core.errors import ConfigError, IngestError, SchemaBuildError
from ingest.core.settings.ingest_settings import IngestSettings


class UnknownSchemaId(IngestError):
    """The registry answered, and it does not know this id."""


class RegistryUnavailable(IngestError):
    """The registry could not be reached or failed; nothing about the id is known."""


@dataclass(frozen=True)
class RegistrySchema:
    schema_id: int
    file: descriptor_pb2.FileDescriptorProto
    pool: descriptor_pool.DescriptorPool

    def message(self, indexes: tuple[int, ...]) -> descriptor.Descriptor:
        """The message type at ``indexes`` (the wire format's path into the file's messages)."""
        if not indexes:
            raise IndexError("empty message-index path")
        types = self.file.message_type
        name = self.file.package
        for depth, index in enumerate(indexes):
            if index >= len(types):
                raise IndexError(f"message index {index} at depth {depth} is out of range")
            proto = types[index]
            name = f"{name}.{proto.name}" if name else proto.name
            types = proto.nested_type
        return self.pool.FindMessageTypeByName(name)


class SchemaRegistryClient:
    """A small, cached client for ``GET /schemas/ids/{id}`` and reference subjects."""

    def __init__(self, settings: IngestSettings) -> None:
        self._url = settings.registry_url.rstrip("/")
        self._timeout = settings.registry_timeout_s
        self._session = requests.Session()
        if settings.registry_bearer_token is not None:
            token = settings.registry_bearer_token.get_secret_value()
            self._session.headers["Authorization"] = f"Bearer {token}"
        elif settings.registry_username is not None:
            password = settings.registry_password.get_secret_value() if settings.registry_password else ""
            self._session.auth = (settings.registry_username, password)
        self._schemas: dict[int, RegistrySchema] = {}
        self._broken: dict[int, str] = {}  # schema id -> why it cannot be built
        self._files: dict[
            tuple[str, int], tuple[descriptor_pb2.FileDescriptorProto, list[dict[str, Any]]]
        ] = {}
        self.lookups = 0

    def __repr__(self) -> str:
        return f"SchemaRegistryClient({self._url!r})"

    def check(self) -> None:
        """Fail fast with a clear message when the URL is not a Schema Registry."""
        try:
            response = self._session.get(f"{self._url}/subjects", timeout=self._timeout)
        except requests.RequestException as err:
            raise ConfigError(
                f"Schema Registry at {self._url} is not reachable: {type(err).__name__}; check "
                "registry_url (GAMELAKE_INGEST_REGISTRY_URL) and that the registry runs"
            ) from None
        self._raise_for_auth(response)
        if not response.ok or not isinstance(_json(response), list):
            raise ConfigError(
                f"{self._url} does not answer like a Schema Registry (GET /subjects gave HTTP "
                f"{response.status_code}); check registry_url, e.g. http://host:8081 or .../apis/ccompat/v7"
            )

    def schema(self, schema_id: int) -> RegistrySchema:
        """The schema of ``schema_id``, fetched and built once; SchemaBuildError, also remembered."""
        cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        if schema_id in self._broken:
            raise SchemaBuildError(self._broken[schema_id])
        self.lookups += 1
        body = self._get(f"/schemas/ids/{schema_id}", not_found=f"schema id {schema_id}")
        if body.get("schemaType", "AVRO") != "PROTOBUF":
            raise UnknownSchemaId(f"schema id {schema_id} is {body.get('schemaType', 'AVRO')}, not PROTOBUF")
        try:
            built = self._build(schema_id, body)
        except (RegistryUnavailable, UnknownSchemaId, ConfigError):
            raise
        except Exception as err:  # protobuf raises TypeError, KeyError, ... for a file it cannot build
            self._broken[schema_id] = f"schema id {schema_id} cannot be built: {type(err).__name__}: {err}"
            raise SchemaBuildError(self._broken[schema_id]) from None
        self._schemas[schema_id] = built
        return built

    def _build(self, schema_id: int, body: dict[str, Any]) -> RegistrySchema:
        pool = descriptor_pool.DescriptorPool()
        dependencies: list[descriptor_pb2.FileDescriptorProto] = []
        self._add_references(pool, body.get("references") or [], dependencies)
        main = _file_descriptor(body["schema"], f"schema-{schema_id}.proto", dependencies)
        return build_schema(schema_id, main, pool, dependencies)

    def _add_references(
        self,
        pool: descriptor_pool.DescriptorPool,
        refs: list[dict[str, Any]],
        added: list[descriptor_pb2.FileDescriptorProto],
    ) -> None:
        """Add ``refs`` and, first, their own references to ``pool`` (each file once)."""
        for ref in refs:
            if any(f.name == ref["name"] for f in added):
                continue
            file, nested = self._reference(ref)
            self._add_references(pool, nested, added)
            _add_well_known_imports(pool, file, added)
            pool.Add(file)
            added.append(file)

    def _reference(
        self, ref: dict[str, Any]
    ) -> tuple[descriptor_pb2.FileDescriptorProto, list[dict[str, Any]]]:
        key = (ref["subject"], int(ref["version"]))
        if key not in self._files:
            path = f"/subjects/{quote(ref['subject'], safe='')}/versions/{int(ref['version'])}"
            body = self._get(path, not_found=f"reference {ref['subject']} v{ref['version']}")
            nested = body.get("references") or []
            deps = [self._reference(r)[0] for r in nested]
            self._files[key] = (_file_descriptor(body["schema"], ref["name"], deps), nested)
        return self._files[key]

    def _get(self, path: str, not_found: str) -> dict[str, Any]:
        try:
            response = self._session.get(f"{self._url}{path}", timeout=self._timeout)
        except requests.RequestException as err:
            raise RegistryUnavailable(f"registry {self._url} unreachable: {type(err).__name__}") from None
        self._raise_for_auth(response)
        if response.status_code == 404:
            raise UnknownSchemaId(f"the registry does not know {not_found}")
        if not response.ok:
            raise RegistryUnavailable(f"registry answered HTTP {response.status_code} for {not_found}")
        body = _json(response)
        if not isinstance(body, dict) or "schema" not in body:
            raise RegistryUnavailable(f"registry gave an unexpected body for {not_found}")
        return body

    def _raise_for_auth(self, response: requests.Response) -> None:
        if response.status_code in (401, 403):
            raise ConfigError(
                f"Schema Registry {self._url} refused the credentials (HTTP {response.status_code}); "
                "check registry_username/registry_password or registry_bearer_token"
            )


def lookup_with_retry(
    client: SchemaRegistryClient, schema_id: int, retries: int, backoff_s: float
) -> RegistrySchema:
    """``client.schema`` with bounded retries for both unknown ids and an unavailable registry."""
    for attempt in range(retries + 1):
        try:
            return client.schema(schema_id)
        except (UnknownSchemaId, RegistryUnavailable):
            if attempt == retries:
                raise
            time.sleep(backoff_s * 2**attempt)
    raise AssertionError("unreachable")


def build_schema(
    schema_id: int,
    main: descriptor_pb2.FileDescriptorProto,
    pool: descriptor_pool.DescriptorPool | None = None,
    dependencies: list[descriptor_pb2.FileDescriptorProto] | None = None,
) -> RegistrySchema:
    """``main`` in a pool holding its references (already added) and the well-known files it imports."""
    pool = pool if pool is not None else descriptor_pool.DescriptorPool()
    _add_well_known_imports(pool, main, dependencies if dependencies is not None else [])
    pool.Add(main)
    return RegistrySchema(schema_id, main, pool)


def _add_well_known_imports(
    pool: descriptor_pool.DescriptorPool,
    file: descriptor_pb2.FileDescriptorProto,
    added: list[descriptor_pb2.FileDescriptorProto],
) -> None:
    """Add the well-known files ``file`` imports that no reference brought, from the runtime."""
    for name in file.dependency:
        if name.startswith("google/protobuf/") and not any(f.name == name for f in added):
            known = descriptor_pb2.FileDescriptorProto()
            _runtime_file(name).CopyToProto(known)
            _add_well_known_imports(pool, known, added)
            pool.Add(known)
            added.append(known)


def _runtime_file(name: str) -> descriptor.FileDescriptor:
    """A well-known file as the protobuf runtime ships it (KeyError when it ships no such file)."""
    _import_well_known_types()
    return descriptor_pool.Default().FindFileByName(name)


def _import_well_known_types() -> None:
    """Load every well-known type into the runtime's default pool."""
    from google.protobuf import (  # noqa: F401 - imported for their descriptors
        any_pb2,
        api_pb2,
        duration_pb2,
        empty_pb2,
        field_mask_pb2,
        source_context_pb2,
        struct_pb2,
        timestamp_pb2,
        type_pb2,
        wrappers_pb2,
    )


def _json(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _file_descriptor(
    schema: str, name: str, dependencies: list[descriptor_pb2.FileDescriptorProto]
) -> descriptor_pb2.FileDescriptorProto:
    """Parse a registry schema string: base64 FileDescriptorProto, else .proto text."""
    try:
        raw = base64.b64decode(schema, validate=True)
        parsed = descriptor_pb2.FileDescriptorProto.FromString(raw)
        if parsed.name or parsed.message_type:
            return parsed
    except (binascii.Error, ValueError, Exception):  # not base64, or not a descriptor: try text
        pass
    return _compile_text(schema, name, dependencies)


def _compile_text(
    text: str, name: str, dependencies: list[descriptor_pb2.FileDescriptorProto]
) -> descriptor_pb2.FileDescriptorProto:
    """Compile .proto text with grpcio-tools' protoc (once per schema id)."""
    from grpc_tools import protoc

    with tempfile.TemporaryDirectory(prefix="gamelake-proto-") as tmp:
        root = Path(tmp)
        deps = descriptor_pb2.FileDescriptorSet(file=dependencies)
        (root / "deps.binpb").write_bytes(deps.SerializeToString())
        target = root / "src" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        out = root / "out.binpb"
        well_known = Path(protoc.__file__).parent / "_proto"
        args = [
            "protoc",
            f"-I{root / 'src'}",
            f"-I{well_known}",
            f"--descriptor_set_in={root / 'deps.binpb'}",
            f"--descriptor_set_out={out}",
            name,
        ]
        code = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from grpc_tools import protoc; sys.exit(protoc.main(sys.argv[1:]))",
                *args,
            ],
            capture_output=True,
            text=True,
        )
        if code.returncode != 0:
            raise UnknownSchemaId(f"schema text of {name} does not compile: {code.stderr.strip()[:300]}")
        files = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file
        return files[-1]
