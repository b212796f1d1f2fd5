"""Realistic, deterministic game telemetry.

Players belong to one game and own one or two devices. Player activity is heavy-tailed
(a Pareto weight per player), so a few heavy users produce many sessions. A session
is one client build, hence one schema version, and runs session_start, a few matches
with level-ups, purchases and achievements, then session_end, seconds to minutes apart.
The same ``seed`` and ``anchor`` always give the same events.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

DEFAULT_ANCHOR = datetime(2026, 11, 1, tzinfo=UTC)
PLATFORMS = ["ps5", "xbox", "switch", "pc", "ios", "android"]
REGIONS = ["eu-west", "eu-north", "us-east", "us-west", "ap-south", "ap-northeast", "sa-east"]
CLIENT_BUILDS = ["4.2.0", "4.2.1", "4.3.0", "4.3.2"]


@dataclass(frozen=True)
class Player:
    game: str
    gamer_id: str
    devices: tuple[str, ...]
    platform: str
    region: str
    activity: float  # relative chance of starting the next session


@dataclass
class GameEvent:
    """One event with every field any schema version knows; a version sends its subset."""

    version: int
    event_id: str
    game_name: str
    gamer_id: str
    event_type: str
    event_timestamp: datetime
    device_id: str
    session_id: str
    score: int
    level: int
    duration_ms: int
    platform: str
    region: str
    client_build: str
    is_ranked: bool
    network_latency_ms: float

    def fields(self, names: list[str]) -> dict[str, object]:
        """The values of ``names``, with the timestamp as protobuf Timestamp parts."""
        values: dict[str, object] = {}
        for name in names:
            value = getattr(self, name)
            if isinstance(value, datetime):
                micros = int(value.timestamp() * 1_000_000)
                value = {"seconds": micros // 1_000_000, "nanos": (micros % 1_000_000) * 1000}
            values[name] = value
        return values


@dataclass
class EventGenerator:
    """Yields ``count`` events for ``games`` spread over ``versions``."""

    games: list[str]
    versions: list[int]
    seed: int = 42
    anchor: datetime = DEFAULT_ANCHOR
    days: int = 7
    players_per_game: int = 200
    rng: random.Random = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.players = [p for game in self.games for p in self._players(game)]
        self.weights = [p.activity for p in self.players]
        self._levels: dict[str, int] = {}
        self._sessions = 0

    def _uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _players(self, game: str) -> list[Player]:
        players = []
        for n in range(self.players_per_game):
            devices = tuple(f"dev-{self._uuid()[:13]}" for _ in range(self.rng.choice([1, 1, 1, 2])))
            players.append(
                Player(
                    game=game,
                    gamer_id=f"{game}-p{n:05d}",
                    devices=devices,
                    platform=self.rng.choice(PLATFORMS),
                    region=self.rng.choice(REGIONS),
                    activity=self.rng.paretovariate(1.2),
                )
            )
        return players

    def events(self, count: int | None) -> Iterator[GameEvent]:
        """``count`` events, or an endless stream when ``count`` is None."""
        produced = 0
        while count is None or produced < count:
            for event in self._session():
                if count is not None and produced >= count:
                    return
                produced += 1
                yield event

    def _next_version(self) -> int:
        # The first sessions cycle through every version, so each one shows up even in small runs.
        if self._sessions < len(self.versions):
            return self.versions[self._sessions]
        return self.rng.choice(self.versions)

    def _session(self) -> Iterator[GameEvent]:
        player = self.rng.choices(self.players, weights=self.weights)[0]
        version = self._next_version()
        self._sessions += 1
        started = self.anchor - timedelta(seconds=self.rng.uniform(0, self.days * 86_400))
        context = {
            "version": version,
            "game_name": player.game,
            "gamer_id": player.gamer_id,
            "device_id": self.rng.choice(player.devices),
            "session_id": f"s-{self._uuid()}",
            "platform": player.platform,
            "region": player.region,
            "client_build": self.rng.choice(CLIENT_BUILDS),
        }
        clock = started
        yield self._event(context, "session_start", clock, score=0, duration_ms=0)
        score = 0
        for _ in range(self.rng.randint(1, 5)):
            clock += timedelta(seconds=self.rng.uniform(5, 60))
            yield self._event(context, "match_start", clock, score=score, duration_ms=0)
            match_ms = int(self.rng.uniform(60, 900) * 1000)
            clock += timedelta(milliseconds=match_ms)
            score += self.rng.randint(10, 2_000)
            yield self._event(context, "match_end", clock, score=score, duration_ms=match_ms)
            for kind, chance in (("level_up", 0.3), ("purchase", 0.08), ("achievement", 0.15)):
                if self.rng.random() < chance:
                    clock += timedelta(seconds=self.rng.uniform(1, 20))
                    if kind == "level_up":
                        self._levels[player.gamer_id] = self._level(player.gamer_id) + 1
                    yield self._event(context, kind, clock, score=score, duration_ms=0)
        clock += timedelta(seconds=self.rng.uniform(5, 120))
        session_ms = int((clock - started).total_seconds() * 1000)
        yield self._event(context, "session_end", clock, score=score, duration_ms=session_ms)

    def _level(self, gamer_id: str) -> int:
        """A player's current level; a new player starts somewhere between 1 and 20."""
        if gamer_id not in self._levels:
            self._levels[gamer_id] = self.rng.randint(1, 20)
        return self._levels[gamer_id]

    def _event(
        self, context: dict, event_type: str, at: datetime, *, score: int, duration_ms: int
    ) -> GameEvent:
        return GameEvent(
            event_id=self._uuid(),
            event_type=event_type,
            event_timestamp=at,
            score=score,
            level=self._level(context["gamer_id"]),
            duration_ms=duration_ms,
            is_ranked=self.rng.random() < 0.4,
            network_latency_ms=round(self.rng.lognormvariate(3.5, 0.5), 2),
            **context,
        )
