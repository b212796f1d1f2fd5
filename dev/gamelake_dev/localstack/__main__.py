"""python -m gamelake_dev.localstack fetch|fetch-s3|up|down|status"""

from __future__ import annotations

import sys

from gamelake_dev.localstack import artifacts, stack
from ingest.core.errors import IngestError


def main(argv: list[str]) -> int:
    verb = argv[1] if len(argv) > 1 else ""
    try:
        if verb == "fetch":
            artifacts.fetch_all()
        elif verb == "fetch-s3":
            artifacts.fetch_s3()
        elif verb in ("up", "down", "status"):
            ports = stack.StackPorts.from_env()
            {"up": stack.up, "down": stack.down, "status": stack.describe}[verb](ports)
        else:
            print("usage: python -m gamelake_dev.localstack fetch|fetch-s3|up|down|status", file=sys.stderr)
            return 2
    except IngestError as err:
        print(f"stack: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
