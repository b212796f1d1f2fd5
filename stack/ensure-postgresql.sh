#!/usr/bin/env bash
# Install Debian's PostgreSQL server binaries when they are missing: the shared metastore
# (dev/gamelake_dev/localstack/metastore.py) runs them on loopback, in the stack's own folder.
# Used by .ci/run; `make run-s3` and the tests name this script when PostgreSQL is missing.
set -euo pipefail
ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && exit 0
echo "PostgreSQL is missing: installing the postgresql package with apt-get" >&2
# Debian's package would create and start a cluster of its own on :5432: we want none running.
mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/gamelake.conf
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
ls /usr/lib/postgresql/*/bin/postgres >/dev/null
