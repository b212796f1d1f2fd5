"""A settings error as one line: the input that holds the bad value, the value, what is expected, the fix.

The inputs, highest precedence first: a command-line flag, a ``GAMELAKE_INGEST_*`` environment
variable, the ``--config`` file, then the defaults (three of which read ``KAFKA_BOOTSTRAP_SERVERS``,
``SCHEMA_REGISTRY_URL`` and ``INGEST_TOPIC``). The input that holds a field's value is the highest
one that sets it. A secret's value is never shown, nor the value of a key the model does not know.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

from pydantic import SecretStr, ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import SettingsError

from ingest.core.errors import ConfigError

# The shapes an environment variable must spell in JSON, which pydantic's messages do not show.
EXPECTED_JSON = {
    "topics": """a JSON list such as '["game-events"]'""",
    "kafka": """a JSON object such as '{"fetch.min.bytes": "1024"}'""",
}
# Defaults read from the variables the producer and the tests share (ingest/core/settings/endpoints.py).
SHARED_VARIABLES = {
    "bootstrap_servers": "KAFKA_BOOTSTRAP_SERVERS",
    "registry_url": "SCHEMA_REGISTRY_URL",
    "topics": "INGEST_TOPIC",
}
FLAG_NAMES = {"topics": "--topic"}  # the flags not spelled like their field
_SECRET_NAME = re.compile(r"password|secret|token|key", re.IGNORECASE)
# pydantic-settings names the field it could not parse, and the source, only in its message.
_UNPARSABLE = re.compile(r'field "(?P<field>\w+)" from source "EnvSettingsSource"')

# What building the settings raises on bad input: a bad value, an unparsable variable, a bad file.
SETTINGS_FAILURES = (ValidationError, SettingsError, tomllib.TOMLDecodeError)


@dataclass(frozen=True)
class Origin:
    """Where a field's value came from: how to name it, the value as given, and where to fix it."""

    label: str
    value: Any
    fix: str
    place: str = ""  # " in <settings file>"


@dataclass(frozen=True)
class SettingsInputs:
    """What a settings object is built from, to say which input holds a bad value."""

    fields: dict[str, FieldInfo]
    env_prefix: str
    flags: dict[str, Any]
    config_file: Path | None

    def config_error(self, err: ValidationError | SettingsError | tomllib.TOMLDecodeError) -> ConfigError:
        """One line, however many fields are wrong."""
        if isinstance(err, tomllib.TOMLDecodeError):
            return ConfigError(
                f"settings file {self.config_file} is not valid TOML: {err}. Fix the settings file."
            )
        if isinstance(err, SettingsError):
            return ConfigError(self._unparsable(err))
        problems: dict[str, str] = {}
        for error in err.errors():  # a field can fail several ways (a union): its first says enough
            problems.setdefault(_field(error["loc"]), self._problem(error))
        return ConfigError(" ".join(problems.values()))

    def _unparsable(self, err: SettingsError) -> str:
        found = _UNPARSABLE.search(str(err))
        if found is None:
            return f"invalid ingest settings: {err}"  # pydantic-settings' message holds no value
        field = found["field"]
        name = self.env_prefix + field.upper()
        origin = Origin(name, _environment(name), "Fix the environment variable.")
        expected = EXPECTED_JSON.get(field, "a JSON value")
        return f"{self._shown(field, origin)} is not valid: expected {expected}. {origin.fix}"

    def _problem(self, error: Any) -> str:
        reason = _sentence(error["msg"])
        field = _field(error["loc"])
        if not field:
            return f"invalid ingest settings: {reason}."
        origin = self.origin(field, error["input"])
        if error["type"] == "extra_forbidden":
            unknown = f"{origin.label}{origin.place} is not an ingest setting"
            return f"{unknown} (see ingest/core/settings/ingest_settings.py). {origin.fix}"
        from_json = origin.label == self.env_prefix + field.upper() and error["type"] != "value_error"
        expected = f"; expected {EXPECTED_JSON[field]}" if from_json and field in EXPECTED_JSON else ""
        return f"{self._shown(field, origin)} is not valid: {reason}{expected}. {origin.fix}"

    def origin(self, field: str, value: Any) -> Origin:
        if field in self.flags:
            flag = FLAG_NAMES.get(field, "--" + field.replace("_", "-"))
            return Origin(flag, self.flags[field], "Fix the flag.")
        variable = self.env_prefix + field.upper()
        if _environment(variable) is not None:
            return Origin(variable, _environment(variable), "Fix the environment variable.")
        if self._file_sets(field):
            return Origin(field, value, "Fix the settings file.", f" in {self.config_file}")
        shared = SHARED_VARIABLES.get(field)
        if shared and _environment(shared) is not None:
            return Origin(shared, _environment(shared), "Fix the environment variable.")
        return Origin(field, value, "Fix the setting.")

    def _shown(self, field: str, origin: Origin) -> str:
        if _is_secret(field, self.fields[field]):
            return f"{origin.label}{origin.place} (value not shown: it may hold a secret)"
        return f"{origin.label}={origin.value!r}{origin.place}"

    def _file_sets(self, field: str) -> bool:
        if self.config_file is None:
            return False
        return field in tomllib.loads(self.config_file.read_text(encoding="utf-8"))


def _field(loc: tuple[int | str, ...]) -> str:
    return str(loc[0]) if loc else ""


def _sentence(message: str) -> str:
    reason = message.removeprefix("Value error, ")
    return reason[:1].lower() + reason[1:]


def _environment(name: str) -> str | None:
    """The variable as pydantic-settings reads it: its name in any case."""
    return next((value for key, value in os.environ.items() if key.upper() == name), None)


def _is_secret(name: str, field: FieldInfo) -> bool:
    return bool(_SECRET_NAME.search(name)) or _mentions_secret(field.annotation)


def _mentions_secret(annotation: Any) -> bool:
    return annotation is SecretStr or any(_mentions_secret(arg) for arg in get_args(annotation))
