"""The address every server of the local stack and the local Spark cluster binds: loopback by default.

``GAMELAKE_BIND_HOST`` moves them all (for example to a private interface of a lab host); the
Kafka listener then advertises that address. Nothing of the stack listens on every interface.
"""

from __future__ import annotations

import ipaddress
import os

from ingest.core.errors import ConfigError

DEFAULT_BIND_HOST = "127.0.0.1"


def bind_host() -> str:
    host = os.environ.get("GAMELAKE_BIND_HOST", DEFAULT_BIND_HOST)
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise ConfigError(
            f"GAMELAKE_BIND_HOST={host!r} is not an IP address: use one address, e.g. 127.0.0.1"
        ) from None
    if address.is_unspecified:
        raise ConfigError(
            f"GAMELAKE_BIND_HOST={host!r} would listen on every interface: name one address instead"
        )
    return host
