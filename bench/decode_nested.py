"""Decode cost per event, nested against flat: the studio schema against the demo's flat event.

    python -m bench.decode_nested [--events 50000] [--repeats 5]

The same decoder the service runs (``Decoder.decode``: framing, upb's parse, which decides what
is valid, every column to Arrow) decodes ``--events`` records of each schema, ``--repeats``
times; the fastest run of each counts (CPU seconds of this process, ``time.process_time``).
Each schema is decoded twice: on the native path (ptars reads the columns; the service's) and
on the upb path (each field read through Python; what the service falls back to).

Nested: dev/gamelake_dev/proto/studio v1, a foreign producer's match with a struct, arrays, maps of
scalars and of structs, a oneof, optional, enum, bytes, uint64, Timestamp, Duration, wrappers,
a recursive message and a Struct (two thirds of the records with most fields set, one third
empty). Flat: the demo's ``GameEvent`` v4, 15 scalar fields and a Timestamp. The schemas are
built in process as the registry client builds them (a registry lookup happens once per
schema id, not per event). Results are printed and appended, with machine and date, to
bench/results/decode_nested.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import cast

from confluent_kafka import Message
from gamelake_dev.demo_schemas import load_version
from gamelake_dev.producer.datagen import EventGenerator
from gamelake_dev.studio_schema import matches, studio_schema
from google.protobuf import descriptor_pool

from ingest.core.settings.paths import PROJECT_DIR
from ingest.landing.decode import wire_format
from ingest.landing.decode.decoder import Decoder
from ingest.landing.decode.proto_arrow import RECURSION_LIMIT
from ingest.landing.decode.schema_guard import KnownColumns
from ingest.landing.decode.schema_registry import SchemaRegistryClient, build_schema
from ingest.landing.records import KafkaRecord

RESULTS = PROJECT_DIR / "bench" / "results" / "decode_nested.md"
NESTED_ID, FLAT_ID = 1, 4
TARGET = 1.5


class _Schemas:
    """Schema id 1: the studio match; id 4: the demo's flat GameEvent v4."""

    def schema(self, schema_id: int):
        if schema_id == FLAT_ID:
            return build_schema(FLAT_ID, load_version(4).file_descriptor_proto)
        studio = studio_schema(1)
        pool = descriptor_pool.DescriptorPool()
        common = build_schema(0, studio.common, pool)
        return build_schema(NESTED_ID, studio.match, pool, [common.file])


_REGISTRY = cast(SchemaRegistryClient, _Schemas())  # the two schemas, without a registry server


def _records(schema_id: int, payloads: list[bytes]) -> Sequence[KafkaRecord]:
    """confluent-kafka's own messages, as a consumer hands them over (they have KafkaRecord's
    methods; its stubs do not say so)."""
    now_ms = int(time.time() * 1000)
    messages = [
        Message(
            topic="bench",
            partition=0,
            offset=i,
            key=None,
            value=wire_format.frame(schema_id, p),
            timestamp=(1, now_ms),
        )
        for i, p in enumerate(payloads)
    ]
    return cast("Sequence[KafkaRecord]", messages)


def _flat_payloads(count: int) -> list[bytes]:
    version = load_version(4)
    events = EventGenerator(["space_raiders", "kart_legends"], [4], seed=3).events(count)
    return [version.message_class(**e.fields(version.field_names)).SerializeToString() for e in events]


def _decode_fresh(decoder: Decoder, records: Sequence[KafkaRecord]) -> object:
    return decoder.decode(records, KnownColumns())


