"""Bad arguments get a clear error before anything is sent (no stack is running for these tests)."""

import pytest

from ingest.cli import main


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--versions", "1,9"], "unknown schema version 9"),
        (["--versions", "x"], "not a comma-separated list"),
        (["--games", "space raiders"], "'space raiders' is not a safe identifier"),
        (["--games", "select"], "reserved SQL word"),
        (["--games", "kart,kart"], "listed twice"),
        (["--count", "-5"], "'-5' is not a count"),
        (["--rate", "0"], "'0' is not a rate"),
        (["--anchor", "yesterday"], "not an ISO time"),
        (["--partitions", "0"], "not a partition count"),
    ],
)
def test_bad_arguments_fail_before_sending(argv, message, capsys, monkeypatch):
    # An unreachable broker: had anything been sent, the command would hang or fail differently.
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    with pytest.raises(SystemExit) as exit_info:
        code = main(["produce", "--no-progress", *argv])
        raise SystemExit(code)
    assert exit_info.value.code != 0
    assert message in capsys.readouterr().err
