"""The event schema versions kept in dev/gamelake_dev/proto, compiled and loaded.

Every version defines the same message, ``gamelake.events.GameEvent``, in the same
file name, exactly as a real evolving .proto file would look at each release. Python's
default descriptor pool holds one definition per name, so each version is compiled to
its own descriptor set and loaded into a pool of its own.

``python -m gamelake_dev.demo_schemas compile`` regenerates the descriptor sets (``make proto``).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import Message

from ingest.core.errors import ConfigError

PROTO_DIR = Path(__file__).parent / "proto"
GENERATED_DIR = PROTO_DIR / "gen"
PROTO_FILE = "gamelake/events/game_event.proto"
MESSAGE_NAME = "gamelake.events.GameEvent"


@dataclass(frozen=True)
class SchemaVersion:
    """One released version of the event schema."""

    number: int
    message_class: type[Message]
    file_descriptor_proto: descriptor_pb2.FileDescriptorProto

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.message_class.DESCRIPTOR.fields]


def available_versions() -> list[int]:
    """Version numbers present as sources, ascending."""
    numbers = [int(m.group(1)) for p in PROTO_DIR.iterdir() if (m := re.fullmatch(r"v(\d+)", p.name))]
    return sorted(numbers)


def compile_all() -> list[Path]:
    """Compile every version's .proto into ``gen/game_event_v<N>.binpb`` with grpcio-tools' protoc."""
    from grpc_tools import protoc  # only needed at build time

    GENERATED_DIR.mkdir(parents=True, exist_ok=True)
    well_known = Path(protoc.__file__).parent / "_proto"
    outputs = []
    for number in available_versions():
        out = GENERATED_DIR / f"game_event_v{number}.binpb"
        args = [
            "protoc",
            f"-I{PROTO_DIR / f'v{number}'}",
            f"-I{well_known}",
            "--include_imports",
            "--include_source_info",
            f"--descriptor_set_out={out}",
            PROTO_FILE,
        ]
        if protoc.main(args) != 0:
            raise ConfigError(f"protoc failed on {PROTO_DIR / f'v{number}' / PROTO_FILE}")
        outputs.append(out)
    return outputs


@cache
def load_version(number: int) -> SchemaVersion:
    """The message class of schema version ``number``, in a descriptor pool of its own."""
    path = GENERATED_DIR / f"game_event_v{number}.binpb"
    if number not in available_versions():
        raise ConfigError(
            f"unknown schema version {number}: dev/gamelake_dev/proto has versions {available_versions()}"
        )
    if not path.exists():
        raise ConfigError(f"{path} is missing: run `make proto` to compile the event schemas")
    file_set = descriptor_pb2.FileDescriptorSet.FromString(path.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    main_file = None
    for file_proto in file_set.file:
        pool.Add(file_proto)
        if file_proto.name == PROTO_FILE:
            main_file = file_proto
    assert main_file is not None, f"{path} does not contain {PROTO_FILE}"
    message_class = message_factory.GetMessageClass(pool.FindMessageTypeByName(MESSAGE_NAME))
    return SchemaVersion(number, message_class, main_file)


def main(argv: list[str]) -> int:
    if argv[1:] == ["compile"]:
        for out in compile_all():
            print(f"compiled {out.relative_to(PROTO_DIR.parent.parent)}")
        return 0
    print("usage: python -m gamelake_dev.demo_schemas compile", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
