from collections import Counter
from datetime import timedelta

from gamelake_dev.producer.datagen import DEFAULT_ANCHOR, EventGenerator

GAMES = ["space_raiders", "kart_legends", "puzzle_pop"]


def _events(count=3000, seed=7, versions=(1, 2, 3)):
    return list(EventGenerator(GAMES, list(versions), seed=seed).events(count))


def test_same_seed_same_events_other_seed_other_events():
    assert _events(seed=7) == _events(seed=7)
    assert [e.event_id for e in _events(seed=7)] != [e.event_id for e in _events(seed=8)]


def test_exact_count_and_unique_event_ids():
    events = _events(count=1234)
    assert len(events) == 1234
    assert len({e.event_id for e in events}) == 1234


def test_every_chosen_version_and_game_appears():
    events = _events(count=500, versions=(1, 3))
    assert {e.version for e in events} == {1, 3}
    assert {e.game_name for e in events} == set(GAMES)


def test_players_belong_to_one_game():
    games_of = {}
    for e in _events():
        games_of.setdefault(e.gamer_id, set()).add(e.game_name)
    assert all(len(games) == 1 for games in games_of.values())
    assert all(e.gamer_id.startswith(e.game_name) for e in _events(count=200))


def test_activity_is_heavy_tailed():
    per_player = Counter(e.gamer_id for e in _events(count=20_000))
    counts = sorted(per_player.values(), reverse=True)
    top_tenth = sum(counts[: len(counts) // 10])
    assert top_tenth > 0.3 * sum(counts), "the busiest 10% of players should produce well over 10% of events"


def test_sessions_are_ordered_and_plausible():
    sessions = {}
    for e in _events(count=5000):
        sessions.setdefault(e.session_id, []).append(e)
    complete = [s for s in sessions.values() if s[-1].event_type == "session_end"]
    assert complete
    for events in complete:
        assert events[0].event_type == "session_start"
        times = [e.event_timestamp for e in events]
        assert times == sorted(times)
        assert times[-1] - times[0] < timedelta(hours=6)
        assert len({(e.version, e.gamer_id, e.device_id) for e in events}) == 1
    for e in _events(count=500):
        assert DEFAULT_ANCHOR - timedelta(days=7) <= e.event_timestamp <= DEFAULT_ANCHOR + timedelta(hours=6)


def test_scores_never_decrease_within_a_session():
    sessions = {}
    for e in _events(count=3000):
        sessions.setdefault(e.session_id, []).append(e.score)
    assert all(scores == sorted(scores) for scores in sessions.values())
