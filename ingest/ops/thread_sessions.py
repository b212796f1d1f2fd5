"""A Spark session of its own for each dbt thread of an in-process build.

dbt-spark's ``session`` method runs every statement on the process's one SparkSession (its
cursor calls ``SparkSession.builder...getOrCreate()``), so dbt's threads share the session's
SQL conf. A bronze reader's mark rides in its commit through that conf
(macros/medallion/bronze_marks.sql), so on a shared session a build of bronze readers runs one
thread (macros/medallion/session_threads.sql). Silver's queries on two threads take 0.68 of one
thread's time at 60 games (bench/results/silver_threads.md).

``ThreadSessions`` gives each of dbt's node threads a clone of the base session, made at the
thread's first statement: the clone starts with the base's conf as the refresh handed it before
the invocation (marks, versions, codegen mode) and its temporary views, and shares the catalog,
Delta's log cache and the SparkContext. A conf a model sets stays in its thread's clone. While
they are given, the base says so in ``SESSION_PER_THREAD_CONF`` (and so does each clone), which
lets the threads assertion pass.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from ingest.core.errors import ConfigError

SESSION_PER_THREAD_CONF = "spark.gamelake.session_per_thread"
_CURSORS_SESSION = "SparkSession"  # the name dbt-spark's cursor module reaches Spark by


class ThreadSessions:
    """The base session for the thread that opened them (dbt's main thread: its run hooks), and
    a clone of the base for any other thread, made at that thread's first statement. dbt runs
    an invocation's nodes on threads of a pool it makes for the invocation, so each of them
    starts from the base's conf as the caller handed it before that invocation."""

    def __init__(self, base: Any) -> None:
        self._base = base
        self._opener = threading.current_thread()
        self._held = threading.local()

    def session(self) -> Any:
        if threading.current_thread() is self._opener:
            return self._base
        clone = getattr(self._held, "clone", None)
        if clone is None:
            clone = self._held.clone = self._clone()
        return clone

    def _clone(self) -> Any:
        from pyspark.sql import SparkSession

        # cloneSession, not newSession: the clone keeps the base's runtime conf and temporary views
        return SparkSession(self._base.sparkContext, self._base._jsparkSession.cloneSession())


class _ThreadSessionBuilder:
    """What dbt-spark's cursor calls as ``SparkSession.builder``: its thread's clone, with the
    profile's server-side parameters set on it."""

    def __init__(self, sessions: ThreadSessions) -> None:
        self._sessions = sessions
        self._options: dict[str, str] = {}

    def enableHiveSupport(self) -> _ThreadSessionBuilder:
        return self

    def config(self, key: str, value: Any) -> _ThreadSessionBuilder:
        self._options[key] = str(value)
        return self

    def getOrCreate(self) -> Any:
        session = self._sessions.session()
        for key, value in self._options.items():
            session.conf.set(key, value)
        return session


class _SessionClass:
    """Stands for ``pyspark.sql.SparkSession`` in dbt-spark's session module."""

    def __init__(self, sessions: ThreadSessions) -> None:
        self._sessions = sessions

    @property
    def builder(self) -> _ThreadSessionBuilder:
        return _ThreadSessionBuilder(self._sessions)


@contextlib.contextmanager
def session_per_thread(base: Any) -> Iterator[ThreadSessions]:
    """While open, dbt's statements in this process run on their thread's own session
    (``ThreadSessions``). Refuses a dbt-spark whose cursor module no longer reaches Spark by
    pyspark's ``SparkSession``, rather than letting its threads share one session unawares."""
    from dbt.adapters.spark import session as dbt_spark_session

    if getattr(dbt_spark_session, _CURSORS_SESSION, None) is not _pyspark_session_class():
        raise ConfigError(
            "dbt-spark's session cursor no longer reaches Spark through pyspark's SparkSession.builder,"
            " so its threads cannot be given a session each: run the refresh with --silver-threads 1"
        )
    sessions = ThreadSessions(base)
    base.conf.set(SESSION_PER_THREAD_CONF, "true")  # the clones inherit it
    setattr(dbt_spark_session, _CURSORS_SESSION, _SessionClass(sessions))
    try:
        yield sessions
    finally:
        setattr(dbt_spark_session, _CURSORS_SESSION, _pyspark_session_class())
        base.conf.unset(SESSION_PER_THREAD_CONF)


def sessions_for(base: Any, threads: int) -> contextlib.AbstractContextManager[Any]:
    """A session per thread for a build on more than one thread; the shared ``base`` for one."""
    return session_per_thread(base) if threads > 1 else contextlib.nullcontext()


def _pyspark_session_class() -> type:
    from pyspark.sql import SparkSession

    return SparkSession