def _best_cpu(run: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.process_time()
        run()
        best = min(best, time.process_time() - started)
    return best


def measure(events: int, repeats: int, native: bool) -> dict[str, dict[str, float]]:
    """Per schema: CPU per event of ``Decoder.decode``, with the native reader (the service's
    path) or with it switched off (the upb path, which reads each field through Python)."""
    decoder = Decoder(_REGISTRY, 0, 0.0)
    found = {}
    for name, schema_id, payloads in [
        ("flat (GameEvent v4)", FLAT_ID, _flat_payloads(events)),
        ("nested (studio Match v1)", NESTED_ID, [m.SerializeToString() for m in matches(1, events, seed=9)]),
    ]:
        plan = decoder.plan(schema_id, (0,))
        assert plan.native is not None, f"{name} has no native reader"
        if not native:
            plan.native = None
        records = _records(schema_id, payloads)
        first = decoder.decode(records, KnownColumns())  # warm: the plan is built once per id
        assert first.table is not None and not first.dead_letters, first.dead_letters[:1]
        seconds = _best_cpu(partial(_decode_fresh, decoder, records), repeats)
        parse = _best_cpu(partial(plan.parse, payloads), repeats)
        found[f"{name}, {'native' if native else 'upb'} path"] = {
            "us_per_event": seconds / events * 1e6,
            "parse_us": parse / events * 1e6,
            "events_per_s": events / seconds,
            "bytes_per_event": sum(map(len, payloads)) / events,
            "columns": first.table.num_columns,
            "leaves": _leaf_values(first.table) / events,
        }
    return found


def per_column(events: int) -> dict[str, float]:
    """Upb path: CPU µs per event of reading each top-level column of the nested schema."""
    plan = Decoder(_REGISTRY, 0, 0.0).plan(NESTED_ID, (0,))
    messages, _, _ = plan.parse([m.SerializeToString() for m in matches(1, events, seed=9)])
    plan.columns_of(messages)  # upb materialises a message's fields on first access: not a column's cost
    found = {}
    for column in plan.columns:
        started = time.process_time()
        column.read(messages)
        found[column.name] = (time.process_time() - started) / events * 1e6
    return found


def native_parts(events: int, repeats: int) -> dict[str, float]:
    """Native path, nested schema: CPU µs per event of ptars's read and of the whole reader
    (ptars, then casts, oneof cases and JSON text); the JSON text alone is their difference
    with the same reader on a schema without the JSON-text fields' values."""
    plan = Decoder(_REGISTRY, 0, 0.0).plan(NESTED_ID, (0,))
    assert plan.native is not None
    payloads = [m.SerializeToString() for m in matches(1, events, seed=9)]
    stripped = [_without_json_text(m).SerializeToString() for m in matches(1, events, seed=9)]
    native = plan.native
    return {
        "ptars": _best_cpu(lambda: native.read_batch(payloads), repeats) / events * 1e6,
        "reader": _best_cpu(lambda: native.columns(payloads), repeats) / events * 1e6,
        "reader without JSON text": _best_cpu(lambda: native.columns(stripped), repeats) / events * 1e6,
    }


def _without_json_text(match):
    """The match with its Struct cleared and its tree cut at the recursion limit."""
    match.ClearField("extra")
    node = match.tree
    for _ in range(RECURSION_LIMIT - 1):
        node = node.child
    node.ClearField("child")
    return match


def _leaf_values(table) -> int:
    """Non-null scalar values in the decoded fields (list and map elements and struct leaves)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    def count(array) -> int:
        kind = array.type
        if pa.types.is_struct(kind):
            return sum(count(child) for child in array.flatten())
        if pa.types.is_map(kind):
            return count(array.keys) + count(array.items)
        if pa.types.is_list(kind):
            return count(pc.list_flatten(array))
        return len(array) - array.null_count

    fields = [c for c in table.column_names if not c.startswith("_") and c != "event_date"]
    return sum(count(table.column(c).combine_chunks()) for c in fields)


def _record(
    found: dict[str, dict[str, float]],
    parts: dict[str, float],
    columns: dict[str, float],
    events: int,
    repeats: int,
    ratio: float,
) -> str:
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        f"## {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC",
        "",
        f"- machine: {platform.node()}, {platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}, load average {load}",
        f"- settings: {events:,} events per schema, best of {repeats} runs, CPU time of the decoding process",
        "",
        "| schema | bytes/event | bronze columns | leaf values/event | CPU µs/event | of which upb parse | "
        "events/s | CPU µs per leaf value |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, row in found.items():
        lines.append(
            f"| {name} | {row['bytes_per_event']:.0f} | {row['columns']:.0f} | {row['leaves']:.1f} | "
            f"{row['us_per_event']:.2f} | {row['parse_us']:.2f} | {row['events_per_s']:,.0f} | "
            f"{row['us_per_event'] / row['leaves']:.2f} |"
        )
    rows = list(found.values())
    flat, nested = rows[0], rows[1]
    upb_ratio = rows[3]["us_per_event"] / rows[2]["us_per_event"]
    per_leaf = (nested["us_per_event"] / nested["leaves"]) / (flat["us_per_event"] / flat["leaves"])
    verdict = "met" if ratio <= TARGET else "missed"
    lines += [
        "",
        f"Nested / flat CPU per event on the native path (the service's): {ratio:.2f}x "
        f"(target {TARGET}x: {verdict}); per leaf value: {per_leaf:.2f}x. On the upb path: {upb_ratio:.2f}x.",
        "",
        "Native path, nested, CPU µs per event: "
        + ", ".join(f"{name} {us:.2f}" for name, us in parts.items())
        + f"; so JSON text (the Struct and the tree past the recursion limit) "
        f"{parts['reader'] - parts['reader without JSON text']:.2f}.",
        "",
        "Upb path, nested, CPU µs per event by column (after the messages' first field access): "
        + ", ".join(f"{name} {us:.2f}" for name, us in sorted(columns.items(), key=lambda kv: -kv[1])),
        "",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    found = measure(args.events, args.repeats, native=True)
    flat, nested = found.values()
    ratio = nested["us_per_event"] / flat["us_per_event"]
    found |= measure(args.events, args.repeats, native=False)
    parts = native_parts(args.events, args.repeats)
    section = _record(found, parts, per_column(args.events), args.events, args.repeats, ratio)
    print(section)
    if not RESULTS.exists():
        RESULTS.write_text(
            "# Decode cost per event: nested against flat\n\n"
            "Written by `python -m bench.decode_nested` (`make bench-decode`); one section per run.\n\n"
        )
    with RESULTS.open("a") as out:
        out.write(section + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
