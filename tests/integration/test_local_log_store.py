"""Delta's log on the local disk through gamelake's log store (native/local-logstore), on real
Spark + Delta: Delta routes the ``file`` scheme to it, and its listing from a version gives what
Delta's own local log store gives (the same names, lengths and times, in order, Hadoop's hidden
checksums left out) while reading the status of only the entries it returns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ingest.core.spark.jvm import LOCAL_LOG_STORE_CLASS
from tests.integration import dbt_support as support

pytestmark = pytest.mark.integration

COMMITS = 12


def _listed(store: Any, start: Any, conf: Any) -> list[tuple[str, int, int]]:
    found = store.listFrom(start, conf)
    listed = []
    while found.hasNext():
        status = found.next()
        listed.append((status.getPath().toString(), status.getLen(), status.getModificationTime()))
    return listed


def _store_of_scheme(spark: Any, table: Path, scheme: str) -> str:
    """The class of the log store Delta's DeltaLog of ``table`` uses for ``scheme`` (its delegating
    store's map, filled on first use)."""
    jvm = spark._jvm
    store = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, str(table)).store()
    field = store.getClass().getDeclaredField("schemeToLogStoreMap")
    field.setAccessible(True)
    adaptor = field.get(store).get(scheme).get()
    return str(adaptor.logStoreImpl().getClass().getName())


def test_delta_lists_the_local_log_through_the_name_listing_store(tmp_path: Path) -> None:
    table = tmp_path / "events"
    with support.local_spark(tmp_path / "warehouse") as spark:
        spark.sql(f"create table delta.`{table}` (n int) using delta")
        for n in range(COMMITS):
            spark.sql(f"insert into delta.`{table}` values ({n})")
        spark.sql(f"optimize delta.`{table}`")  # and a checkpoint, past Spark's interval of 10
        assert spark.sql(f"select count(*) from delta.`{table}`").first()[0] == COMMITS
        assert _store_of_scheme(spark, table, "file") == LOCAL_LOG_STORE_CLASS

        jvm, conf = spark._jvm, spark._jsc.hadoopConfiguration()
        log = table / "_delta_log"
        assert any(path.name.startswith(".") and path.name.endswith(".crc") for path in log.iterdir())
        ours = jvm.io.gamelake.delta.NameListingLogStore(conf)
        deltas = jvm.io.delta.storage.LocalLogStore(conf)
        for version in (0, 7, 10, COMMITS + 1, 99):
            start = jvm.org.apache.hadoop.fs.Path(f"file:{log}/{version:020d}.")
            expected = _listed(deltas, start, conf)
            assert _listed(ours, start, conf) == expected, version
        assert len(_listed(ours, jvm.org.apache.hadoop.fs.Path(f"file:{log}/{0:020d}."), conf)) > COMMITS

        missing = jvm.org.apache.hadoop.fs.Path(f"file:{tmp_path}/none/_delta_log/{0:020d}.")
        with pytest.raises(Exception, match="FileNotFoundException"):
            ours.listFrom(missing, conf)
