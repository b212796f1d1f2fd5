"""``ingest bronze migrate-native-types`` across the lake, on real Spark, Delta and the registry.

A bronze landed before native types (a message and a repeated field as JSON text), with the
silver and gold tables dbt built on it: the command converts bronze and silver together and
moves gold's marks, then Spark reads the native columns, ``dbt test`` passes on the rewritten
silver, and the next build adds natively landed rows to silver and to gold's totals exactly.
"""

from __future__ import annotations

import base64
import collections
import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from confluent_kafka import Message
from confluent_kafka.schema_registry import Schema
from google.protobuf import descriptor_pb2, json_format, message_factory

from ingest.core.settings.paths import PROJECT_DIR, spark_warehouse
from ingest.games import model_files
from ingest.landing.decode import wire_format
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_registry import build_schema
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Landing
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.records import TopicPartition
from tests.integration import dbt_support as support
from tests.integration.ingest_support import registry_client

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GAME, TOPIC, APP_ID = "alpha", "game-events", "gamelake-ingest"
JSON_ERA = ("loadout", "perks")  # a message and a repeated field: JSON text before native types
NOW = datetime.now(UTC).replace(microsecond=0)


def _event_file() -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto(
        name="studio/game_event.proto",
        package="studio",
        syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"],
    )
    event = file.message_type.add(name="GameEvent")
    loadout = event.nested_type.add(name="Loadout")
    proto = descriptor_pb2.FieldDescriptorProto
    loadout.field.add(name="weapon", number=1, type=proto.TYPE_STRING, label=proto.LABEL_OPTIONAL)
    loadout.field.add(name="level", number=2, type=proto.TYPE_INT32, label=proto.LABEL_OPTIONAL)
    for number, name in enumerate(("event_id", "game_name", "gamer_id", "event_type"), start=1):
        event.field.add(name=name, number=number, type=proto.TYPE_STRING, label=proto.LABEL_OPTIONAL)
    event.field.add(
        name="event_timestamp",
        number=5,
        type=proto.TYPE_MESSAGE,
        type_name=".google.protobuf.Timestamp",
        label=proto.LABEL_OPTIONAL,
    )
    event.field.add(
        name="loadout", number=6, type=proto.TYPE_MESSAGE, type_name=".studio.GameEvent.Loadout", label=1
    )
    event.field.add(name="perks", number=7, type=proto.TYPE_STRING, label=proto.LABEL_REPEATED)
    return file


class _Schemas:
    """The registered schema, built as the registry client builds it (for the test's own decoding)."""

    def __init__(self, schema_id: int) -> None:
        self.built = build_schema(schema_id, _event_file())
        self.event_class = message_factory.GetMessageClass(self.built.message((0,)))

    def schema(self, schema_id: int):
        return self.built


class Lake:
    def __init__(self, root: Path, spark: Any, schemas: _Schemas, bronze: TableLocation | None = None):
        self.root, self.spark, self.schemas = root, spark, schemas
        self.project = support.copy_project(root / "project")
        support.write_seed(self.project, {GAME: True})
        model_files.sync(self.project)
        self.warehouse = root / "warehouse"
        self.writer = BronzeWriter(bronze or self.warehouse / "bronze" / "game_events", APP_ID)
        self.sent: list[Any] = []
        self.rng = random.Random(11)

    def events(self, count: int) -> list[Any]:
        out = []
        for _ in range(count):
            i = len(self.sent) + len(out)
            event = self.schemas.event_class(
                event_id=f"ev-{i:04d}",
                game_name=GAME,
                gamer_id=f"gamer-{self.rng.randint(1, 5)}",
                event_type=self.rng.choice(support.EVENT_TYPES),
            )
            event.event_timestamp.FromDatetime(NOW - timedelta(hours=self.rng.randint(1, 60)))
            if i % 3:
                event.loadout.weapon = self.rng.choice(["bow", "axe"])
                event.loadout.level = i
            event.perks.extend(["swift", "stone"][: i % 3])
            out.append(event)
        return out

    def land(self, events: list[Any], json_text: bool) -> None:
        """Land ``events`` through the service's decoder and writer; as the service before native
        types landed them (JSON text) when ``json_text``."""
        records = [
            Message(
                topic=TOPIC,
                partition=0,
                offset=len(self.sent) + i,
                key=None,
                value=wire_format.frame(self.schemas.built.schema_id, e.SerializeToString()),
                timestamp=(1, int(NOW.timestamp() * 1000)),
            )
            for i, e in enumerate(events)
        ]
        decoded = Decoder(self.schemas, 0, 0.0).decode(records, self.writer.columns())
        assert not decoded.dead_letters, [str(d.error) for d in decoded.dead_letters]
        table, numbers = decoded.table, decoded.field_numbers
        if json_text:
            for name in JSON_ERA:
                texts = pa.array([_old_json(e, name) for e in events], pa.string())
                table = table.set_column(table.schema.get_field_index(name), name, texts)
            numbers = {"studio.GameEvent": {"event_id": 1}}
        self.writer.evolve(list(table.schema), numbers)
        first = len(self.sent)
        landing = Landing(first - 1 if first else None, first + len(events) - 1)
        self.writer.commit(self.writer.write_files(table), {TopicPartition(TOPIC, 0): landing}, {})
        self.sent += events

    def dbt(self, *args: str) -> None:
        from dbt.cli.main import dbtRunner

        where = ["--project-dir", str(self.project), "--profiles-dir", str(self.project / "profiles")]
        result = dbtRunner().invoke([*args, *where, "--target", "local"])
        results = getattr(result.result, "results", []) or []
        failed = [f"{r.node.unique_id}: {r.message}" for r in results if str(r.status) in ("error", "fail")]
        assert result.success, f"dbt {' '.join(args)}: {result.exception or failed}"

    def silver(self) -> dict[str, dict[str, Any]]:
        rows = self.spark.table(f"silver.silver_{GAME}").collect()
        return {r["event_id"]: r.asDict(recursive=True) for r in rows}

    def gold(self) -> dict[str, dict[str, Any]]:
        return {r["gamer_id"]: r.asDict() for r in self.spark.table(f"gold.gold_{GAME}_player_agg").collect()}


