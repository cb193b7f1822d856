"""python -m tools.docgen [--check]: see `tools.docgen`."""

from __future__ import annotations

import argparse
import sys

from . import check, write


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docgen", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="change nothing; exit 1 if anything is out of date"
    )
    args = parser.parse_args()
    if args.check:
        problems = check()
        for problem in problems:
            print(problem, file=sys.stderr)
        if problems:
            print("run: python -m tools.docgen", file=sys.stderr)
        return 1 if problems else 0
    missing = write()
    for doc, name in missing:
        print(f"{doc} has no block {name!r}: add its markers where it belongs", file=sys.stderr)
    if missing:
        return 1
    print("the generated documents are up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
