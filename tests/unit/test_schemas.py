"""The schema versions in dev/gamelake_dev/proto only ever add fields: the rule the registry also enforces."""

import itertools

from gamelake_dev.demo_schemas import available_versions, load_version
from google.protobuf.descriptor import FieldDescriptor


def _fields(number):
    return {f.number: (f.name, f.type) for f in load_version(number).message_class.DESCRIPTOR.fields}


def test_at_least_three_versions():
    assert len(available_versions()) >= 3


def test_each_version_keeps_every_earlier_field_and_adds_some():
    versions = available_versions()
    for older, newer in itertools.pairwise(versions):
        before, after = _fields(older), _fields(newer)
        for number, field in before.items():
            assert after.get(number) == field, f"v{newer} changed field #{number} {field}"
        assert len(after) > len(before), f"v{newer} adds no field"


def test_v1_carries_the_core_fields():
    fields = {name: kind for name, kind in _fields(1).values()}
    assert set(fields) == {"event_id", "game_name", "gamer_id", "event_type", "event_timestamp", "device_id"}
    timestamp = load_version(1).message_class.DESCRIPTOR.fields_by_name["event_timestamp"]
    assert timestamp.type == FieldDescriptor.TYPE_MESSAGE
    assert timestamp.message_type.full_name == "google.protobuf.Timestamp"


def test_versions_load_into_separate_pools():
    classes = [load_version(n).message_class for n in available_versions()]
    assert len({c.DESCRIPTOR.file.pool for c in classes}) == len(classes)
    assert {c.DESCRIPTOR.full_name for c in classes} == {"gamelake.events.GameEvent"}
