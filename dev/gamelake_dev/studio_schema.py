"""The studio schema (dev/gamelake_dev/proto/studio): a foreign producer's events in every protobuf shape.

Version 1 has nested, repeated and map fields, a oneof, proto3 ``optional``, an enum, bytes,
uint64, Timestamp, Duration, wrappers, a recursive message and a Struct, with shared types
imported from another file (``studio/common.proto``, a reference in the registry). Version 2
adds a field inside the nested ``Loadout`` message. ``expected`` says, independently of the
ingest's code, what each field must read as in bronze.
"""

from __future__ import annotations

import datetime as dt
import random
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2
from google.protobuf.message import Message

PROTOS = Path(__file__).parent / "proto" / "studio"
COMMON, MATCH = "studio/common.proto", "studio/match.proto"
WELL_KNOWN = (
    "google/protobuf/duration.proto",
    "google/protobuf/struct.proto",
    "google/protobuf/timestamp.proto",
    "google/protobuf/wrappers.proto",
)


@dataclass(frozen=True)
class StudioSchema:
    version: int
    common: descriptor_pb2.FileDescriptorProto
    match: descriptor_pb2.FileDescriptorProto
    match_class: type[Message]


@cache
def studio_schema(version: int) -> StudioSchema:
    """Version ``version`` compiled with grpcio-tools' protoc, in a descriptor pool of its own."""
    from grpc_tools import protoc

    out = Path(f"/tmp/gamelake-studio-v{version}-{id(PROTOS)}.binpb")
    well_known = Path(protoc.__file__).parent / "_proto"
    args = ["protoc", f"-I{PROTOS / f'v{version}'}", f"-I{well_known}", "--include_imports"]
    assert protoc.main([*args, f"--descriptor_set_out={out}", MATCH]) == 0
    files = {f.name: f for f in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file}
    pool = descriptor_pool.DescriptorPool()
    for name in (*WELL_KNOWN, COMMON, MATCH):
        pool.Add(files[name])
    match_class = message_factory.GetMessageClass(pool.FindMessageTypeByName("studio.Match"))
    return StudioSchema(version, files[COMMON], files[MATCH], match_class)


EPOCH = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)


def matches(version: int, count: int, seed: int = 0) -> list[Message]:
    """``count`` matches, each field set or left unset at random (every third one is all unset)."""
    rng = random.Random(seed)
    match = studio_schema(version).match_class
    found = []
    for i in range(count):
        m = match(event_id=f"m{version}-{seed}-{i}")
        if i % 3 == 0:
            found.append(m)  # every field unset: NULLs and empty lists
            continue
        m.event_timestamp.FromDatetime(EPOCH + dt.timedelta(seconds=i, microseconds=rng.randrange(10**6)))
        m.loadout.weapon = rng.choice(["axe", "bow", "été-lance"])
        m.loadout.level = rng.randrange(-5, 100)
        m.loadout.perks.extend(rng.sample(["swift", "stone", "ghost"], rng.randrange(0, 3)))
        if version >= 2:
            m.loadout.skin = rng.choice(["gold", ""])
        m.scores.extend(rng.randrange(-(2**40), 2**40) for _ in range(rng.randrange(0, 4)))
        for _ in range(rng.randrange(0, 3)):
            m.rewards.add(currency=rng.choice(["gems", "gold"]), amount=rng.randrange(2**64))
        for key in rng.sample(["kills", "deaths", "assists"], rng.randrange(0, 3)):
            m.stats[key] = rng.randrange(-1000, 1000)
        for key in rng.sample(["main", "bank"], rng.randrange(0, 2)):
            m.wallet[key].currency = "gems"
            m.wallet[key].amount = 2**64 - 1 - i
        if rng.random() < 0.5:
            m.winner = rng.choice(["blue", ""])
        elif rng.random() < 0.5:
            m.draw_round = rng.randrange(0, 9)
        if rng.random() < 0.6:
            m.rank = rng.choice([0, 1, 7])  # 0 is a value, not unset
        m.rarity = rng.choice([0, 1, 2, 9])  # 9: a number the enum does not name
        m.replay = rng.randbytes(rng.randrange(0, 6))
        m.big_counter = rng.choice([0, 2**63, 2**64 - 1])
        if rng.random() < 0.7:
            m.played.FromMicroseconds(rng.randrange(-(10**9), 10**12))
        if rng.random() < 0.7:
            m.bonus.value = rng.choice([0, -3, 2**40])
        if rng.random() < 0.7:
            m.nickname.value = rng.choice(["", "zed"])
        _grow_tree(m.tree, rng.randrange(0, 6))
        if rng.random() < 0.5:
            m.extra.update({"mode": "ranked", "round": 3})
        found.append(m)
    return found


