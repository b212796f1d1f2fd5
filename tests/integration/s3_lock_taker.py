"""A process standing in for a host for the build-lock tests: at wall-clock time START it tries
to take dbt's build lock under TABLES (an ``s3://`` prefix), holds it HOLD seconds, and prints
``held`` or ``refused``.

Run as ``python -m tests.integration.s3_lock_taker TABLES HOLDER START HOLD``; it finds S3
through the standard AWS variables, as the refresh does.
"""

from __future__ import annotations

import sys
import time

from ingest.landing.delta.table_location import TableLocation
from ingest.ops.dbt_build_lock import BuildLockHeld, holding_build_lock


def main(tables: str, holder: str, start: float, hold: float) -> None:
    place = TableLocation.of(tables)  # credentials resolved before the race, not in it
    time.sleep(max(0.0, start - time.time()))
    try:
        with holding_build_lock(place, "refresh", holder):
            print("held", flush=True)
            time.sleep(hold)
    except BuildLockHeld:
        print("refused", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
