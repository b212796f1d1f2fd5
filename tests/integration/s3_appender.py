"""A writer process for the object-storage tests: COUNT one-row appends to the Delta table at URI.

Run as ``python -m tests.integration.s3_appender URI NAME COUNT``; it finds S3 through the
standard AWS variables, as the ingest does (``ingest.core.settings.object_storage``).
"""

from __future__ import annotations

import sys

import pyarrow as pa
from deltalake import CommitProperties, write_deltalake

from ingest.core.settings.object_storage import s3_access


def main(uri: str, name: str, count: int) -> None:
    options = s3_access(uri).delta_rs_options()
    for index in range(count):
        row = pa.table({"writer": [name], "index": [index]})
        # Enough retries that a writer never gives up while the other holds the next version.
        write_deltalake(
            uri,
            row,
            mode="append",
            storage_options=options,
            commit_properties=CommitProperties(max_commit_retries=1000),
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
