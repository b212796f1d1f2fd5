"""Validation of identifiers that come from data (game slugs) before they reach SQL or Kafka.

One rule for every entry point: the games seed (``ingest games sync``), the producer's
``--games`` and the dbt macros' own guard all refuse the same slugs.
"""

from __future__ import annotations

import re
import unicodedata

from ingest.core.errors import ConfigError

SLUG_MAX_LENGTH = 40
SLUG_PATTERN = re.compile(rf"[a-z][a-z0-9_]{{0,{SLUG_MAX_LENGTH - 1}}}")
SLUG_RULE = (
    f"a slug is lowercase ASCII letters, digits and underscores, starts with a letter, "
    f"has at most {SLUG_MAX_LENGTH} characters and is not a reserved SQL word"
)

# Spark SQL's ANSI reserved words, plus the statements and objects a slug must never spell.
_RESERVED_WORD_LIST = """
    all alter and any array as asc authorization between both by case
    cast check collate column commit constraint create cross cube current current_date current_time
    current_timestamp current_user database default delete desc describe distinct drop else end escape
    except exists external false fetch filter for foreign from full function global
    grant group grouping having in inner insert intersect interval into is join
    lateral leading left like limit local merge minus natural no not null
    of offset on only or order out outer overlaps partition percent position
    primary range references revoke right rollback rollup row rows schema select session_user
    set show some start table tablesample then time to trailing true truncate
    union unique unknown update user using values view when where window with
"""
RESERVED_WORDS = frozenset(_RESERVED_WORD_LIST.split())


def slug_problem(slug: str) -> str | None:
    """Why ``slug`` is not a safe identifier, or None if it is."""
    if not slug:
        return "is empty"
    if any(ch.isspace() for ch in slug):
        return "contains whitespace"
    if bad := next((ch for ch in slug if not ch.isascii()), None):
        return f"contains the non-ASCII character {bad!r} ({unicodedata.name(bad, 'unnamed')})"
    if bad := next((ch for ch in slug if not (ch.isalnum() or ch == "_")), None):
        return f"contains the character {bad!r}"
    if slug[0].isdigit():
        return "starts with a digit"
    if slug != slug.lower():
        return "has uppercase letters"
    if not SLUG_PATTERN.fullmatch(slug):
        return f"is longer than {SLUG_MAX_LENGTH} characters or does not start with a letter"
    if slug in RESERVED_WORDS:
        return "is a reserved SQL word"
    return None


def validate_slug(slug: str, *, source: str = "game slug") -> str:
    """Return ``slug`` if it is a safe identifier, else raise ConfigError naming it and the rule."""
    if slug in RESERVED_WORDS:
        raise ConfigError(
            f"{source} {slug!r} is a reserved SQL word: choose another name (e.g. '{slug}_game')"
        )
    if problem := slug_problem(slug):
        raise ConfigError(f"{source} {slug!r} is not a safe identifier: it {problem} ({SLUG_RULE})")
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
