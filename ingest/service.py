"""The ingest service: consume, decode, land in bronze exactly once; ``ingest run``.

The loop polls records into a batch and flushes it on rows, bytes or age. A flush decodes,
evolves the bronze schema, writes parquet files, writes dead letters, and then commits the
files with each partition's last offset in one fenced Delta commit (see writer.py). Only then
is the offset mirrored to Kafka. Any batch that cannot be committed safely (the instance was
fenced, outlived ``max.poll.interval.ms``, or the registry is unreachable) is dropped and the
owned partitions are re-seeked to the offsets Delta holds. doc/DESIGN.md has the argument.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import signal
import socket
import time
import uuid
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from ingest import hooks, metrics
from ingest.dead_letters import make_sink
from ingest.decode import DecodedBatch, Decoder
from ingest.errors import ConfigError, IngestError
from ingest.event_log import Event, EventLog
from ingest.metrics import Stopwatch
from ingest.offsets import StartPosition, TopicPartition
from ingest.registry import RegistryClient, RegistryUnavailable
from ingest.settings import IngestSettings, load_settings
from ingest.writer import BronzeWriter, FencedError, Landing

log = logging.getLogger("gamelake.ingest")


class OffsetExpiredError(IngestError):
    """Delta's offset of a partition is older than the earliest record Kafka still has."""


def _log(kind: str, **fields: Any) -> None:
    log.info(json.dumps({"event": kind, **fields}, default=str, separators=(",", ":")))


def _tp(partition: KafkaTopicPartition) -> TopicPartition:
    return TopicPartition(partition.topic, partition.partition)


