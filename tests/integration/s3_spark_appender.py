"""The Spark side of the object-storage tests: a driver of its own, as on another host, with the
project's settings for a lakehouse on S3 (ingest/core/spark/object_storage.py).

``python -m tests.integration.s3_spark_appender WAREHOUSE URI NAME COUNT`` makes COUNT one-row
appends to the Delta table at URI; ``... WAREHOUSE URI --create-twice`` creates the log file URI
twice through Delta's log store for S3 and prints what the second attempt raised.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from ingest.core.spark.object_storage import as_s3a
from ingest.core.spark.session import local_session


def _lines(jvm, text: str):
    lines = jvm.java.util.ArrayList()
    lines.add(text)
    return lines.iterator()


def create_twice(spark, uri: str) -> None:
    """Both writes go through the log store Delta is configured with for s3a, as a commit would."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    store_class = spark.conf.get("spark.delta.logStore.s3a.impl")
    constructor = functools.reduce(getattr, store_class.split("."), jvm)
    store = constructor(conf)
    path = jvm.org.apache.hadoop.fs.Path(as_s3a(uri))
    store.write(path, _lines(jvm, '{"first":1}'), False, conf)
    try:
        store.write(path, _lines(jvm, '{"second":2}'), False, conf)
        print("second: created")
    except Exception as err:  # py4j's wrapper of the Java exception
        java = err.java_exception  # type: ignore[attr-defined]
        cause = java.getCause()
        because = cause.getClass().getName() if cause else None
        print(f"second: {java.getClass().getName()} caused by {because}")
        print(f"cause: {cause.getMessage() if cause else ''}")
    print(f"kept: {store.read(path, conf).next()}")


def append(spark, uri: str, name: str, count: int) -> None:
    for index in range(count):
        row = spark.createDataFrame([(name, index)], "writer string, index long")
        row.write.format("delta").mode("append").save(as_s3a(uri))


def main(argv: list[str]) -> None:
    warehouse, uri = Path(argv[1]), argv[2]
    spark = local_session(warehouse, lakehouse=uri)
    try:
        if argv[3] == "--create-twice":
            create_twice(spark, uri)
        else:
            append(spark, uri, argv[3], int(argv[4]))
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv)
