# gamelake: the README's verbs. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.gamelake-installed
PROTO_STAMP := dev/gamelake_dev/proto/gen/.stamp
JVM_STAMP := .cache/jvm/.stamp
SPARK_STAMP := $(VENV)/.gamelake-spark-defaults
S3A_STAMP := .cache/jvm/.stamp-s3
PYTEST_ARGS ?=
SOAK_MINUTES ?= 120
SOAK_RATE ?= 10000
SOAK_THEN_MINUTES ?= 30
SOAK_THEN_RATE ?= 20000
FRESH_MINUTES ?= 10
FRESH_RATE ?= 20000
FRESH_EVENT_TIMES ?= live

export DBT_PROFILES_DIR := $(CURDIR)/profiles
export DBT_PROJECT_DIR := $(CURDIR)

.PHONY: help setup proto jvm jvm-s3 run-s3 stack-up stack-down stack-status produce run run-continuous test test-unit lint alerts-check compact audit bench bench-soak bench-freshness bench-throughput bench-incremental bench-writer bench-memory bench-decode bench-profile docs docs-config docs-serve lock clean

help: ## List the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-13s %s\n", $$1, $$2}'

NATIVE := native/protojson
# rustup's cargo, for a shell that did not source ~/.cargo/env
export PATH := $(HOME)/.cargo/bin:$(PATH)

