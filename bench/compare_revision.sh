#!/usr/bin/env bash
# The decode and ingest benchmarks of another revision against this checkout, in one run on one
# machine, alternating so that both sides see the same machine state.
#
#   bench/compare_revision.sh REV [ROUNDS]      (needs `make setup` and, for ingest, `make stack-up`)
#
# REV is checked out in a scratch worktree and run with this checkout's venv, its own code first
# on the path. Each side's bench prints its figures; this checkout's are also appended to its
# results files (bench/results/decode_nested.md, ingest.md), the other revision's to its worktree's,
# which is removed at the end.
set -euo pipefail
rev=${1:?usage: bench/compare_revision.sh REV [ROUNDS]}
rounds=${2:-2}
here=$(cd "$(dirname "$0")/.." && pwd)
py="$here/.venv/bin/python"
other="$(mktemp -d)/gamelake-${rev}"
git -C "$here" worktree add -q --detach "$other" "$rev"
trap 'git -C "$here" worktree remove --force "$other"' EXIT

in_other() { (cd "$other" && PYTHONPATH="$other" GAMELAKE_HOME="$other" "$py" "$@"); }
in_here() { (cd "$here" && "$py" "$@"); }
# The other revision's demo schemas, compiled where it keeps them (ingest/dev before the layout).
in_other -m ingest.dev.demo_schemas compile >/dev/null 2>&1 || in_other -m gamelake_dev.demo_schemas compile >/dev/null

# Sizes: EVENTS_DECODE (20,000 per schema) and EVENTS_INGEST (300,000) from the environment.
decode=(-m bench.decode_nested --events "${EVENTS_DECODE:-20000}" --repeats 3)
ingest=(-m bench.run --events "${EVENTS_INGEST:-300000}" --instances 1 --rate 10000 --seconds 15)
for round in $(seq "$rounds"); do
  echo "== round $round: decode, $rev"; in_other "${decode[@]}"
  echo "== round $round: decode, this checkout"; in_here "${decode[@]}"
  echo "== round $round: ingest, $rev"; in_other "${ingest[@]}"
  echo "== round $round: ingest, this checkout"; in_here "${ingest[@]}"
done
