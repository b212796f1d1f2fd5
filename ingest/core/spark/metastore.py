"""A shared Hive metastore in PostgreSQL, in place of the embedded Derby that allows one JVM.

Set ``GAMELAKE_METASTORE_URL`` (``jdbc:postgresql://host:port/database``),
``GAMELAKE_METASTORE_USER`` and ``GAMELAKE_METASTORE_PASSWORD``, and every Spark the project
starts (dbt's, the summary's, a shell's through spark-defaults.conf) uses it: any number of dbt
users and hosts then see the same schemas and tables.

The password stays in the environment: the settings name it as ``${env.GAMELAKE_METASTORE_PASSWORD}``,
which Hadoop's configuration expands inside the JVM, so no file or command line holds it.

``python -m ingest.core.spark.metastore create-schema`` creates the metastore's tables once,
with DataNucleus's SchemaTool from Hive's own model (package.jdo). Spark's default, creating
them on first use, deadlocks on PostgreSQL: an ``ALTER TABLE ... FOREIGN KEY`` waits for a lock
its own JVM's open transaction holds. So Spark runs with ``datanucleus.schema.autoCreateAll``
off, and a missing schema is a clear error, not a hang.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ingest.core.errors import ConfigError
from ingest.core.spark.jvm import postgres_jdbc_jar

URL_VARIABLE = "GAMELAKE_METASTORE_URL"
USER_VARIABLE = "GAMELAKE_METASTORE_USER"
PASSWORD_VARIABLE = "GAMELAKE_METASTORE_PASSWORD"
SCHEMA_TOOL = "org.datanucleus.store.schema.SchemaTool"


def metastore_url() -> str | None:
    url = os.environ.get(URL_VARIABLE) or None
    if url is not None and not url.startswith("jdbc:postgresql://"):
        raise ConfigError(
            f"{URL_VARIABLE}={url!r} is not a PostgreSQL JDBC URL: write jdbc:postgresql://host:port/database"
        )
    return url


def _user() -> str:
    user = os.environ.get(USER_VARIABLE)
    if not user:
        raise ConfigError(f"{URL_VARIABLE} is set but {USER_VARIABLE} is not: name the metastore's user")
    return user


def shared_metastore_settings(url: str) -> dict[str, str]:
    """The Hive client's settings for the metastore at ``url``; the password by reference only."""
    return {
        "spark.hadoop.javax.jdo.option.ConnectionURL": url,
        "spark.hadoop.javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "spark.hadoop.javax.jdo.option.ConnectionUserName": _user(),
        "spark.hadoop.javax.jdo.option.ConnectionPassword": f"${{env.{PASSWORD_VARIABLE}}}",
        "spark.hadoop.datanucleus.schema.autoCreateAll": "false",
        "spark.hadoop.hive.metastore.schema.verification": "false",
    }


def _spark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def create_schema(url: str) -> None:
    """Create the metastore's tables at ``url``; tables that exist already are left as they are."""
    password = os.environ.get(PASSWORD_VARIABLE)
    if password is None:
        raise ConfigError(f"{PASSWORD_VARIABLE} is not set: the metastore's password comes from it")
    jars = _spark_jars()
    metastore_jar = next(jars.glob("hive-metastore-*.jar"), None)
    if metastore_jar is None:
        raise ConfigError(f"no hive-metastore jar in {jars}: reinstall pyspark (`make setup`)")
    with tempfile.TemporaryDirectory(prefix="gamelake-metastore-") as tmp:
        model = Path(tmp) / "package.jdo"
        with zipfile.ZipFile(metastore_jar) as jar:
            model.write_bytes(jar.read("package.jdo"))
        props = Path(tmp) / "datanucleus.properties"
        fd = os.open(props, os.O_WRONLY | os.O_CREAT, 0o600)  # holds the password until the end
        with os.fdopen(fd, "w") as handle:
            handle.write(_properties(url, password))
        done = subprocess.run(
            ["java", "-cp", f"{jars}/*:{postgres_jdbc_jar()}", SCHEMA_TOOL,
             "-create", "-api", "JDO", "-props", str(props), str(model)],
            capture_output=True,
            text=True,
        )  # fmt: skip
    if done.returncode != 0 or "completed successfully" not in done.stdout:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-12:])
        raise ConfigError(f"could not create the metastore's schema at {url}:\n{tail}")


def _properties(url: str, password: str) -> str:
    values = {
        "javax.jdo.PersistenceManagerFactoryClass": "org.datanucleus.api.jdo.JDOPersistenceManagerFactory",
        "javax.jdo.option.ConnectionURL": url,
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": _user(),
        "javax.jdo.option.ConnectionPassword": password,
        "datanucleus.schema.autoCreateAll": "true",
        # Hive's own settings for its model, as its ObjectStore sets them
        "datanucleus.identifierFactory": "datanucleus1",
        "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
    }
    return "".join(f"{key}={value}\n" for key, value in values.items())


def main(argv: list[str]) -> int:
    url = metastore_url()
    if argv[1:] != ["create-schema"] or url is None:
        print(
            f"usage: {URL_VARIABLE}=jdbc:postgresql://... {USER_VARIABLE}=... {PASSWORD_VARIABLE}=... "
            "python -m ingest.core.spark.metastore create-schema",
            file=sys.stderr,
        )
        return 2
    try:
        create_schema(url)
    except ConfigError as err:
        print(f"metastore: {err}", file=sys.stderr)
        return 1
    print(f"metastore: the schema is in place at {url}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
