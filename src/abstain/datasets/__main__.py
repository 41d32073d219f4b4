"""``python -m abstain.datasets {list,fetch-shuttle}``: list the datasets, fetch SHUTTLE."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..datasets._registry import list_datasets
from ..datasets._sources import data_home, fetch_shuttle


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m abstain.datasets", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="list the bundled datasets and their sources")
    fetch = commands.add_parser(
        "fetch-shuttle", help=f"fetch SHUTTLE into the cache folder ({data_home()})"
    )
    fetch.add_argument("--deb", help="a downloaded r-cran-mlbench .deb (default: apt-get it)")
    args = parser.parse_args(argv)
    if args.command == "list":
        for d in list_datasets():
            print(
                f"{d.name:<10} {d.kind:<14} {d.n_samples:>6} x {d.n_features:<3} "
                f"{d.n_classes:>2} classes  {d.source}"
            )
    else:
        try:
            print(f"SHUTTLE cached in {fetch_shuttle(args.deb)}")
        except (ValueError, OSError, ImportError) as exc:  # a bad .deb, no apt-get, no rdata
            print(f"python -m abstain.datasets fetch-shuttle: error: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
