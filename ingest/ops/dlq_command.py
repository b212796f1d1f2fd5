"""``ingest dlq list|replay|purge``: look at dead letters, re-land chosen ones after a fix, delete old ones.

Replay reads the raw bytes from the configured sink (``bronze/dead_letters``, or the
dead-letter topic read from its start to its end), decodes them with today's registry and
bronze schema, and lands in bronze only the records whose Kafka coordinates
(topic, partition, offset) bronze does not hold yet; then it stamps ``replayed_at`` (Delta
sink). Running it twice, or after a crash half-way, never duplicates a row: the bronze check
is what guarantees it, so it holds for the topic sink too, where nothing can be stamped and a
dead letter already in bronze counts as replayed.

Two replays at once could both find a record missing and both land it, so replays fence each
other with an app transaction in bronze, ``<app_id>-dlq-replay``, that every replay commit
moves on by one. A replay reads it from the same snapshot as its bronze check, and commits
only if it is still at that version: ``BronzeWriter.commit`` checks it before each attempt and
attempts exactly the next table version, so no commit can slip in between. Whatever another
replay landed after our check moved the fence, so our commit is refused (``FencedError``);
the loser starts over from the bronze check, which now sees the winner's rows, lands only
what is still missing and counts the rest as ``already_in_bronze`` (and the restart as
``fenced``). Two replays stamping the same dead letters race on the dead-letter table; the
loser retries and finds them stamped.

It works beside a running service: the service's commits carry only its offsets' app ids, so
they never fence a replay nor a replay them (a service commit that takes the version a replay
aimed for is a lost commit race, retried after the same check). Nor do the two land the same
record: with the dead-letter table, a batch the service reads again keeps what it dead-lettered
out of bronze (doc/DESIGN.md, "Why landing is exactly-once", point 6); the topic sink cannot be
read back so, and there replay leaves a dead letter the service's offset has not passed yet
(``in_flight``, from the same snapshot) for a later run, as the service may still land it.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from ingest.core.errors import ConfigError, IngestError
from ingest.core.settings.ingest_settings import IngestSettings
from ingest.core.settings.kafka_config import security_config
from ingest.landing import crash_points
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.schema_registry import SchemaRegistryClient
from ingest.landing.delta.bronze_writer import BronzeWriter
from ingest.landing.delta.fences import Fence, FencedError
from ingest.landing.delta.table_location import TableLocation
from ingest.landing.delta.table_scan import scan
from ingest.landing.records import DecodedBatch, KafkaRecord, TopicPartition, txn_app_id
from ingest.landing.side_tables.dead_letters import DEAD_LETTER_SCHEMA, TOPIC_HEADERS, dead_letter_id
from ingest.ops.dead_letter_purge import purge

Coordinate = tuple[str, int, int]  # where a record was in Kafka: topic, partition, offset
# How often a replay starts over from the bronze check when another replay fenced it, and retries
# stamping ``replayed_at`` after a lost commit race: each time, another writer committed first.
_REPLAY_ATTEMPTS = 5


@dataclass(frozen=True)
class StoredRecord:
    """A dead letter as a Kafka record (the decoder's KafkaRecord protocol)."""

    row: dict[str, Any]

    def topic(self) -> str:
        return str(self.row["_kafka_topic"])

    def partition(self) -> int:
        return int(self.row["_kafka_partition"])

    def offset(self) -> int:
        return int(self.row["_kafka_offset"])

    def timestamp(self) -> tuple[int, int]:
        ts = self.row["_kafka_timestamp"]
        return (1, int(ts.timestamp() * 1000) if ts is not None else 0)

    def key(self) -> bytes | None:
        key = self.row["_kafka_key"]
        return bytes(key) if key is not None else None

    def value(self) -> bytes | None:
        value = self.row["value"]
        return bytes(value) if value is not None else None

    def headers(self) -> list[tuple[str, bytes | None]]:
        return [(h["key"], h["value"]) for h in self.row["_kafka_headers"] or []]


def select(
    settings: IngestSettings, stage: str | None, topic: str | None, offsets: list[int] | None
) -> pa.Table:
    """The dead letters not replayed yet, optionally only of one stage, source topic or offsets."""
    if settings.dead_letter_sink == "topic":
        table = read_topic(settings)
        bronze = _landing(settings, "game_events")
        snapshot = bronze.delta_table() if bronze.is_delta_table() else None
        landed = _already_in_bronze(snapshot, set(_coordinates(table)))
        done = [dead_letter_id(*c) for c in landed]
        mask = pc.invert(pc.is_in(table["dead_letter_id"], pa.array(done, pa.string())))
    else:
        path = _landing(settings, "dead_letters")
        if not path.is_delta_table():
            raise ConfigError(f"there is no dead-letter table at {path}")
        table = scan(path.delta_table())
        mask = pc.is_null(table["replayed_at"])
    if stage:
        mask = pc.and_(mask, pc.equal(table["stage"], stage))
    if topic:
        mask = pc.and_(mask, pc.equal(table["_kafka_topic"], topic))
    if offsets:
        mask = pc.and_(mask, pc.is_in(table["_kafka_offset"], pa.array(offsets, pa.int64())))
    return table.filter(mask)


def _coordinates(table: pa.Table) -> list[Coordinate]:
    columns = ("_kafka_topic", "_kafka_partition", "_kafka_offset")
    return list(zip(*(table[c].to_pylist() for c in columns), strict=True))


def read_topic(settings: IngestSettings, timeout_s: float = 60.0) -> pa.Table:
    """Every record of the dead-letter topic, start to end, as rows of the dead-letter table.

    The topic sink is at-least-once, so a dead letter published twice is kept once.
    """
    name = settings.dead_letter_topic
    if name is None:
        raise ConfigError("dead_letter_sink=topic needs dead_letter_topic")
    consumer = Consumer(
        {
            **security_config(settings),
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": f"{settings.group_id}-dlq-reader-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    try:
        try:
            metadata = consumer.list_topics(name, timeout=15).topics[name]
        except KafkaException as err:
            raise ConfigError(f"cannot read the dead-letter topic {name}: {err.args[0].str()}") from None
        if metadata.error is not None:
            raise ConfigError(f"cannot read the dead-letter topic {name}: {metadata.error.str()}")
        ends = {}
        for p in metadata.partitions:
            low, high = consumer.get_watermark_offsets(KafkaTopicPartition(name, p), timeout=15)
            if high > low:
                ends[p] = high
        consumer.assign([KafkaTopicPartition(name, p, OFFSET_BEGINNING) for p in ends])
        rows: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout_s
        while ends:
            if time.monotonic() > deadline:
                raise ConfigError(f"reading the dead-letter topic {name} took over {timeout_s:.0f} s")
            for message in consumer.consume(1000, timeout=0.5):
                if message.error() is not None:
                    continue
                row = _topic_row(message)
                rows.setdefault(row["dead_letter_id"], row)
                if (message.offset() or 0) + 1 >= ends.get(message.partition(), 0):
                    ends.pop(message.partition(), None)
    finally:
        consumer.close()
    return pa.Table.from_pylist(list(rows.values()), schema=DEAD_LETTER_SCHEMA)


def _topic_row(message: Any) -> dict[str, Any]:
    headers = message.headers() or []
    ours = {k: (v or b"").decode() for k, v in headers if k in TOPIC_HEADERS}
    topic, partition, offset = (
        ours["gamelake.topic"],
        int(ours["gamelake.partition"]),
        int(ours["gamelake.offset"]),
    )
    return {
        "dead_letter_id": dead_letter_id(topic, partition, offset),
        "_kafka_topic": topic,
        "_kafka_partition": partition,
        "_kafka_offset": offset,
        "_kafka_timestamp": int(ours["gamelake.timestamp_ms"]) * 1000,
        "_kafka_key": message.key(),
        "_kafka_headers": [{"key": k, "value": v} for k, v in headers if k not in TOPIC_HEADERS],
        "value": message.value(),
        "schema_id": int(ours["gamelake.schema_id"]) if ours.get("gamelake.schema_id") else None,
        "stage": ours["gamelake.stage"],
        "error": ours["gamelake.error"],
        "batch_id": ours["gamelake.batch_id"],
        "dead_lettered_at": message.timestamp()[1] * 1000,
        "replayed_at": None,
    }


def _already_in_bronze(bronze: DeltaTable | None, coordinates: set[Coordinate]) -> set[Coordinate]:
    """The ``coordinates`` that the ``bronze`` snapshot holds a row for."""
    if not coordinates or bronze is None:
        return set()
    offsets = sorted({o for _, _, o in coordinates})
    # The range prunes files by their statistics; the exact offsets are picked in Arrow.
    found = scan(
        bronze,
        ["_kafka_topic", "_kafka_partition", "_kafka_offset"],
        where=f'"_kafka_offset" BETWEEN {int(offsets[0])} AND {int(offsets[-1])}',
    )
    found = found.filter(pc.is_in(found["_kafka_offset"], pa.array(offsets, pa.int64())))
    return {r for r in _coordinates(found) if r in coordinates}


def replay_app_id(app_id: str) -> str:
    """The app transaction in bronze that replays fence each other with: it counts their commits."""
    return f"{app_id}-dlq-replay"


def replay(settings: IngestSettings, letters: pa.Table, dry_run: bool = False) -> dict[str, Any]:
    """Re-land ``letters``; returns counts of landed, already-present, in-flight and still-failing
    records, and how often another replay overtook this one (``fenced``)."""
    records = [StoredRecord(row) for row in letters.to_pylist()]
    writer = BronzeWriter(_landing(settings, "game_events"), settings.app_id)
    decoder = Decoder(
        SchemaRegistryClient(settings), settings.unknown_schema_retries, settings.registry_retry_backoff_s
    )
    decoded = decoder.decode(records, writer.columns())
    failed = {_coordinate(d.record) for d in decoded.dead_letters}
    ok = {_coordinate(r) for r in records} - failed
    if dry_run or not ok:
        held, fenced = _held_back(settings, writer.snapshot(), ok), 0
    else:
        held, fenced = _land(settings, writer, decoded, ok)
        _stamp(settings, ok)
    return {
        "selected": len(records),
        "landed": len(ok - held.present - held.in_flight),
        "already_in_bronze": len(held.present),
        "in_flight": len(held.in_flight),
        "still_failing": dict(Counter(d.error.stage for d in decoded.dead_letters)),
        "fenced": fenced,
    }


def _coordinate(record: KafkaRecord) -> Coordinate:
    return (record.topic() or "", record.partition() or 0, record.offset() or 0)


@dataclass(frozen=True)
class HeldBack:
    """The decoded letters a replay does not land, as one bronze snapshot shows them."""

    present: set[Coordinate]  # bronze holds them already
    in_flight: set[Coordinate]  # topic sink: the service has not passed them yet (``_in_flight``)


def _held_back(settings: IngestSettings, bronze: DeltaTable, ok: set[Coordinate]) -> HeldBack:
    present = _already_in_bronze(bronze, ok)
    return HeldBack(present, _in_flight(settings, bronze, ok - present))


def _in_flight(settings: IngestSettings, bronze: DeltaTable, coordinates: set[Coordinate]) -> set[Coordinate]:
    """Topic sink: the ``coordinates`` above the service's offset for their partition in ``bronze``.

    The service publishes a batch's dead letters before its bronze commit. When that commit never
    happens (a crash, a fenced or stale batch) the batch is read again, and a record that decodes
    by then lands in bronze; had a replay landed it meanwhile, it would be there twice. Once the
    service's offset has passed a record it never lands it again (it resumes above, a zombie is
    fenced), so from then on only a replay can. The dead-letter table needs no such wait: a
    batch read again keeps what it dead-lettered out of bronze (``DeltaDeadLetters.in_doubt``).
    """
    if settings.dead_letter_sink != "topic":
        return set()
    partitions = {TopicPartition(t, p) for t, p, _ in coordinates}
    landed = {tp: bronze.transaction_version(txn_app_id(settings.app_id, tp)) for tp in partitions}
    return {c for c in coordinates if _above(c[2], landed[TopicPartition(c[0], c[1])])}


def _above(offset: int, landed: int | None) -> bool:
    return landed is None or offset > landed


def _land(
    settings: IngestSettings, writer: BronzeWriter, decoded: DecodedBatch, ok: set[Coordinate]
) -> tuple[HeldBack, int]:
    """Land the rows of ``ok`` that bronze does not hold yet; returns those it held back, and how
    often it was fenced.

    The replay fence is read from the same snapshot as the bronze check, and the commit moves it
    on only if it is still there (``Fence``). So two replays that both found a record missing
    cannot both land it: the second commit is fenced and starts over from the bronze check,
    which now sees what the first landed.
    """
    app = replay_app_id(writer.app_id)
    for fenced in range(_REPLAY_ATTEMPTS):
        bronze = writer.snapshot()
        fence = bronze.transaction_version(app)
        held = _held_back(settings, bronze, ok)
        rows = _without(decoded.table, held.present | held.in_flight)
        if not rows.num_rows:
            return held, fenced
        writer.evolve(decoded.new_columns, decoded.field_numbers)
        adds = writer.write_files(rows)
        try:
            writer.commit(adds, {}, {"replay": "dead_letters"}, [Fence(app, fence, _after(fence))])
        except FencedError:
            continue  # another replay committed since our check; its files stay for vacuum
        return held, fenced
    raise IngestError(
        f"{_REPLAY_ATTEMPTS} other replays committed to {writer.path} while this one checked bronze: "
        "nothing landed, run it again"
    )


def _after(version: int | None) -> int:
    return 0 if version is None else version + 1


def _without(table: pa.Table | None, held: set[Coordinate]) -> pa.Table:
    """The rows of ``table`` whose coordinates are not in ``held``."""
    assert table is not None, "some letters decoded, so the decoder returned their rows"
    if not held:
        return table
    keys = [f"{t}:{p}:{o}" for t, p, o in held]
    coordinate = pc.binary_join_element_wise(
        table["_kafka_topic"],
        table["_kafka_partition"].cast(pa.string()),
        table["_kafka_offset"].cast(pa.string()),
        ":",
    )
    return table.filter(pc.invert(pc.is_in(coordinate, pa.array(keys))))


def _stamp(settings: IngestSettings, replayed: set[Coordinate]) -> None:
    """Set ``replayed_at`` on the dead letters at ``replayed`` that are not stamped yet (Delta sink).

    Another replay stamping the same rows, or the service appending dead letters, can make the
    update lose a commit race; the retry reads the table again and skips what the other stamped.
    A topic cannot be stamped: bronze holds the records now, so ``select`` skips them.
    """
    if settings.dead_letter_sink == "topic":
        return
    ids = ", ".join(f"'{dead_letter_id(*c)}'" for c in sorted(replayed))
    predicate = f"dead_letter_id IN ({ids}) AND replayed_at IS NULL"
    for _ in range(_REPLAY_ATTEMPTS):
        try:
            _landing(settings, "dead_letters").delta_table().update(
                updates={"replayed_at": "now()"}, predicate=predicate
            )
            return
        except CommitFailedError:
            continue
    raise IngestError(
        f"could not stamp replayed_at in {_landing(settings, 'dead_letters')} after {_REPLAY_ATTEMPTS} "
        "attempts: the records are in bronze; a rerun stamps them"
    )


def _purge(settings: IngestSettings, older_than_days: int | None) -> int:
    days = settings.dead_letter_retention_days if older_than_days is None else older_than_days
    if settings.dead_letter_sink != "delta":
        raise ConfigError(
            "dlq purge works on the dead-letter table; the topic's retention governs a topic sink"
        )
    if days <= 0:
        raise ConfigError("nothing to purge at a retention of 0 days (keep all): pass --older-than-days N")
    path = _landing(settings, "dead_letters")
    if not path.is_delta_table():
        print(f"no dead-letter table at {path}: nothing to purge")
        return 0
    print(json.dumps({"older_than_days": days, **purge(path, days)}))
    return 0


def _landing(settings: IngestSettings, name: str) -> TableLocation:
    """A landing table: a local folder, or on S3 under ``warehouse_uri``."""
    return TableLocation.of(settings.landing_table(name))


def _settings(args: argparse.Namespace) -> IngestSettings:
    from ingest.core.settings.args import settings_from_args

    return settings_from_args(args)


def _selected(args: argparse.Namespace, settings: IngestSettings) -> pa.Table:
    offsets = [int(o) for o in args.offsets.split(",")] if args.offsets else None
    return select(settings, args.stage, args.dlq_topic, offsets)


def _list_command(args: argparse.Namespace) -> int:
    letters = _selected(args, _settings(args))
    for row in letters.select(["dead_letter_id", "stage", "error"]).to_pylist():
        print(f"{row['dead_letter_id']:40} {row['stage']:13} {row['error']}")
    print(f"{letters.num_rows} dead letters not replayed")
    return 0


def _replay_command(args: argparse.Namespace) -> int:
    crash_points.install()  # tests hold replays between their files and their commit (files_written)
    settings = _settings(args)
    print(json.dumps(replay(settings, _selected(args, settings), args.dry_run)))
    return 0


def _purge_command(args: argparse.Namespace) -> int:
    return _purge(_settings(args), args.older_than_days)


def _add_selection_arguments(parser: argparse.ArgumentParser) -> None:
    from ingest.core.settings.args import add_settings_arguments

    add_settings_arguments(parser)
    parser.add_argument(
        "--stage", help="only this failed stage: framing, schema_lookup, decode, schema_guard"
    )
    parser.add_argument("--dlq-topic", help="only dead letters from this source topic")
    parser.add_argument("--offsets", help="only these offsets, comma-separated")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    from ingest.core.settings.args import add_settings_arguments

    parser = subparsers.add_parser(
        "dlq",
        help="list dead letters, replay them into bronze without duplicates, or purge old ones",
        description="Reads the configured sink: the dead-letter table, or with "
        "dead_letter_sink=topic the dead-letter topic. `ingest dlq ACTION --help` describes each action.",
    )
    actions = parser.add_subparsers(dest="verb", required=True, metavar="{list,replay,purge}")
    listing = actions.add_parser(
        "list",
        help="print the dead letters not replayed yet: id, failed stage, error",
        description="Print one line per dead letter not replayed yet (its id, the stage that failed and "
        "the error), then their count. Changes nothing.",
    )
    _add_selection_arguments(listing)
    listing.set_defaults(handler=_list_command)
    replaying = actions.add_parser(
        "replay",
        help="decode the chosen dead letters again and land those not in bronze yet",
        description="Decode the chosen dead letters with today's registry and bronze schema and land "
        "those whose topic/partition/offset bronze does not hold yet; safe to re-run and beside a "
        "running service. Prints the counts as JSON.",
    )
    _add_selection_arguments(replaying)
    replaying.add_argument("--dry-run", action="store_true", help="decode and count, land nothing")
    replaying.set_defaults(handler=_replay_command)
    purging = actions.add_parser(
        "purge",
        help="delete dead letters older than the retention (their raw bytes may hold player data)",
        description="Delete from the dead-letter table the rows older than --older-than-days (default: "
        "dead_letter_retention_days) and their files. The topic's own retention governs a topic sink.",
    )
    add_settings_arguments(purging)
    purging.add_argument(
        "--older-than-days",
        type=int,
        help="delete dead letters older than this (default: dead_letter_retention_days)",
    )
    purging.set_defaults(handler=_purge_command)