def _grow_tree(node: Message, depth: int) -> None:
    for level in range(depth):
        node.label = f"level-{level}"
        node = node.child


def expected(m: Message) -> dict[str, Any]:
    """What each bronze column of ``m`` must hold (Python values as pyarrow's to_pylist gives)."""
    version = 2 if "skin" in m.loadout.DESCRIPTOR.fields_by_name else 1
    names = {0: "RARITY_UNSPECIFIED", 1: "COMMON", 2: "EPIC"}
    row: dict[str, Any] = {
        "event_id": m.event_id,
        "event_timestamp": m.event_timestamp.ToDatetime(dt.UTC) if m.HasField("event_timestamp") else None,
        "loadout": None,
        "scores": list(m.scores),
        "rewards": [_money(r) for r in m.rewards],
        "stats": sorted(m.stats.items()),
        "wallet": sorted((k, _money(v)) for k, v in m.wallet.items()),
        "winner": m.winner if m.WhichOneof("outcome") == "winner" else None,
        "draw_round": m.draw_round if m.WhichOneof("outcome") == "draw_round" else None,
        "outcome": m.WhichOneof("outcome"),
        "rank": m.rank if m.HasField("rank") else None,
        "rarity": names.get(m.rarity, str(m.rarity)),
        "replay": m.replay,
        "big_counter": Decimal(m.big_counter),
        "played": m.played.ToMicroseconds() if m.HasField("played") else None,
        "bonus": m.bonus.value if m.HasField("bonus") else None,
        "nickname": m.nickname.value if m.HasField("nickname") else None,
        "tree": _tree(m.tree, 1) if m.HasField("tree") else None,
        "extra": _struct_json(m.extra) if m.HasField("extra") else None,
    }
    if m.HasField("loadout"):
        loadout = m.loadout
        row["loadout"] = {"weapon": loadout.weapon, "level": loadout.level, "perks": list(loadout.perks)}
        if version >= 2:
            row["loadout"]["skin"] = loadout.skin
    return row


def _money(money: Message) -> dict[str, Any]:
    return {"currency": money.currency, "amount": Decimal(money.amount)}


def _tree(node: Message, depth: int) -> dict[str, Any]:
    """Natively nested three levels deep (the recursion limit), then the rest as JSON text."""
    child: Any = None
    if node.HasField("child"):
        child = _tree(node.child, depth + 1) if depth < 3 else _node_json(node.child)
    return {"label": node.label, "child": child}


def _node_json(node: Message) -> str:
    import json

    def as_dict(n: Message) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if n.label:
            out["label"] = n.label
        if n.HasField("child"):
            out["child"] = as_dict(n.child)
        return out

    return json.dumps(as_dict(node), sort_keys=True)


def _struct_json(value: struct_pb2.Struct) -> str:
    import json

    return json.dumps({k: v for k, v in sorted(value.items())}, sort_keys=True)


def comparable(row: dict[str, Any]) -> dict[str, Any]:
    """A bronze row (to_pylist) in ``expected``'s shape: maps as sorted (key, value) lists."""
    out = {name: row.get(name) for name in expected_columns(row)}
    for name in ("stats", "wallet"):
        out[name] = sorted(out[name] or [])
    return out


def expected_columns(row: dict[str, Any]) -> list[str]:
    return [
        "event_id", "event_timestamp", "loadout", "scores", "rewards", "stats", "wallet", "winner",
        "draw_round", "outcome", "rank", "rarity", "replay", "big_counter", "played", "bonus",
        "nickname", "tree", "extra",
    ]  # fmt: skip