def _old_json(event: Any, name: str) -> str | None:
    as_dict = json_format.MessageToDict(event, preserving_proto_field_name=True)
    return json.dumps(as_dict[name], sort_keys=True) if name in as_dict else None


@pytest.fixture(scope="module")
def lake(stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lake]:
    raw = base64.b64encode(_event_file().SerializeToString()).decode()
    schema_id = registry_client(stack.registry_url).register_schema(
        f"{TOPIC}-migration-value", Schema(raw, "PROTOBUF")
    )
    root = tmp_path_factory.mktemp("migration")
    with support.local_spark(root / "warehouse") as spark:
        yield Lake(root, spark, _Schemas(schema_id))


def _migrate(stack, lake: Lake) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GAMELAKE_INGEST_")}
    env["GAMELAKE_INGEST_WAREHOUSE_DIR"] = str(lake.warehouse)
    env["GAMELAKE_INGEST_REGISTRY_URL"] = stack.registry_url
    done = subprocess.run(
        [sys.executable, "-m", "ingest.cli", "bronze", "migrate-native-types"],
        env=env, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def _expected_silver(event: Any) -> dict[str, Any]:
    loadout = (
        {"weapon": event.loadout.weapon, "level": event.loadout.level} if event.HasField("loadout") else None
    )
    return {"loadout": loadout, "perks": list(event.perks)}


def _expected_gold(events: list[Any]) -> dict[str, dict[str, int]]:
    counts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for e in events:
        counts[e.gamer_id]["event_count"] += 1
        counts[e.gamer_id]["session_count"] += e.event_type == "session_start"
    return {
        g: {"event_count": c["event_count"], "session_count": c["session_count"]} for g, c in counts.items()
    }


def test_silver_and_gold_built_on_json_text_are_migrated_with_bronze_and_build_on_natively(stack, lake: Lake):
    lake.land(lake.events(60), json_text=True)
    lake.dbt("build")
    before = lake.silver()
    assert all(isinstance(before[e.event_id]["loadout"], str | None) for e in lake.sent), "text in silver"

    summary = _migrate(stack, lake)

    silver = summary["silver"][f"silver.silver_{GAME}"]
    assert set(silver["columns_converted"]) == set(JSON_ERA) and silver["rows_rewritten"] == 60
    assert set(silver["gold_marks_moved"]) == {
        f"gold.gold_{GAME}_player_agg",
        f"gold.gold_{GAME}_daily_active",
    }
    migrated = lake.silver()
    for e in lake.sent:
        got = migrated[e.event_id]
        assert {"loadout": got["loadout"], "perks": got["perks"]} == _expected_silver(e), e.event_id
        assert got["kafka_offset"] == before[e.event_id]["kafka_offset"]
    bows = {e.event_id for e in lake.sent if e.HasField("loadout") and e.loadout.weapon == "bow"}
    found = lake.spark.sql(
        f"select event_id from silver.silver_{GAME} where loadout.weapon = 'bow'"
    ).collect()
    assert {r.event_id for r in found} == bows
    lake.dbt("test", "--select", f"silver_{GAME}")  # its latest write is the rewrite now

    build_natively_on_top(lake)
    assert Path(spark_warehouse(lake.warehouse), "silver.db", f"silver_{GAME}").is_dir()


def build_natively_on_top(lake: Lake) -> None:
    """Rows landed natively after the migration, built: silver holds every row with its values,
    and gold's totals count every event."""
    lake.land(lake.events(40), json_text=False)
    lake.dbt("build")

    after = lake.silver()
    assert set(after) == {e.event_id for e in lake.sent}
    for e in lake.sent:
        got = after[e.event_id]
        assert {"loadout": got["loadout"], "perks": got["perks"]} == _expected_silver(e), e.event_id
    gold = lake.gold()
    for gamer, want in _expected_gold(lake.sent).items():
        assert {k: gold[gamer][k] for k in want} == want, gamer