class Service:
    """One ingest instance. ``run()`` returns when stopped, caught up (if asked) or failed."""

    def __init__(self, settings: IngestSettings, until_caught_up: bool = False) -> None:
        self.settings = settings
        self.until_caught_up = until_caught_up
        self.instance_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        registry = RegistryClient(settings)
        registry.check()
        self.writer = BronzeWriter(settings.bronze_path, settings.app_id)
        self.dead_letters = make_sink(settings)
        self.event_log = EventLog(settings.event_log_path, self.instance_id)
        self.decoder = Decoder(registry, settings.unknown_schema_retries, settings.registry_retry_backoff_s)
        self.consumer = Consumer({**settings.consumer_config(), "error_cb": self._kafka_error})
        self._check_kafka()
        self.positions: dict[TopicPartition, int | None] = {}
        self.buffer: list[Message] = []
        # Set when partitions were revoked or lost since the buffer was last emptied: only then
        # can it hold records of partitions this instance no longer owns.
        self.ownership_shrank = False
        self.buffer_bytes = 0
        self.buffer_since = 0.0
        self.last_poll = time.monotonic()
        self.stopping = False
        self.fatal: IngestError | None = None
        self.commits = 0
        self.idle = False
        self.lag_checked = 0.0

    # -- setup -----------------------------------------------------------------------------
    def _kafka_error(self, err: KafkaError) -> None:
        if err.code() in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
            _log("kafka_unreachable", error=err.str())
        elif err.fatal():
            self.fatal = IngestError(f"Kafka fatal error: {err.str()}")
        else:
            _log("kafka_error", error=err.str())

    def _check_kafka(self) -> None:
        try:
            metadata = self.consumer.list_topics(timeout=15)
        except KafkaException as err:
            self.consumer.close()
            raise ConfigError(
                f"Kafka at {self.settings.bootstrap_servers} did not answer within 15 s "
                f"({err.args[0].str()}); "
                "check bootstrap_servers and the security settings"
            ) from None
        missing = [t for t in self.settings.topics if t not in metadata.topics]
        if missing:
            self.consumer.close()
            raise ConfigError(f"topic(s) {missing} do not exist on {self.settings.bootstrap_servers}")

    # -- rebalance callbacks ---------------------------------------------------------------
    def _on_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        """Seek every assigned partition to the offset Delta holds; the earliest if it never landed.

        Never 'latest'. A Delta offset that fell out of retention makes the fetch fail with
        _AUTO_OFFSET_RESET (auto.offset.reset=error), handled loudly in ``_offset_out_of_range``.
        """
        for partition in partitions:
            tp = _tp(partition)
            position = StartPosition(tp, self.writer.landed(tp))
            self.positions[tp] = position.landed
            partition.offset = OFFSET_BEGINNING if position.next_offset is None else position.next_offset
        consumer.assign(partitions)
        ranges = {str(_tp(p)): p.offset for p in partitions}
        _log("assigned", instance=self.instance_id, start_offsets=ranges)
        self.event_log.record(Event("assigned", message=json.dumps(ranges)))

    def _on_revoke(self, _consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        if self.buffer:
            self.flush()  # we still own the partitions during revoke: land what we have
        for partition in partitions:
            self.positions.pop(_tp(partition), None)
        self.ownership_shrank = True
        self.event_log.record(Event("revoked", message=", ".join(str(_tp(p)) for p in partitions)))

    def _on_lost(self, _consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self._drop("partitions_lost")
        for partition in partitions:
            self.positions.pop(_tp(partition), None)
        self.ownership_shrank = True

    # -- main loop -------------------------------------------------------------------------
    def run(self) -> int:
        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        self.event_log.record(Event("start", message=self.settings.model_dump_json(exclude={"kafka"})))
        _log("start", instance=self.instance_id, topics=self.settings.topics, group=self.settings.group_id)
        started = time.monotonic()
        try:
            self.consumer.subscribe(
                self.settings.topics,
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            while not self.stopping:
                self._poll()
                if self.fatal is not None:
                    raise self.fatal
                if self._due() or (self.until_caught_up and self.idle):
                    # A run to catch up lands its tail as soon as a poll comes back empty: waiting
                    # flush_interval_s for records that are not coming only delays the exit.
                    self.flush()
                if self.idle and not self.buffer and time.monotonic() - self.lag_checked >= 1.0:
                    self.lag_checked = time.monotonic()
                    if self._caught_up(started) and self.until_caught_up:
                        break
            if self.fatal is None:
                self.flush()
        finally:
            self.consumer.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        if self.fatal is not None:
            raise self.fatal
        self.event_log.record(Event("stop", message=f"{self.commits} commits"))
        _log("stop", instance=self.instance_id, commits=self.commits)
        return 0

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        _log("signal", signal=signal.Signals(signum).name, action="flush, commit and exit")
        self.stopping = True

    def _poll(self) -> None:
        room = max(1, self.settings.flush_rows - len(self.buffer))
        records = self.consumer.consume(num_messages=min(room, 20_000), timeout=0.1)
        self.last_poll = time.monotonic()
        self.idle = not records
        # Whole-list passes: errors are rare, so the common case touches each record twice in C.
        failed = [(r, err) for r in records if (err := r.error()) is not None]
        if failed:
            records = [r for r in records if r.error() is None]
        if records:
            if not self.buffer:
                self.buffer_since = time.monotonic()
            self.buffer += records
            self.buffer_bytes += sum(map(len, records))  # len(Message): its value's size, 0 for null
        for record, err in failed:
            if err.code() == KafkaError._AUTO_OFFSET_RESET:
                self._offset_out_of_range(record)
            elif err.code() != KafkaError._PARTITION_EOF:
                _log("consume_error", error=err.str())

    def _offset_out_of_range(self, record: Message) -> None:
        """Delta's offset is not in Kafka any more (retention deleted it unread): a loud, recorded event."""
        tp = TopicPartition(record.topic() or "", record.partition() or 0)
        landed = self.positions.get(tp)
        failed_at = record.offset()  # the offset the fetch asked for
        first_missing = (
            failed_at if failed_at is not None and failed_at >= 0 else (0 if landed is None else landed + 1)
        )
        try:
            ktp = KafkaTopicPartition(tp.topic, tp.partition)
            log_start = self.consumer.get_watermark_offsets(ktp, timeout=5, cached=False)[0]
        except KafkaException:
            log_start = -1
        missing = f"{first_missing}..{log_start - 1}" if log_start > 0 else f"from {first_missing}"
        gap = (
            f"{tp}: offsets {missing} are no longer in Kafka (retention deleted them before they were "
            f"landed); Kafka now starts at {log_start}: {record.error()}"
        )
        metrics.EXPIRED_OFFSETS.inc()
        log.error(
            json.dumps({"event": "offset_expired", "detail": gap, "policy": self.settings.on_expired_offset})
        )
        self.event_log.record(Event("offset_expired", message=gap))
        if self.settings.on_expired_offset == "fail":
            self.fatal = OffsetExpiredError(
                f"{gap}; set on_expired_offset=earliest to accept the gap and go on"
            )
        else:
            self._restart_at(tp, log_start if log_start >= 0 else OFFSET_BEGINNING)

    def _restart_at(self, tp: TopicPartition, offset: int) -> None:
        """Move ``tp`` to ``offset``; the other partitions stay at their positions.

        librdkafka refuses seek() on a partition whose offset reset failed (_STATE), so the
        assignment is set anew.
        """
        assignment = []
        for part in self.consumer.position(self.consumer.assignment()):
            landed = self.positions.get(_tp(part))
            resume = part.offset if part.offset >= 0 else (OFFSET_BEGINNING if landed is None else landed + 1)
            assignment.append(
                KafkaTopicPartition(part.topic, part.partition, offset if _tp(part) == tp else resume)
            )
        self.consumer.assign(assignment)

    def _due(self) -> bool:
        if not self.buffer:
            return False
        s = self.settings
        return (
            len(self.buffer) >= s.flush_rows
            or self.buffer_bytes >= s.flush_bytes
            or time.monotonic() - self.buffer_since >= s.flush_interval_s
        )

    def _caught_up(self, started: float) -> bool:
        if not self.positions:
            if self.until_caught_up and time.monotonic() - started > self.settings.caught_up_timeout_s:
                raise IngestError(
                    f"no partition was assigned within {self.settings.caught_up_timeout_s:.0f} s"
                )
            return False
        done = True
        for tp, landed in list(self.positions.items()):
            ktp = KafkaTopicPartition(tp.topic, tp.partition)
            try:
                # The fetcher's cached watermarks are fresh while we consume; ask the broker otherwise.
                low, high = self.consumer.get_watermark_offsets(ktp, cached=True)
                if low < 0 or high < 0:
                    low, high = self.consumer.get_watermark_offsets(ktp, timeout=5, cached=False)
            except KafkaException:
                return False
            landed_next = low if landed is None else landed + 1
            metrics.LAG.labels(tp.topic, str(tp.partition)).set(max(0, high - landed_next))
            if landed_next < high:
                position = self.consumer.position([ktp])[0].offset
                done &= position >= high  # only control records (transaction markers) remain
        return done

    # -- flushing --------------------------------------------------------------------------
    def _drop(self, reason: str, detail: str = "") -> None:
        """Forget the uncommitted batch and rewind owned partitions to what Delta holds."""
        if self.buffer:
            metrics.DROPPED_BATCHES.labels(reason).inc()
            _log("batch_dropped", reason=reason, records=len(self.buffer), detail=detail)
        self.buffer, self.buffer_bytes, self.ownership_shrank = [], 0, False
        for tp in list(self.positions):
            landed = self.writer.landed(tp)
            self.positions[tp] = landed
            offset = OFFSET_BEGINNING if landed is None else landed + 1
            # No longer assigned: the next assignment seeks to Delta's offset anyway.
            with contextlib.suppress(KafkaException):
                self.consumer.seek(KafkaTopicPartition(tp.topic, tp.partition, offset))

    def flush(self) -> None:
        if not self.buffer:
            return
        batch_id = f"{self.instance_id}-{self.commits}-{uuid.uuid4().hex[:6]}"
        try:
            self._land(batch_id)
        except RegistryUnavailable as err:
            self.event_log.record(Event("registry_unavailable", batch_id=batch_id, message=str(err)))
            self._drop("registry_unavailable", str(err))
            time.sleep(min(5.0, self.settings.registry_retry_backoff_s * 4))
        except FencedError as err:
            self.event_log.record(Event("fenced", batch_id=batch_id, message=str(err)))
            self._drop("fenced", str(err))

    def _land(self, batch_id: str) -> None:
        total = Stopwatch()
        records = self._owned(self.buffer) if self.ownership_shrank else self.buffer
        decoded = self.decoder.decode(records, self.writer.columns())  # type: ignore[arg-type]
        decode_ms = total.ms()
        hooks.reach("decoded")
        if decoded.new_columns:
            self.writer.add_columns(decoded.new_columns)
            names = [c.name for c in decoded.new_columns]
            _log("schema_evolved", batch_id=batch_id, new_columns=names)
            self.event_log.record(Event("schema_evolved", batch_id=batch_id, message=", ".join(names)))
        write = Stopwatch()
        adds = self.writer.write_files(decoded.table) if decoded.table is not None else []
        ranges = _ranges(decoded)
        landings = {tp: Landing(self.positions[tp], r["last_offset"]) for tp, r in ranges.items()}
        self.dead_letters.write(decoded.dead_letters, {tp: lg.last for tp, lg in landings.items()}, batch_id)
        hooks.reach("dead_letters_written")
        write_ms = write.ms()
        idle_s = time.monotonic() - self.last_poll
        if idle_s * 1000 >= 0.8 * self.settings.max_poll_interval_ms:
            limit = self.settings.max_poll_interval_ms
            detail = f"{idle_s:.1f} s since the last poll, max.poll.interval.ms={limit}"
            self.event_log.record(Event("stale_batch_dropped", batch_id=batch_id, message=detail))
            self._drop("outlived_max_poll_interval", detail)
            return
        commit = Stopwatch()
        version = self.writer.commit(adds, landings, {"batch_id": batch_id, "instance_id": self.instance_id})
        commit_ms = commit.ms()
        hooks.reach("delta_committed")
        for tp, landing in landings.items():
            self.positions[tp] = landing.last
        self._mirror_to_kafka(landings)
        self.buffer, self.buffer_bytes, self.ownership_shrank = [], 0, False
        self.commits += 1
        self._record_commit(batch_id, version, ranges, decoded, decode_ms, write_ms, commit_ms, total.ms())
        self._maybe_compact()

    def _owned(self, records: list[Message]) -> list[Message]:
        """The records of partitions this instance still owns (all of them, but for a revoke race)."""
        held = set(zip([r.topic() for r in records], [r.partition() for r in records], strict=True))
        if all(TopicPartition(topic or "", partition or 0) in self.positions for topic, partition in held):
            return records
        return [r for r in records if TopicPartition(r.topic() or "", r.partition() or 0) in self.positions]

    def _mirror_to_kafka(self, landings: dict[TopicPartition, Landing]) -> None:
        offsets = [KafkaTopicPartition(tp.topic, tp.partition, lg.last + 1) for tp, lg in landings.items()]
        try:
            self.consumer.commit(offsets=offsets, asynchronous=True)
        except KafkaException as err:  # only the lag mirror is stale; Delta holds the truth
            _log("kafka_commit_failed", error=str(err))

    def _record_commit(
        self,
        batch_id: str,
        version: int,
        ranges: dict[TopicPartition, dict[str, Any]],
        decoded: DecodedBatch,
        decode_ms: float,
        write_ms: float,
        commit_ms: float,
        total_ms: float,
    ) -> None:
        rows = decoded.table.num_rows if decoded.table is not None else 0
        stages = Counter(d.error.stage for d in decoded.dead_letters)
        metrics.ROWS.inc(rows)
        for stage, count in stages.items():
            metrics.DEAD_LETTERS.labels(stage).inc(count)
            metrics.DECODE_ERRORS.labels(stage).inc(count)
        metrics.BATCH_SECONDS.observe(total_ms / 1000)
        metrics.COMMIT_SECONDS.observe(commit_ms / 1000)
        schema_ids = sorted(decoded.schema_ids)
        _log(
            "batch",
            batch_id=batch_id,
            bronze_version=version,
            partitions={
                str(tp): f"{r['first_offset']}-{r['last_offset']}" for tp, r in sorted(ranges.items())
            },
            rows=rows,
            dead_letters=dict(stages),
            schema_ids=schema_ids,
            decode_ms=decode_ms,
            write_ms=write_ms,
            commit_ms=commit_ms,
            total_ms=total_ms,
        )
        self.event_log.record(
            Event(
                "commit",
                batch_id=batch_id,
                bronze_version=version,
                partitions=[
                    {"topic": tp.topic, "partition": tp.partition, **r} for tp, r in sorted(ranges.items())
                ],
                rows=rows,
                dead_letters=len(decoded.dead_letters),
                schema_ids=schema_ids,
                decode_ms=decode_ms,
                write_ms=write_ms,
                commit_ms=commit_ms,
                total_ms=total_ms,
                message="; ".join(sorted({str(d.error) for d in decoded.dead_letters})[:5]) or None,
            )
        )

    def _maybe_compact(self) -> None:
        every = self.settings.compact_every_commits
        if every and self.commits % every == 0:
            from ingest.maintenance import compact

            _log("compaction", result=compact(self.settings.bronze_path))

    def health(self) -> dict[str, object]:
        since_poll = time.monotonic() - self.last_poll
        ok = self.fatal is None and since_poll * 1000 < self.settings.max_poll_interval_ms
        return {
            "ok": ok,
            "instance": self.instance_id,
            "seconds_since_poll": round(since_poll, 2),
            "partitions": sorted(str(tp) for tp in self.positions),
            "commits": self.commits,
        }


def _ranges(decoded: DecodedBatch) -> dict[TopicPartition, dict[str, Any]]:
    """Per partition: first and last offset of the batch, rows landed and dead letters."""
    out: dict[TopicPartition, dict[str, Any]] = {}
    if decoded.offsets is not None and decoded.offsets.num_rows:
        stats = decoded.offsets.group_by(["topic", "partition"], use_threads=False).aggregate(
            [("offset", "min"), ("offset", "max"), ("offset", "count")]
        )
        for row in stats.to_pylist():
            tp = TopicPartition(row["topic"] or "", row["partition"] or 0)
            out[tp] = {
                "first_offset": row["offset_min"],
                "last_offset": row["offset_max"],
                "rows": row["offset_count"],
                "dead_letters": 0,
            }
    for letter in decoded.dead_letters:
        tp = TopicPartition(letter.record.topic() or "", letter.record.partition() or 0)
        out[tp]["rows"] -= 1
        out[tp]["dead_letters"] += 1
    return out


# -- CLI -----------------------------------------------------------------------------------
def _kv(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not key=value, e.g. fetch.min.bytes=1")
    return key, value


def add_settings_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, help="TOML settings file (flags and env win over it)")
    parser.add_argument("--bootstrap-servers", help="Kafka bootstrap servers")
    parser.add_argument("--topic", action="append", dest="topics", help="topic to consume (repeatable)")
    parser.add_argument("--group-id", help="consumer group")
    parser.add_argument("--registry-url", help="Schema Registry URL (Confluent API)")
    parser.add_argument("--warehouse-dir", type=Path, help="lakehouse root; tables under <dir>/bronze")
    parser.add_argument("--kafka", action="append", type=_kv, metavar="KEY=VALUE", help="librdkafka setting")


def settings_from_args(args: argparse.Namespace, **extra: Any) -> IngestSettings:
    flags = {
        "bootstrap_servers": args.bootstrap_servers,
        "topics": args.topics,
        "group_id": args.group_id,
        "registry_url": args.registry_url,
        "warehouse_dir": args.warehouse_dir,
        "kafka": dict(args.kafka) if args.kafka else None,
        **extra,
    }
    return load_settings(args.config, **flags)


def _run_command(args: argparse.Namespace) -> int:
    extra = {
        "flush_rows": args.flush_rows,
        "flush_interval_s": args.flush_interval_s,
        "metrics_port": args.metrics_port,
    }
    settings = settings_from_args(args, **extra)
    logging.basicConfig(level=settings.log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("deltalake").setLevel(logging.WARNING)
    hooks.install()
    service = Service(settings, until_caught_up=args.until_caught_up)
    server = None
    if settings.metrics_port:
        try:
            server = metrics.serve(settings.metrics_host, settings.metrics_port, service.health)
        except OSError as err:
            raise ConfigError(f"metrics port {settings.metrics_port} unavailable: {err.strerror}") from None
    # Everything allocated so far (imports, clients) lives as long as the process: freezing it
    # spares the full collections that batches of ~100k records trigger from rescanning it.
    gc.collect()
    gc.freeze()
    try:
        return service.run()
    finally:
        if server is not None:
            server.shutdown()


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="consume Kafka and land events exactly once in bronze Delta",
        description="Runs until stopped (SIGTERM/SIGINT flush, commit and exit). Settings: flags, "
        "GAMELAKE_INGEST_* environment variables, --config file.",
    )
    add_settings_arguments(parser)
    parser.add_argument("--until-caught-up", action="store_true", help="exit once every partition's lag is 0")
    parser.add_argument("--flush-rows", type=int, help="commit a batch at this many records")
    parser.add_argument("--flush-interval-s", type=float, help="commit a batch at this age (seconds)")
    parser.add_argument("--metrics-port", type=int, help="port of /metrics and /healthz (0 disables)")
    parser.set_defaults(handler=_run_command)
