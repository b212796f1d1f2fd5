"""The one typed configuration of the ingest service.

Precedence, highest first: command-line flags, environment variables (``GAMELAKE_INGEST_<FIELD>``),
an optional TOML file (``--config``), then the defaults below. The defaults of the connection
settings are the project-wide variables ``KAFKA_BOOTSTRAP_SERVERS``, ``SCHEMA_REGISTRY_URL`` and
``INGEST_TOPIC`` (see ingest/core/settings/endpoints.py), which the producer and the tests read too.
Secrets are ``SecretStr``: they print as ``**********`` in ``repr``, logs and errors, and are
only unwrapped when handed to librdkafka or the registry client.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from ingest.core.errors import ConfigError
from ingest.core.settings.endpoints import Endpoints
from ingest.core.settings.errors import SETTINGS_FAILURES, SettingsInputs
from ingest.core.settings.paths import WAREHOUSE_DIR, spark_warehouse

ENV_PREFIX = "GAMELAKE_INGEST_"
# Settings the service owns: a passthrough may not override them, or exactly-once breaks.
RESERVED_KAFKA_KEYS = frozenset(
    {"enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset", "group.id", "bootstrap.servers"}
)
# librdkafka properties a typed setting also sets (kafka_config.py applies the precedence rule).
TYPED_KAFKA_PROPERTIES = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_username",
    "sasl.password": "sasl_password",
    "ssl.ca.location": "ssl_ca_location",
    "ssl.certificate.location": "ssl_certificate_location",
    "ssl.key.location": "ssl_key_location",
    "ssl.key.password": "ssl_key_password",
}
KAFKA_ALIASES = {"sasl.mechanisms": "sasl.mechanism"}  # librdkafka accepts both spellings
# Passthrough values that are secrets: kept as SecretStr, so repr, logs and errors never show them.
_SECRET_KAFKA_KEY = re.compile(r"(password|secret|jaas|token|\.pem$|key\.pem)", re.IGNORECASE)


class IngestSettings(BaseSettings):
    """Everything the ingest service reads. Each field can be set as GAMELAKE_INGEST_<NAME>."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid", validate_default=True)

    # Kafka
    bootstrap_servers: str = Field(
        default_factory=lambda: Endpoints.from_env().bootstrap_servers,
        description="Kafka bootstrap servers, host:port,... (default: $KAFKA_BOOTSTRAP_SERVERS)",
    )
    topics: list[str] = Field(
        default_factory=lambda: [Endpoints.from_env().topic],
        description="Topics to consume (JSON list in the environment; default: [$INGEST_TOPIC]).",
    )
    group_id: str = Field(
        "gamelake-ingest", description="Consumer group; instances sharing it split partitions."
    )
    security_protocol: Literal["plaintext", "ssl", "sasl_plaintext", "sasl_ssl"] = Field(
        "plaintext", description="Kafka security.protocol."
    )
    sasl_mechanism: str | None = Field(None, description="SASL mechanism, e.g. PLAIN, SCRAM-SHA-512.")
    sasl_username: str | None = Field(None, description="SASL user name.")
    sasl_password: SecretStr | None = Field(None, description="SASL password (secret).")
    ssl_ca_location: Path | None = Field(None, description="CA bundle to verify the brokers.")
    ssl_certificate_location: Path | None = Field(None, description="Client certificate for mutual TLS.")
    ssl_key_location: Path | None = Field(None, description="Client private key for mutual TLS.")
    ssl_key_password: SecretStr | None = Field(None, description="Password of the client key (secret).")
    kafka: dict[str, str | SecretStr] = Field(
        default_factory=dict,
        description="Any other librdkafka setting, passed through; it wins over a typed setting left at "
        "its default (secret-looking values are kept as secrets).",
    )
    session_timeout_ms: int = Field(10_000, ge=1_000, description="Consumer session.timeout.ms.")
    max_poll_interval_ms: int = Field(
        300_000,
        ge=1_000,
        description="max.poll.interval.ms; a batch older than this is dropped, not committed.",
    )

    # Schema Registry
    registry_url: str = Field(
        default_factory=lambda: Endpoints.from_env().registry_url,
        description="Confluent-compatible Schema Registry URL (default: $SCHEMA_REGISTRY_URL).",
    )
    registry_username: str | None = Field(None, description="Registry basic-auth user.")
    registry_password: SecretStr | None = Field(None, description="Registry basic-auth password (secret).")
    registry_bearer_token: SecretStr | None = Field(None, description="Registry bearer token (secret).")
    registry_timeout_s: float = Field(10.0, gt=0, description="Timeout of one registry request.")
    unknown_schema_retries: int = Field(
        3, ge=0, description="Extra lookups of a schema id the registry does not know, before dead-lettering."
    )
    registry_retry_backoff_s: float = Field(0.5, ge=0, description="First backoff between registry retries.")

    # Delta tables
    warehouse_dir: Path = Field(
        WAREHOUSE_DIR, description="Root of the lakehouse; tables live under bronze/."
    )
    warehouse_uri: str | None = Field(
        None,
        description="s3://bucket/prefix: the landing tables (bronze, dead letters, event log) on S3 "
        "under <uri>/bronze/, in place of warehouse_dir; credentials and endpoint from the standard AWS "
        "settings. Every command reaches them there.",
    )
    dbt_warehouse_dir: Path | None = Field(
        None,
        description="Where dbt's Spark keeps silver and gold (spark.sql.warehouse.dir): "
        "<dir>/silver.db/silver_<game>, <dir>/gold.db/gold_<game>_...; default <warehouse_dir>/spark, "
        "or <warehouse_uri>/spark-warehouse when warehouse_uri is set.",
    )
    app_id: str = Field(
        "gamelake-ingest",
        description="Delta app-transaction prefix holding the offsets; "
        "keep it stable across groups and restarts.",
    )

    # Batching
    flush_rows: int = Field(50_000, ge=1, description="Commit a batch at this many messages...")
    flush_bytes: int = Field(64 * 1024 * 1024, ge=1, description="...or at this many value bytes...")
    flush_interval_s: float = Field(
        1.0, gt=0, description="...or when its oldest message is this old (counted from the poll before it)."
    )

    # Failure policy
    dead_letter_sink: Literal["delta", "topic"] = Field("delta", description="Where dead letters go.")
    dead_letter_topic: str | None = Field(None, description="Dead-letter topic when dead_letter_sink=topic.")
    dead_letter_retention_days: int = Field(
        30,
        ge=0,
        description="`ingest dlq purge` and `make compact` delete dead letters (raw bytes that may hold "
        "player data) older than this; 0 keeps them.",
    )
    on_expired_offset: Literal["fail", "earliest"] = Field(
        "fail",
        description="When the offset stored in Delta fell out of Kafka's retention: "
        "stop (fail) or log loudly, "
        "record the gap in the event log and continue from the earliest offset.",
    )

    # Observability and maintenance
    metrics_port: int = Field(9108, ge=0, le=65535, description="Port of /metrics and /healthz; 0 disables.")
    metrics_host: str = Field("127.0.0.1", description="Address the metrics server binds.")
    compact_every_commits: int = Field(
        100,
        ge=0,
        description="Every N commits, compact, checkpoint, clean the log of and vacuum bronze, dead "
        "letters and the event log, in a child process beside the poll loop; 0 disables.",
    )
    log_retention_hours: int = Field(
        48,
        ge=1,
        description="Delta log files older than this (and covered by a checkpoint) are deleted. Also "
        "how far silver may fall behind bronze: its change-feed reads need the log.",
    )
    vacuum_retention_hours: int = Field(
        168, ge=1, description="Data files that compaction replaced are deleted after this long."
    )
    event_log_flush_s: float = Field(
        10.0,
        gt=0,
        description="The event log's per-commit rows are written together at most this often "
        "(other events at once); bronze's own commit metadata holds each batch's id.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field("INFO", description="Log level.")
    log_format: Literal["json", "text", "auto"] = Field(
        "auto", description="Log lines as JSON objects, as text, or auto: JSON unless stderr is a terminal."
    )
    caught_up_timeout_s: float = Field(
        120.0, gt=0, description="--until-caught-up gives up if no partition is assigned within this time."
    )

    # `ingest status`: a value at or past a threshold is a warning (exit 1) or critical (exit 2)
    status_lag_warn_records: int = Field(
        100_000, ge=1, description="`ingest status` warns when the consumer lag reaches this many records."
    )
    status_freshness_warn_s: float = Field(
        900.0,
        gt=0,
        description="`ingest status` warns when a layer trails the one before it by this many seconds "
        "(bronze behind Kafka, silver behind bronze, gold behind silver).",
    )
    status_freshness_crit_s: float = Field(
        3600.0,
        gt=0,
        description="`ingest status` calls a layer critical when it trails the one before it by this many "
        "seconds.",
    )
    status_dead_letters_warn_per_hour: int = Field(
        1,
        ge=1,
        description="`ingest status` warns when one stage dead-lettered this many records in the last hour.",
    )
    status_quarantine_warn_ratio: float = Field(
        0.01,
        ge=0,
        le=1,
        description="`ingest status` warns when this share of a game's rows is in silver_quarantine "
        "(quarantined / (silver + quarantined)).",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: tuple[PydanticBaseSettingsSource, ...] = (init_settings, env_settings)
        config_file = _CONFIG_FILE.get("path")
        if config_file is not None:
            sources += (TomlConfigSettingsSource(settings_cls, toml_file=config_file),)
        return sources

    @field_validator("topics")
    @classmethod
    def _topics_not_empty(cls, topics: list[str]) -> list[str]:
        if not topics or any(not t.strip() for t in topics):
            raise ValueError("name at least one topic, and no empty names")
        return topics

    @field_validator(
        "security_protocol", "dead_letter_sink", "on_expired_offset", "log_format", mode="before"
    )
    @classmethod
    def _lower_case(cls, value: Any) -> Any:
        """Kafka's and librdkafka's docs write SASL_SSL; any case is accepted."""
        return value.lower() if isinstance(value, str) else value

    @field_validator("warehouse_uri")
    @classmethod
    def _s3_uri(cls, uri: str | None) -> str | None:
        if uri is not None and not re.fullmatch(r"s3a?://[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9](/[^\s]*)?", uri):
            raise ValueError(f"{uri!r} is not an S3 location: write s3://bucket/prefix")
        return uri

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_case(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @field_validator("kafka")
    @classmethod
    def _no_reserved_passthrough(cls, kafka: dict[str, str | SecretStr]) -> dict[str, str | SecretStr]:
        clash = sorted(RESERVED_KAFKA_KEYS & kafka.keys())
        if clash:
            raise ValueError(f"{clash} are set by the service itself (exactly-once depends on them)")
        return {
            key: SecretStr(value) if isinstance(value, str) and _SECRET_KAFKA_KEY.search(key) else value
            for key, value in kafka.items()
        }

    @model_validator(mode="after")
    def _consistent(self) -> IngestSettings:
        if self.dead_letter_sink == "topic" and not self.dead_letter_topic:
            raise ValueError("dead_letter_sink=topic needs dead_letter_topic")
        if self.registry_bearer_token is not None and self.registry_username is not None:
            raise ValueError("set registry basic auth or a bearer token, not both")
        if self.max_poll_interval_ms < self.session_timeout_ms:
            raise ValueError("max_poll_interval_ms must be >= session_timeout_ms")
        if self.status_freshness_crit_s < self.status_freshness_warn_s:
            raise ValueError("status_freshness_crit_s must be >= status_freshness_warn_s")
        self._one_source_per_property()
        return self

    def _one_source_per_property(self) -> None:
        """A librdkafka property set both by a typed setting and by the passthrough is ambiguous."""
        for key, field in TYPED_KAFKA_PROPERTIES.items():
            sources = [f"the kafka passthrough's {k!r}" for k in self.kafka if KAFKA_ALIASES.get(k, k) == key]
            if field in self.model_fields_set:
                sources.insert(0, f"{field} (GAMELAKE_INGEST_{field.upper()}, a flag or --config)")
            if len(sources) > 1:
                raise ValueError(
                    f"librdkafka property {key!r} is set twice, by {' and by '.join(sources)}: "
                    "set it once, as the typed setting or in the passthrough"
                )

    @property
    def bronze_path(self) -> Path:
        return self._local_landing("game_events")

    @property
    def dead_letters_path(self) -> Path:
        return self._local_landing("dead_letters")

    @property
    def event_log_path(self) -> Path:
        return self._local_landing("ingest_event_log")

    def landing_table(self, name: str) -> Path | str:
        """A landing table's folder, or its ``s3://`` URI when ``warehouse_uri`` is set."""
        if self.warehouse_uri is not None:
            return f"{self.warehouse_uri.rstrip('/')}/bronze/{name}"
        return self.warehouse_dir / "bronze" / name

    def _local_landing(self, name: str) -> Path:
        """A landing table's local folder, for code that reads local tables only: a clear refusal
        when they are on S3 (``landing_table`` reaches both)."""
        if self.warehouse_uri is not None:
            raise ConfigError(
                f"the landing tables are on object storage ({self.warehouse_uri}), not under warehouse_dir: "
                "unset warehouse_uri (GAMELAKE_INGEST_WAREHOUSE_URI) for this command"
            )
        return self.warehouse_dir / "bronze" / name

    @property
    def dbt_tables_dir(self) -> Path:
        return self.dbt_warehouse_dir or spark_warehouse(self.warehouse_dir)

    @property
    def dbt_tables_location(self) -> Path | str:
        """Where dbt's Spark keeps silver and gold: ``<warehouse_uri>/spark-warehouse`` when the
        lakehouse is on S3 (ingest/core/spark/object_storage.py), else ``dbt_tables_dir``."""
        if self.warehouse_uri is not None and self.dbt_warehouse_dir is None:
            return f"{self.warehouse_uri.rstrip('/')}/spark-warehouse"
        return self.dbt_tables_dir

    def dbt_table_path(self, schema: str, table: str) -> Path | str:
        """A silver or gold table's directory or URI: Spark keeps schema ``s`` in ``<dir>/s.db``."""
        location = self.dbt_tables_location
        if isinstance(location, str):
            return f"{location}/{schema}.db/{table}"
        return location / f"{schema}.db" / table


_CONFIG_FILE: dict[str, Path] = {}


def load_settings(config_file: Path | None = None, **overrides: Any) -> IngestSettings:
    """Build the settings from flags (``overrides``), environment and ``config_file``.

    Invalid input becomes a one-line ConfigError naming the flag, variable or file that holds it
    and the fix, never a traceback; secret values are not echoed back.
    """
    if config_file is not None and not config_file.is_file():
        raise ConfigError(f"settings file {config_file} does not exist")
    flags = {k: v for k, v in overrides.items() if v is not None}
    _CONFIG_FILE.clear()
    if config_file is not None:
        _CONFIG_FILE["path"] = config_file
    try:
        return IngestSettings(**flags)
    except SETTINGS_FAILURES as err:
        inputs = SettingsInputs(IngestSettings.model_fields, ENV_PREFIX, flags, config_file)
        raise inputs.config_error(err) from None
    finally:
        _CONFIG_FILE.clear()
