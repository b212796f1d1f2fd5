#!/usr/bin/env bash
# make bench-incremental: the growth laws of an incremental dbt build (bench/incremental.py).
#   history: 20,000 new events on 5,000,000 rows of history against on 20,000 (5 games);
#   games:   60 active games against the stock 5, 60,000 events of history, 6,000 new.
# Each lakehouse is prepared once under BENCH_DIR, warmed by one build, then compared A B A B.
# `bench/incremental.sh history` or `... games` runs one of the two.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${BENCH_DIR:-.cache/bench-incremental}
rounds=${BENCH_ROUNDS:-3}
parts=${1:-history games}
run() { .venv/bin/python -m bench.incremental "$@"; }
# prepare once: a lakehouse that has its state file is reused (delete BENCH_DIR to start over)
prepare() { [[ -f "$2/state.json" ]] || run prepare "$@"; }

if [[ " $parts " == *" history "* ]]; then
    prepare --dir "$dir/history-5m" --history 5000000
    prepare --dir "$dir/history-20k" --history 20000
    run step --dir "$dir/history-5m" >/dev/null && run step --dir "$dir/history-20k" >/dev/null
    run compare --a "$dir/history-5m" --b "$dir/history-20k" --rounds "$rounds" \
        --label "Growth with history: 20,000 new events on 5,000,000 (A) vs 20,000 (B) rows of history, 5 games"
fi
if [[ " $parts " == *" games "* ]]; then
    prepare --dir "$dir/games-60" --history 60000 --games 60
    prepare --dir "$dir/games-5" --history 60000 --games 5
    run step --dir "$dir/games-60" --new 6000 >/dev/null && run step --dir "$dir/games-5" --new 6000 >/dev/null
    run compare --a "$dir/games-60" --b "$dir/games-5" --rounds "$rounds" --new 6000 \
        --label "Growth with games: 60 (A) vs 5 (B) active games, 60,000 events of history, 6,000 new"
fi
