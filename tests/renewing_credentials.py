"""AWS credentials that botocore renews at every use, as it renews a role's an hour on.

botocore renews credentials that expire within 10 minutes whenever they are asked for, so keys
given out with an expiry 2 minutes ahead are renewed each time: by a profile's
``credential_process`` (``renewing_profile``), or by a refresh function (``renewing``).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROFILE = "renewing"
_PROCESS = """\
import datetime as dt, json, sys
from pathlib import Path

keys, runs = Path(sys.argv[1]), Path(sys.argv[2])
with runs.open("a") as log:
    log.write("run\\n")
given = json.loads(keys.read_text())
given["Version"] = 1
given["Expiration"] = (dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)).isoformat()
if given.pop("with_token"):
    given["SessionToken"] = f"t{len(runs.read_text().splitlines())}"
print(json.dumps(given))
"""


@dataclass(frozen=True)
class RenewingProfile:
    config_file: Path
    runs_file: Path
    name: str = PROFILE

    def runs(self) -> int:
        """How many times the credential process has given out keys."""
        return len(self.runs_file.read_text().splitlines()) if self.runs_file.exists() else 0


def renewing_profile(
    folder: Path, access_key_id: str, secret: str, with_token: bool = True
) -> RenewingProfile:
    """An AWS config file whose profile ``renewing`` gets ``access_key_id`` and ``secret`` from a
    ``credential_process``, with the session token ``t<n>`` at its n-th run when ``with_token``.
    The keys stay in a file only the owner reads, not on the command line."""
    folder.mkdir(parents=True, exist_ok=True)
    keys = folder / "keys.json"
    _write_private(
        keys, json.dumps({"AccessKeyId": access_key_id, "SecretAccessKey": secret, "with_token": with_token})
    )
    script = folder / "credential_process.py"
    script.write_text(_PROCESS)
    runs = folder / "runs"
    command = shlex.join([sys.executable, str(script), str(keys), str(runs)])
    config = folder / "config"
    config.write_text(f"[profile {PROFILE}]\nregion = us-east-1\ncredential_process = {command}\n")
    return RenewingProfile(config, runs)


def renewing(tokens: list[str], access_key_id: str = "ASIAEXAMPLE") -> Any:
    """botocore credentials renewed at every use, with the session token last in ``tokens`` then."""
    from botocore.credentials import RefreshableCredentials

    def metadata() -> dict[str, str]:
        expiry = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=2)
        token = tokens[-1]
        return {
            "access_key": access_key_id,
            "secret_key": f"secret-{token}",
            "token": token,
            "expiry_time": expiry.isoformat(),
        }

    return RefreshableCredentials.create_from_metadata(metadata(), metadata, "renewing")


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
