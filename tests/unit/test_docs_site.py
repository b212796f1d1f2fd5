"""The docs site's finishing step on the dbt-docs page this dbt installs: tests leave the default graph."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from dbt.task.docs import DOCS_INDEX_FILE_PATH

from ingest.core.errors import ConfigError
from ingest.ops import docs_site


def _default_types(page: str) -> list[str]:
    found = docs_site._DEFAULT_TYPES.search(page)
    assert found is not None
    return re.findall(r'"(\w+)"', found.group(2))


def test_the_default_graph_leaves_out_tests_and_unit_tests_only() -> None:
    page = Path(DOCS_INDEX_FILE_PATH).read_text(encoding="utf-8")
    before = _default_types(page)
    assert {"test", "unit_test", "model", "source", "seed"} <= set(before)

    after = _default_types(docs_site.hide_tests(page))

    assert after == [t for t in before if t not in ("test", "unit_test")]
    # only the default changes: the filter's options still offer them, one tick away
    assert docs_site.hide_tests(page).count('"unit_test"') == page.count('"unit_test"') - 1


def test_finish_rewrites_every_generated_page_once(tmp_path: Path) -> None:
    for name in docs_site.PAGES:
        shutil.copy(DOCS_INDEX_FILE_PATH, tmp_path / name)

    assert docs_site.finish(tmp_path) == [tmp_path / name for name in docs_site.PAGES]
    once = (tmp_path / "index.html").read_text(encoding="utf-8")
    docs_site.finish(tmp_path)
    assert (tmp_path / "index.html").read_text(encoding="utf-8") == once


def test_an_unknown_page_or_a_missing_site_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=re.escape("index.html: the dbt-docs graph")):
        docs_site.hide_tests("<html>not dbt-docs</html>")
    with pytest.raises(ConfigError, match="run `dbt docs generate` first"):
        docs_site.finish(tmp_path)
