import pytest

from ingest.core.errors import ConfigError
from ingest.core.identifiers import validate_slug, validate_slugs


@pytest.mark.parametrize("slug", ["space_raiders", "g", "kart2", "a_b_c_1"])
def test_safe_slugs_pass(slug):
    assert validate_slug(slug) == slug


@pytest.mark.parametrize(
    ("slug", "why"),
    [
        ("space raiders", "not a safe identifier"),
        ("space`raiders", "not a safe identifier"),
        ("drop;table", "not a safe identifier"),
        ("select", "reserved SQL word"),
        ("tablé", "not a safe identifier"),
        ("2fast", "not a safe identifier"),
        ("", "not a safe identifier"),
        ("Space", "not a safe identifier"),
        ("x" * 49, "not a safe identifier"),
    ],
)
def test_unsafe_slugs_are_refused_with_the_slug_named(slug, why):
    with pytest.raises(ConfigError) as err:
        validate_slug(slug, source="--games entry")
    assert why in str(err.value)
    assert repr(slug) in str(err.value)


def test_duplicates_are_refused():
    with pytest.raises(ConfigError, match="listed twice"):
        validate_slugs(["kart", "puzzle", "kart"])
