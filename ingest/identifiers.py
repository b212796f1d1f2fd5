"""Validation of identifiers that come from data (game slugs) before they reach SQL or Kafka."""

from __future__ import annotations

import re

from ingest.errors import ConfigError

SLUG_PATTERN = re.compile(r"[a-z][a-z0-9_]{0,47}")

# Spark SQL's reserved words (ANSI mode) plus a few that break table names in practice.
RESERVED_WORDS = frozenset(
    [
        "all",
        "alter",
        "and",
        "any",
        "array",
        "as",
        "asc",
        "authorization",
        "between",
        "both",
        "by",
        "case",
        "cast",
        "check",
        "collate",
        "column",
        "commit",
        "constraint",
        "create",
        "cross",
        "cube",
        "current",
        "current_date",
        "current_time",
        "current_timestamp",
        "current_user",
        "default",
        "delete",
        "desc",
        "describe",
        "distinct",
        "drop",
        "else",
        "end",
        "escape",
        "except",
        "exists",
        "external",
        "false",
        "fetch",
        "filter",
        "for",
        "foreign",
        "from",
        "full",
        "function",
        "global",
        "grant",
        "group",
        "grouping",
        "having",
        "in",
        "inner",
        "insert",
        "intersect",
        "interval",
        "into",
        "is",
        "join",
        "lateral",
        "leading",
        "left",
        "like",
        "limit",
        "local",
        "minus",
        "natural",
        "no",
        "not",
        "null",
        "of",
        "on",
        "only",
        "or",
        "order",
        "out",
        "outer",
        "overlaps",
        "partition",
        "position",
        "primary",
        "range",
        "references",
        "revoke",
        "right",
        "rollback",
        "rollup",
        "row",
        "rows",
        "select",
        "session_user",
        "set",
        "some",
        "start",
        "table",
        "tablesample",
        "then",
        "time",
        "to",
        "trailing",
        "true",
        "truncate",
        "union",
        "unique",
        "unknown",
        "update",
        "user",
        "using",
        "values",
        "when",
        "where",
        "window",
        "with",
    ]
)


def validate_slug(slug: str, *, source: str = "game slug") -> str:
    """Return ``slug`` if it is a safe lowercase identifier, else raise ConfigError naming it and the fix."""
    if not SLUG_PATTERN.fullmatch(slug):
        raise ConfigError(
            f"{source} {slug!r} is not a safe identifier: use 1-48 characters of lowercase ASCII "
            f"letters, digits and underscores, starting with a letter (e.g. 'space_raiders')"
        )
    if slug in RESERVED_WORDS:
        raise ConfigError(
            f"{source} {slug!r} is a reserved SQL word: choose another name (e.g. '{slug}_game')"
        )
    return slug


def validate_slugs(slugs: list[str], *, source: str = "game slug") -> list[str]:
    """Validate each slug and refuse duplicates."""
    seen: set[str] = set()
    for slug in slugs:
        validate_slug(slug, source=source)
        if slug in seen:
            raise ConfigError(f"{source} {slug!r} is listed twice: each game must appear once")
        seen.add(slug)
    return slugs
