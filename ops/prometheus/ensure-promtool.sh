#!/usr/bin/env bash
# Install Debian's `prometheus` package (promtool and the server) when promtool is missing.
# Used by `make alerts-check`, .ci/run and tests/unit/test_alert_rules.py.
set -euo pipefail
command -v promtool >/dev/null && exit 0
echo "promtool is missing: installing the prometheus package with apt-get" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
# The package enables and starts a server on every interface (:9090). We want none running:
# the pipeline's Prometheus is started by hand, on loopback (README "Observing it").
systemctl disable --now prometheus >/dev/null 2>&1 || service prometheus stop >/dev/null 2>&1 || true
command -v promtool >/dev/null