$(STAMP): pyproject.toml dev/pyproject.toml constraints.txt $(NATIVE)/Cargo.toml $(NATIVE)/Cargo.lock $(wildcard $(NATIVE)/src/*.rs)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]' -e ./dev
	@# The JSON-text renderer in Rust, built by maturin from crates.io: optional, the Python one renders the same.
	@if command -v cargo >/dev/null; then $(BIN)/pip install --quiet $(NATIVE); \
	else echo "setup: no cargo on PATH: skipped $(NATIVE), the Rust renderer of the JSON-text columns (10x faster); the Python renderer renders them"; fi
	touch $@

$(PROTO_STAMP): $(STAMP) $(wildcard dev/gamelake_dev/proto/v*/gamelake/events/*.proto)
	$(BIN)/python -m gamelake_dev.demo_schemas compile
	touch $@

$(JVM_STAMP): $(STAMP) $(wildcard stack/maven/*/pom.xml) dev/gamelake_dev/localstack/artifacts.py $(wildcard native/local-logstore/src/io/gamelake/delta/*.java)
	$(BIN)/python -m gamelake_dev.localstack fetch
	touch $@

$(S3A_STAMP): $(JVM_STAMP) stack/maven/hadoop-aws/pom.xml $(wildcard native/delta-logstore/src/io/gamelake/delta/*.java)
	$(BIN)/python -m gamelake_dev.localstack fetch-s3
	touch $@

$(SPARK_STAMP): $(JVM_STAMP) ingest/core/spark/session.py
	$(BIN)/python -m ingest.core.spark.session write-defaults
	touch $@

setup: $(STAMP) $(PROTO_STAMP) $(JVM_STAMP) $(SPARK_STAMP) ## Install everything: venv, generated protobuf, JVM jars

proto: $(PROTO_STAMP) ## Compile the event schema versions (dev/gamelake_dev/proto) into descriptor sets

jvm: $(JVM_STAMP) ## Resolve Kafka, Apicurio Registry and Delta jars from Maven Central into .cache/jvm

jvm-s3: $(S3A_STAMP) ## Spark on S3: resolve hadoop-aws + the AWS SDK (690 MB), build the conditional-put log store

stack-up: setup ## Start Kafka (KRaft) and the Schema Registry on loopback (idempotent)
	$(BIN)/ingest stack up

stack-down: ## Stop the local stack (idempotent)
	@if [ -x $(BIN)/ingest ]; then $(BIN)/ingest stack down; else echo "stack: nothing installed, nothing running"; fi

stack-status: ## Show where each server listens and whether it is healthy
	$(BIN)/ingest stack status

produce: stack-up ## Produce a demo stream of mixed schema versions
	$(BIN)/ingest produce --count 20000 --seed 42

run: setup ## The main job on the embedded default: stack -> produce -> ingest -> dbt build -> docs
	$(BIN)/python -m gamelake_dev.pipeline

run-s3: setup $(S3A_STAMP) ## The main job with the lakehouse on the local S3 server and a PostgreSQL metastore
	stack/ensure-postgresql.sh
	$(BIN)/python -m gamelake_dev.pipeline --s3

run-continuous: setup ## Live: producer + ingest + continuous refresh of silver and gold until Ctrl-C
	$(BIN)/python -m gamelake_dev.continuous

test: setup $(S3A_STAMP) ## Run the whole test suite (starts and stops the local stack itself)
	stack/ensure-postgresql.sh
	@if command -v cargo >/dev/null; then cargo test --quiet --locked --manifest-path $(NATIVE)/Cargo.toml; \
	else echo "test: no cargo on PATH: $(NATIVE)'s own tests skipped"; fi
	$(BIN)/pytest $(PYTEST_ARGS)

test-unit: setup ## Only the tests that need no services
	$(BIN)/pytest tests/unit $(PYTEST_ARGS)

lint: setup alerts-check ## ruff, mypy on ingest/, dev/ and bench/, the package layers (import-linter), sqlfluff, the alert rules, rustfmt + clippy
	$(BIN)/ruff check ingest dev tests bench
	$(BIN)/ruff format --check ingest dev tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/sqlfluff lint models macros data-tests
	@if command -v cargo >/dev/null; then \
	  cargo fmt --check --manifest-path $(NATIVE)/Cargo.toml && \
	  cargo clippy --quiet --locked --manifest-path $(NATIVE)/Cargo.toml -- -D warnings; \
	else echo "lint: no cargo on PATH: rustfmt and clippy skipped"; fi

alerts-check: ## promtool: the alert rules, the scrape config and the alerts' unit tests (ops/prometheus)
	ops/prometheus/ensure-promtool.sh
	promtool check rules ops/prometheus/alerts.yml
	promtool check config ops/prometheus/prometheus.yml
	promtool test rules ops/prometheus/alerts_test.yml

compact: setup ## Purge old dead letters; compact, checkpoint and vacuum the bronze, dead-letter and event-log tables
	$(BIN)/python -m ingest.ops.upkeep_now

bench: setup ## Run the benchmarks and record results under bench/results
	$(BIN)/python -m bench.run

bench-soak: setup ## Producer + ingest for SOAK_MINUTES (120) at SOAK_RATE (10000)/s, then SOAK_THEN_MINUTES (30) at SOAK_THEN_RATE (20000)/s (bench/results/soak.md)
	$(BIN)/python -m bench.soak --minutes $(SOAK_MINUTES) --rate $(SOAK_RATE) --then-minutes $(SOAK_THEN_MINUTES) --then-rate $(SOAK_THEN_RATE)

audit: setup ## The whole-table audit: bronze keys unique, gold equal to a recompute from silver
	$(BIN)/dbt build --select tag:audit

bench-freshness: stack-up ## Continuous mode: producer + ingest + refresh, produce->gold per layer (bench/results/freshness.md)
	$(BIN)/python -m bench.freshness --minutes $(FRESH_MINUTES) --rate $(FRESH_RATE) --event-times $(FRESH_EVENT_TIMES)

bench-throughput: setup ## Silver rows/s on a 1,000,000-event batch: dbt against hand-written Spark SQL
	$(BIN)/python -m bench.silver_throughput

bench-incremental: setup ## Incremental dbt build cost vs history and games (bench/results/incremental.md)
	bench/incremental.sh

bench-profile: setup ## Where a warm refresh cycle's time goes, per model and statement, at 5 and 60 games (bench/results/refresh_profile.md)
	$(BIN)/python -m bench.refresh_profile

bench-decode: setup ## Decode CPU per event, nested studio schema against the flat event (bench/results/decode_nested.md)
	$(BIN)/python -m bench.decode_nested

bench-writer: setup ## Measure the bronze writer: delta-rs vs Spark on the same batches (bench/results/writer_choice.md)
	$(BIN)/python -m bench.writer_choice

bench-memory: setup ## What a writer of bronze keeps in memory against the tombstones in its checkpoint (bench/results/writer_memory.md)
	$(BIN)/python -m bench.writer_memory

docs: setup ## Generate the dbt docs site (target/), tests hidden from the default lineage graph
	$(BIN)/dbt docs generate
	$(BIN)/python -m ingest.ops.docs_site finish

docs-config: setup ## Write doc/CONFIGURATION.md from the settings class (a unit test fails when it is stale)
	$(BIN)/python -m ingest.core.settings.reference write

docs-serve: setup ## Serve the generated docs site on http://127.0.0.1:8580 (not `dbt docs serve`: it un-hides the tests)
	$(BIN)/python -m ingest.ops.docs_site serve --port 8580

lock: $(STAMP) ## Re-freeze constraints.txt from the current venv
	$(BIN)/pip freeze --exclude-editable --exclude gamelake-protojson | sort -f > constraints.txt

clean: stack-down ## Remove local state (stack, Spark cluster, warehouse); keeps the venv and jar cache
	@if [ -x $(BIN)/python ]; then $(BIN)/python -m gamelake_dev.localstack.spark_cluster down; fi
	rm -rf .stack warehouse target logs

# --- dbt (analytics engineers) -------------------------------------------------
.PHONY: games dbt-build dbt-test lint-sql cluster-up cluster-down dbt-build-cluster

games: setup ## After editing seeds/games.csv: validate it and generate the per-game dbt models
	$(BIN)/ingest games sync

dbt-build: setup ## dbt build (seed, silver, gold, tests) on the embedded Spark; refuses a stale games seed
	$(BIN)/ingest games sync --check
	$(BIN)/dbt build

dbt-test: setup ## dbt unit and data tests only
	$(BIN)/dbt test

lint-sql: setup ## sqlfluff on models and macros (the SQL the macros render)
	$(BIN)/sqlfluff lint models macros data-tests

cluster-up: setup ## Start a Spark standalone master + worker + Thrift Server on loopback
	$(BIN)/python -m gamelake_dev.localstack.spark_cluster up

cluster-down: ## Stop the local Spark cluster (idempotent)
	$(BIN)/python -m gamelake_dev.localstack.spark_cluster down

dbt-build-cluster: cluster-up ## dbt build against the Spark cluster (target cluster, thrift)
	$(BIN)/ingest games sync --check
	$(BIN)/dbt build --target cluster
