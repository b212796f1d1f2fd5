"""The command line of a bench that runs on bench.refresh_profile's private lakehouses."""

from __future__ import annotations

import argparse


def games_and_rounds(doc: str | None, argv: list[str] | None, rounds: int) -> argparse.Namespace:
    """``--games`` (the lakehouses' games counts, 5 and 60 by default) and ``--rounds``."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games", type=int, nargs="+", default=[5, 60])
    parser.add_argument("--rounds", type=int, default=rounds)
    return parser.parse_args(argv)
