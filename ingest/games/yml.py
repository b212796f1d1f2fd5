"""YAML text for dbt property files, written out so the generated files read like hand-written ones.

A column's description is ``doc("col_<name>")``: its text lives once in a docs block. A column
list many models share is written in full once, under a YAML anchor, and by alias after that;
dbt's YAML loader resolves aliases, so every model still gets every column and test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ingest.core.errors import ConfigError

Columns = Sequence[tuple[str, Sequence[str]]]


def yaml_str(text: str) -> str:
    """A double-quoted YAML scalar (JSON string syntax is valid YAML)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _doc_ref(name: str) -> str:
    return f"'{{{{ doc(\"col_{name}\") }}}}'"


def columns_yml(columns: Columns) -> str:
    """The items of a model's ``columns:`` list, each with its doc and data tests."""
    lines = []
    for name, tests in columns:
        lines += [f"      - name: {name}", f"        description: {_doc_ref(name)}"]
        if tests:
            lines.append("        data_tests:")
            lines.extend(f"          - {test}" for test in tests)
    return "".join(f"{line}\n" for line in lines)


def tested(names: Sequence[str], tests: Mapping[str, Sequence[str]], model: str) -> Columns:
    """``names`` with their data tests. A test of a column the contract no longer has is an error,
    not a test silently dropped."""
    if missing := sorted(set(tests) - set(names)):
        raise ConfigError(
            f"{model} has data tests on {', '.join(missing)}, which the bronze contract does not "
            "define: keep those staging names in ingest/core/bronze_contract.yml"
        )
    return [(name, tests.get(name, [])) for name in names]


def shared_columns(anchor: str, columns: Columns, *, first: bool) -> str:
    """What follows ``columns:``: the anchored list for the first model, an alias for the others."""
    return f" &{anchor}\n{columns_yml(columns)}" if first else f" *{anchor}\n"


def model_yml(name: str, description: str, columns: str) -> str:
    """One entry of ``models:``; ``columns`` is the text after ``columns:``, newline included."""
    return f"  - name: {name}\n    description: {yaml_str(description)}\n    columns:{columns}"
