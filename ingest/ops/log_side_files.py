"""The files a Delta log cleanup leaves behind in ``_delta_log``, and their removal.

delta-rs' ``cleanup_metadata`` deletes a table's expired commits (``N.json``) and checkpoints,
but not what Spark wrote beside each commit: Delta's checksum ``N.crc`` and, on a local disk,
Hadoop's hidden checksums ``.N.json.crc`` and ``.N.crc.crc`` (its ChecksumFileSystem). So three
of a commit's four entries stayed in ``_delta_log`` for ever, and Spark lists that whole
directory for a table's reads and commits (``HadoopFileSystemLogStore.listFrom``: a status call
per entry on a local disk, a LIST request per 1,000 on S3; bench/results/log_listing.md). After
each cleanup the upkeep removes the side files of the versions older than the oldest commit or
checkpoint left, which no reader can load any more.
"""

from __future__ import annotations

import logging
import re

from botocore.exceptions import BotoCoreError, ClientError

from ingest.landing.delta.log_folder import LogFolder

log = logging.getLogger("gamelake.refresh")

# what a reader loads a version from: a commit, or a checkpoint (classic, multi-part or V2)
LOADABLE = re.compile(
    r"^(?P<version>\d{20})\.(json|checkpoint(\.\d{10}\.\d{10}|\.[0-9a-f-]{36})?\.(parquet|json))$"
)
# Delta's checksum of a version, and Hadoop's hidden checksum of any file of a version
SIDE_FILE = re.compile(r"^((?P<checksum>\d{20})\.crc|\.(?P<hidden>\d{20})\..+\.crc)$")


def orphaned(names: list[str]) -> list[str]:
    """The side files among a ``_delta_log``'s ``names`` whose version is older than every
    commit and checkpoint there; none when the log holds neither."""
    loadable = [int(found["version"]) for found in map(LOADABLE.match, names) if found]
    if not loadable:
        return []
    oldest = min(loadable)
    return sorted(name for name in names if (version := _side_version(name)) is not None and version < oldest)


def _side_version(name: str) -> int | None:
    found = SIDE_FILE.match(name)
    return None if found is None else int(found["checksum"] or found["hidden"])


def remove_orphaned(folder: LogFolder) -> int:
    """Delete the folder's orphaned side files: how many. A listing or delete that fails is
    logged and leaves them to the next checkpoint: the build and its checkpoint are done."""
    try:
        names = orphaned(folder.matching("*"))  # hidden names too
        folder.remove(names)
    except (OSError, BotoCoreError, ClientError) as err:
        log.warning(
            "refresh upkeep: the side files of %s's removed versions stay until its next checkpoint: %s",
            folder,
            err,
        )
        return 0
    return len(names)
