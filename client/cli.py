"""The `oriflamme` command: one entry point, one subcommand per job.

Each subcommand imports only what it needs, so `oriflamme selfplay` runs with
the engine alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence


def _selfplay(args: argparse.Namespace) -> int:
    from oriflamme.client.selfplay import format_report, run_selfplay

    strategies = args.strategy.split(",")
    variant = args.variant  # argparse allows only "standard" or "two-player"
    players = args.players if args.players is not None else (2 if variant == "two-player" else 4)
    try:
        report = run_selfplay(
            players,
            args.games,
            seed=args.seed,
            strategies=strategies,
            variant=variant,
            edition=args.edition,
        )
    except ValueError as e:
        print(f"oriflamme selfplay: {e}", file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2) if args.json else format_report(report))
    if args.record:
        return _write_record(args, players, variant)
    return 0


def _write_record(args: argparse.Namespace, players: int, variant: str) -> int:
    """Play one more game the way the server referees it (its core, in this
    process, with bots that keep their own secrets), and write its record
    for `oriflamme verify`."""
    from oriflamme.client.inprocess import play_recorded_game

    strategies = args.strategy.split(",")
    record = play_recorded_game(
        players, variant=variant, edition=args.edition, strategies=strategies, seed=args.seed
    )
    try:
        with open(args.record, "wb") as f:
            f.write(record)
    except OSError as e:
        print(f"oriflamme selfplay: cannot write {args.record}: {e.strerror}", file=sys.stderr)
        return 2
    print(f"wrote the record of one committed game to {args.record} ({len(record)} bytes)")
    return 0


def _verify(args: argparse.Namespace) -> int:
    """Exit 0: the game is valid; 1: it is not; 2: the file is not a readable record."""
    from oriflamme.protocol.record import MAX_RECORD_SIZE, RecordError, decode_record
    from oriflamme.protocol.verify import format_verdict, verify_record

    try:
        with open(args.record, "rb") as f:
            data = f.read(MAX_RECORD_SIZE + 1)
    except OSError as exc:
        print(f"oriflamme verify: cannot read {args.record}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        record = decode_record(data)
    except RecordError as exc:
        print(
            f"oriflamme verify: {args.record} is not a readable game record: {exc}", file=sys.stderr
        )
        return 2
    verdict = verify_record(record)
    print(format_verdict(record, verdict))
    return 0 if verdict.ok else 1


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="oriflamme", description="Oriflamme played across machines."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    sp = sub.add_parser(
        "selfplay",
        help="play games between built-in players with the engine alone and print statistics",
    )
    sp.add_argument("--players", type=int, default=None, help="3-5 (2 with --variant two-player)")
    sp.add_argument("--games", type=int, default=100)
    sp.add_argument("--seed", type=int, default=None, help="make the run reproducible")
    sp.add_argument(
        "--strategy",
        default="random",
        help="random, heuristic, or a comma-separated list assigned to seats in turn "
        "(e.g. heuristic,random)",
    )
    sp.add_argument("--variant", choices=["standard", "two-player"], default="standard")
    sp.add_argument("--edition", choices=["revised", "first"], default="revised")
    sp.add_argument("--json", action="store_true", help="print the report as JSON")
    sp.add_argument(
        "--record",
        metavar="FILE",
        help="also play one game through the server's core (in this process), seats keeping "
        "their own secrets as over the network, and write its game record to FILE",
    )
    sp.set_defaults(func=_selfplay)

    vp = sub.add_parser(
        "verify",
        help="re-check a finished game's record offline (commitments, seeds, deal, replay)",
    )
    vp.add_argument("record", help="the game record file (msgpack)")
    vp.set_defaults(func=_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
