"""The games seed: slug validation and per-game model generation (no services)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from ingest import cli
from ingest.core.identifiers import slug_problem
from ingest.core.settings.paths import PROJECT_DIR
from ingest.games.layout import GAMES_LIST
from ingest.games.model_files import sync
from ingest.games.seed import GamesSeedError, read_games

HEADER = "game_slug,display_name,is_active,studio,genre,platforms,launch_date"
GOOD = "space_raiders,Space Raiders,true,Nebula Forge,shooter,pc,2023-03-14"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A throwaway project: seeds/ and the generated folders, as `ingest games sync` sees them."""
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "games.csv").write_text(f"{HEADER}\n{GOOD}\n")
    sync(tmp_path)
    return tmp_path


def _snapshot(project: Path) -> dict[str, str]:
    return {
        str(p.relative_to(project)): p.read_text()
        for p in sorted(project.rglob("*"))
        if p.is_file() and "seeds" not in p.parts
    }


UNSAFE = [
    ("space raiders", "contains whitespace"),
    ("space`raiders", "contains the character '`'"),
    ("raiders;drop_table", "contains the character ';'"),
    ("select", "is a reserved SQL word"),
    ("drop", "is a reserved SQL word"),
    ("café_racer", "contains the non-ASCII character 'é'"),
    ("2fast", "starts with a digit"),
    ("Space_Raiders", "has uppercase letters"),
    ("raiders-2", "contains the character '-'"),
    ("", "is empty"),
    ("x" * 41, "longer than 40 characters"),
]


@pytest.mark.parametrize(("slug", "reason"), UNSAFE)
def test_unsafe_slug_is_refused_naming_the_line_and_nothing_is_written(
    project: Path, slug: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(project)
    seed = project / "seeds" / "games.csv"
    seed.write_text(f"{HEADER}\n{GOOD}\n{slug},Bad Game,true,S,arcade,pc,2024-01-01\n")

    code = cli.main(["games", "sync", "--project-dir", str(project)])

    err = capsys.readouterr().err
    assert code == 2
    assert f"line 3 (game_slug {slug!r})" in err
    assert reason in err
    assert _snapshot(project) == before, "a refused seed must not change any generated file"


def test_duplicate_slug_is_refused_naming_both_lines(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed = project / "seeds" / "games.csv"
    seed.write_text(f"{HEADER}\n{GOOD}\nkart,Kart,true,S,racing,pc,2024-01-01\n{GOOD}\n")

    assert cli.main(["games", "sync", "--project-dir", str(project)]) == 2
    err = capsys.readouterr().err
    assert "line 4 (game_slug 'space_raiders'): duplicate: line 2 already defines 'space_raiders'" in err


def test_every_bad_line_is_reported_at_once(tmp_path: Path) -> None:
    seed = tmp_path / "games.csv"
    seed.write_text(f"{HEADER}\nbad slug,A,true,,,,\ngood,B,maybe,,,,\n9lives,C,true,,,,\n")
    with pytest.raises(GamesSeedError) as raised:
        read_games(seed)
    message = str(raised.value)
    assert "line 2" in message and "line 3" in message and "line 4" in message
    assert "is_active is 'maybe'" in message


def test_safe_slugs_pass() -> None:
    for slug in ("space_raiders", "a", "game_2", "x" * 40, "selection", "drop_zone"):
        assert slug_problem(slug) is None, slug


def test_sync_generates_one_config_plus_macro_call_per_model(project: Path) -> None:
    seed = project / "seeds" / "games.csv"
    seed.write_text(f"{HEADER}\n{GOOD}\nkart_legends,Kart Legends,false,Turbo Owl,racing,pc,2022-11-02\n")

    result = sync(project)

    expected = {
        "models/silver/games/silver_kart_legends.sql": "silver_game_events('kart_legends')",
        "models/gold/games/gold_kart_legends_player_agg.sql": "gold_player_agg('kart_legends')",
        "models/gold/games/gold_kart_legends_daily_active.sql": "gold_daily_active('kart_legends')",
    }
    for path, call in expected.items():
        lines = (project / path).read_text().splitlines()
        assert Path(path) in result.written
        assert len(lines) == 3 and lines[1].startswith("{{ config(") and call in lines[2]
    games_list = (project / GAMES_LIST).read_text()
    assert games_list.index("'space_raiders'") < games_list.index("'kart_legends'")
    assert "silver_kart_legends" in (project / "models/silver/games/_silver_games__models.yml").read_text()
    assert not sync(project, check=True).changed, "a second sync has nothing to do"


def test_a_further_game_adds_a_few_yml_lines_and_gets_every_column_and_test(project: Path) -> None:
    silver_yml = project / "models/silver/games/_silver_games__models.yml"
    gold_yml = project / "models/gold/games/_gold_games__models.yml"
    one_game = len(silver_yml.read_text().splitlines()) + len(gold_yml.read_text().splitlines())
    (project / "seeds" / "games.csv").write_text(f"{HEADER}\n{GOOD}\nkart,Kart,true,S,racing,pc,2024-01-01\n")

    sync(project)

    two_games = len(silver_yml.read_text().splitlines()) + len(gold_yml.read_text().splitlines())
    assert two_games - one_game <= 12, "the column lists are written once, under YAML anchors"
    for path in (silver_yml, gold_yml):
        models = yaml.safe_load(path.read_text())["models"]
        half = len(models) // 2  # the first game's models, then the second's
        assert [m["columns"] for m in models[:half]] == [m["columns"] for m in models[half:]]


def test_removing_a_game_removes_only_generated_files(project: Path) -> None:
    handwritten = project / "models" / "silver" / "games" / "notes.sql"
    handwritten.write_text("select 1\n")
    (project / "seeds" / "games.csv").write_text(f"{HEADER}\nother_game,Other,true,S,arcade,pc,2024-01-01\n")

    result = sync(project)

    assert Path("models/silver/games/silver_space_raiders.sql") in result.removed
    assert not (project / "models/silver/games/silver_space_raiders.sql").exists()
    assert handwritten.exists()


def test_check_reports_a_stale_project_and_changes_nothing(project: Path) -> None:
    (project / "seeds" / "games.csv").write_text(
        f"{HEADER}\n{GOOD}\nnew_game,New,true,S,arcade,pc,2024-01-01\n"
    )
    before = _snapshot(project)

    assert cli.main(["games", "sync", "--check", "--project-dir", str(project)]) == 1
    assert _snapshot(project) == before


def test_the_repository_is_in_sync_with_its_seed(tmp_path: Path) -> None:
    """The committed generated files match seeds/games.csv (what CI would catch on a stale commit)."""
    for name in ("seeds", "models", "macros"):
        shutil.copytree(PROJECT_DIR / name, tmp_path / name)
    result = sync(tmp_path, check=True)
    assert not result.changed, f"run `ingest games sync`: {result.written + result.removed}"
